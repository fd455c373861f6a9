package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// The ModelOpt fixtures (testdata/modelopt: testdata/ct/dense quantized and
// exported by NVIDIA ModelOpt itself, on its CPU path) read as float32
// weights equal, byte for byte, to ModelOpt's own dequantization of the
// exported tensors; so does the older export form, whose quantization is
// said only by hf_quant_config.json.
func TestModelOptMatchesModelOpt(t *testing.T) {
	for _, tc := range []struct {
		dir, scheme string
		bits        int64
	}{
		{"fp8", "float8 e4m3, a scale per tensor", 8},
		{"nvfp4", "NVFP4: e2m1, a float8 e4m3 scale per 16 values and a float32 scale_2 per tensor", 4},
	} {
		for _, form := range []string{"config", "hf_quant_config"} {
			t.Run(tc.dir+"/"+form, func(t *testing.T) {
				t.Parallel()
				dir := filepath.Join("..", "testdata", "modelopt", tc.dir)
				if form == "hf_quant_config" {
					dir = olderModelOpt(t, dir)
				}
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
				if m != "modelopt" || sc != tc.scheme || bits != tc.bits || layers != 14 || dr != 14 {
					t.Errorf("method %q, scheme %q, %d bits, %d layers, %d dropped; want modelopt, %q, %d, 14, 14 (the input scales)",
						m, sc, bits, layers, dr, tc.scheme, tc.bits)
				}
				if len(c.Tensors) != 21 {
					for _, x := range c.Tensors {
						t.Log(x.Name, x.DType, x.Shape)
					}
					t.Fatalf("%d tensors, want 21", len(c.Tensors))
				}
				ref, err := Open(filepath.Join("..", "testdata", "modelopt", tc.dir, "dequant.safetensors"))
				if err != nil {
					t.Fatal(err)
				}
				defer ref.Close()
				if len(ref.Tensors) != 14 {
					t.Fatalf("reference holds %d tensors", len(ref.Tensors))
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
					want, _ := r.ReadAll()
					if !bytes.Equal(b, want) {
						t.Errorf("%s: differs from ModelOpt's dequantization", r.Name)
					}
				}
			})
		}
	}
}

// olderModelOpt copies a ModelOpt fixture without config.json's
// quantization_config, as exports before it was written there look.
func olderModelOpt(t *testing.T, src string) string {
	dst := t.TempDir()
	for _, f := range []string{"model.safetensors", "hf_quant_config.json"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(src, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	delete(cfg, "quantization_config")
	b, _ = json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(dst, "config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// A ModelOpt quant_algo tfconv does not read is refused by name.
func TestModelOptRefusesOtherAlgos(t *testing.T) {
	t.Parallel()
	dir := olderModelOpt(t, filepath.Join("..", "testdata", "modelopt", "nvfp4"))
	hq := filepath.Join(dir, "hf_quant_config.json")
	b, _ := os.ReadFile(hq)
	if err := os.WriteFile(hq, bytes.Replace(b, []byte(`"NVFP4"`), []byte(`"W4A8_AWQ"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir)
	if err == nil || !errors.Is(err, tensor.ErrUnsupported) || !strings.Contains(err.Error(), `"W4A8_AWQ"`) {
		t.Fatalf("%v, want an unsupported error naming W4A8_AWQ", err)
	}
}
