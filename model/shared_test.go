package model

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSharedFixtures runs every checkpoint of ../shared/fixtures (present in
// CI): every hf-tiny checkpoint, the interop HF directories, the f32 GGUFs
// against the HF reference and every other GGUF against its dequant-hf
// reference; generate.json wherever there is one.
func TestSharedFixtures(t *testing.T) {
	root := sharedFixtures(t)
	dirs, _ := filepath.Glob(filepath.Join(root, "hf-tiny", "*"))
	for _, pat := range []string{"interop/*/hf*", "trained/*/hf"} {
		more, _ := filepath.Glob(filepath.Join(root, filepath.FromSlash(pat)))
		dirs = append(dirs, more...)
	}
	for _, dir := range dirs {
		name, _ := filepath.Rel(root, dir)
		m, err := Load(dir, LoadOptions{})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var ref reference
		readJSON(t, filepath.Join(dir, "reference.json"), &ref)
		tol := maxLogitDiffF32
		if strings.Contains(name, "float16") || strings.Contains(name, "bf16") || strings.Contains(name, "f16") {
			tol = maxLogitDiffHalf
		}
		checkLogits(t, name, m, &ref, tol)
		if _, err := os.Stat(filepath.Join(dir, "generate.json")); err == nil {
			var g genFixture
			readJSON(t, filepath.Join(dir, "generate.json"), &g)
			checkGenerate(t, name, m, &g)
		}
	}

	ggufs, _ := filepath.Glob(filepath.Join(root, "interop", "*", "gguf", "*.gguf"))
	trained, _ := filepath.Glob(filepath.Join(root, "trained", "*", "gguf", "*.gguf"))
	ggufs = append(ggufs, trained...)
	for _, p := range ggufs {
		name := filepath.Base(p)
		base := strings.TrimSuffix(p, ".gguf")
		m, err := Load(p, LoadOptions{})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var ref reference
		switch {
		case strings.HasSuffix(base, "-f32"):
			readJSON(t, filepath.Join(filepath.Dir(filepath.Dir(p)), "hf", "reference.json"), &ref)
			checkLogits(t, name, m, &ref, maxLogitDiffF32)
		case fileExists(base + ".dequant-hf.json"):
			readJSON(t, base+".dequant-hf.json", &ref)
			checkLogits(t, name, m, &ref, maxLogitDiffQuant)
		case m.Config().Arch != "bert":
			t.Errorf("%s: no reference to compare with", name)
			continue
		default:
			// BERT GGUFs have no dequant-hf reference: report the distance
			// to the float32 HF model only.
			readJSON(t, filepath.Join(filepath.Dir(filepath.Dir(p)), "hf", "reference.json"), &ref)
			out, err := m.Forward(Input{Tokens: ref.InputIDs}, nil)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			d, _ := maxDiff(t, out.Hidden, ref.LastHiddenState, nil)
			t.Logf("%s: hidden state vs the f32 HF model: max diff %.3g (no dequantized reference)", name, d)
			continue
		}
		// llama.cpp's own logits: report, never assert tightly.
		var cpp reference
		if fileExists(base + ".logits.json") {
			readJSON(t, base+".logits.json", &cpp)
			out, err := m.Forward(Input{Tokens: ref.InputIDs}, nil)
			if err == nil && cpp.Logits != nil {
				d, _ := maxDiff(t, out.Logits, cpp.Logits, nil)
				t.Logf("%s: vs llama.cpp's own logits: max diff %.3g", name, d)
			}
		}
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
