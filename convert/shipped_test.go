package convert

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/internal/fixtures"
	"github.com/tfconv/tfconv/tensor"
)

var update = flag.Bool("update", false, "regenerate testdata/convert/gpt2/expected.json from shared/fixtures")

const (
	shippedGPT2     = "../testdata/convert/gpt2/hf"
	shippedExpected = "../testdata/convert/gpt2/expected.json"
)

// expected is llama.cpp's converter output for the shipped GPT-2, reduced to
// hashes so it ships small: per outtype, every tensor's name, type, shape
// and SHA-256 of its bytes, and every metadata key with its kind and the
// SHA-256 of its JSON value, in file order. It is extracted from
// shared/fixtures/interop/gpt2/gguf/*.gguf with -update; nothing in it comes
// from tfconv's converter.
type expected struct {
	Note  string                  `json:"note"`
	Files map[string]expectedGGUF `json:"files"`
}

type expectedGGUF struct {
	File     string           `json:"file"`
	Ordered  bool             `json:"ordered"`
	Tensors  []expectedTensor `json:"tensors"`
	Metadata []expectedKV     `json:"metadata"`
}

type expectedTensor struct {
	Name   string       `json:"name"`
	DType  string       `json:"dtype"`
	Shape  tensor.Shape `json:"shape"`
	SHA256 string       `json:"sha256"`
}

type expectedKV struct {
	Key    string `json:"key"`
	Kind   string `json:"kind"`
	SHA256 string `json:"sha256"`
}

func digestGGUF(t *testing.T, path string) expectedGGUF {
	t.Helper()
	c, err := checkpoint.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var e expectedGGUF
	for _, tt := range c.Tensors {
		b, err := tt.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		e.Tensors = append(e.Tensors, expectedTensor{Name: tt.Name, DType: tt.DType.String(), Shape: tt.Shape, SHA256: sha(b)})
	}
	for _, kv := range c.Metadata {
		j, err := json.Marshal(kv.Value)
		if err != nil {
			t.Fatal(err)
		}
		e.Metadata = append(e.Metadata, expectedKV{Key: kv.Key, Kind: kv.Value.Kind().String(), SHA256: sha(j)})
	}
	return e
}

func updateExpected(t *testing.T) {
	dir := filepath.Join(fixtures.Require(t), "interop", "gpt2", "gguf")
	ex := expected{Note: "llama.cpp c392e509 convert_hf_to_gguf.py output for interop/gpt2/hf, hashed by convert's TestShippedGPT2 -update", Files: map[string]expectedGGUF{}}
	for _, ot := range []string{OutF32, OutF16, OutBF16, OutQ8_0} {
		p := ggufFixture(t, dir, "gpt2", ot)
		e := digestGGUF(t, p)
		e.File = "interop/gpt2/gguf/" + filepath.Base(p)
		e.Ordered = filepath.Base(p) == "gpt2-"+ot+".gguf"
		ex.Files[ot] = e
	}
	b, err := json.MarshalIndent(ex, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(shippedExpected, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestShippedGPT2 converts the shipped GPT-2 (transformers' files) with
// each outtype and compares against the digest of llama.cpp's output: same
// tensors, types, shapes and bytes; same metadata keys (in order for the
// converter's own files) and values, general.name aside.
func TestShippedGPT2(t *testing.T) {
	if *update {
		updateExpected(t)
	}
	b, err := os.ReadFile(shippedExpected)
	if err != nil {
		t.Fatal(err)
	}
	var ex expected
	if err := json.Unmarshal(b, &ex); err != nil {
		t.Fatal(err)
	}
	if len(ex.Files) != 4 {
		t.Fatalf("expected.json has %d outtypes", len(ex.Files))
	}
	for ot, want := range ex.Files {
		t.Run(ot, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "m.gguf")
			if _, err := Run(shippedGPT2, out, Options{OutType: ot}); err != nil {
				t.Fatal(err)
			}
			got := digestGGUF(t, out)
			byName := map[string]expectedTensor{}
			for _, tt := range got.Tensors {
				byName[tt.Name] = tt
			}
			if len(got.Tensors) != len(want.Tensors) {
				t.Errorf("%d tensors, llama.cpp %d", len(got.Tensors), len(want.Tensors))
			}
			for _, w := range want.Tensors {
				g, ok := byName[w.Name]
				if !ok {
					t.Errorf("missing tensor %q", w.Name)
					continue
				}
				if g.DType != w.DType || !g.Shape.Equal(w.Shape) || g.SHA256 != w.SHA256 {
					t.Errorf("tensor %q: %s %v %.12s, llama.cpp %s %v %.12s", w.Name, g.DType, g.Shape, g.SHA256, w.DType, w.Shape, w.SHA256)
				}
			}
			var gk, wk []string
			gm := map[string]expectedKV{}
			for _, kv := range got.Metadata {
				gk = append(gk, kv.Key)
				gm[kv.Key] = kv
			}
			for _, w := range want.Metadata {
				wk = append(wk, w.Key)
				if g := gm[w.Key]; g.Kind != w.Kind || g.SHA256 != w.SHA256 && !allowedDiff("gpt2", w.Key) {
					t.Errorf("metadata %s: %s %.12s, llama.cpp %s %.12s", w.Key, g.Kind, g.SHA256, w.Kind, w.SHA256)
				}
			}
			if !want.Ordered {
				slices.Sort(gk)
				slices.Sort(wk)
			}
			if !slices.Equal(gk, wk) {
				t.Errorf("metadata keys\n ours %v\n want %v", gk, wk)
			}
		})
	}
}
