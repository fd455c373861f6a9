package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestQuantizeSplitMaxSize: quantize --split-max-size writes what
// llama-quantize's one-file output (its sha256 in keepsplit.json) becomes
// when gguf-split --split-max-size cuts it: the one file is checked
// against llama-quantize, and the set against that file cut by
// gguf.SplitWriter (convert --split-max-size, gguf-split's layout,
// TestQuantizeKeepSplit checks it against gguf-split's own shards).
func TestQuantizeSplitMaxSize(t *testing.T) {
	t.Parallel()
	var ref struct {
		Runs []struct {
			Type      string `json:"type"`
			KeepSplit bool   `json:"keep_split"`
			Outputs   []struct {
				Name   string `json:"name"`
				SHA256 string `json:"sha256"`
			} `json:"outputs"`
		} `json:"runs"`
	}
	b, err := os.ReadFile("../../testdata/quantize/keepsplit.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	want := ""
	for _, r := range ref.Runs {
		if r.Type == "Q4_K_M" && !r.KeepSplit {
			want = r.Outputs[0].SHA256
		}
	}
	src := "../../testdata/quantize/mixtures-f16.gguf"
	dir := t.TempDir()
	one := filepath.Join(dir, "one.gguf")
	mustRun(t, "quantize", src, one, "--type", "q4_k_m")
	if got := fileSHA256(t, one); got != want {
		t.Fatalf("one file: sha256 %s, llama-quantize's %s", got, want)
	}
	mustRun(t, "convert", one, filepath.Join(dir, "cut.gguf"), "--split-max-size", "500K")
	mustRun(t, "quantize", src, filepath.Join(dir, "set.gguf"), "--type", "q4_k_m", "--split-max-size", "500K")
	cut, _ := filepath.Glob(filepath.Join(dir, "cut-*-of-*.gguf"))
	set, _ := filepath.Glob(filepath.Join(dir, "set-*-of-*.gguf"))
	if len(cut) < 3 || len(cut) != len(set) {
		t.Fatalf("cut into %d shards, quantize wrote %d (want the same, at least 3)", len(cut), len(set))
	}
	for i := range cut {
		if strings.TrimPrefix(filepath.Base(cut[i]), "cut") != strings.TrimPrefix(filepath.Base(set[i]), "set") {
			t.Errorf("shard %d: %s vs %s", i, cut[i], set[i])
		}
		if a, b := fileSHA256(t, cut[i]), fileSHA256(t, set[i]); a != b {
			t.Errorf("%s differs from %s", set[i], cut[i])
		}
	}
	// The flag is parsed as convert's: a bad size names it.
	code, _, errOut := run(t, "quantize", src, filepath.Join(dir, "x.gguf"), "--type", "q8_0", "--split-max-size", "lots")
	if code == 0 || !strings.Contains(errOut, "--split-max-size") {
		t.Errorf("bad size: exit %d, %q", code, errOut)
	}
	code, _, errOut = run(t, "quantize", src, filepath.Join(dir, "x.gguf"), "--type", "q8_0", "--split-max-size", "1M", "--keep-split")
	if code == 0 || !strings.Contains(errOut, "--keep-split") {
		t.Errorf("--keep-split with --split-max-size: exit %d, %q", code, errOut)
	}
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := run(t, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errOut)
	}
	return out
}

// shardSums maps each file name matching glob in dir (the prefix cut off) to
// its sha256.
func shardSums(t *testing.T, dir, prefix string) map[string]string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, prefix+"-*-of-*.gguf"))
	out := map[string]string{}
	for _, f := range files {
		out[strings.TrimPrefix(filepath.Base(f), prefix)] = fileSHA256(t, f)
	}
	return out
}

// TestPartMatchesWhole: convert and quantize with --part K/N for N = 1, 3
// and 7, each part a process of its own (a Main call), give together the
// shards of the single run, byte for byte, each shard written by exactly
// one part; a part of more parts than shards writes nothing.
func TestPartMatchesWhole(t *testing.T) {
	t.Parallel()
	src := "../../testdata/arch/llama3/hf"
	for _, cmd := range [][]string{
		{"convert", "--split-max-size", "20K"},
		{"quantize", "--type", "q8_0", "--split-max-size", "10K"},
	} {
		dir := t.TempDir()
		mustRun(t, append([]string{cmd[0], src, filepath.Join(dir, "whole.gguf")}, cmd[1:]...)...)
		whole := shardSums(t, dir, "whole")
		if len(whole) < 12 {
			t.Fatalf("%s: %d shards; the test wants many", cmd[0], len(whole))
		}
		for _, n := range []int{1, 3, 7, len(whole) + 2} {
			pdir := t.TempDir()
			seen := map[string]int{} // shard → the part that wrote it
			for k := 1; k <= n; k++ {
				before := shardSums(t, pdir, "p")
				mustRun(t, append([]string{cmd[0], src, filepath.Join(pdir, "p.gguf"), "--part", fmt.Sprintf("%d/%d", k, n)}, cmd[1:]...)...)
				for name := range shardSums(t, pdir, "p") {
					if _, ok := before[name]; !ok {
						seen[name] = k
					}
				}
			}
			got := shardSums(t, pdir, "p")
			if len(got) != len(whole) {
				t.Errorf("%s N=%d: %d shards, the single run %d", cmd[0], n, len(got), len(whole))
			}
			for name, sum := range whole {
				if got[name] != sum {
					t.Errorf("%s N=%d: shard %s differs from the single run's (or is missing)", cmd[0], n, name)
				}
			}
			// Contiguous ranges: the part numbers never go down, and
			// with N ≤ shards every part wrote some.
			var names []string
			parts := map[int]bool{}
			for name, k := range seen {
				names = append(names, name)
				parts[k] = true
			}
			sort.Strings(names)
			for i := 1; i < len(names); i++ {
				if seen[names[i]] < seen[names[i-1]] {
					t.Errorf("%s N=%d: %s from part %d after %s from part %d", cmd[0], n, names[i], seen[names[i]], names[i-1], seen[names[i-1]])
				}
			}
			if n <= len(whole) && len(parts) != n {
				t.Errorf("%s N=%d: only %d parts wrote shards", cmd[0], n, len(parts))
			}
		}
	}
	// --part needs a split set.
	code, _, errOut := run(t, "convert", src, filepath.Join(t.TempDir(), "x.gguf"), "--part", "1/2")
	if code == 0 || !strings.Contains(errOut, "--split-max-size") {
		t.Errorf("--part without a split: exit %d, %q", code, errOut)
	}
	code, _, errOut = run(t, "convert", src, filepath.Join(t.TempDir(), "x.gguf"), "--split-max-size", "20K", "--part", "4/3")
	if code == 0 || !strings.Contains(errOut, "part 4") {
		t.Errorf("--part 4/3: exit %d, %q", code, errOut)
	}
}
