package gguf

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// FuzzOpen feeds arbitrary bytes to the reader. It must never panic; when it
// accepts a file, every tensor must be readable in full and writing the file
// back must give a file that reads back the same.
func FuzzOpen(f *testing.F) {
	for _, name := range []string{"llama-Q2_K.gguf", "bert-Q2_K.gguf"} {
		b, err := os.ReadFile(filepath.Join(testdata, name))
		if err != nil {
			f.Fatal(err)
		}
		// The header alone keeps the seed small; the data is cut off, so
		// this seed exercises the bounds checks.
		f.Add(b[:24000])
		f.Add(b[:len(b)/64])
	}
	f.Add(validTwoTensor())
	for _, c := range badCases {
		b, _ := c.build()
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := open(data)
		if err != nil {
			return
		}
		var zeroDim *tensor.Info
		for i := range g.Tensors {
			ts := &g.Tensors[i]
			n, err := io.Copy(io.Discard, ts.Open())
			if err != nil || n != ts.Size {
				t.Fatalf("%s: read %d of %d: %v", ts.Name, n, ts.Size, err)
			}
			if slices.Contains(ts.Shape, 0) {
				zeroDim = &ts.Info
			}
		}
		if zeroDim != nil {
			// The reader accepts a 0 dimension (the spec allows it); the
			// writer refuses it, since ggml cannot load it.
			if CheckTensor(*zeroDim) == nil {
				t.Fatalf("%s %v: the writer accepts a 0 dimension", zeroDim.Name, zeroDim.Shape)
			}
			return
		}
		again, err := open(rewrite(t, g))
		if err != nil {
			t.Fatalf("rewritten file does not read: %v", err)
		}
		if !again.Metadata.Equal(g.Metadata) || len(again.Tensors) != len(g.Tensors) {
			t.Fatal("rewritten file differs")
		}
		for i := range g.Tensors {
			a, b := again.Tensors[i], g.Tensors[i]
			if a.Name != b.Name || a.DType != b.DType || !a.Shape.Equal(b.Shape) || a.Size != b.Size {
				t.Fatalf("tensor %d: %v vs %v", i, a.Info, b.Info)
			}
			x, _ := io.ReadAll(a.Open())
			y, _ := io.ReadAll(b.Open())
			if !bytes.Equal(x, y) {
				t.Fatalf("%s: data differs", a.Name)
			}
		}
	})
}
