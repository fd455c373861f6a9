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

// FuzzWalk holds the lenient walk to the strict one on arbitrary bytes:
// neither panics, the strict walk's error is the lenient walk's first defect
// that is not a lint (same offset, key or tensor, and message), a strict
// walk that succeeds means the lenient one found nothing but lints, and
// skipping arrays changes nothing but the kept values.
func FuzzWalk(f *testing.F) {
	for _, name := range []string{"llama-Q2_K.gguf", "bert-Q2_K.gguf"} {
		b, err := os.ReadFile(filepath.Join(testdata, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:24000])
	}
	f.Add(validTwoTensor())
	for _, c := range badCases {
		b, _ := c.build()
		f.Add(b)
	}
	// check's malformed corpus: one file per defect the walk knows.
	corpus, err := filepath.Glob(filepath.Join("..", "..", "testdata", "malformed", "*.gguf"))
	if err != nil || len(corpus) == 0 {
		f.Fatalf("no malformed corpus: %v", err)
	}
	for _, name := range corpus {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(walksAgree)
}

// walksAgree is FuzzWalk's property.
func walksAgree(t *testing.T, data []byte) {
	strict, strictErr := Walk(bytes.NewReader(data), int64(len(data)), WalkOptions{})
	var all [2][]Problem
	var ends [2]error
	var heads [2]*Header
	for i, skip := range []bool{false, true} {
		heads[i], ends[i] = Walk(bytes.NewReader(data), int64(len(data)), WalkOptions{SkipArrays: skip, Problem: func(p *Problem) {
			all[i] = append(all[i], *p)
		}})
	}
	var first *Problem
	for i := range all[0] {
		if !all[0][i].Lint {
			first = &all[0][i]
			break
		}
	}
	switch {
	case strictErr == nil && first != nil:
		t.Fatalf("strict walk accepts what the lenient walk finds: %v", first.Error())
	case strictErr != nil && first == nil:
		t.Fatalf("strict walk fails (%v), the lenient walk finds nothing", strictErr)
	case strictErr != nil && strictErr.Error() != first.Error():
		t.Fatalf("strict walk: %v\nlenient walk's first: %v", strictErr, first.Error())
	}
	// The strict walk keeps the lints the lenient one reports before its
	// first defect (Header.Lints, which inspect shows).
	var lints []string
	for _, p := range all[0] {
		if !p.Lint {
			break
		}
		lints = append(lints, p.Error())
	}
	if len(strict.Lints) != len(lints) {
		t.Fatalf("strict walk kept %d lints, the lenient walk found %d before its first defect", len(strict.Lints), len(lints))
	}
	for i, p := range strict.Lints {
		if p.Error() != lints[i] {
			t.Fatalf("lint %d: strict %v, lenient %v", i, p.Error(), lints[i])
		}
	}
	if (ends[0] == nil) != (ends[1] == nil) || len(all[0]) != len(all[1]) {
		t.Fatalf("SkipArrays changes the walk: %v vs %v, %d vs %d problems", ends[0], ends[1], len(all[0]), len(all[1]))
	}
	for i := range all[0] {
		if all[0][i].Error() != all[1][i].Error() {
			t.Fatalf("problem %d: %v vs %v with SkipArrays", i, all[0][i].Error(), all[1][i].Error())
		}
	}
	if ends[0] != nil && !all[0][len(all[0])-1].Fatal {
		t.Fatalf("the walk stopped (%v) after a problem that is not fatal", ends[0])
	}
	if len(heads[0].Tensors) != len(heads[1].Tensors) || len(heads[0].KeyOffsets) != len(heads[0].Metadata) {
		t.Fatal("headers differ in shape")
	}
}
