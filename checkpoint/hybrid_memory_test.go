package checkpoint

import (
	"fmt"
	"path/filepath"
	"testing"
)

// TestHybridMemoryMatchesLlamaCpp sizes the KV cache and the recurrent
// state of the hybrid fixtures as llama.cpp d32676d7 reports them when it
// makes a context (testdata/arch/tools/kv_report.cpp, built with
// -DLLAMA_FLASH_ATTN_TYPE_DISABLED_NEW_API, f16 cache): its
// llama_kv_cache "size" over the attention layers alone (Falcon-H1: both,
// each also running a Mamba-2 beside; Nemotron-H: the one "*" layer) and
// its llama_memory_recurrent "size" over the Mamba-2 layers, at three
// contexts with one sequence, and the state again at 256 sequences (the
// KV cache of 256 sequences is split into per-sequence streams by that
// llama.cpp, which the estimate does not model).
func TestHybridMemoryMatchesLlamaCpp(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		fam       string
		kv        map[int64]string // context → llama.cpp's KV MiB at 1 sequence
		rs, rs256 string           // llama.cpp's RS MiB at 1 and 256 sequences
	}{
		{"falcon_h1", map[int64]string{512: "0.12", 4096: "1.00", 32768: "8.00"}, "0.02", "5.12"},
		{"nemotron_h", map[int64]string{512: "0.06", 4096: "0.50", 32768: "4.00"}, "0.02", "5.12"},
	} {
		for _, path := range []string{filepath.Join("../testdata/arch", c.fam, "gguf", c.fam+"-f32.gguf"), filepath.Join("../testdata/arch", c.fam, "hf")} {
			ck, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			s, err := Summarize(ck)
			ck.Close()
			if err != nil {
				t.Fatal(err)
			}
			mib := func(b int64) string { return fmt.Sprintf("%.2f", float64(b)/(1<<20)) }
			for ctx, want := range c.kv {
				m, err := s.EstimateMemory(MemoryOptions{Context: ctx})
				if err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				if got := mib(m.KVBytes); got != want {
					t.Errorf("%s ctx %d: KV %s MiB (kv_bytes %d), llama.cpp %s", path, ctx, got, m.KVBytes, want)
				}
				if got := mib(m.RSBytes); got != c.rs {
					t.Errorf("%s ctx %d: RS %s MiB (rs_bytes %d), llama.cpp %s", path, ctx, got, m.RSBytes, c.rs)
				}
				m, err = s.EstimateMemory(MemoryOptions{Context: ctx, Parallel: 256})
				if err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				if got := mib(m.RSBytes); got != c.rs256 {
					t.Errorf("%s ctx %d, 256 sequences: RS %s MiB (rs_bytes %d), llama.cpp %s", path, ctx, got, m.RSBytes, c.rs256)
				}
			}
		}
	}
}
