package gguf

import "testing"

// TestStrictLints: the strict reader accepts a tensor with a 0 dimension,
// as the spec does, but keeps the lint (File.Lints) for the commands that
// must say llama.cpp refuses it.
func TestStrictLints(t *testing.T) {
	t.Parallel()
	f, err := Open("../../testdata/malformed/gguf-zero-dim.gguf")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if len(f.Lints) != 1 {
		t.Fatalf("%d lints, want 1: %v", len(f.Lints), f.Lints)
	}
	p := f.Lints[0]
	if p.Code != CodeZeroDim || p.Offset != 63 || p.Item != `tensor "blk.0.ffn_up.weight"` || p.File != "../../testdata/malformed/gguf-zero-dim.gguf" {
		t.Errorf("lint %+v; want CodeZeroDim at 63 on blk.0.ffn_up.weight", p)
	}
	g, err := Open("../../testdata/gguf/llama-Q4_0.gguf")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if len(g.Lints) != 0 {
		t.Errorf("llama.cpp's own file has lints %v", g.Lints)
	}
}
