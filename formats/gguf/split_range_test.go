package gguf

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// TestSplitShardsAndRange: Shards predicts every file's size to the byte,
// and a writer restricted by Range writes exactly those shards, identical to
// the whole set's.
func TestSplitShardsAndRange(t *testing.T) {
	t.Parallel()
	src, err := Open(filepath.Join(testdata, "llama-Q4_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dir := t.TempDir()
	const limit = 300_000
	whole := writeSplit(t, src, dir, limit)
	infos := make([]tensor.Info, len(src.Tensors))
	for i, ts := range src.Tensors {
		infos[i] = ts.Info
	}
	sw, err := NewSplitWriter(filepath.Join(dir, "model"), limit, src.Metadata, infos, nil)
	if err != nil {
		t.Fatal(err)
	}
	shards := sw.Shards()
	if len(shards) != len(whole) || len(shards) < 3 {
		t.Fatalf("%d shards planned, %d written (want at least 3)", len(shards), len(whole))
	}
	for i, sh := range shards {
		st, err := os.Stat(whole[i])
		if err != nil {
			t.Fatal(err)
		}
		if sh.Name != whole[i] || sh.Size != st.Size() {
			t.Errorf("shard %d: planned %s of %d bytes, written %s of %d", i, sh.Name, sh.Size, whole[i], st.Size())
		}
	}
	for _, r := range [][2]int{{1, 3}, {0, 1}, {len(shards) - 1, len(shards)}, {2, 2}} {
		part := t.TempDir()
		var created []string
		sw, err := NewSplitWriter(filepath.Join(part, "model"), limit, src.Metadata, infos, func(name string) (io.WriteCloser, error) {
			created = append(created, name)
			return os.Create(name)
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := sw.Range(r[0], r[1]); err != nil {
			t.Fatal(err)
		}
		lo, hi := 0, 0
		for i, sh := range shards {
			if i < r[0] {
				lo += len(sh.Tensors)
			}
			if i < r[1] {
				hi += len(sh.Tensors)
			}
		}
		if lo < hi {
			if _, err := sw.Next(src.Tensors[hi-1].Name); err == nil && hi-1 != lo {
				t.Errorf("range %v: Next took a tensor out of order", r)
			}
		}
		// A fresh writer: the out-of-order call above made it fail.
		created = nil
		sw, _ = NewSplitWriter(filepath.Join(part, "model"), limit, src.Metadata, infos, func(name string) (io.WriteCloser, error) {
			created = append(created, name)
			return os.Create(name)
		})
		sw.Range(r[0], r[1])
		for i := lo; i < hi; i++ {
			w, err := sw.Next(src.Tensors[i].Name)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(w, src.Tensors[i].Open()); err != nil {
				t.Fatal(err)
			}
		}
		if err := sw.Close(); err != nil {
			t.Fatalf("range %v: %v", r, err)
		}
		if len(created) != r[1]-r[0] {
			t.Fatalf("range %v created %v", r, created)
		}
		for k, name := range created {
			got, _ := os.ReadFile(name)
			want, _ := os.ReadFile(whole[r[0]+k])
			if filepath.Base(name) != filepath.Base(whole[r[0]+k]) || !bytes.Equal(got, want) {
				t.Errorf("range %v: %s differs from the whole run's %s", r, name, whole[r[0]+k])
			}
		}
	}
	if err := sw.Range(3, 1); err == nil {
		t.Error("Range(3, 1) accepted")
	}
}
