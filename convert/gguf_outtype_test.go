package convert

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/tensor"
)

// TestGGUFOuttype: convert GGUF → GGUF with --outtype gives each tensor the
// type and the bytes llama.cpp d32676d7's converter writes from the Hugging
// Face source at that outtype (testdata/arch/outtype-llamacpp.json, made by
// gen_outtype.py: each tensor's type and sha256, and general.file_type),
// as tfconv's HF → GGUF does, and the same key-value pairs as that (GGUF →
// GGUF keeps its source's key order); a quantized tensor is re-encoded in
// another quantized type only with AllowRequantize.
func TestGGUFOuttype(t *testing.T) {
	t.Parallel()
	var ref struct {
		Files map[string]struct {
			FileType uint32 `json:"file_type"`
			Tensors  map[string]struct {
				Type   string `json:"type"`
				SHA256 string `json:"sha256"`
			} `json:"tensors"`
		} `json:"files"`
	}
	b, err := os.ReadFile(filepath.Join("..", "testdata", "arch", "outtype-llamacpp.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	for _, fam := range []string{"qwen3", "gemma3"} {
		for _, ot := range []string{OutQ8_0, OutBF16} {
			t.Run(fam+"/"+ot, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				a, b := filepath.Join(dir, "a.gguf"), filepath.Join(dir, "b.gguf")
				if _, err := Run(filepath.Join("..", "testdata", "arch", fam, "gguf", fam+"-f32.gguf"), a, Options{OutType: ot}); err != nil {
					t.Fatal(err)
				}
				if _, err := Run(filepath.Join("..", "testdata", "arch", fam, "hf"), b, Options{OutType: ot}); err != nil {
					t.Fatal(err)
				}
				ga, gb := openGGUF(t, a), openGGUF(t, b)
				want, ok := ref.Files[fam+"-"+ot]
				if !ok || len(want.Tensors) != len(ga.Tensors) {
					t.Fatalf("outtype-llamacpp.json: %d tensors for %s-%s, the output has %d", len(want.Tensors), fam, ot, len(ga.Tensors))
				}
				if ft, _ := ga.Metadata.Int(keyFileType); ft != int64(want.FileType) {
					t.Errorf("general.file_type %d, the converter's %d", ft, want.FileType)
				}
				kv := func(md tensor.Metadata) map[string]any {
					m := map[string]any{}
					for _, x := range md {
						m[x.Key] = x.Value
					}
					return m
				}
				if !reflect.DeepEqual(kv(ga.Metadata), kv(gb.Metadata)) {
					t.Error("key-value pairs differ from the Hugging Face conversion's")
				}
				if len(ga.Tensors) != len(gb.Tensors) {
					t.Fatalf("%d tensors, %d from Hugging Face", len(ga.Tensors), len(gb.Tensors))
				}
				for i := range ga.Tensors {
					x := &ga.Tensors[i]
					y, ok := gb.Tensor(x.Name)
					if !ok || x.DType != y.DType || !x.Shape.Equal(y.Shape) {
						t.Fatalf("%s: %v %v, from Hugging Face %v", x.Name, x.DType, x.Shape, y)
					}
					xb, _ := io.ReadAll(x.Open())
					yb, _ := io.ReadAll(y.Open())
					if !bytes.Equal(xb, yb) {
						t.Errorf("%s (%v): bytes differ from the Hugging Face conversion's", x.Name, x.DType)
					}
					sum := sha256.Sum256(xb)
					if w := want.Tensors[x.Name]; !strings.EqualFold(w.Type, x.DType.String()) || w.SHA256 != hex.EncodeToString(sum[:]) {
						t.Errorf("%s: %v, sha256 %x; the converter's %s, %s", x.Name, x.DType, sum[:6], w.Type, w.SHA256[:min(12, len(w.SHA256))])
					}
				}
			})
		}
	}
	t.Run("requantize", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		q8 := filepath.Join(dir, "q8.gguf")
		if _, err := Run(filepath.Join("..", "testdata", "arch", "qwen3", "gguf", "qwen3-f32.gguf"), q8, Options{OutType: OutQ8_0}); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "q.gguf")
		// llama-quantize's Q4_K_M of the Mamba fixture, to q8_0: re-encoding.
		k4 := filepath.Join("..", "testdata", "arch", "mamba", "gguf", "llama-quantize", "mamba-q4_k_m.gguf")
		_, err := Run(k4, out, Options{OutType: OutQ8_0})
		if err == nil || !errors.Is(err, tensor.ErrUnsupported) || !strings.Contains(err.Error(), "--allow-requantize") {
			t.Fatalf("%v, want a refusal naming --allow-requantize", err)
		}
		rep, err := Run(k4, out, Options{OutType: OutQ8_0, AllowRequantize: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Warnings) == 0 || !strings.Contains(strings.Join(rep.Warnings, "\n"), "written as Q8_0 from Q") {
			t.Errorf("warnings %q, want the re-encoded tensors named", rep.Warnings)
		}
		if _, err := Run(k4, out, Options{OutType: OutF32, Force: true}); err != nil {
			t.Fatal(err)
		}
		// Back to f32 dequantizes without the flag (above); q8_0 again copies every block.
		if _, err := Run(q8, out, Options{OutType: OutQ8_0, Force: true}); err != nil {
			t.Fatal(err)
		}
		g1, g2 := openGGUF(t, q8), openGGUF(t, out)
		for i := range g1.Tensors {
			x, y := &g1.Tensors[i], &g2.Tensors[i]
			xb, _ := io.ReadAll(x.Open())
			yb, _ := io.ReadAll(y.Open())
			if x.DType != y.DType || !bytes.Equal(xb, yb) {
				t.Errorf("%s: q8_0 → q8_0 is not a copy", x.Name)
			}
		}
	})
}

func openGGUF(t *testing.T, path string) *gguf.File {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
