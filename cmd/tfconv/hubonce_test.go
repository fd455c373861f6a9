package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/hubtest"
	"github.com/tfconv/tfconv/internal/httprange"
)

// lfsSizes is the size of each LFS file (the safetensors shards) of repo.
func lfsSizes(repo *hubtest.Repo) map[string]int64 {
	m := map[string]int64{}
	for name, f := range repo.Files {
		if f.LFS {
			m[name] = f.Size()
		}
	}
	return m
}

// TestHubBytesOnce: convert and quantize of a remote checkpoint download
// each source byte exactly once, the sha256 check of every file included
// (the check runs once every tensor the run reads has been read, whatever
// its order: before, quantize read the tensor convert reads last second,
// and the check then fetched the whole source ahead of the run, which read
// it again). The test Hub counts the bytes it sends of each file. A
// corrupted file still stops each run with nothing written, and diff and
// verify with an error naming it.
func TestHubBytesOnce(t *testing.T) {
	s, repo := startHub(t)
	dir := t.TempDir()
	sizes := lfsSizes(repo)
	shard := "model-00002-of-000003.safetensors"
	for _, args := range [][]string{
		{"convert", "hf://org/tiny", "OUT"},
		{"convert", "hf://org/tiny", "OUT", "--outtype", "bf16"},
		{"quantize", "hf://org/tiny", "OUT", "--type", "q4_k_m"},
		{"quantize", "hf://org/tiny", "OUT", "--type", "q8_0", "--split-max-size", "1M"},
	} {
		name := strings.Join(args[3:], "")
		out := filepath.Join(dir, args[0]+name+".gguf")
		args[2] = out
		s.SetFaults(hubtest.Faults{})
		s.ResetServed()
		if code, _, errb := run(t, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb)
		}
		served := s.Served()
		var total, want int64
		for f, n := range sizes {
			total += served[f]
			want += n
			if served[f] != n {
				t.Errorf("%s %s: %s: %d bytes served, the file has %d", args[0], name, f, served[f], n)
			}
		}
		t.Logf("%s %s: %d bytes served of %d", args[0], name, total, want)

		// The same run with one byte of a shard flipped fails naming it
		// and writes nothing.
		s.SetFaults(hubtest.Faults{Corrupt: shard, CorruptByte: sizes[shard] - 100})
		bad := filepath.Join(dir, "bad", args[0]+name+".gguf")
		os.MkdirAll(filepath.Dir(bad), 0o755)
		args[2] = bad
		code, _, errb := run(t, args...)
		if code == 0 || !strings.Contains(errb, "checksum mismatch") || !strings.Contains(errb, shard) {
			t.Errorf("%s %s with %s corrupt: exit %d, want a checksum mismatch naming it: %s", args[0], name, shard, code, lastLine(errb))
		}
		if left, _ := os.ReadDir(filepath.Dir(bad)); len(left) != 0 {
			t.Errorf("%s %s with %s corrupt left %v", args[0], name, shard, left)
		}
	}
	// diff and verify, which write nothing, check their remote sources
	// before they report: fault-free they succeed, with a corrupt shard
	// they fail naming it.
	conv := filepath.Join(dir, "convert.gguf")
	for _, args := range [][]string{{"diff", "hf://org/tiny", "hf://org/tiny"}, {"verify", "hf://org/tiny", conv}} {
		s.SetFaults(hubtest.Faults{})
		s.ResetServed()
		if code, _, errb := run(t, args...); code != 0 {
			t.Errorf("%s: exit %d: %s", args[0], code, lastLine(errb))
		}
		var total int64
		for _, n := range s.Served() {
			total += n
		}
		t.Logf("%s: %d bytes served (the source is %d bytes)", args[0], total, func() (n int64) {
			for _, k := range sizes {
				n += k
			}
			return n
		}())
		s.SetFaults(hubtest.Faults{Corrupt: shard, CorruptByte: sizes[shard] - 100})
		code, _, errb := run(t, args...)
		if code == 0 || !strings.Contains(errb, "checksum mismatch") || !strings.Contains(errb, shard) {
			t.Errorf("%s with %s corrupt: exit %d, want a checksum mismatch naming it: %s", args[0], shard, code, lastLine(errb))
		}
	}
	s.SetFaults(hubtest.Faults{})
}

