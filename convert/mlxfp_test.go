package convert

import (
	"bytes"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/formats/mlx"
	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// TestMLXFPPassThrough: an MLX mxfp4 directory (MLX 846d176's own
// mx::quantize of the smollm3 fixture, testdata/mlx/smollm3-mxfp4) converts
// to a GGUF whose weights are MXFP4 blocks copied from MLX's (conversion
// "copied"): each block's bytes are MLX's scale byte and codes in ggml's
// nibble order, and ggml's dequantization of every weight equals MLX's
// (the reader's, itself held to mx.dequantize) value for value, rows
// reordered only where Llama's Q/K permutation moves them. The nvfp4
// directory likewise becomes GGUF NVFP4 blocks of 64 (no ".scale": MLX has
// no global scale). --requantize encodes the same weights again instead.
func TestMLXFPPassThrough(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		dir, dtype string
		toGGUF     func(dst, codes, scales []byte) error
	}{
		{"smollm3-mxfp4", "MXFP4", quant.MXFP4FromOCP},
		{"smollm3-nvfp4", "NVFP4", quant.NVFP4FromOCP},
	} {
		t.Run(c.dtype, func(t *testing.T) {
			t.Parallel()
			mlxBlocksPassThrough(t, c.dir, c.dtype, c.toGGUF)
		})
	}
}

func mlxBlocksPassThrough(t *testing.T, dir, dtype string, toGGUF func(dst, codes, scales []byte) error) {
	src := filepath.Join("..", "testdata", "mlx", dir)
	out := filepath.Join(t.TempDir(), "out.gguf")
	rep, err := Run(src, out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := checkpoint.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	stored, err := checkpoint.OpenStored(src)
	if err != nil {
		t.Fatal(err)
	}
	defer stored.Close()
	g, err := checkpoint.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	copied, sameBytes := 0, 0
	for _, tr := range rep.Tensors {
		if strings.HasSuffix(tr.Name, ".scale") || strings.HasSuffix(tr.Name, ".input_scale") {
			t.Errorf("%s: MLX has no global scale", tr.Name)
		}
		if tr.DType != dtype {
			continue
		}
		if !tr.Copied || tr.Conversion != "copied" {
			t.Errorf("%s: copied %v, conversion %q", tr.Name, tr.Copied, tr.Conversion)
		}
		copied++
		gv, mv := readTensorF32(t, g, tr.Name), readTensorF32(t, m, tr.SourceName)
		if len(gv) != len(mv) {
			t.Fatalf("%s: %d values, MLX's %d", tr.Name, len(gv), len(mv))
		}
		cols := int(tr.Shape[len(tr.Shape)-1])
		rows := map[string]int{}
		for r := 0; r < len(mv)/cols; r++ {
			rows[rowKey(mv[r*cols:(r+1)*cols])]++
		}
		for r := 0; r < len(gv)/cols; r++ {
			k := rowKey(gv[r*cols : (r+1)*cols])
			if rows[k] == 0 {
				t.Fatalf("%s: row %d of ggml's values is no row of MLX's", tr.Name, r)
			}
			rows[k]--
		}
		if strings.Contains(tr.Name, "attn_q") || strings.Contains(tr.Name, "attn_k") {
			continue
		}
		// Not reordered: the bytes are MLX's codes and scales, moved.
		codes, _ := stored.Tensor(strings.TrimSuffix(tr.SourceName, ".weight") + ".weight")
		scales, _ := stored.Tensor(strings.TrimSuffix(tr.SourceName, ".weight") + ".scales")
		cb, err := codes.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		sb, err := scales.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		gt, _ := g.Tensor(tr.Name)
		want := make([]byte, gt.Size)
		if err := toGGUF(want, cb, sb); err != nil {
			t.Fatal(err)
		}
		got, err := gt.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: bytes are not MLX's blocks", tr.Name)
		}
		sameBytes++
	}
	// 4 layers × 7 projections and the (tied) embedding.
	if copied != 29 || sameBytes != 21 {
		t.Errorf("%d %s tensors copied (%d compared byte for byte), want 29 (21)", copied, dtype, sameBytes)
	}

	re, err := Run(src, filepath.Join(t.TempDir(), "re.gguf"), Options{Requantize: true})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tr := range re.Tensors {
		if tr.DType != dtype {
			continue
		}
		if tr.Copied || tr.Conversion == "copied" || tr.Conversion == "" {
			t.Errorf("--requantize: %s: copied %v, conversion %q", tr.Name, tr.Copied, tr.Conversion)
		}
		n++
	}
	if n != 29 {
		t.Errorf("--requantize: %d %s tensors, want 29", n, dtype)
	}
}

// rowKey is a row's values as a map key: their bit patterns, a zero of
// either sign as +0 (MLX reads code 8 as −0, ggml as +0: the same value).
func rowKey(v []float32) string {
	b := make([]byte, 0, 4*len(v))
	for _, f := range v {
		u := math.Float32bits(f)
		if f == 0 {
			u = 0
		}
		b = append(b, byte(u), byte(u>>8), byte(u>>16), byte(u>>24))
	}
	return string(b)
}

