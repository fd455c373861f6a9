package checkpoint

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/tfconv/tfconv/synth"
	"github.com/tfconv/tfconv/tensor"
)

// TestHunyuanMoEMemoryMatchesLlamaCpp compares the memory estimate of
// Hunyuan's mixture with what llama.cpp d32676d7 reports loading it
// (testdata/arch/tools/kv_report.cpp built against that tree: its model
// buffer and its "llama_kv_cache: size" line, two decimals of MiB): the
// hunyuanmoe fixture (its GGUF and its Hugging Face folder; 8 wide,
// which a q8_0 cache cannot hold: llama.cpp refuses it) and an f16 GGUF
// synth writes with Hunyuan-A13B's heads of 128 (seed 1; the shape of
// quantize's TestHunyuanMoEMatchesLlamaQuantize).
func TestHunyuanMoEMemoryMatchesLlamaCpp(t *testing.T) {
	t.Parallel()
	s := synth.Shape{Name: "hunyuan-moe-q", Arch: "hunyuan-moe", Layers: 2, Hidden: 256, Heads: 2, KVHeads: 1,
		HeadDim: 128, FFN: 256, Vocab: 32000, Context: 4096, RopeBase: 10000, NormEps: 1e-5, Tied: true, Experts: 4,
		ExpertsUsed: 2, Config: map[string]any{"num_experts": 4, "moe_topk": []any{2, 2},
			"moe_intermediate_size": []any{256, 256}, "num_shared_expert": []any{1, 1}}}
	wide := filepath.Join(t.TempDir(), "hunyuan-moe-q.gguf")
	f, err := os.Create(wide)
	if err != nil {
		t.Fatal(err)
	}
	if err := synth.WriteGGUF(f, s, tensor.F16, 1); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	fixture := "../testdata/arch/hunyuanmoe/gguf/hunyuanmoe-f32.gguf"
	for _, c := range []struct {
		file       string
		ctx        int64
		kv         string
		k, v, mapd float64 // MiB as llama.cpp prints them
	}{
		{fixture, 512, "f16", 0.01, 0.01, 3.93},
		{fixture, 4096, "f16", 0.06, 0.06, 3.93},
		{fixture, 32768, "f16", 0.50, 0.50, 3.93},
		{"../testdata/arch/hunyuanmoe/hf", 32768, "f16", 0.50, 0.50, 3.93},
		{wide, 512, "f16", 0.25, 0.25, 20.14},
		{wide, 4096, "f16", 2.00, 2.00, 20.14},
		{wide, 32768, "f16", 16.00, 16.00, 20.14},
		{wide, 512, "q8_0", 0.13, 0.13, 20.14},
		{wide, 4096, "q8_0", 1.06, 1.06, 20.14},
		{wide, 32768, "q8_0", 8.50, 8.50, 20.14},
	} {
		ck, err := Open(c.file)
		if err != nil {
			t.Fatal(err)
		}
		sum, err := Summarize(ck)
		ck.Close()
		if err != nil {
			t.Fatal(err)
		}
		kv, _ := tensor.Parse(c.kv)
		m, err := sum.EstimateMemory(MemoryOptions{Context: c.ctx, KVType: kv})
		if err != nil {
			t.Fatal(err)
		}
		const mib = 1 << 20
		name := filepath.Base(c.file)
		if m.KVSize != c.ctx {
			t.Errorf("%s ctx %d: cache of %d positions", name, c.ctx, m.KVSize)
		}
		for _, x := range []struct {
			what       string
			ours, want float64
		}{{"K cache", float64(m.KBytes) / mib, c.k}, {"V cache", float64(m.VBytes) / mib, c.v},
			{"weights", float64(m.WeightBytes) / mib, c.mapd}} {
			if math.Abs(x.ours-x.want) > 0.005+1e-9 {
				t.Errorf("%s ctx %d %s: %s %.4f MiB, llama.cpp %.2f", name, c.ctx, c.kv, x.what, x.ours, x.want)
			}
		}
	}
}
