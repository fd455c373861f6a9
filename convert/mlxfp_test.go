package convert

import (
	"bytes"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/quant"
)

// TestMLXMXFP4PassThrough: an MLX mxfp4 directory (MLX 846d176's own
// mx::quantize of the smollm3 fixture, testdata/mlx/smollm3-mxfp4) converts
// to a GGUF whose weights are MXFP4 blocks copied from MLX's (conversion
// "copied"): each block's bytes are MLX's scale byte and codes in ggml's
// nibble order, and ggml's dequantization of every weight equals MLX's
// (the reader's, itself held to mx.dequantize) value for value, rows
// reordered only where Llama's Q/K permutation moves them. --requantize
// encodes the same weights again instead.
func TestMLXMXFP4PassThrough(t *testing.T) {
	t.Parallel()
	src := filepath.Join("..", "testdata", "mlx", "smollm3-mxfp4")
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
		if tr.DType != "MXFP4" {
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
		want := make([]byte, 17*len(sb))
		if err := quant.MXFP4FromOCP(want, cb, sb); err != nil {
			t.Fatal(err)
		}
		gt, _ := g.Tensor(tr.Name)
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
		t.Errorf("%d MXFP4 tensors copied (%d compared byte for byte), want 29 (21)", copied, sameBytes)
	}

	re, err := Run(src, filepath.Join(t.TempDir(), "re.gguf"), Options{Requantize: true})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tr := range re.Tensors {
		if tr.DType != "MXFP4" {
			continue
		}
		if tr.Copied || tr.Conversion == "copied" || tr.Conversion == "" {
			t.Errorf("--requantize: %s: copied %v, conversion %q", tr.Name, tr.Copied, tr.Conversion)
		}
		n++
	}
	if n != 29 {
		t.Errorf("--requantize: %d MXFP4 tensors, want 29", n)
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
