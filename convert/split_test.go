package convert

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/tfconv/tfconv/formats/gguf"
)

// GGUF output split like gguf-split --split-max-size: several shards, each
// within the limit (one tensor may exceed it alone), the first holding all
// metadata; merging the set back gives exactly the single-file conversion.
func TestGGUFSplitOutput(t *testing.T) {
	dir := t.TempDir()
	single := filepath.Join(dir, "single.gguf")
	if _, err := Run(shippedTinyLlama, single, Options{OutType: OutF32}); err != nil {
		t.Fatal(err)
	}
	const limit = 200 << 10
	rep, err := Run(shippedTinyLlama, filepath.Join(dir, "split.gguf"), Options{OutType: OutF32, SplitMaxBytes: limit})
	if err != nil {
		t.Fatal(err)
	}
	s, err := gguf.OpenSplit(rep.Output)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Files) < 2 {
		t.Fatalf("%d shards for %d bytes of tensors with a %d-byte limit", len(s.Files), rep.Bytes, limit)
	}
	for i, f := range s.Files {
		var data int64
		for _, tt := range f.Tensors {
			data += tt.Size
		}
		if data > limit && len(f.Tensors) > 1 {
			t.Errorf("shard %d holds %d bytes of tensors in %d tensors, above the limit", i, data, len(f.Tensors))
		}
		if n, ok := f.Metadata.Int(gguf.KeySplitNo); !ok || n != int64(i) {
			t.Errorf("shard %d: split.no %d %v", i, n, ok)
		}
		if _, ok := f.Metadata.Get(keyArch); ok != (i == 0) {
			t.Errorf("shard %d: general.architecture present %v", i, ok)
		}
	}
	s.Close()
	merged := filepath.Join(dir, "merged.gguf")
	if _, err := Run(rep.Output, merged, Options{}); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(single)
	b, _ := os.ReadFile(merged)
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Errorf("merged split set (%d bytes) differs from the single-file conversion (%d bytes)", len(b), len(a))
	}
	// The shards exist now: no replacing them without Force, and nothing
	// is left behind by the refusal.
	before, _ := os.ReadDir(dir)
	if _, err := Run(shippedTinyLlama, filepath.Join(dir, "split.gguf"), Options{OutType: OutF32, SplitMaxBytes: limit}); err == nil {
		t.Error("existing shards replaced without Force")
	}
	if after, _ := os.ReadDir(dir); len(after) != len(before) {
		t.Errorf("refused run left files: %d entries, was %d", len(after), len(before))
	}
	if _, err := Run(shippedTinyLlama, filepath.Join(dir, "x.tfn"), Options{SplitMaxBytes: limit}); err == nil {
		t.Error("split size accepted for native output")
	}
}
