package check

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/formats/gguf"
)

// TestGGUFTruncatedOneFinding: a GGUF cut inside its data is one
// gguf-truncated finding ("expected N bytes, got M"), not one
// gguf-out-of-bounds per missing tensor plus a false gguf-trailing-bytes for
// the part of a tensor that remains.
func TestGGUFTruncatedOneFinding(t *testing.T) {
	t.Parallel()
	full, err := os.ReadFile("../testdata/gguf/llama-Q4_0.gguf")
	if err != nil {
		t.Fatal(err)
	}
	cut := len(full) / 2
	path := filepath.Join(t.TempDir(), "cut.gguf")
	if err := os.WriteFile(path, full[:cut], 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Check(path)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("truncated: expected %d bytes, got %d", len(full), cut)
	if len(r.Findings) != 1 {
		t.Fatalf("%d findings, want 1:\n%v", len(r.Findings), r.Findings)
	}
	if f := r.Findings[0]; f.Rule != "gguf-truncated" || f.Offset != int64(cut) || !strings.Contains(f.Message, want) {
		t.Errorf("finding %v; want gguf-truncated at %d, %q", f, cut, want)
	}
}

// TestGGUFOffsetsAreFileOffsets: the data offset check prints for a tensor
// is the file offset inspect --tensors (checkpoint, gguf.Tensor.Offset)
// gives it, not the one relative to the data section.
func TestGGUFOffsetsAreFileOffsets(t *testing.T) {
	t.Parallel()
	src := "../testdata/gguf/llama-Q4_0.gguf"
	full, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.NewFile(bytes.NewReader(full), int64(len(full)))
	if err != nil {
		t.Fatal(err)
	}
	h, err := gguf.Walk(bytes.NewReader(full), int64(len(full)), gguf.WalkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Move the last tensor's data 1 MiB on: past the end, out of ggml's
	// layout.
	const shift = 1 << 20
	i := len(h.Tensors) - 1
	b := bytes.Clone(full)
	binary.LittleEndian.PutUint64(b[h.Tensors[i].OffsetPos:], h.Tensors[i].Rel+shift)
	path := filepath.Join(t.TempDir(), "moved.gguf")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Check(path)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("data at file offset %d + %d bytes", f.Tensors[i].Offset+shift, f.Tensors[i].Size)
	for _, x := range r.Findings {
		if x.Rule == "gguf-out-of-bounds" {
			if x.Item != fmt.Sprintf("tensor %q", f.Tensors[i].Name) || !strings.Contains(x.Message, want) {
				t.Errorf("finding %v; want %q", x, want)
			}
			return
		}
	}
	t.Errorf("no gguf-out-of-bounds finding in %v", r.Findings)
}
