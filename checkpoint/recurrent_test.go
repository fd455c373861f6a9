package checkpoint

import (
	"fmt"
	"path/filepath"
	"testing"
)

// TestRecurrentStateMatchesLlamaCpp sizes the recurrent state of the
// Mamba-2 fixtures as llama.cpp d32676d7 reports it when it makes a
// context (its llama_memory_recurrent log line "R (f32): … MiB, S (f32): …
// MiB" and its total, printed by testdata/arch/tools/kv_report.cpp built with
// -DLLAMA_FLASH_ATTN_TYPE_DISABLED_NEW_API against that tree): the same at
// every context, one cell per sequence, no KV cache. 256 sequences make the
// MiB's two decimals fine enough to tell a wrong width.
func TestRecurrentStateMatchesLlamaCpp(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		fam              string
		seqs             int64
		size, rMiB, sMiB string // llama.cpp's
	}{
		{"mamba2", 1, "0.02", "0.00", "0.02"}, {"mamba2", 256, "4.94", "0.94", "4.00"},
		{"mamba2-groups", 1, "0.02", "0.00", "0.02"}, {"mamba2-groups", 256, "5.12", "1.12", "4.00"},
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
			for _, ctx := range []int64{512, 4096, 32768} {
				m, err := s.EstimateMemory(MemoryOptions{Context: ctx, Parallel: c.seqs})
				if err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				if got := fmt.Sprintf("%.2f", float64(m.RSBytes)/(1<<20)); got != c.size {
					t.Errorf("%s ctx %d: RS %s MiB (rs_bytes %d), llama.cpp %s", path, ctx, got, m.RSBytes, c.size)
				}
				// llama.cpp's own split: R the convolution's, S the scan's.
				const conv = 3 // d_conv − 1
				groups := map[string]int64{"mamba2": 1, "mamba2-groups": 2}[c.fam]
				r := 2 * conv * (128 + 2*groups*16) * 4 * c.seqs
				if got := fmt.Sprintf("%.2f", float64(r)/(1<<20)); got != c.rMiB {
					t.Errorf("%s: R %s MiB, llama.cpp %s", path, got, c.rMiB)
				}
				if got := fmt.Sprintf("%.2f", float64(m.RSBytes-r)/(1<<20)); got != c.sMiB {
					t.Errorf("%s ctx %d: S %s MiB (rs_bytes %d), llama.cpp %s", path, ctx, got, m.RSBytes, c.sMiB)
				}
				if m.KVBytes != 0 {
					t.Errorf("%s: a KV cache of %d bytes for a model without attention", path, m.KVBytes)
				}
			}
			var rec int
			for _, l := range s.LayerPattern {
				if l.Mixer == "mamba2" && l.Recurrent {
					rec++
				}
			}
			if rec != 2 {
				t.Errorf("%s: %d mamba2 layers in the pattern %v", path, rec, s.LayerPattern)
			}
		}
	}
}

// TestGraniteHybridMemoryMatchesLlamaCpp: granitehybrid (Granite 4.0-H's form: 3
// Mamba-2 layers, 1 attention layer of 2 KV heads of 16) keeps a KV cache
// for its attention layer and the RS buffer for the others, as llama.cpp
// d32676d7 reports them (kv_report.cpp, one sequence, f16 cache):
// "llama_kv_cache: size = …, K (f16): …, V (f16): …" and
// "llama_memory_recurrent: size = 0.03 MiB …, R (f32): 0.01 MiB, S (f32): 0.02 MiB".
func TestGraniteHybridMemoryMatchesLlamaCpp(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"../testdata/arch/granitehybrid/gguf/granitehybrid-f32.gguf", "../testdata/arch/granitehybrid/hf"} {
		ck, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Summarize(ck)
		ck.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			ctx  int64
			kMiB string
		}{{512, "0.03"}, {4096, "0.25"}, {32768, "2.00"}} {
			m, err := s.EstimateMemory(MemoryOptions{Context: c.ctx})
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			mib := func(b int64) string { return fmt.Sprintf("%.2f", float64(b)/(1<<20)) }
			if m.KVSize != c.ctx || mib(m.KBytes) != c.kMiB || mib(m.VBytes) != c.kMiB {
				t.Errorf("%s ctx %d: KV %d cells, K %s V %s MiB; llama.cpp %d cells, %s each", path, c.ctx, m.KVSize,
					mib(m.KBytes), mib(m.VBytes), c.ctx, c.kMiB)
			}
			if want := int64(3 * (3*160 + 16*128) * 4); m.RSBytes != want || mib(m.RSBytes) != "0.03" {
				t.Errorf("%s ctx %d: rs_bytes %d (%s MiB), want %d (llama.cpp 0.03 MiB)", path, c.ctx, m.RSBytes, mib(m.RSBytes), want)
			}
		}
	}
}