// TestHubPartsCheck: each of N = 3 parts of a split quantize checks the
// source files it read from, and only those: a file a part touched is
// served whole to it (the part's tensors, then the rest for the sha256), a
// file it did not touch only its header. A corrupted file read by part 2
// alone fails part 2 only, naming the file, and leaves none of its shards;
// parts 1 and 3 write theirs, byte-identical to the fault-free run's. The
// checkpoint is hubtest.Tiny with 7 layers, one a file (Kimi K2's layout).
func TestHubPartsCheck(t *testing.T) {
	m := hubtest.Tiny()
	m.Layers, m.Shards, m.PerLayer = 7, 7, true
	s, repo := startHubOf(t, m, "org/tiny")
	dir := t.TempDir()
	sizes := lfsSizes(repo)
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range sizes {
			if !yield(n) {
				return
			}
		}
	})
	const n = 3
	part := func(sub string, k int) (int, string) {
		os.MkdirAll(filepath.Join(dir, sub), 0o755)
		code, _, errb := run(t, "quantize", "hf://org/tiny", filepath.Join(dir, sub, "q.gguf"), "--type", "q8_0",
			"--split-max-size", "300K", "--part", fmt.Sprintf("%d/%d", k, n))
		return code, errb
	}
	// touched[k][f]: part k read from file f.
	touched := make([]map[string]bool, n+1)
	for k := 1; k <= n; k++ {
		s.ResetServed()
		if code, errb := part("good", k); code != 0 {
			t.Fatalf("part %d: exit %d: %s", k, code, errb)
		}
		served := s.Served()
		touched[k] = map[string]bool{}
		var line []string
		for _, f := range names {
			switch got := served[f]; {
			case got == sizes[f]:
				touched[k][f] = true
			case got > 1<<16:
				t.Errorf("part %d: %s: %d of %d bytes served: neither the whole file (checked) nor only its header", k, f, got, sizes[f])
			}
			line = append(line, fmt.Sprintf("%s %d of %d", f, served[f], sizes[f]))
		}
		if len(touched[k]) == 0 {
			t.Errorf("part %d checked no file", k)
		}
		t.Logf("part %d/%d served: %s", k, n, strings.Join(line, ", "))
	}
	var only2 string
	for _, f := range names {
		if touched[2][f] && !touched[1][f] && !touched[3][f] {
			only2 = f
		}
	}
	if only2 == "" {
		t.Fatalf("no source file is read by part 2 alone: %v", touched)
	}
	s.SetFaults(hubtest.Faults{Corrupt: only2, CorruptByte: sizes[only2] / 2})
	for k := 1; k <= n; k++ {
		code, errb := part("bad", k)
		if k == 2 {
			if code == 0 || !strings.Contains(errb, "checksum mismatch") || !strings.Contains(errb, only2) {
				t.Errorf("part 2 with %s corrupt: exit %d, want a checksum mismatch naming it: %s", only2, code, lastLine(errb))
			}
			continue
		}
		if code != 0 {
			t.Errorf("part %d with %s (which it does not read) corrupt: exit %d: %s", k, only2, code, lastLine(errb))
		}
	}
	good, _ := filepath.Glob(filepath.Join(dir, "good", "*"))
	bad, _ := filepath.Glob(filepath.Join(dir, "bad", "*"))
	kept := map[string]bool{}
	for _, p := range bad {
		kept[filepath.Base(p)] = true
		g, err1 := os.ReadFile(filepath.Join(dir, "good", filepath.Base(p)))
		b, err2 := os.ReadFile(p)
		if err1 != nil || err2 != nil || string(g) != string(b) {
			t.Errorf("%s of the run with a corrupt source differs from the fault-free run's (%v, %v)", filepath.Base(p), err1, err2)
		}
	}
	if len(bad) == 0 || len(bad) >= len(good) {
		t.Errorf("with part 2 failed, %d of the %d shards are in place; want parts 1 and 3's only", len(bad), len(good))
	}
	t.Logf("shards: %d fault-free, %d with part 2 failed", len(good), len(bad))
}

// TestHubPartsIdentical: N = 1, 3 and 7 parts of a split quantize from the
// test Hub give, side by side, the single run's shards byte for byte, with
// a read cache of 1 MiB so that blocks are dropped and fetched again
// (read-ahead, eviction and the sha256 check all in play). One differing
// first shard was seen once in such a run; this is the loop it was hunted
// with.
func TestHubPartsIdentical(t *testing.T) {
	m := hubtest.Tiny()
	m.Layers, m.Shards, m.PerLayer = 7, 7, true
	s, repo := startHubOf(t, m, "org/tiny")
	defer func(n int64) { httprange.CacheSize = n }(httprange.CacheSize)
	httprange.CacheSize = 1 << 20
	dir := t.TempDir()
	args := []string{"quantize", "hf://org/tiny", "", "--type", "q4_k_m", "--split-max-size", "300K"}
	args[2] = filepath.Join(dir, "single", "q.gguf")
	os.MkdirAll(filepath.Dir(args[2]), 0o755)
	s.ResetServed()
	if code, _, errb := run(t, args...); code != 0 {
		t.Fatalf("single run: exit %d: %s", code, errb)
	}
	// With a cache smaller than a layer, the stacked experts (read gate
	// of each, then up of each, then down of each) leave the hash behind
	// and are dropped before it reaches them: the check fetches those
	// again. Logged, not asserted: it depends on the cache's size.
	var served, size int64
	for name, n := range lfsSizes(repo) {
		served += s.Served()[name]
		size += n
	}
	t.Logf("single run with a 1 MiB cache: %d bytes served of %d (%.2f×)", served, size, float64(served)/float64(size))
	want, _ := filepath.Glob(filepath.Join(dir, "single", "*"))
	for _, n := range []int{1, 3, 7} {
		sub := filepath.Join(dir, fmt.Sprint(n))
		os.MkdirAll(sub, 0o755)
		for k := 1; k <= n; k++ {
			a := append(slices.Clone(args), "--part", fmt.Sprintf("%d/%d", k, n))
			a[2] = filepath.Join(sub, "q.gguf")
			if code, _, errb := run(t, a...); code != 0 {
				t.Fatalf("part %d/%d: exit %d: %s", k, n, code, errb)
			}
		}
		got, _ := filepath.Glob(filepath.Join(sub, "*"))
		if len(got) != len(want) {
			t.Errorf("N=%d: %d files, the single run wrote %d", n, len(got), len(want))
		}
		for _, p := range want {
			a, _ := os.ReadFile(p)
			b, err := os.ReadFile(filepath.Join(sub, filepath.Base(p)))
			if err != nil || !bytes.Equal(a, b) {
				t.Errorf("N=%d: %s differs from the single run's (%v)", n, filepath.Base(p), err)
			}
		}
	}
	t.Logf("%d shards, identical for N = 1, 3, 7", len(want))
}
