package imatrix

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Issue 19: against current llama-imatrix's GGUF (the fork of
// testdata/imatrix/README.md), which keeps raw sums and exact counts: the
// counts (tokens per matrix, and per expert the tokens routed to it) are
// equal, the means within maxRelDiff, and the metadata the same.
func TestComputeMatchesLlamaImatrixGGUF(t *testing.T) {
	for _, r := range append(references(t), recurrentReferences...) {
		got := compute(t, r.model)
		want, err := Open(filepath.Join(testdata, r.name+".gguf"))
		if err != nil {
			t.Fatal(err)
		}
		if want.ChunkCount != got.ChunkCount || want.ChunkSize != got.ChunkSize || fmt.Sprint(want.Datasets) != fmt.Sprint(got.Datasets) {
			t.Errorf("%s: %d chunks of %d, datasets %q; llama-imatrix: %d of %d, %q", r.name,
				got.ChunkCount, got.ChunkSize, got.Datasets, want.ChunkCount, want.ChunkSize, want.Datasets)
		}
		for _, w := range want.Entries {
			g, ok := got.Entry(w.Name)
			if ok && fmt.Sprint(g.Counts) != fmt.Sprint(w.Counts) {
				t.Errorf("%s: %s: counts %v, llama-imatrix %v", r.name, w.Name, g.Counts, w.Counts)
			}
		}
		compareMeans(t, r.name+" vs GGUF", got, want)
	}
}

// recurrentReferences are fixtures of the recurrent families (issue 32),
// with llama-imatrix d32676d7's GGUF of each alone (c392e509 predates
// them): Mamba-1's selective scan, Granite 4.0-H's Mamba-2 (with
// attention and experts), LFM2's short convolutions and Qwen3-Next's gated
// DeltaNet, whose projections llama-imatrix collects as it does
// attention's.
var recurrentReferences = []reference{
	{"mamba", "../testdata/arch/mamba/gguf/mamba-f32.gguf"},
	{"mamba2", "../testdata/arch/mamba2/gguf/mamba2-f32.gguf"},
	{"granitehybrid", "../testdata/arch/granitehybrid/gguf/granitehybrid-f32.gguf"},
	{"lfm2", "../testdata/arch/lfm2/gguf/lfm2-f32.gguf"},
	{"qwen3next", "../testdata/arch/qwen3next/gguf/qwen3next-f32.gguf"},
}

// WriteGGUF and WriteDat write llama-imatrix's bytes: its GGUF read and
// written again is the same file, and written as .dat it is the file
// llama-imatrix --output-format dat wrote from the same data.
func TestWriteMatchesLlamaImatrix(t *testing.T) {
	names := []string{"mixtral", "llama3", "tiny-fortunes", "interop-llama"}
	for _, r := range recurrentReferences {
		names = append(names, r.name)
	}
	for _, name := range names {
		path := filepath.Join(testdata, name+".gguf")
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		m, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := WriteGGUF(&b, m); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Bytes(), raw) {
			t.Errorf("%s: written GGUF (%d bytes) differs from llama-imatrix's (%d bytes)", name, b.Len(), len(raw))
		}
		dat, err := os.ReadFile(filepath.Join(testdata, name+".dat"))
		if os.IsNotExist(err) {
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		b.Reset()
		if err := WriteDat(&b, m); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Bytes(), dat) {
			t.Errorf("%s: written .dat (%d bytes) differs from llama-imatrix's (%d bytes)", name, b.Len(), len(dat))
		}
	}
}
