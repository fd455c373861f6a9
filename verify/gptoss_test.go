package verify

import (
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/tensor"
)

// TestDiffGptOssBlocks: diff of gpt-oss's Hugging Face checkpoint against
// llama.cpp's GGUF of it compares the MXFP4 experts in Hugging Face's
// packed form (uint8 blocks and scales) byte for byte: all 41 identical
// (before, diff stopped: "cannot decode U8"); against the GGUF requantized
// at mxfp4_moe, whose other weights are Q8_0, the experts stay identical
// and the 10 Q8_0 weights differ.
func TestDiffGptOssBlocks(t *testing.T) {
	t.Parallel()
	a, err := checkpoint.Open("../testdata/arch/gptoss/hf")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, c := range []struct {
		gguf      string
		identical int
	}{{"gptoss-f32.gguf", 41}, {"gptoss-mxfp4_moe.gguf", 31}} {
		b, err := checkpoint.Open("../testdata/arch/gptoss/gguf/" + c.gguf)
		if err != nil {
			t.Fatal(err)
		}
		d, err := Diff(a, b, ConvertNames, ConvertNames)
		b.Close()
		if err != nil {
			t.Fatalf("%s: %v", c.gguf, err)
		}
		if d.Matched != 41 || d.Identical != c.identical || d.Missing+d.Extra != 0 {
			t.Errorf("%s: matched %d, identical %d, different %d, missing %d, extra %d; want 41 matched, %d identical",
				c.gguf, d.Matched, d.Identical, d.Different, d.Missing, d.Extra, c.identical)
		}
		for _, td := range d.Tensors {
			if td.DTypeA == "U8" && td.Status != StatusIdentical {
				t.Errorf("%s: %s is %s", c.gguf, td.Name, td.Status)
			}
		}
	}
}

// TestCompareIntegers: integer tensors that differ are reported different
// with their largest element difference (signed and unsigned).
func TestCompareIntegers(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		dt   string
		a, b []byte
		max  float64
	}{
		{"U8", []byte{1, 200, 3}, []byte{1, 10, 3}, 190},
		{"I8", []byte{0x80, 0, 0}, []byte{0x7f, 0, 0}, 255},
		{"U32", []byte{1, 0, 0, 0, 0, 0, 0, 1}, []byte{1, 0, 0, 0, 0, 0, 0, 2}, 1 << 24},
	} {
		x, y := intTensor(t, c.dt, c.a), intTensor(t, c.dt, c.b)
		var d TensorDiff
		if err := compareIntegers(&d, x, y); err != nil {
			t.Fatal(err)
		}
		if d.Status != StatusDifferent || d.MaxAbs != c.max {
			t.Errorf("%s: %s, max %v; want different, %v", c.dt, d.Status, d.MaxAbs, c.max)
		}
		d = TensorDiff{}
		if err := compareIntegers(&d, x, x); err != nil || d.Status != StatusIdentical {
			t.Errorf("%s against itself: %s %v", c.dt, d.Status, err)
		}
	}
}

// intTensor is b as a one-dimensional tensor of dtype dt (a safetensors name).
func intTensor(t *testing.T, dt string, b []byte) *checkpoint.Tensor {
	t.Helper()
	d, ok := tensor.DTypeFromSafetensors(dt)
	if !ok {
		t.Fatalf("no dtype %s", dt)
	}
	n, err := d.ByteSize(1)
	if err != nil {
		t.Fatal(err)
	}
	return checkpoint.MemTensor(tensor.Info{Name: dt, DType: d, Shape: tensor.Shape{int64(len(b)) / n}}, b)
}
