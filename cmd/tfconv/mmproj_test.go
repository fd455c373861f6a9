package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConvertMmprojFlags: the three multimodal flags reach the library:
// none refuses (exit 2, naming them), --mmproj writes both files and
// --json reports both, --text-only prints what it left out, and two of
// them together are a usage error.
func TestConvertMmprojFlags(t *testing.T) {
	t.Parallel()
	src := filepath.Join("..", "..", "testdata", "vision", "gemma3", "hf")
	dir := t.TempDir()
	dst := filepath.Join(dir, "m.gguf")
	code, _, errOut := run(t, "convert", src, dst)
	if code != 2 || !strings.Contains(errOut, "--mmproj-only") || !strings.Contains(errOut, "--text-only") {
		t.Errorf("no flag: exit %d, %q; want 2 naming the flags", code, errOut)
	}
	code, out, errOut := run(t, "convert", src, dst, "--mmproj", "--outtype", "f32", "--json")
	if code != 0 {
		t.Fatalf("--mmproj: exit %d: %s", code, errOut)
	}
	var rep struct {
		Output  string `json:"output"`
		Tensors []any  `json:"tensors"`
		Mmproj  struct {
			Output  string `json:"output"`
			Arch    string `json:"arch"`
			Tensors []any  `json:"tensors"`
		} `json:"mmproj"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Output != dst || len(rep.Tensors) != 80 || rep.Mmproj.Output != filepath.Join(dir, "mmproj-m.gguf") ||
		rep.Mmproj.Arch != "clip" || len(rep.Mmproj.Tensors) != 39 {
		t.Errorf("--mmproj --json: %s (%d tensors), mmproj %s %s (%d)", rep.Output, len(rep.Tensors), rep.Mmproj.Output, rep.Mmproj.Arch, len(rep.Mmproj.Tensors))
	}
	for _, f := range []string{dst, filepath.Join(dir, "mmproj-m.gguf")} {
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
	}
	code, out, _ = run(t, "convert", src, filepath.Join(dir, "t.gguf"), "--text-only")
	if code != 0 || !strings.Contains(out, "left out: 39 tensors") {
		t.Errorf("--text-only: exit %d, %q", code, out)
	}
	code, _, errOut = run(t, "convert", src, filepath.Join(dir, "p.gguf"), "--mmproj-only", "--text-only")
	if code != 2 {
		t.Errorf("--mmproj-only --text-only: exit %d, %q; want a usage error", code, errOut)
	}
}

// TestInspectTower: inspect shows the tower of an mmproj GGUF and of the
// Hugging Face folder it came from alike (the record's keys): projector
// type, image and patch size, layers, width, tokens per image.
func TestInspectTower(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "..", "testdata", "vision", "gemma3")
	for _, src := range []string{filepath.Join(dir, "hf"), filepath.Join(dir, "gguf", "mmproj-gemma3-f32.gguf")} {
		p := inspectTower(t, src)
		if p.Type != "gemma3" || p.ImageSize != 64 || p.PatchSize != 16 || p.Layers != 2 || p.Width != 32 || p.TokensPerImage != 4 {
			t.Errorf("%s: projector %+v, want gemma3 64/16, 2 layers of 32, 4 tokens", src, p)
		}
		code, out, _ := run(t, "inspect", src)
		if code != 0 || !strings.Contains(out, "tokens per image") || !strings.Contains(out, "projector type") {
			t.Errorf("%s: the table lacks the tower: %s", src, out)
		}
	}
}

// TestInspectTowerLlama4: inspect shows Llama 4's tower from the Hugging
// Face folder and from the mmproj tfconv writes of it alike: projector type
// llama4, 56-pixel tiles of 14-pixel patches, 3 layers of 32, and 4 tokens
// a tile (the pixel shuffle by scale_factor 2).
func TestInspectTowerLlama4(t *testing.T) {
	t.Parallel()
	hf := filepath.Join("..", "..", "testdata", "vision", "llama4", "hf")
	mm := filepath.Join(t.TempDir(), "mmproj.gguf")
	if code, _, errOut := run(t, "convert", hf, mm, "--mmproj-only", "--outtype", "f32"); code != 0 {
		t.Fatalf("convert --mmproj-only: exit %d: %s", code, errOut)
	}
	for _, src := range []string{hf, mm} {
		p := inspectTower(t, src)
		if p.Type != "llama4" || p.ImageSize != 56 || p.PatchSize != 14 || p.Layers != 3 || p.Width != 32 || p.TokensPerImage != 4 {
			t.Errorf("%s: projector %+v, want llama4 56/14, 3 layers of 32, 4 tokens", src, p)
		}
	}
}

// TestConvertMmprojBack: 'convert TEXT.gguf DIR --mmproj MMPROJ.gguf' (a
// third argument with --mmproj) writes the multimodal folder.
func TestConvertMmprojBack(t *testing.T) {
	t.Parallel()
	src := filepath.Join("..", "..", "testdata", "vision", "gemma3", "hf")
	dir := t.TempDir()
	text := filepath.Join(dir, "g.gguf")
	if code, _, errOut := run(t, "convert", src, text, "--mmproj"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	out := filepath.Join(dir, "back")
	if code, _, errOut := run(t, "convert", text, out, "--mmproj", filepath.Join(dir, "mmproj-g.gguf")); code != 0 {
		t.Fatalf("GGUF → HF with the mmproj: exit %d: %s", code, errOut)
	}
	b, err := os.ReadFile(filepath.Join(out, "config.json"))
	if err != nil || !strings.Contains(string(b), "Gemma3ForConditionalGeneration") || !strings.Contains(string(b), "vision_config") {
		t.Errorf("config.json %s (%v)", b, err)
	}
	if code, _, _ := run(t, "convert", text, filepath.Join(dir, "x"), "y.gguf"); code != 2 {
		t.Errorf("a third argument without --mmproj: exit %d, want 2", code)
	}
}

// tower is inspect --json's "projector": the vision tower's shape.
type tower struct {
	Type           string `json:"projector_type"`
	ImageSize      int64  `json:"image_size"`
	PatchSize      int64  `json:"patch_size"`
	Layers         int64  `json:"vision_layers"`
	Width          int64  `json:"vision_width"`
	TokensPerImage int64  `json:"tokens_per_image"`
}

// inspectTower runs inspect --json on src and returns its projector.
func inspectTower(t *testing.T, src string) tower {
	t.Helper()
	code, out, errOut := run(t, "inspect", src, "--json")
	if code != 0 {
		t.Fatalf("%s: exit %d: %s", src, code, errOut)
	}
	var j struct {
		Projector tower `json:"projector"`
	}
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatal(err)
	}
	return j.Projector
}
