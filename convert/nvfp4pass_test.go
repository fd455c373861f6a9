package convert

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/tensor"
)

// nvfp4Record is what testdata/nvfp4gguf/gen.py recorded of llama.cpp
// d32676d7's converter on an NVFP4 fixture: its GGUF's tensors in file
// order (ggml type, ggml shape, sha256), its metadata but the tokenizer's,
// and llama.cpp's logits on that GGUF.
type nvfp4Record struct {
	Metadata map[string]any `json:"metadata"`
	Tensors  []struct {
		Name   string  `json:"name"`
		Type   string  `json:"type"`
		Shape  []int64 `json:"shape"`
		SHA256 string  `json:"sha256"`
	} `json:"tensors"`
	IDs    []int `json:"ids"`
	Logits struct {
		Logits [][]float32 `json:"logits"`
	} `json:"logits"`
}

func readNVFP4Record(t *testing.T, name string) *nvfp4Record {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "nvfp4gguf", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var r nvfp4Record
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// nvfp4Fixtures are the NVFP4 checkpoints llama.cpp's converter takes
// (rows of whole 64s): ModelOpt's export and compressed-tensors', by the
// record's name.
var nvfp4Fixtures = map[string]string{
	"modelopt": filepath.Join("..", "testdata", "modelopt", "nvfp4-ffn128"),
	"ct":       filepath.Join("..", "testdata", "ct", "nvfp4-ffn128"),
	// a Qwen3-MoE whose experts ModelOpt stores one NVFP4 tensor each: the
	// converter stacks them with per-expert scale vectors
	"modelopt-moe": filepath.Join("..", "testdata", "modelopt", "nvfp4-moe"),
}

// TestNVFP4PassThrough: tfconv's GGUF of a ModelOpt and a compressed-tensors
// NVFP4 checkpoint is llama.cpp d32676d7's converter's, tensor for tensor
// in the same order: the NVFP4 weights as GGUF NVFP4 blocks with the same
// bytes (copied: Llama's Q/K rows permuted whole, nothing re-encoded), the
// per-tensor ".scale" and ".input_scale" F32 beside them where they are not
// 1, the rest as at f16; and the same key-value pairs but the tokenizer's
// (general.file_type MOSTLY_NVFP4). Each weight's report says copied.
// modelopt-moe's experts, one NVFP4 tensor each in the checkpoint, are
// stacked per projection with F32 [experts] ".scale"/".input_scale"
// vectors, where and as the converter writes them.
func TestNVFP4PassThrough(t *testing.T) {
	t.Parallel()
	for name, fixture := range nvfp4Fixtures {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want := readNVFP4Record(t, name)
			// the converter names the model after its folder
			src := filepath.Join(t.TempDir(), name)
			if err := os.CopyFS(src, os.DirFS(fixture)); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), name+".gguf")
			rep, err := Run(src, out, Options{})
			if err != nil {
				t.Fatal(err)
			}
			copied := 0
			for _, r := range rep.Tensors {
				if r.DType == "NVFP4" {
					if !r.Copied || r.SourceDType != "NVFP4" {
						t.Errorf("%s: copied %v from %v, want copied NVFP4 blocks", r.Name, r.Copied, r.SourceDType)
					}
					copied++
				}
			}
			if copied != 14 {
				t.Errorf("%d NVFP4 tensors copied, want 14", copied)
			}
			g := openGGUF(t, out)
			if len(g.Tensors) != len(want.Tensors) {
				t.Fatalf("%d tensors, the converter wrote %d", len(g.Tensors), len(want.Tensors))
			}
			for i, w := range want.Tensors {
				x := &g.Tensors[i]
				shape := slices.Clone(w.Shape)
				slices.Reverse(shape)
				if x.Name != w.Name || !strings.EqualFold(x.DType.String(), w.Type) || !x.Shape.Equal(tensor.Shape(shape)) {
					t.Fatalf("tensor %d: %s %v %v, the converter's %s %s %v", i, x.Name, x.DType, x.Shape, w.Name, w.Type, shape)
				}
				b, err := io.ReadAll(x.Open())
				if err != nil {
					t.Fatal(err)
				}
				if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != w.SHA256 {
					t.Errorf("%s (%v): bytes differ from the converter's", x.Name, x.DType)
				}
			}
			got := map[string]any{}
			for _, kv := range g.Metadata {
				if strings.HasPrefix(kv.Key, "tokenizer.") {
					continue
				}
				if s, ok := kv.Value.Str(); ok {
					got[kv.Key] = s
				} else if f, ok := kv.Value.Float(); ok {
					got[kv.Key] = f
				} else {
					got[kv.Key] = kv.Value.Any()
				}
			}
			if !reflect.DeepEqual(got, want.Metadata) {
				t.Errorf("key-value pairs\n%v\nthe converter's\n%v", got, want.Metadata)
			}
		})
	}
}

// TestNVFP4QuantizeReadsValues: quantize reads an NVFP4 checkpoint through
// the GGUF view (Source) as its float32 values, not as the blocks the
// converter carries (which need their ".scale" to mean those values): the
// view's weights equal the checkpoint's dequantized ones, and it has no
// ".scale" tensors.
func TestNVFP4QuantizeReadsValues(t *testing.T) {
	t.Parallel()
	c, err := checkpoint.Open(nvfp4Fixtures["modelopt"])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v, err := Source(c, Options{To: GGUF, OutType: OutF32})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := c.Tensor("model.layers.1.mlp.down_proj.weight")
	got, ok := v.Tensor("blk.1.ffn_down.weight")
	if !ok || got.DType != tensor.F32 {
		t.Fatalf("blk.1.ffn_down.weight: %v", got)
	}
	a, _ := got.ReadAll()
	b, _ := want.ReadAll()
	if !bytes.Equal(a, b) {
		t.Error("blk.1.ffn_down.weight: not the checkpoint's dequantized values")
	}
	for _, x := range v.Tensors {
		if strings.HasSuffix(x.Name, ".scale") || x.DType == tensor.NVFP4 {
			t.Errorf("%s (%v) in the view", x.Name, x.DType)
		}
	}
}
