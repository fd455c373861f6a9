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
