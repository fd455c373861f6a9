package checkpoint

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// The FP8 fixtures (testdata/fp8, made with torch 2.6's float8 types in the
// layouts DeepSeek-V3, compressed-tensors and FBGEMM checkpoints use) read
// as float32 weights equal, byte for byte, to what llama.cpp's converter
// computes from them (dequant.safetensors).
func TestFP8MatchesReference(t *testing.T) {
	for _, tc := range []struct {
		dir, method, scheme string
		dropped             int64
	}{
		{"deepseek-block", "fp8", "float8 e4m3, a scale per 128×128 block", 0},
		{"ct-channel", "compressed-tensors", "float8 e4m3, a scale per row", 0},
		{"ct-tensor", "compressed-tensors", "float8 e4m3, a scale per tensor", 3},
		{"fbgemm", "fbgemm_fp8", "float8 e4m3, a scale per row", 3},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			dir := filepath.Join("..", "testdata", "fp8", tc.dir)
			c, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			m, _ := c.SourceInfo.Str(SourceInfoQuantMethod)
			sc, _ := c.SourceInfo.Str(SourceInfoQuantScheme)
			dr, _ := c.SourceInfo.Int(SourceInfoQuantDropped)
			if m != tc.method || sc != tc.scheme || dr != tc.dropped {
				t.Errorf("method %q, scheme %q, %d dropped; want %q, %q, %d", m, sc, dr, tc.method, tc.scheme, tc.dropped)
			}
			if len(c.Tensors) != 4 {
				for _, x := range c.Tensors {
					t.Log(x.Name, x.DType, x.Shape)
				}
				t.Fatalf("%d tensors, want 3 weights and the norm", len(c.Tensors))
			}
			ref, err := Open(filepath.Join(dir, "dequant.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			defer ref.Close()
			for _, r := range ref.Tensors {
				got, ok := c.Tensor(r.Name)
				if !ok || got.DType != tensor.F32 || !got.Shape.Equal(r.Shape) {
					t.Fatalf("%s: %v", r.Name, got)
				}
				want, _ := r.ReadAll()
				b, err := got.ReadAll()
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(b, want) {
					t.Errorf("%s: differs from llama.cpp's dequant_simple", r.Name)
				}
			}
			cfg, _ := c.Config()
			if _, ok := cfg["quantization_config"]; ok {
				t.Error("config.json keeps quantization_config")
			}
		})
	}
}

func TestFP8Refusals(t *testing.T) {
	const w = "model.layers.0.mlp.down_proj.weight"
	for _, tc := range []struct {
		name, fixture string
		edit          func(info *tensor.Info, data []byte) []byte
		cfg           func(string) string
		want          []string
		unsupported   bool
	}{
		{name: "no scale", fixture: "deepseek-block",
			edit: func(info *tensor.Info, b []byte) []byte {
				if info.Name == w+"_scale_inv" {
					return nil
				}
				return b
			},
			want: []string{w, `no scale tensor "` + w + `_scale_inv"`, "offset "}},
		{name: "block size disagrees", fixture: "deepseek-block",
			cfg:  func(s string) string { return strings.Replace(s, "128,\n      128", "64,\n      64", 1) },
			want: []string{`"lm_head.weight_scale_inv"`, "64×64 blocks", "[2 4]"}},
		{name: "e5m2 fmt", fixture: "deepseek-block", cfg: func(s string) string { return strings.Replace(s, `"fmt": "e4m3"`, `"fmt": "e5m2"`, 1) },
			want: []string{"fmt", "e5m2"}, unsupported: true},
		{name: "int-quantized", fixture: "ct-channel", cfg: func(s string) string { return strings.Replace(s, `"float-quantized"`, `"pack-quantized"`, 1) },
			want: []string{"pack-quantized"}, unsupported: true},
		{name: "group strategy", fixture: "ct-tensor", cfg: func(s string) string {
			return strings.ReplaceAll(s, `"strategy": "tensor"`, `"strategy": "group"`)
		},
			want: []string{`strategy "group"`}, unsupported: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := rewriteFixture(t, filepath.Join("..", "fp8", tc.fixture), tc.edit, tc.cfg)
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
