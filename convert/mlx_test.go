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
	"github.com/tfconv/tfconv/quantize"
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

// TestMLXPassThroughGGUF: llama.cpp's pure Q8_0 and Q4_0 GGUFs of the
// llama fixture convert to MLX with their blocks copied (8- and 4-bit
// affine groups of 32, f32 scales and biases; LLaMA's Q/K rows reordered
// whole), the MLX model's weights are the GGUF's dequantized values bit
// for bit, and back to Q8_0 (convert --outtype q8_0) or Q4_0 (quantize
// --pure q4_0) every tensor is the original's byte for byte. Quantizing
// to MLX instead (Bits set) re-encodes, and the codes differ.
func TestMLXPassThroughGGUF(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		gguf string
		typ  tensor.DType
		bits int
	}{
		{filepath.Join("..", "testdata", "model", "gguf", "llama-Q8_0.gguf"), tensor.Q8_0, 8},
		{filepath.Join("..", "testdata", "gguf", "llama-Q4_0.gguf"), tensor.Q4_0, 4},
	} {
		dir := filepath.Join(t.TempDir(), "mlx")
		rep, err := Run(c.gguf, dir, Options{To: MLX})
		if err != nil {
			t.Fatal(err)
		}
		copied := 0
		for _, tr := range rep.Tensors {
			if tr.Copied {
				copied++
			}
		}
		if copied != 3*16 {
			t.Errorf("%v: %d tensors copied, want 48 (16 weights × codes, scales, biases)", c.typ, copied)
		}
		orig, err := checkpoint.Open(c.gguf)
		if err != nil {
			t.Fatal(err)
		}
		m, err := checkpoint.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		cfg, _ := checkpoint.OpenStored(dir)
		raw, _ := cfg.Config()
		if q, err := mlx.FromConfig(raw); err != nil || q == nil || q.Bits != c.bits || q.GroupSize != 32 {
			t.Fatalf("%v: quantization %v %v", c.typ, q, err)
		}
		cfg.Close()
		// The embedding (no reordering): MLX's dequantization is ggml's,
		// value for value (a zero may differ in sign: c·s + (−8·s) is +0
		// where ggml's 0·d is −0 for a negative d).
		mv, gv := readTensorF32(t, m, "model.embed_tokens.weight"), readTensorF32(t, orig, "token_embd.weight")
		for i := range gv {
			if mv[i] != gv[i] {
				t.Fatalf("%v: MLX embedding value %d is %v, the GGUF's %v", c.typ, i, mv[i], gv[i])
			}
		}
		m.Close()

		back := filepath.Join(t.TempDir(), "back.gguf")
		if c.typ == tensor.Q8_0 {
			_, err = Run(dir, back, Options{OutType: OutQ8_0})
		} else {
			target, perr := quantize.ParseTarget("q4_0")
			if perr != nil {
				t.Fatal(perr)
			}
			_, err = Quantize(dir, back, QuantizeOptions{Options: quantize.Options{Target: target, Pure: true}})
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := checkpoint.Open(back)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, ot := range orig.Tensors {
			bt, ok := b.Tensor(ot.Name)
			if !ok {
				t.Fatalf("%v: %q missing after the round trip", c.typ, ot.Name)
			}
			x, _ := ot.ReadAll()
			y, _ := bt.ReadAll()
			if ot.DType != bt.DType || !bytes.Equal(x, y) {
				t.Errorf("%v: %q is %v, not the original's bytes (%v)", c.typ, ot.Name, bt.DType, ot.DType)
			}
			if ot.DType == c.typ {
				n++
			}
		}
		if n != 16 {
			t.Errorf("%v: %d block tensors compared, want 16", c.typ, n)
		}
		b.Close()

		// Re-encoding with MLX's own quantizer changes the codes.
		re := filepath.Join(t.TempDir(), "re")
		if _, err := Run(c.gguf, re, Options{To: MLX, Bits: c.bits, GroupSize: 32}); err != nil {
			t.Fatal(err)
		}
		s1, _ := checkpoint.OpenStored(dir)
		s2, _ := checkpoint.OpenStored(re)
		t1, _ := s1.Tensor("model.layers.0.self_attn.q_proj.weight")
		t2, _ := s2.Tensor("model.layers.0.self_attn.q_proj.weight")
		x, _ := t1.ReadAll()
		y, _ := t2.ReadAll()
		if bytes.Equal(x, y) {
			t.Errorf("%v: re-encoding gave the copied codes", c.typ)
		}
		s1.Close()
		s2.Close()
		orig.Close()
	}
}

// TestMLXPassThroughGGUFMoE: a pure Q4_0 GGUF of the Qwen3-MoE fixture
// (tfconv's quantize) converts to MLX with its blocks copied, the dense
// layers' and the experts', each layer's experts stacked into
// mlp.switch_mlp as mlx-lm keeps them (3-D codes, scales and biases: each
// expert's rows of the GGUF's ffn_*_exps become its MLX layer, then the
// layers are stacked), and quantize --pure q4_0 of that directory gives the
// GGUF again, every tensor byte for byte.
func TestMLXPassThroughGGUFMoE(t *testing.T) {
	t.Parallel()
	target, err := quantize.ParseTarget("q4_0")
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "q4_0.gguf")
	if _, err := Quantize(filepath.Join("..", "testdata", "arch", "qwen3moe", "hf"), src, QuantizeOptions{Options: quantize.Options{Target: target, Pure: true}}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "mlx")
	rep, err := Run(src, dir, Options{To: MLX})
	if err != nil {
		t.Fatal(err)
	}
	copied, stacked := 0, 0
	for _, tr := range rep.Tensors {
		if tr.Copied {
			copied++
		}
		if strings.Contains(tr.Name, ".mlp.switch_mlp.") {
			stacked++
			want := map[bool]string{true: "U32", false: "F32"}[strings.HasSuffix(tr.Name, ".weight")]
			if len(tr.Shape) != 3 || tr.Shape[0] != 4 || tr.DType != want || !tr.Copied {
				t.Errorf("%s: %s %v copied %v, want %s [4 …] copied", tr.Name, tr.DType, tr.Shape, tr.Copied, want)
			}
		}
		if strings.Contains(tr.Name, ".mlp.experts.") {
			t.Errorf("%s: an expert written on its own", tr.Name)
		}
	}
	if stacked != 18 || copied != 48 {
		t.Errorf("%d stacked expert tensors (want 18: 2 layers × 3 projections × codes, scales, biases), %d copied (want 48)", stacked, copied)
	}
	back := filepath.Join(t.TempDir(), "back.gguf")
	if _, err := Quantize(dir, back, QuantizeOptions{Options: quantize.Options{Target: target, Pure: true}}); err != nil {
		t.Fatal(err)
	}
	a, err := checkpoint.OpenStored(src)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := checkpoint.OpenStored(back)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if len(a.Tensors) != len(b.Tensors) {
		t.Fatalf("%d tensors back, want %d", len(b.Tensors), len(a.Tensors))
	}
	for _, x := range a.Tensors {
		y, ok := b.Tensor(x.Name)
		if !ok {
			t.Fatalf("%s missing back", x.Name)
		}
		xb, _ := x.ReadAll()
		yb, _ := y.ReadAll()
		if x.DType != y.DType || !bytes.Equal(xb, yb) {
			t.Errorf("%s: %v back as %v, bytes equal %v", x.Name, x.DType, y.DType, bytes.Equal(xb, yb))
		}
	}
}
