package checkpoint

import (
	"encoding/json"
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
		m, err := s.EstimateMemory(c.Ctx, kv)
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
		m, err := s.EstimateMemory(c.Ctx, kv)
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
