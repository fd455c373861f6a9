package checkpoint

import (
	"testing"
)

// TestGemma3nSharedKV: Gemma 3n's last num_kv_shared_layers layers read the
// cache of the last earlier layer of their kind (gemma3n-shared: layers 2
// and 3 read layers 0 and 1), from config.json and from llama.cpp's GGUF
// alike, and the memory estimate counts the two caches that exist: 2 layers
// × K and V × 4096 positions × 16 (one KV head of 16) × 2 bytes (f16).
func TestGemma3nSharedKV(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"../testdata/arch/gemma3n-shared/hf", "../testdata/arch/gemma3n-shared/gguf/gemma3n-shared-f32.gguf"} {
		c, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Summarize(c)
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(s.LayerPattern) != 4 {
			t.Fatalf("%s: layer pattern %+v", path, s.LayerPattern)
		}
		for i, want := range []int{-1, -1, 0, 1} {
			got := -1
			if from := s.LayerPattern[i].KVFrom; from != nil {
				got = *from
			}
			if got != want {
				t.Errorf("%s: layer %d reads the cache of layer %d, want %d (-1: its own)", path, i, got, want)
			}
		}
		m, err := s.EstimateMemory(MemoryOptions{Context: 4096})
		if err != nil {
			t.Fatal(err)
		}
		if want := int64(2 * 2 * 4096 * 16 * 2); m.KVBytes != want {
			t.Errorf("%s: KV cache %d bytes, want %d", path, m.KVBytes, want)
		}
	}
}
