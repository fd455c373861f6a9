package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// The compressed-tensors fixtures (testdata/ct, a tiny Llama quantized,
// compressed and saved by the compressed-tensors library itself, one per
// scheme) read as float32 weights that, rounded to the dtype the library
// decompresses to, equal the library's own decompression byte for byte.
func TestCompressedTensorsMatchLibrary(t *testing.T) {
	for _, tc := range []struct {
		dir, scheme string
		bits        int64
		dropped     int64
	}{
		{"w4a16", "4-bit integers, group size 32", 4, 0},
		{"w4a16-asym", "4-bit integers, group size 32, zero points", 4, 0},
		{"w8a16", "8-bit integers, one group per row", 8, 0},
		{"w8a8-int", "int8, a scale per row", 8, 0},
		{"fp8-dynamic", "float8 e4m3, a scale per row", 8, 0},
		{"fp8-block", "float8 e4m3, a scale per 32×32 block", 8, 0},
		{"nvfp4", "NVFP4: e2m1, a float8 e4m3 scale per 16 values and a float32 global scale", 4, 0},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join("..", "testdata", "ct", tc.dir)
			c, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			m, _ := c.SourceInfo.Str(SourceInfoQuantMethod)
			sc, _ := c.SourceInfo.Str(SourceInfoQuantScheme)
			bits, _ := c.SourceInfo.Int(SourceInfoQuantBits)
			layers, _ := c.SourceInfo.Int(SourceInfoQuantLayers)
			dr, _ := c.SourceInfo.Int(SourceInfoQuantDropped)
			if m != "compressed-tensors" || sc != tc.scheme || bits != tc.bits || layers != 14 || dr != tc.dropped {
				t.Errorf("method %q, scheme %q, %d bits, %d layers, %d dropped; want compressed-tensors, %q, %d, 14, %d",
					m, sc, bits, layers, dr, tc.scheme, tc.bits, tc.dropped)
			}
			// 14 projections, the embedding, 5 norms and lm_head: nothing else is left.
			if len(c.Tensors) != 21 {
				for _, x := range c.Tensors {
					t.Log(x.Name, x.DType, x.Shape)
				}
				t.Fatalf("%d tensors, want 21", len(c.Tensors))
			}
			ref, err := Open(filepath.Join(dir, "dequant.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			defer ref.Close()
			if len(ref.Tensors) != 14 {
				t.Fatalf("reference holds %d tensors", len(ref.Tensors))
			}
			// llama.cpp's converter (where it dequantizes the scheme) computes
			// the same float32 bytes.
			var conv struct {
				Sums map[string]string `json:"float32_sha256"`
			}
			if b, err := os.ReadFile(filepath.Join(dir, "llamacpp-sha256.json")); err == nil {
				if err := json.Unmarshal(b, &conv); err != nil || len(conv.Sums) != 14 {
					t.Fatalf("llamacpp-sha256.json: %v, %d sums", err, len(conv.Sums))
				}
			} else if tc.dir != "nvfp4" {
				t.Fatal(err)
			}
			for _, r := range ref.Tensors {
				got, ok := c.Tensor(r.Name)
				if !ok || got.DType != tensor.F32 || !got.Shape.Equal(r.Shape) {
					t.Fatalf("%s: %v", r.Name, got)
				}
				b, err := got.ReadAll()
				if err != nil {
					t.Fatal(err)
				}
				if want, ok := conv.Sums[r.Name]; ok {
					if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != want {
						t.Errorf("%s: float32 bytes differ from llama.cpp's converter's", r.Name)
					}
				} else if conv.Sums != nil {
					t.Errorf("%s: no llama.cpp sum", r.Name)
				}
				vals := make([]float32, got.NumElements())
				if err := quant.Dequantize(vals, b, tensor.F32); err != nil {
					t.Fatal(err)
				}
				rounded := make([]byte, len(vals)*int(r.DType.BlockBytes()))
				if err := quant.Quantize(rounded, vals, r.DType); err != nil {
					t.Fatal(err)
				}
				want, _ := r.ReadAll()
				if !bytes.Equal(rounded, want) {
					t.Errorf("%s: rounded to %v, differs from compressed-tensors' decompression", r.Name, r.DType)
				}
			}
			cfg, _ := c.Config()
			if _, ok := cfg["quantization_config"]; ok {
				t.Error("config.json keeps quantization_config")
			}
		})
	}
}

// A compressed-tensors layer whose parts disagree is refused naming the
// tensor and its offset.
func TestCompressedTensorsRefusals(t *testing.T) {
	const p = "model.layers.1.mlp.down_proj"
	for _, tc := range []struct {
		name, fixture string
		edit          func(info *tensor.Info, data []byte) []byte
		cfg           func(string) string
		want          []string
		unsupported   bool
	}{
		{name: "no scale", fixture: "w4a16",
			edit: func(info *tensor.Info, b []byte) []byte {
				if info.Name == p+".weight_scale" {
					return nil
				}
				return b
			},
			want: []string{p, `no tensor "` + p + `.weight_scale"`}},
		{name: "group size disagrees", fixture: "w4a16",
			cfg:  func(s string) string { return strings.Replace(s, `"group_size": 32`, `"group_size": 16`, 1) },
			want: []string{"weight_scale", "group size 16", "offset "}},
		{name: "asymmetric without zero points", fixture: "w4a16",
			cfg:  func(s string) string { return strings.Replace(s, `"symmetric": true`, `"symmetric": false`, 1) },
			want: []string{"weight_zero_point"}},
		{name: "3 bits", fixture: "w4a16",
			cfg:  func(s string) string { return strings.Replace(s, `"num_bits": 4`, `"num_bits": 3`, 1) },
			want: []string{"3 bits"}, unsupported: true},
		{name: "mxfp4 format", fixture: "nvfp4",
			cfg: func(s string) string {
				return strings.ReplaceAll(s, `"nvfp4-pack-quantized"`, `"mxfp4-pack-quantized"`)
			},
			want: []string{`"mxfp4-pack-quantized"`}, unsupported: true},
		{name: "nvfp4 scale shape", fixture: "nvfp4",
			edit: func(info *tensor.Info, b []byte) []byte {
				if info.Name == p+".weight_global_scale" {
					info.Shape = tensor.Shape{2}
					return append(b, b...)
				}
				return b
			},
			want: []string{p, "offset ", "global scale [2]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := rewriteFixture(t, filepath.Join("..", "ct", tc.fixture), tc.edit, tc.cfg)
			_, err := Open(dir)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, s := range tc.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			if got := errors.Is(err, tensor.ErrUnsupported); got != tc.unsupported {
				t.Errorf("errors.Is(ErrUnsupported) = %v (%v)", got, err)
			}
		})
	}
}
