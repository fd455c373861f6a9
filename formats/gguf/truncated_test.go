package gguf

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// TestTruncatedData: a GGUF cut inside its data section (an interrupted
// download) is one defect, "truncated: expected N bytes, got M", from the
// strict reader and the lenient walk alike, N being where the last
// tensor's data ends.
func TestTruncatedData(t *testing.T) {
	t.Parallel()
	full, err := os.ReadFile("../../testdata/gguf/llama-Q4_0.gguf")
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewFile(bytes.NewReader(full), int64(len(full)))
	if err != nil {
		t.Fatal(err)
	}
	last := f.Tensors[len(f.Tensors)-1]
	need := last.Offset + last.Size
	cut := int64(len(full)) / 2
	b := full[:cut]
	// The first tensor the cut reaches.
	first := ""
	for _, x := range f.Tensors {
		if x.Offset+x.Size > cut {
			first = x.Name
			break
		}
	}
	want := fmt.Sprintf("truncated: expected %d bytes, got %d", need, cut)

	_, err = NewFile(bytes.NewReader(b), cut)
	var fe *tensor.FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("NewFile of the cut file: %v, want a FormatError", err)
	}
	if fe.Offset != cut || fe.Item != fmt.Sprintf("tensor %q", first) || !bytes.Contains([]byte(fe.Msg), []byte(want)) {
		t.Errorf("NewFile: %v; want offset %d, tensor %q, %q", err, cut, first, want)
	}

	var ps []*Problem
	h, err := Walk(bytes.NewReader(b), cut, WalkOptions{Problem: func(p *Problem) { ps = append(ps, p) }})
	if err != nil {
		t.Fatalf("lenient Walk stopped: %v", err)
	}
	if len(ps) != 1 || ps[0].Code != CodeDataTruncated || ps[0].Need != need || ps[0].Left != cut {
		t.Fatalf("lenient Walk found %v, want one CodeDataTruncated (need %d, left %d)", ps, need, cut)
	}
	if h.DataEnd != need {
		t.Errorf("DataEnd = %d, want %d", h.DataEnd, need)
	}
	// The whole file: DataEnd is known and nothing is reported.
	ps = nil
	if h, err = Walk(bytes.NewReader(full), int64(len(full)), WalkOptions{Problem: func(p *Problem) { ps = append(ps, p) }}); err != nil || len(ps) != 0 || h.DataEnd != need {
		t.Errorf("whole file: DataEnd %d, problems %v, err %v; want %d, none", h.DataEnd, ps, err, need)
	}
}
