package checkpoint

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/hubtest"
)

// TestSourceCheck: the check of a remote checkpoint's files runs when the
// last tensor of the run's set is read, whatever order the run reads them
// in (here back to front), and each byte is fetched once; narrowed to some
// tensors (Only), it runs once those are read and fetches nothing more of
// files they do not come from than the header read at open; a corrupt
// file is the error of the read that completes the set.
func TestSourceCheck(t *testing.T) {
	m := hubtest.Tiny()
	repo, err := m.Repo("org/tiny", m.Layers, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := hubtest.Start(repo)
	t.Cleanup(s.Close)
	t.Setenv("HF_ENDPOINT", s.URL)
	os.Unsetenv("HF_TOKEN")
	open := func() (*Checkpoint, *SourceCheck) {
		s.ResetServed()
		c, err := Open("hf://org/tiny")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, c.CheckSources()
	}
	readAll := func(ts []*Tensor) error {
		for _, tt := range ts {
			if _, err := io.Copy(io.Discard, tt.Open()); err != nil {
				return err
			}
		}
		return nil
	}
	c, chk := open()
	var rev []*Tensor
	for i := len(c.Tensors) - 1; i >= 0; i-- {
		rev = append(rev, c.Tensors[i])
	}
	if err := readAll(rev[:len(rev)-1]); err != nil {
		t.Fatal(err)
	}
	if ran, _ := chk.Ran(); ran {
		t.Fatal("the check ran before the set's last tensor was read")
	}
	if err := readAll(rev[len(rev)-1:]); err != nil {
		t.Fatal(err)
	}
	if ran, err := chk.Ran(); !ran || err != nil {
		t.Fatalf("after every tensor: ran %v, %v", ran, err)
	}
	served := s.Served()
	for name, f := range repo.Files {
		if f.LFS && served[name] != f.Size() {
			t.Errorf("read back to front: %s: %d bytes served of %d", name, served[name], f.Size())
		}
	}

	// Only the first file's tensors.
	c, chk = open()
	first := c.Files[0].Path
	var set []*Tensor
	var names []string
	for _, tt := range c.Tensors {
		if tt.File == first {
			set = append(set, tt)
			names = append(names, tt.Name)
		}
	}
	chk.Only(names)
	if err := readAll(set); err != nil {
		t.Fatal(err)
	}
	if ran, err := chk.Ran(); !ran || err != nil {
		t.Fatalf("after the set: ran %v, %v", ran, err)
	}
	// A file is read whole (a tensor of the set came from it, an FP8
	// weight's scales too) or only its header's block.
	served = s.Served()
	untouched := 0
	for name, f := range repo.Files {
		switch got := served[name]; {
		case !f.LFS || got == f.Size():
		case got <= 1<<16:
			untouched++
		default:
			t.Errorf("%s: %d bytes served of %d: neither whole (checked) nor its header only", name, got, f.Size())
		}
	}
	if untouched == 0 {
		t.Errorf("every file was fetched whole for a set from %s: %v", first, served)
	}

	// A corrupt byte: a read, at the latest the one that completes the
	// set, fails naming the file.
	last := repo.Files[strings.TrimPrefix(first[strings.LastIndexByte(first, '/'):], "/")]
	s.SetFaults(hubtest.Faults{Corrupt: last.Name, CorruptByte: last.Size() - 1})
	c, _ = open()
	rev = rev[:0]
	for i := len(c.Tensors) - 1; i >= 0; i-- {
		rev = append(rev, c.Tensors[i])
	}
	err = readAll(rev)
	if err == nil || !strings.Contains(err.Error(), "checksum mismatch") || !strings.Contains(err.Error(), last.Name) {
		t.Fatalf("corrupt %s: %v", last.Name, err)
	}
}
