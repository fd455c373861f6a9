package convert

import (
	"bytes"
	"errors"
	"fmt"
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
// fixture) convert to MLX as copies, in mlx-lm's own layout (its gpt_oss
// sanitize): each expert module an mxfp4 layer, its blocks the uint32
// codes and its scale bytes the scales, with config.json naming each
// module mode mxfp4 (the Q8_0 weights are MLX 8-bit affine, the other
// pass-through). Back to GGUF at q8_0 every tensor is the original's
// bytes. --requantize is refused, naming the tensor.
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
		if strings.Contains(tr.Name, "experts.") && (strings.HasSuffix(tr.Name, ".weight") || strings.HasSuffix(tr.Name, ".scales")) {
			if !tr.Copied || tr.Conversion != "copied" {
				t.Errorf("%s: copied %v, conversion %q", tr.Name, tr.Copied, tr.Conversion)
			}
			copied++
		}
	}
	if copied != 12 {
		t.Errorf("%d expert codes and scales copied, want 12 (2 layers × gate, up and down × codes and scales)", copied)
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
// smollm3 fixture writes every tensor byte for byte as mlx-lm's own save
// wrote it (testdata/mlx/smollm3-M: mlx_lm.convert -q --q-mode M on MLX
// 846d176, gen_mlxlm.py), for mxfp4 and nvfp4, and config.json gives the
// mode with its bits and group size.
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

// TestMLXGptOssFromHF: gpt-oss as published (MXFP4 experts, Hugging Face's
// packed blocks and scales, gate and up rows alternating) converts to MLX
// as mlx-lm d78bf58's gpt_oss sanitize and load leave it: per layer the
// gate_proj, up_proj and down_proj mxfp4 layers, codes the blocks' bytes
// as uint32 (even rows of gate_up_proj to gate_proj, odd to up_proj),
// scales the scale bytes, biases split the same way, every other tensor
// as it was; config.json's quantization and quantization_config mxfp4,
// group 32, as mlx-lm's load_model sets them for quant_method mxfp4. Read
// back, the directory is the Hugging Face checkpoint again: its GGUF is
// the Hugging Face one's tensor for tensor (the MXFP4 blocks copied both
// times).
func TestMLXGptOssFromHF(t *testing.T) {
	t.Parallel()
	src := filepath.Join("..", "testdata", "arch", "gptoss", "hf")
	dir := filepath.Join(t.TempDir(), "mlx")
	rep, err := Run(src, dir, Options{To: MLX})
	if err != nil {
		t.Fatal(err)
	}
	in, err := checkpoint.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := checkpoint.OpenStored(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	read := func(c *checkpoint.Checkpoint, name string) (*checkpoint.Tensor, []byte) {
		t.Helper()
		x, ok := c.Tensor(name)
		if !ok {
			t.Fatalf("%s: no tensor %q", c.Path, name)
		}
		b, err := x.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		return x, b
	}
	// rows returns rows r ≡ k (mod n) of b, n·rows rows per outer index.
	rows := func(b []byte, outer, all, n, k int) []byte {
		row := len(b) / (outer * all)
		var o []byte
		for e := 0; e < outer; e++ {
			for r := k; r < all; r += n {
				off := (e*all + r) * row
				o = append(o, b[off:off+row]...)
			}
		}
		return o
	}
	split := 0
	for l := 0; l < 2; l++ {
		pre := fmt.Sprintf("model.layers.%d.mlp.experts.", l)
		for _, hf := range []struct {
			name    string
			modules []string
		}{{"gate_up_proj", []string{"gate_proj", "up_proj"}}, {"down_proj", []string{"down_proj"}}} {
			blk, bb := read(in, pre+hf.name+"_blocks")
			_, sb := read(in, pre+hf.name+"_scales")
			_, biasb := read(in, pre+hf.name+"_bias")
			e, all := int(blk.Shape[0]), int(blk.Shape[1])
			for k, m := range hf.modules {
				n := len(hf.modules)
				w, wb := read(out, pre+m+".weight")
				want := tensor.Shape{blk.Shape[0], blk.Shape[1] / int64(n), blk.Shape[2] * 4}
				if w.DType != tensor.U32 || !w.Shape.Equal(want) || !bytes.Equal(wb, rows(bb, e, all, n, k)) {
					t.Errorf("%s.weight: %v %v, want U32 %v, the blocks' rows %d mod %d", pre+m, w.DType, w.Shape, want, k, n)
				}
				s, ssb := read(out, pre+m+".scales")
				if s.DType != tensor.U8 || !bytes.Equal(ssb, rows(sb, e, all, n, k)) {
					t.Errorf("%s.scales: %v %v, not the scales' rows %d mod %d", pre+m, s.DType, s.Shape, k, n)
				}
				_, bias := read(out, pre+m+".bias")
				if !bytes.Equal(bias, rows(biasb, e, all, n, k)) {
					t.Errorf("%s.bias is not the bias's rows %d mod %d", pre+m, k, n)
				}
				split++
			}
		}
	}
	if split != 6 {
		t.Errorf("%d modules split, want 6", split)
	}
	if len(out.Tensors) != len(in.Tensors)+2*3 {
		// per layer: gate_up and down's 3 tensors each become 9
		t.Errorf("%d tensors stored, want %d", len(out.Tensors), len(in.Tensors)+6)
	}
	for _, tr := range rep.Tensors {
		if strings.Contains(tr.Name, "experts.") && !strings.HasSuffix(tr.Name, ".bias") && tr.Conversion != "copied" {
			t.Errorf("%s: conversion %q, want copied", tr.Name, tr.Conversion)
		}
	}
	raw, _ := out.Config()
	for _, key := range []string{"quantization", "quantization_config"} {
		q, _ := raw[key].(map[string]any)
		if fmt.Sprint(q) != "map[bits:4 group_size:32 mode:mxfp4]" {
			t.Errorf("config.json %s: %v, want mxfp4, 4 bits, group 32", key, q)
		}
	}

	// Read back: the Hugging Face checkpoint's GGUF, tensor for tensor.
	a, b := filepath.Join(t.TempDir(), "hf.gguf"), filepath.Join(t.TempDir(), "mlx.gguf")
	if _, err := Run(src, a, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(dir, b, Options{}); err != nil {
		t.Fatal(err)
	}
	ca, err := checkpoint.Open(a)
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close()
	cb, err := checkpoint.Open(b)
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close()
	identicalTensors(t, cb, ca)
	mx := 0
	for _, x := range ca.Tensors {
		if x.DType == tensor.MXFP4 {
			mx++
		}
	}
	if mx != 6 {
		t.Errorf("%d MXFP4 tensors in the GGUF, want 6", mx)
	}
}
