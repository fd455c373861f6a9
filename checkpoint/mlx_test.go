package checkpoint

import (
	"encoding/binary"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/formats/mlx"
	"github.com/tfconv/tfconv/formats/safetensors"
	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// writeMLX writes an MLX directory of one quantized layer "a" (2 rows of
// 64 values, 4 bits, one group each) with the given config.json, leaving
// out the tensors named in drop.
func writeMLX(t *testing.T, config string, drop ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "m")
	codes := make([]byte, 2*64/2)
	for i := range codes {
		codes[i] = byte(i*37) ^ 0x5a // codes 0..15 in both nibbles
	}
	half := func(v ...float32) []byte {
		b := make([]byte, 2*len(v))
		for i, f := range v {
			binary.LittleEndian.PutUint16(b[2*i:], quant.F32ToF16(f))
		}
		return b
	}
	body := map[string][]byte{
		"a.weight": codes, "a.scales": half(0.25, -0.125), "a.biases": half(-1, 2),
		"norm.weight": half(1, 1),
	}
	infos := []tensor.Info{
		{Name: "a.weight", DType: tensor.U32, Shape: tensor.Shape{2, 8}},
		{Name: "a.scales", DType: tensor.F16, Shape: tensor.Shape{2, 1}},
		{Name: "a.biases", DType: tensor.F16, Shape: tensor.Shape{2, 1}},
		{Name: "norm.weight", DType: tensor.F16, Shape: tensor.Shape{2}},
	}
	var keep []tensor.Info
	for _, in := range infos {
		dropped := false
		for _, d := range drop {
			dropped = dropped || d == in.Name
		}
		if !dropped {
			keep = append(keep, in)
		}
	}
	_, err := safetensors.WriteFolder(dir, false, map[string][]byte{"config.json": []byte(config)}, keep, 1<<30, mlx.Metadata,
		func(next func(string) (io.Writer, error)) error {
			for _, in := range keep {
				w, err := next(in.Name)
				if err != nil {
					return err
				}
				if _, err := w.Write(body[in.Name]); err != nil {
					return err
				}
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestMLXDequantized: an MLX layer reads as its f16 weight, each value
// code·scale + bias worked out here by hand from the bytes written.
func TestMLXDequantized(t *testing.T) {
	t.Parallel()
	dir := writeMLX(t, `{"model_type": "llama", "quantization": {"group_size": 64, "bits": 4}, "quantization_config": {"group_size": 64, "bits": 4}}`)
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w, ok := c.Tensor("a.weight")
	if !ok || w.DType != tensor.F16 || !w.Shape.Equal(tensor.Shape{2, 64}) || len(c.Tensors) != 2 {
		t.Fatalf("tensors %v, a.weight %v", len(c.Tensors), w)
	}
	b, err := w.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	scale, bias := []float32{0.25, -0.125}, []float32{-1, 2}
	for i := 0; i < 128; i++ {
		byt := byte((i/2)*37) ^ 0x5a
		code := float32(byt & 0xf)
		if i%2 == 1 {
			code = float32(byt >> 4)
		}
		want := code*scale[i/64] + bias[i/64] // exact in f16: a multiple of 1/8 below 32
		if got := quant.F16ToF32(binary.LittleEndian.Uint16(b[2*i:])); got != want {
			t.Fatalf("value %d: %v, want %v", i, got, want)
		}
	}
	if m, _ := c.SourceInfo.Str(SourceInfoQuantMethod); m != QuantMethodMLX {
		t.Errorf("quantization method %q", m)
	}
	cfg, _ := c.Config()
	if cfg["quantization"] != nil || cfg["quantization_config"] != nil {
		t.Error("config.json keeps the quantization")
	}
	// As stored: the codes themselves.
	s, err := OpenStored(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if w, _ := s.Tensor("a.weight"); len(s.Tensors) != 4 || w.DType != tensor.U32 {
		t.Errorf("stored: %d tensors, a.weight %v", len(s.Tensors), w.DType)
	}
}

// TestMLXMalformed: a layer that does not fit its config is an error
// naming the tensor.
func TestMLXMalformed(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		config string
		drop   []string
		want   string
	}{
		{`{"quantization": {"group_size": 64, "bits": 8}}`, nil, `tensor "a.weight" has 8 words per row; 64 columns at 8 bits`},
		{`{"quantization": {"group_size": 32, "bits": 4}}`, nil, `tensor "a.weight" has 8 words per row; 32 columns at 4 bits`},
		{`{"quantization": {"group_size": 64, "bits": 4}}`, []string{"a.biases"}, `has no "a.biases"`},
		{`{"quantization": {"group_size": 64, "bits": 4, "a": false}}`, nil, `keeps layer "a" in float`},
		{`{"quantization": {"group_size": 64, "bits": 4, "mode": "mxfp4"}}`, nil, `mode "mxfp4" is not supported`},
		{`{"quantization": {"group_size": "64", "bits": 4}}`, nil, `quantization.group_size is string`},
	} {
		dir := writeMLX(t, c.config, c.drop...)
		_, err := Open(dir)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), dir) {
			t.Errorf("%s: %v, want %q and the path", c.config, err, c.want)
		}
	}
}
