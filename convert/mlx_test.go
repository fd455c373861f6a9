package convert

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/formats/mlx"
	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// readTensorF32 reads a float tensor of c as float32.
func readTensorF32(t *testing.T, c *checkpoint.Checkpoint, name string) []float32 {
	t.Helper()
	tt, ok := c.Tensor(name)
	if !ok {
		t.Fatalf("%s: no tensor %q", c.Path, name)
	}
	b, err := tt.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	f := make([]float32, tt.NumElements())
	if err := quant.Dequantize(f, b, tt.DType); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestMLXQuantizeRoundTrip: an HF fixture quantized to MLX (every bits ×
// group size pair among them) has the layout mlx-lm writes (codes, scales,
// biases for each linear and embedding weight, norms in float,
// "quantization" in config.json, {"format": "mlx"}), and read back it
// presents each weight as quant.Affine's dequantization of the source's,
// the other tensors as they were; converted on to GGUF, the GGUF holds the
// dequantized weights.
func TestMLXQuantizeRoundTrip(t *testing.T) {
	t.Parallel()
	src := filepath.Join("..", "testdata", "arch", "smollm3", "hf")
	orig, err := checkpoint.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	for _, prm := range []mlx.Params{{Bits: 4, GroupSize: 64}, {Bits: 3, GroupSize: 32}, {Bits: 8, GroupSize: 128}, {Bits: 2, GroupSize: 64}, {Bits: 5, GroupSize: 32}, {Bits: 6, GroupSize: 64}} {
		dir := filepath.Join(t.TempDir(), "mlx")
		rep, err := Run(src, dir, Options{To: MLX, Bits: prm.Bits, GroupSize: prm.GroupSize})
		if err != nil {
			t.Fatal(err)
		}
		if rep.SelfCheck != "ok" || rep.Format != MLX || len(rep.Warnings) != 0 {
			t.Fatalf("report %+v", rep)
		}
		// The report names each part's float source; only the codes are lossy.
		for _, tr := range rep.Tensors {
			if strings.HasPrefix(tr.Name, "model.embed_tokens.") &&
				(tr.SourceName != "model.embed_tokens.weight" || tr.SourceDType != "F32" || tr.Lossy != (tr.DType == "U32")) {
				t.Errorf("report of %s: %+v", tr.Name, tr)
			}
		}
		stored, err := checkpoint.OpenStored(dir)
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := stored.Metadata.Str("format"); v != "mlx" {
			t.Errorf("safetensors metadata format %q, want mlx", v)
		}
		cfg, err := stored.Config()
		if err != nil {
			t.Fatal(err)
		}
		q, err := mlx.FromConfig(cfg)
		if err != nil || q == nil || q.Bits != prm.Bits || q.GroupSize != prm.GroupSize || cfg[mlx.ConfigCopyKey] == nil {
			t.Fatalf("config quantization %v %v", q, err)
		}
		infos := make([]tensor.Info, len(stored.Tensors))
		for i, tt := range stored.Tensors {
			infos[i] = tt.Info
		}
		layers, err := mlx.Layers(q, infos)
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		for _, tt := range orig.Tensors {
			if mlx.Quantizable(tt.Name, tt.Shape, prm.GroupSize) {
				want++
			}
		}
		if len(layers) != want || want == 0 {
			t.Errorf("%d-bit g%d: %d quantized layers, want %d", prm.Bits, prm.GroupSize, len(layers), want)
		}
		stored.Close()

		c, err := checkpoint.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Tensors) != len(orig.Tensors) {
			t.Fatalf("read back %d tensors, want %d", len(c.Tensors), len(orig.Tensors))
		}
		a := quant.Affine{Bits: prm.Bits, GroupSize: prm.GroupSize}
		for _, ot := range orig.Tensors {
			w := readTensorF32(t, orig, ot.Name)
			got := readTensorF32(t, c, ot.Name)
			exp := w
			if mlx.Quantizable(ot.Name, ot.Shape, prm.GroupSize) {
				codes := make([]byte, a.PackedBytes(len(w)))
				sc, bi := make([]float32, len(w)/prm.GroupSize), make([]float32, len(w)/prm.GroupSize)
				a.Quantize(codes, sc, bi, w)
				exp = make([]float32, len(w))
				if err := a.Dequantize(exp, codes, sc, bi, tensor.F32); err != nil {
					t.Fatal(err)
				}
			}
			for i := range exp {
				if got[i] != exp[i] {
					t.Fatalf("%d-bit g%d: %s[%d] = %v, want %v", prm.Bits, prm.GroupSize, ot.Name, i, got[i], exp[i])
				}
			}
		}
		if cfgBack, _ := c.Config(); cfgBack[mlx.ConfigKey] != nil || cfgBack[mlx.ConfigCopyKey] != nil {
			t.Error("the dequantized view's config.json keeps the quantization")
		}
		c.Close()
		if prm.Bits != 4 {
			continue
		}
		// On to GGUF: the dequantized weights, as llama.cpp reads them.
		out := filepath.Join(t.TempDir(), "m.gguf")
		if _, err := Run(dir, out, Options{OutType: OutF32}); err != nil {
			t.Fatal(err)
		}
		g, err := checkpoint.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		c, _ = checkpoint.Open(dir)
		if !bytes.Equal(f32bytes(readTensorF32(t, g, "token_embd.weight")), f32bytes(readTensorF32(t, c, "model.embed_tokens.weight"))) {
			t.Error("GGUF token_embd.weight is not the dequantized embedding")
		}
		g.Close()
		c.Close()
	}
}

func f32bytes(f []float32) []byte {
	b := make([]byte, 4*len(f))
	quant.Quantize(b, f, tensor.F32)
	return b
}

// TestMLXQuantizeRefusals: parameters MLX does not take are refused before
// anything is written.
func TestMLXQuantizeRefusals(t *testing.T) {
	t.Parallel()
	src := filepath.Join("..", "testdata", "arch", "smollm3", "hf")
	for _, o := range []Options{{To: MLX, Bits: 7, GroupSize: 64}, {To: MLX, Bits: 4, GroupSize: 48}} {
		dir := filepath.Join(t.TempDir(), "mlx")
		if _, err := Run(src, dir, o); err == nil || !strings.Contains(err.Error(), "MLX's affine quantization takes") {
			t.Errorf("%+v: %v", o, err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s written", dir)
		}
	}
	if _, err := OutputFormat("x.gguf", MLX); err == nil {
		t.Error("--to mlx into x.gguf accepted")
	}
}
