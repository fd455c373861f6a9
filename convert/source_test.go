package convert

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
)

// Source presents exactly the GGUF Run writes (--outtype f32): the same
// metadata in the same order, the same tensors in the same order, the same
// bytes.
func TestSourceEqualsConvertedGGUF(t *testing.T) {
	for _, fam := range []string{"qwen2", "mixtral", "gemma2", "phi3-longrope", "deepseek2"} {
		t.Run(fam, func(t *testing.T) {
			src := filepath.Join("..", "testdata", "arch", fam, "hf")
			out := filepath.Join(t.TempDir(), "f32.gguf")
			if _, err := Run(src, out, Options{To: GGUF, OutType: OutF32}); err != nil {
				t.Fatal(err)
			}
			want, err := checkpoint.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			defer want.Close()
			c, err := checkpoint.Open(src)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			got, err := Source(c, Options{To: GGUF, OutType: OutF32})
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got.Metadata) != fmt.Sprint(want.Metadata) || fmt.Sprint(got.SourceInfo) != fmt.Sprint(want.SourceInfo) {
				t.Errorf("metadata differs:\n%v\n%v", got.Metadata, want.Metadata)
			}
			if len(got.Tensors) != len(want.Tensors) {
				t.Fatalf("%d tensors, want %d", len(got.Tensors), len(want.Tensors))
			}
			for i, w := range want.Tensors {
				g := got.Tensors[i]
				if g.Name != w.Name || g.DType != w.DType || !g.Shape.Equal(w.Shape) || g.Size != w.Size {
					t.Fatalf("tensor %d: %s %v %v, want %s %v %v", i, g.Name, g.DType, g.Shape, w.Name, w.DType, w.Shape)
				}
				a, err := g.ReadAll()
				if err != nil {
					t.Fatal(err)
				}
				b, _ := w.ReadAll()
				if !bytes.Equal(a, b) {
					t.Errorf("%s: bytes differ", w.Name)
				}
			}
		})
	}
}

// Source's Hugging Face view of a GGUF is exactly the folder Run writes
// (--outtype f32): the same tensors in the same order with the same bytes,
// read whole or a few bytes at a time, the same side files and metadata.
// llama3 takes the Q/K permutation back (a whole-tensor transform), gemma
// its norms' +1, mixtral's Q4_K_M tensors are decoded chunk by chunk and
// bert's f32 ones copied.
func TestHFSourceEqualsConvertedHF(t *testing.T) {
	t.Parallel()
	for _, src := range []string{"arch/llama3/gguf/llama3-f32.gguf", "arch/gemma/gguf/gemma-f32.gguf",
		"arch/mixtral/gguf/mixtral-q4_k_m.gguf", "quantize/bert-f32.gguf"} {
		src := filepath.Join("..", "testdata", src)
		out := filepath.Join(t.TempDir(), "hf")
		if _, err := Run(src, out, Options{To: Safetensors, OutType: OutF32}); err != nil {
			t.Fatal(err)
		}
		want, err := checkpoint.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		defer want.Close()
		c, err := checkpoint.Open(src)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		got, err := Source(c, Options{To: Safetensors, OutType: OutF32})
		if err != nil {
			t.Fatal(err)
		}
		if !got.HuggingFace() || fmt.Sprint(got.Metadata) != fmt.Sprint(want.Metadata) {
			t.Errorf("%s: format %s, metadata %v; want %v", src, got.Format, got.Metadata, want.Metadata)
		}
		if g, w := got.AuxNames(), want.AuxNames(); fmt.Sprint(g) != fmt.Sprint(w) {
			t.Errorf("%s: side files %v, want %v", src, g, w)
		}
		for _, name := range want.AuxNames() {
			a, err := got.ReadAux(name)
			b, _ := want.ReadAux(name)
			if err != nil || !bytes.Equal(a, b) {
				t.Errorf("%s: %s differs (%v)", src, name, err)
			}
		}
		if len(got.Tensors) != len(want.Tensors) {
			t.Fatalf("%s: %d tensors, want %d", src, len(got.Tensors), len(want.Tensors))
		}
		for i, w := range want.Tensors {
			g := got.Tensors[i]
			if g.Name != w.Name || g.DType != w.DType || !g.Shape.Equal(w.Shape) || g.Size != w.Size {
				t.Fatalf("%s tensor %d: %s %v %v, want %s %v %v", src, i, g.Name, g.DType, g.Shape, w.Name, w.DType, w.Shape)
			}
			b, _ := w.ReadAll()
			a, err := g.ReadAll()
			if err != nil || !bytes.Equal(a, b) {
				t.Errorf("%s: %s: bytes differ (%v)", src, w.Name, err)
			}
			// A few bytes at a time, as a reader of rows reads.
			var small []byte
			r, p := g.Open(), make([]byte, 1000)
			for {
				n, err := r.Read(p)
				small = append(small, p[:n]...)
				if err != nil {
					break
				}
			}
			if !bytes.Equal(small, b) {
				t.Errorf("%s: %s: bytes read 1000 at a time differ (%d of %d)", src, w.Name, len(small), len(b))
			}
		}
	}
}
