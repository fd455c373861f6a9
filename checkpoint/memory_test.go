package checkpoint

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// TestMemoryMatchesLlamaCpp compares the memory estimate with what
// llama.cpp c392e509 itself reports when it makes a context
// (testdata/arch/memory.json, from testdata/arch/gen_memory.py): the padded
// cache size exactly, and the K and V cache sizes at the two decimals of
// MiB it prints, for LLaMA, GPT-2, Gemma 2 (sliding-window layers keep
// the full context there) and DeepSeek-2 (latent attention, cached expanded;
// llama.cpp refuses its q8_0 cache) at three context lengths, f16 and q8_0
// caches.
// Weights are compared with its CPU_Mapped model buffer where no tensor is
// repacked for the CPU (GPT-2's Q4_0 is, into a second buffer).
func TestMemoryMatchesLlamaCpp(t *testing.T) {
	b, err := os.ReadFile("../testdata/arch/memory.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Cases []struct {
			File    string   `json:"file"`
			Ctx     int64    `json:"ctx"`
			KVType  string   `json:"kv_type"`
			Refused bool     `json:"refused"`
			KVSize  int64    `json:"kv_size"`
			KMiB    float64  `json:"k_mib"`
			VMiB    float64  `json:"v_mib"`
			Mapped  *float64 `json:"mapped_model_mib"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	const mib = 1 << 20
	checked := 0
	for _, c := range ref.Cases {
		if c.Refused {
			continue // llama.cpp refused the context (Gemma 2 with a quantized V cache)
		}
		ck, err := Open(filepath.Join("..", c.File))
		if err != nil {
			t.Fatal(err)
		}
		s, err := Summarize(ck)
		ck.Close()
		if err != nil {
			t.Fatal(err)
		}
		kv, _ := tensor.Parse(c.KVType)
		m, err := s.EstimateMemory(MemoryOptions{Context: c.Ctx, KVType: kv})
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(c.File) + " " + c.KVType
		if m.KVSize != c.KVSize {
			t.Errorf("%s ctx %d: cache of %d positions, llama.cpp %d", name, c.Ctx, m.KVSize, c.KVSize)
		}
		for _, x := range []struct {
			what       string
			ours, want float64
		}{{"K", float64(m.KBytes) / mib, c.KMiB}, {"V", float64(m.VBytes) / mib, c.VMiB}} {
			if math.Abs(x.ours-x.want) > 0.005+1e-9 {
				t.Errorf("%s ctx %d: %s cache %.4f MiB, llama.cpp %.2f", name, c.Ctx, x.what, x.ours, x.want)
			}
		}
		if c.Mapped != nil && !strings.Contains(c.File, "gpt2-Q4_0") {
			if w := float64(m.WeightBytes) / mib; math.Abs(w-*c.Mapped) > 0.005+1e-9 {
				t.Errorf("%s: weights %.4f MiB, llama.cpp's model buffer %.2f", name, w, *c.Mapped)
			}
		}
		checked++
	}
	if checked < 15 {
		t.Fatalf("%d cases checked, want 15", checked)
	}
}

// TestMemoryMLAFromConfig estimates DeepSeek-2's cache from its
// config.json and checks it against what llama.cpp c392e509 reports for the
// converted GGUF (testdata/arch/memory.json): per head, keys of
// qk_nope + qk_rope and values of v_head_dim elements.
func TestMemoryMLAFromConfig(t *testing.T) {
	b, err := os.ReadFile("../testdata/arch/memory.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Cases []struct {
			File    string  `json:"file"`
			Ctx     int64   `json:"ctx"`
			KVType  string  `json:"kv_type"`
			Refused bool    `json:"refused"`
			KMiB    float64 `json:"k_mib"`
			VMiB    float64 `json:"v_mib"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	ck, err := Open("../testdata/arch/deepseek2/hf")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Summarize(ck)
	ck.Close()
	if err != nil {
		t.Fatal(err)
	}
	const mib = 1 << 20
	checked := 0
	for _, c := range ref.Cases {
		if c.Refused || !strings.Contains(c.File, "deepseek2") {
			continue
		}
		kv, _ := tensor.Parse(c.KVType)
		m, err := s.EstimateMemory(MemoryOptions{Context: c.Ctx, KVType: kv})
		if err != nil {
			t.Fatal(err)
		}
		if k, v := float64(m.KBytes)/mib, float64(m.VBytes)/mib; math.Abs(k-c.KMiB) > 0.005+1e-9 || math.Abs(v-c.VMiB) > 0.005+1e-9 {
			t.Errorf("ctx %d %s: K %.4f V %.4f MiB, llama.cpp %.2f %.2f", c.Ctx, c.KVType, k, v, c.KMiB, c.VMiB)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no deepseek2 case in memory.json")
	}
}

// TestComputeBufferAgainstLlamaCpp compares the output buffer and the
// compute-buffer estimate with what llama.cpp c392e509 reports for the same
// context parameters (testdata/arch/memory.json "buffers", from
// gen_memory.py): the fixtures, and one-layer models of real widths
// (TinyLlama, Qwen2.5-0.5B, Gemma-2B, GPT-2, Phi-3-mini) whose
// hyperparameters llama.cpp printed, at 512 and 4096 positions, physical
// batches of 512 (one sequence) and 128 (four), f16 and q8_0 caches. The
// output buffer is exact (to the two decimals of MiB llama.cpp prints); the
// compute buffer, which depends on how ggml's allocator packs each graph, is
// held to 8 % for the real widths and 1.1 MiB for the fixtures.
func TestComputeBufferAgainstLlamaCpp(t *testing.T) {
	b, err := os.ReadFile("../testdata/arch/memory.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Buffers []struct {
			Model      string         `json:"model"`
			Ctx        int64          `json:"ctx"`
			KVType     string         `json:"kv_type"`
			UBatch     int64          `json:"ubatch"`
			Parallel   int64          `json:"parallel"`
			OutputMiB  float64        `json:"output_mib"`
			ComputeMiB float64        `json:"compute_mib"`
			HParams    map[string]any `json:"hparams"`
		} `json:"buffers"`
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	const mib = 1 << 20
	var worstRel, worstAbs float64
	real, fixtures := 0, 0
	for _, c := range ref.Buffers {
		hp := map[string]int64{}
		for k, v := range c.HParams {
			if f, ok := v.(float64); ok {
				hp[k] = int64(f)
			}
		}
		archName, _ := c.HParams["arch"].(string)
		synth := strings.HasPrefix(c.Model, "synth:")
		var s *Summary
		if synth {
			s = &Summary{Architecture: archName, Layers: int(hp["n_layer"]), Hidden: hp["n_embd"], Heads: hp["n_head"],
				KVHeads: hp["n_head_kv"], KeyLength: hp["n_embd_head_k"], ValueLength: hp["n_embd_head_v"],
				Vocab: hp["n_vocab"], FFNLength: hp["n_ff"], ExpertsUsed: hp["n_expert_used"], ExpertFFNLength: hp["n_ff_exp"]}
		} else {
			ck, err := Open(filepath.Join("..", c.Model))
			if err != nil {
				t.Fatal(err)
			}
			s, err = Summarize(ck)
			ck.Close()
			if err != nil {
				t.Fatal(err)
			}
			// What the estimate reads from the file is what llama.cpp read.
			if s.Architecture != archName || s.Hidden != hp["n_embd"] || s.Heads != hp["n_head"] || s.Vocab != hp["n_vocab"] || (hp["n_ff"] > 0 && s.FFNLength != hp["n_ff"]) {
				t.Errorf("%s: summary n_embd %d, heads %d, vocab %d, ffn %d; llama.cpp %v", c.Model, s.Hidden, s.Heads, s.Vocab, s.FFNLength, hp)
			}
		}
		kv, _ := tensor.Parse(c.KVType)
		m, err := s.EstimateMemory(MemoryOptions{Context: c.Ctx, KVType: kv, UBatch: c.UBatch, Parallel: c.Parallel})
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("%s ctx %d %s ub %d np %d", c.Model, c.Ctx, c.KVType, c.UBatch, c.Parallel)
		if out := float64(m.OutputBytes) / mib; math.Abs(out-c.OutputMiB) > 0.005+1e-9 {
			t.Errorf("%s: output buffer %.4f MiB, llama.cpp %.2f", name, out, c.OutputMiB)
		}
		got := float64(m.ComputeBytes) / mib
		rel, abs := math.Abs(got/c.ComputeMiB-1), math.Abs(got-c.ComputeMiB)
		if synth {
			real++
			worstRel = max(worstRel, rel)
			if rel > 0.08 {
				t.Errorf("%s: compute buffer %.2f MiB, llama.cpp %.2f (%.1f %%)", name, got, c.ComputeMiB, 100*(got/c.ComputeMiB-1))
			}
		} else {
			fixtures++
			worstAbs = max(worstAbs, abs)
			if abs > 1.1 {
				t.Errorf("%s: compute buffer %.2f MiB, llama.cpp %.2f", name, got, c.ComputeMiB)
			}
		}
	}
	if real < 30 || fixtures < 20 {
		t.Fatalf("%d real-width and %d fixture cases, want 30 and 20", real, fixtures)
	}
	t.Logf("compute buffer: worst %.1f %% over %d real-width cases, worst %.2f MiB over %d fixture cases", 100*worstRel, real, worstAbs, fixtures)
}

// TestRecurrentMemoryMatchesLlamaCpp compares the memory estimate of the
// hybrid fixtures with what llama.cpp d32676d7 reports
// (testdata/arch/memory-recurrent.json, gen_memory.py --recurrent): the
// attention layers' K and V cache (only they keep one: LFM2's one of four)
// at three context lengths, and the recurrent layers' state, the same at
// every context, for 1 to 256 sequences, at the two decimals of MiB it
// prints (RWKV-7's, which has no attention layers: no cache). With more than one sequence d32676d7 gives each its own stream
// of the cache (n_ctx / n_seq cells), where the estimate keeps
// c392e509's one shared cache: the KV cache is compared for one sequence.
func TestRecurrentMemoryMatchesLlamaCpp(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../testdata/arch/memory-recurrent.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Cases []struct {
			File     string  `json:"file"`
			Ctx      int64   `json:"ctx"`
			KVType   string  `json:"kv_type"`
			Parallel int64   `json:"parallel"`
			KVCells  int64   `json:"kv_cells"`
			KMiB     float64 `json:"k_mib"`
			VMiB     float64 `json:"v_mib"`
			RMiB     float64 `json:"r_mib"`
			SMiB     float64 `json:"s_mib"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	const mib = 1 << 20
	if len(ref.Cases) < 6 {
		t.Fatalf("%d cases, want 6", len(ref.Cases))
	}
	for _, c := range ref.Cases {
		ck, err := Open(filepath.Join("..", c.File))
		if err != nil {
			t.Fatal(err)
		}
		s, err := Summarize(ck)
		ck.Close()
		if err != nil {
			t.Fatal(err)
		}
		kv, _ := tensor.Parse(c.KVType)
		m, err := s.EstimateMemory(MemoryOptions{Context: c.Ctx, KVType: kv, Parallel: c.Parallel})
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("%s ctx %d, %d sequences", filepath.Base(c.File), c.Ctx, c.Parallel)
		// the state is two numbers llama.cpp rounds (R and S), the caches one
		checks := []struct {
			what       string
			ours, want float64
			tol        float64
		}{{"recurrent state", float64(m.RSBytes) / mib, c.RMiB + c.SMiB, 0.01}}
		if c.KVCells == 0 {
			// no attention layer (RWKV-7): no cache at all
			if m.KBytes != 0 || m.VBytes != 0 {
				t.Errorf("%s: K/V cache %d/%d bytes, llama.cpp none", name, m.KBytes, m.VBytes)
			}
		} else if c.Parallel == 1 {
			if m.KVSize != c.KVCells {
				t.Errorf("%s: cache of %d positions, llama.cpp %d", name, m.KVSize, c.KVCells)
			}
			checks = append(checks, struct {
				what       string
				ours, want float64
				tol        float64
			}{"K cache", float64(m.KBytes) / mib, c.KMiB, 0.005}, struct {
				what       string
				ours, want float64
				tol        float64
			}{"V cache", float64(m.VBytes) / mib, c.VMiB, 0.005})
		}
		for _, x := range checks {
			if math.Abs(x.ours-x.want) > x.tol+1e-9 {
				t.Errorf("%s: %s %.4f MiB, llama.cpp %.2f", name, x.what, x.ours, x.want)
			}
		}
		if m.RSBytes == 0 || m.TotalBytes != m.WeightBytes+m.KVBytes+m.RSBytes {
			t.Errorf("%s: recurrent state %d bytes, total %d", name, m.RSBytes, m.TotalBytes)
		}
	}
}

// TestRecurrentLayerPattern: the summary of LFM2's fixture, in both forms,
// states its layers as the config's layer_types does (the GGUF's from its
// per-layer head_count_kv) with the short convolutions' state, and the
// attention layers' key/value head count.
func TestRecurrentLayerPattern(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"../testdata/arch/lfm2/hf", "../testdata/arch/lfm2/gguf/lfm2-f32.gguf"} {
		ck, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Summarize(ck)
		ck.Close()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range s.LayerPattern {
			got = append(got, fmt.Sprintf("%s/%d", l.Mixer, l.StateFloats))
		}
		want := "[conv/128 conv/128 full_attention/0 conv/128]" // (conv_L_cache 3 − 1) · hidden 64
		if fmt.Sprint(got) != want || s.KVHeads != 2 {
			t.Errorf("%s: pattern %v, kv heads %d; want %s, 2", path, got, s.KVHeads, want)
		}
	}
}
