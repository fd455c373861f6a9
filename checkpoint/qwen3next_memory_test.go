package checkpoint

import (
	"fmt"
	"path/filepath"
	"testing"
)

// TestQwen3NextMemoryMatchesLlamaCpp holds the estimate of the qwen3next
// fixture (a gated DeltaNet layer, a gated-attention layer, an MTP layer)
// to what llama.cpp d32676d7 logs when it makes a context on it (f16
// cache; tools/kv_report.cpp, its flash_attn field set as flash_attn_type
// for that API): "llama_kv_cache: size = …, K (f16): … MiB, V (f16): … MiB"
// for the one attention layer (the recurrent layer and the MTP layer are
// filtered out of its hybrid memory) and "llama_memory_recurrent: size = …
// MiB (… seqs)" for the DeltaNet's state, 2 decimals of MiB.
func TestQwen3NextMemoryMatchesLlamaCpp(t *testing.T) {
	t.Parallel()
	ck, err := Open(filepath.Join("..", "testdata", "arch", "qwen3next", "gguf", "qwen3next-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	s, err := Summarize(ck)
	if err != nil {
		t.Fatal(err)
	}
	mib := func(n int64) string { return fmt.Sprintf("%.2f", float64(n)/(1<<20)) }
	for _, c := range []struct {
		ctx, seqs  int64
		k, v, rs   string // llama.cpp's log
		wantStateB int64  // (K−1)·(2·2·16 + 4·16) + 4·16·16 floats, f32, per sequence
	}{
		{512, 1, "0.03", "0.03", "0.01", 5632},
		{4096, 1, "0.25", "0.25", "0.01", 5632},
		{32768, 1, "2.00", "2.00", "0.01", 5632},
		{4096, 4, "0.25", "0.25", "0.02", 4 * 5632},
	} {
		m, err := s.EstimateMemory(MemoryOptions{Context: c.ctx, Parallel: c.seqs, UBatch: 128})
		if err != nil {
			t.Fatal(err)
		}
		if mib(m.KBytes) != c.k || mib(m.VBytes) != c.v || mib(m.RSBytes) != c.rs || m.RSBytes != c.wantStateB {
			t.Errorf("ctx %d, %d sequence(s): K %s V %s RS %s MiB (%d B); llama.cpp K %s V %s RS %s MiB (%d B)",
				c.ctx, c.seqs, mib(m.KBytes), mib(m.VBytes), mib(m.RSBytes), m.RSBytes, c.k, c.v, c.rs, c.wantStateB)
		}
		if m.TotalBytes != m.WeightBytes+m.KVBytes+m.RSBytes {
			t.Errorf("total %d is not weights + KV + state", m.TotalBytes)
		}
	}
}
