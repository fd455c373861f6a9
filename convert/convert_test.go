package convert

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/formats/safetensors"
	"github.com/tfconv/tfconv/tensor"
)

const shippedTinyLlama = "../testdata/convert/hf-tiny-llama"

func TestSizeLabelAndName(t *testing.T) {
	// The fixture READMEs' general.size_label for 2124800, 2086144 and
	// 1869312 parameters.
	for n, want := range map[int64]string{2124800: "2.1M", 2086144: "2.1M", 1869312: "1.9M", 1100048384: "1.1B", 124439808: "124M", 999: "1.0K"} {
		if got := sizeLabel(n); got != want {
			t.Errorf("sizeLabel(%d) = %q, want %q", n, got, want)
		}
	}
	if got := pyTitle("hf"); got != "Hf" {
		t.Errorf("pyTitle(hf) = %q", got)
	}
}

// TestRoundTripTinyLlama: HF → GGUF f32 → HF is bit-identical on
// transformers' own checkpoint, and HF → native → GGUF equals HF → GGUF.
func TestRoundTripTinyLlama(t *testing.T) {
	tmp := t.TempDir()
	g := filepath.Join(tmp, "m.gguf")
	rep, err := Run(shippedTinyLlama, g, Options{OutType: OutF32})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Tensors) != 21 || len(rep.Dropped) != 0 || rep.SelfCheck != "ok" {
		t.Errorf("report: %d tensors, %d dropped, self-check %q", len(rep.Tensors), len(rep.Dropped), rep.SelfCheck)
	}
	back := filepath.Join(tmp, "back")
	if _, err := Run(g, back, Options{}); err != nil {
		t.Fatal(err)
	}
	compareTensors(t, back, shippedTinyLlama, nil)
	// The tiny checkpoint has no tokenizer, so no special ids reach the GGUF.
	compareConfig(t, "llama", filepath.Join(back, "config.json"), filepath.Join(shippedTinyLlama, "config.json"), "bos_token_id", "eos_token_id")

	// GGUF → HF → GGUF.
	g2 := filepath.Join(tmp, "m2.gguf")
	if _, err := Run(back, g2, Options{OutType: OutF32}); err != nil {
		t.Fatal(err)
	}
	compareGGUF(t, "llama", g2, g, true)

	// Native keeps everything, and converts onwards like its source.
	n := filepath.Join(tmp, "m.tfn")
	if _, err := Run(shippedTinyLlama, n, Options{}); err != nil {
		t.Fatal(err)
	}
	g3 := filepath.Join(tmp, "m3.gguf")
	if _, err := Run(n, g3, Options{OutType: OutF32}); err != nil {
		t.Fatal(err)
	}
	compareGGUF(t, "llama", g3, g, true)
	if _, err := Run(n, filepath.Join(tmp, "x.tfn"), Options{OutType: OutF16}); err == nil {
		t.Error("native output with --outtype f16 was accepted")
	}
}

// TestHFShardedOutput writes a sharded HF directory and reads it back.
func TestHFShardedOutput(t *testing.T) {
	tmp := t.TempDir()
	out := filepath.Join(tmp, "sharded")
	if _, err := Run(shippedTinyLlama, out, Options{MaxShardBytes: 200_000}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "model.safetensors.index.json")); err != nil {
		t.Fatal(err)
	}
	compareTensors(t, out, shippedTinyLlama, nil)
}

func TestDestinationRules(t *testing.T) {
	tmp := t.TempDir()
	out := filepath.Join(tmp, "m.gguf")
	if err := os.WriteFile(out, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(shippedTinyLlama, out, Options{}); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("existing output: %v", err)
	}
	if b, _ := os.ReadFile(out); string(b) != "keep me" {
		t.Fatal("existing output was changed")
	}
	if _, err := Run(shippedTinyLlama, out, Options{Force: true}); err != nil {
		t.Fatal(err)
	}
	// Nothing is left behind in the folder but the output.
	ents, _ := os.ReadDir(tmp)
	if len(ents) != 1 {
		t.Errorf("left %d entries in %s", len(ents), tmp)
	}
	// The source, or the directory holding it, is never a destination,
	// even with --force (on a copy, in case it were).
	src := copyWithout(t, func(n string) (string, bool) { return n, true })
	for _, s := range []string{src, filepath.Join(src, "model.safetensors")} {
		if _, err := Run(s, src, Options{Force: true}); err == nil || !strings.Contains(err.Error(), "refusing") {
			t.Fatalf("converted %s over its source directory: %v", s, err)
		}
	}
	if _, err := Run(filepath.Join(src, "model.safetensors"), filepath.Join(src, "model.safetensors"), Options{Force: true, To: GGUF}); err == nil {
		t.Fatal("converted over the source file")
	}
	compareTensors(t, src, shippedTinyLlama, nil)
	hf := filepath.Join(tmp, "hf")
	if _, err := Run(out, hf, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(out, hf, Options{}); err == nil {
		t.Fatal("replaced an HF directory without force")
	}
	if _, err := Run(out, hf, Options{Force: true, OutType: OutBF16}); err != nil {
		t.Fatal(err)
	}
	c, err := checkpoint.Open(hf)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Tensors[0].DType != tensor.BF16 {
		t.Errorf("forced replacement has %v tensors", c.Tensors[0].DType)
	}
}

// copyWithout writes the shipped tiny LLaMA with tensors renamed or
// removed, to check the errors that name them.
func copyWithout(t *testing.T, edit func(name string) (string, bool)) string {
	dir := t.TempDir()
	c, err := checkpoint.Open(shippedTinyLlama)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b, _ := c.ReadAux("config.json")
	os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644)
	var infos []tensor.Info
	var srcs []*checkpoint.Tensor
	for _, tt := range c.Tensors {
		name, keep := edit(tt.Name)
		if !keep {
			continue
		}
		infos = append(infos, tensor.Info{Name: name, DType: tt.DType, Shape: tt.Shape})
		srcs = append(srcs, tt)
	}
	f, err := os.Create(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := safetensors.NewWriter(f, infos, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, tt := range srcs {
		bw, _ := w.Next(infos[i].Name)
		if _, err := io.Copy(bw, tt.Open()); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestTensorErrors(t *testing.T) {
	extra := copyWithout(t, func(n string) (string, bool) {
		if n == "model.norm.weight" {
			return "model.mystery.weight", true
		}
		return n, true
	})
	if _, err := Run(extra, filepath.Join(t.TempDir(), "m.gguf"), Options{}); err == nil || !strings.Contains(err.Error(), `"model.mystery.weight"`) {
		t.Errorf("unexpected tensor: %v", err)
	}
	missing := copyWithout(t, func(n string) (string, bool) { return n, n != "model.layers.1.mlp.up_proj.weight" })
	if _, err := Run(missing, filepath.Join(t.TempDir(), "m.gguf"), Options{}); err == nil || !strings.Contains(err.Error(), `"blk.1.ffn_up.weight"`) {
		t.Errorf("missing tensor: %v", err)
	}
	if _, err := Run(shippedTinyLlama, filepath.Join(t.TempDir(), "m.gguf"), Options{Arch: "xlstm"}); err == nil || !strings.Contains(err.Error(), "supported: ") {
		t.Errorf("unknown arch: %v", err)
	}
}