// TestMLXMXFP4FromGGUF: gpt-oss's GGUF MXFP4 experts (the mxfp4_moe
// fixture) convert to MLX as copies: Hugging Face's OCP blocks and scales,
// which mlx-lm's gpt_oss sanitize reads as its mxfp4 layers, with
// config.json naming each expert module mode mxfp4 (the Q8_0 weights are
// MLX 8-bit affine, the other pass-through). Back to GGUF at q8_0 every
// tensor is the original's bytes. --requantize is refused, naming the
// tensor: the experts stay in Hugging Face's packed form, which tfconv's
// MLX mxfp4 encoder does not write.
func TestMLXMXFP4FromGGUF(t *testing.T) {
	t.Parallel()
	src := filepath.Join("..", "testdata", "arch", "gptoss", "gguf", "gptoss-mxfp4_moe.gguf")
	dir := filepath.Join(t.TempDir(), "mlx")
	rep, err := Run(src, dir, Options{To: MLX})
	if err != nil {
		t.Fatal(err)
	}
	copied := 0
	for _, tr := range rep.Tensors {
		if strings.Contains(tr.Name, "experts.") && (strings.HasSuffix(tr.Name, "_blocks") || strings.HasSuffix(tr.Name, "_scales")) {
			if !tr.Copied || tr.Conversion != "copied" {
				t.Errorf("%s: copied %v, conversion %q", tr.Name, tr.Copied, tr.Conversion)
			}
			copied++
		}
	}
	if copied != 8 {
		t.Errorf("%d expert blocks and scales copied, want 8 (2 layers × gate_up and down × blocks and scales)", copied)
	}
	stored, err := checkpoint.OpenStored(dir)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := stored.Config()
	stored.Close()
	q, err := mlx.FromConfig(raw)
	if err != nil || q == nil {
		t.Fatalf("quantization %v %v", q, err)
	}
	for _, l := range []string{"0", "1"} {
		for _, m := range []string{"gate_proj", "up_proj", "down_proj"} {
			path := "model.layers." + l + ".mlp.experts." + m
			if p, ok := q.For(path); !ok || p != mxfp4Params {
				t.Errorf("%s: %+v, want mxfp4", path, p)
			}
		}
	}

	back := filepath.Join(t.TempDir(), "back.gguf")
	if _, err := Run(dir, back, Options{OutType: OutQ8_0}); err != nil {
		t.Fatal(err)
	}
	orig, err := checkpoint.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	b, err := checkpoint.Open(back)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	mx := 0
	for _, ot := range orig.Tensors {
		bt, ok := b.Tensor(ot.Name)
		if !ok {
			t.Fatalf("%q missing after the round trip", ot.Name)
		}
		x, _ := ot.ReadAll()
		y, _ := bt.ReadAll()
		if ot.DType != bt.DType || !bytes.Equal(x, y) {
			t.Errorf("%q is %v, not the original's bytes (%v)", ot.Name, bt.DType, ot.DType)
		}
		if ot.DType == tensor.MXFP4 {
			mx++
		}
	}
	if mx != 6 || len(b.Tensors) != len(orig.Tensors) {
		t.Errorf("%d MXFP4 tensors compared, want 6; %d tensors, want %d", mx, len(b.Tensors), len(orig.Tensors))
	}

	_, err = Run(src, filepath.Join(t.TempDir(), "re"), Options{To: MLX, Requantize: true})
	if !errors.Is(err, tensor.ErrUnsupported) || !strings.Contains(err.Error(), "experts.down_proj_blocks") {
		t.Errorf("--requantize: %v, want unsupported naming the MXFP4 tensor", err)
	}
}

// TestMLXFPQuantizeMatchesMLXSave: quantize --to mlx --mode M of the
// smollm3 fixture writes every tensor byte for byte as MLX 846d176 itself
// wrote it (testdata/mlx/smollm3-M: mx::quantize in mode M of each 2-D
// weight, mx::save_safetensors), for mxfp4 and nvfp4, and config.json
// gives the mode with its bits and group size.
func TestMLXFPQuantizeMatchesMLXSave(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"mxfp4", "nvfp4"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ref := filepath.Join("..", "testdata", "mlx", "smollm3-"+mode)
			dir := filepath.Join(t.TempDir(), "mlx")
			if _, err := Run(filepath.Join("..", "testdata", "arch", "smollm3", "hf"), dir, Options{To: MLX, MLXMode: mode}); err != nil {
				t.Fatal(err)
			}
			ours, err := checkpoint.OpenStored(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer ours.Close()
			theirs, err := checkpoint.OpenStored(ref)
			if err != nil {
				t.Fatal(err)
			}
			defer theirs.Close()
			identicalTensors(t, ours, theirs)
			raw, _ := ours.Config()
			q, err := mlx.FromConfig(raw)
			if err != nil || q == nil || q.Mode != mode || q.Params != (mlx.Params{Bits: mlx.FPModes[mode].Bits, GroupSize: mlx.FPModes[mode].GroupSize, Mode: mode}) {
				t.Errorf("quantization %+v %v", q, err)
			}
		})
	}
	_, err := Run(filepath.Join("..", "testdata", "arch", "smollm3", "hf"), filepath.Join(t.TempDir(), "x"), Options{To: MLX, MLXMode: "nvfp4", GroupSize: 32})
	if !errors.Is(err, tensor.ErrUnsupported) {
		t.Errorf("nvfp4 with group size 32: %v, want unsupported", err)
	}
}
