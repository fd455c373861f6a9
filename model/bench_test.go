package model

import (
	"os"
	"path/filepath"
	"testing"
)

// benchModelDir holds TinyLlama-shaped random checkpoints written by
// `tfconv synth --like tinyllama-1.1b DIR/tl-{f32,q8_0}.gguf --type …`; the
// benchmarks skip when it is absent. TFCONV_BENCH_DIR overrides it.
func benchModelDir() string {
	if d := os.Getenv("TFCONV_BENCH_DIR"); d != "" {
		return d
	}
	return "/tmp/modelbench"
}

func loadBenchModel(b *testing.B, typ string, opts LoadOptions) *Model {
	b.Helper()
	path := filepath.Join(benchModelDir(), "tl-"+typ+".gguf")
	if _, err := os.Stat(path); err != nil {
		b.Skipf("no %s (write it with tfconv synth --like tinyllama-1.1b)", path)
	}
	m, err := Load(path, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	return m
}

func benchTokens(n, vocab int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = (i*7919 + 13) % vocab
	}
	return out
}

// benchPrefill reports tok/s of one 128-token step (last logits only).
func benchPrefill(b *testing.B, typ string, opts LoadOptions) {
	m := loadBenchModel(b, typ, opts)
	toks := benchTokens(128, m.cfg.Vocab)
	if _, err := m.NewSession().Step(toks[:8]); err != nil { // warm-up
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := m.NewSession().Step(toks); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(toks))/b.Elapsed().Seconds(), "tok/s")
}

// benchDecode reports tok/s of single-token steps after a 16-token prompt.
func benchDecode(b *testing.B, typ string, opts LoadOptions) {
	m := loadBenchModel(b, typ, opts)
	s := m.NewSession()
	if _, err := s.Step(benchTokens(16, m.cfg.Vocab)); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Step([]int{(i*31 + 7) % m.cfg.Vocab}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
}

func BenchmarkTinyLlamaPrefillF32(b *testing.B)  { benchPrefill(b, "f32", LoadOptions{}) }
func BenchmarkTinyLlamaPrefillQ8_0(b *testing.B) { benchPrefill(b, "q8_0", LoadOptions{}) }
func BenchmarkTinyLlamaDecodeF32(b *testing.B)   { benchDecode(b, "f32", LoadOptions{}) }
func BenchmarkTinyLlamaDecodeQ8_0(b *testing.B)  { benchDecode(b, "q8_0", LoadOptions{}) }
