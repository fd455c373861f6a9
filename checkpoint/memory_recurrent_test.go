package checkpoint

import (
	"fmt"
	"path/filepath"
	"testing"
)

// TestMemoryRecurrentState: a Mamba model keeps no KV cache but a
// recurrent state per sequence whatever the context, as llama.cpp d32676d7
// reports it for the mamba fixture (kv_report.cpp built against that tree:
// "llama_memory_recurrent: CPU RS buffer size = 0.02 MiB" with 1 sequence,
// "0.07 MiB" with 4, at 512, 4096 and 32768 positions alike): per layer
// (d_conv−1)·d_inner + d_inner·d_state floats, 2 layers of (3·128 + 128·16)·4
// = 9728 bytes. HF folder and GGUF alike.
func TestMemoryRecurrentState(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	llamaCpp := map[int64]string{1: "0.02", 4: "0.07"} // RS buffer, MiB, by sequences
	for _, p := range []string{filepath.Join("..", "testdata", "arch", "mamba", "hf"),
		filepath.Join("..", "testdata", "arch", "mamba", "gguf", "mamba-f32.gguf")} {
		c, err := Open(p)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Summarize(c)
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(s.LayerPattern) != 2 || s.LayerPattern[0].Mixer != "mamba" || s.LayerPattern[1].Mixer != "mamba" {
			t.Errorf("%s: layer pattern %+v, want 2 mamba layers", p, s.LayerPattern)
		}
		for _, ctx := range []int64{512, 4096, 32768} {
			for par, want := range llamaCpp {
				m, err := s.EstimateMemory(MemoryOptions{Context: ctx, Parallel: par})
				if err != nil {
					t.Fatalf("%s: ctx %d: %v", p, ctx, err)
				}
				if m.RSBytes != 2*9728*par || m.KVBytes != 0 {
					t.Errorf("%s: ctx %d, %d sequences: RS %d, KV %d bytes; want %d and 0", p, ctx, par, m.RSBytes, m.KVBytes, 2*9728*par)
				}
				if got := fmt.Sprintf("%.2f", float64(m.RSBytes)/mib); got != want {
					t.Errorf("%s: RS %s MiB, llama.cpp's %s", p, got, want)
				}
				if m.TotalBytes != m.WeightBytes+m.RSBytes {
					t.Errorf("%s: total %d, want weights %d + state %d", p, m.TotalBytes, m.WeightBytes, m.RSBytes)
				}
			}
		}
	}
}

// TestMemoryHybrid: Jamba keeps a KV cache in its 2 attention layers only
// (2 KV heads of 16) and the state of its 2 Mamba layers, as llama.cpp
// d32676d7 reports for the jamba fixture (kv_report.cpp: KV buffer 0.12,
// 1.00 and 8.00 MiB at 512, 4096 and 32768 positions with an f16 cache, "2
// layers"; RS buffer 0.02 MiB). HF folder and GGUF (whose head_count_kv is
// one entry per layer, 0 in the Mamba layers) alike.
func TestMemoryHybrid(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	kv := map[int64]string{512: "0.12", 4096: "1.00", 32768: "8.00"}
	for _, p := range []string{filepath.Join("..", "testdata", "arch", "jamba", "hf"),
		filepath.Join("..", "testdata", "arch", "jamba", "gguf", "jamba-f32.gguf")} {
		c, err := Open(p)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Summarize(c)
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		for ctx, want := range kv {
			m, err := s.EstimateMemory(MemoryOptions{Context: ctx})
			if err != nil {
				t.Fatalf("%s: ctx %d: %v", p, ctx, err)
			}
			if m.KVBytes != 2*2*2*16*ctx*2 || m.RSBytes != 2*9728 {
				t.Errorf("%s: ctx %d: KV %d, RS %d bytes; want %d and %d", p, ctx, m.KVBytes, m.RSBytes, 2*2*2*16*ctx*2, 2*9728)
			}
			if got := fmt.Sprintf("%.2f", float64(m.KVBytes)/mib); got != want {
				t.Errorf("%s: ctx %d: KV %s MiB, llama.cpp's %s", p, ctx, got, want)
			}
		}
	}
}
