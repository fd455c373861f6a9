package convert

import (
	"cmp"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
)

// TestSelfCheckFindsChangedBytes converts the shipped tiny LLaMA, then
// changes one byte of one tensor in the output: the self-check, which reads
// the file back front to back, must name that tensor; a byte of the
// alignment padding between tensors changes no tensor and passes.
func TestSelfCheckFindsChangedBytes(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.gguf")
	if _, err := Run(shippedTinyLlama, out, Options{OutType: "q8_0"}); err != nil {
		t.Fatal(err)
	}
	c, err := checkpoint.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	var jobs []*job
	buf := make([]byte, 1<<20)
	for _, tn := range c.Tensors {
		sum, err := checksum(tn.Open(), tn.Size, buf)
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, &job{out: tn.Info, sum: sum})
	}
	victim := c.Tensors[len(c.Tensors)/2]
	_, off, ok := victim.Extent()
	if !ok {
		t.Fatalf("tensor %q of a local GGUF has no extent", victim.Name)
	}
	// A byte between two tensors (GGUF's alignment padding), if any.
	exts := slices.Clone(c.Tensors)
	slices.SortFunc(exts, func(a, b *checkpoint.Tensor) int { return cmp.Compare(a.Offset, b.Offset) })
	padAt := int64(-1)
	for i := 0; i+1 < len(exts) && padAt < 0; i++ {
		if end := exts[i].Offset + exts[i].Size; end < exts[i+1].Offset {
			padAt = end
		}
	}
	c.Close()
	if line, err := selfCheck(out, jobs); err != nil || !strings.HasPrefix(line, "self-check: ok") {
		t.Fatalf("unchanged output: %q, %v", line, err)
	}
	flip := func(at int64) {
		f, err := os.OpenFile(out, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		b := []byte{0}
		f.ReadAt(b, at)
		b[0] ^= 0x40
		if _, err := f.WriteAt(b, at); err != nil {
			t.Fatal(err)
		}
	}
	if padAt < 0 {
		t.Log("no padding between tensors in this output")
	} else {
		flip(padAt)
		if _, err := selfCheck(out, jobs); err != nil {
			t.Fatalf("a changed padding byte at %d: %v", padAt, err)
		}
		flip(padAt)
	}
	flip(off + victim.Size/2)
	_, err = selfCheck(out, jobs)
	if err == nil || !strings.Contains(err.Error(), `"`+victim.Name+`"`) || !strings.Contains(err.Error(), "differ from what was written") {
		t.Fatalf("a changed byte of %q: got %v", victim.Name, err)
	}
}
