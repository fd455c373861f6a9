package model

import (
	"encoding/json"
	"math"
	"os"

	"github.com/tfconv/tfconv/convert"
	"path/filepath"
	"testing"
)

// TestDeepSeek2CachesLatent checks that a DeepSeek-2 session keeps, per
// layer and position, the kv_lora_rank latent and the rotated key (16 + 8
// floats on the fixture), not per-head keys and values (4·24 + 4·16), and
// that decoding through that cache one token at a time gives the logits of
// the whole sequence run at once.
func TestDeepSeek2CachesLatent(t *testing.T) {
	for _, fam := range []string{"deepseek2", "deepseek2-short", "deepseek3"} {
		t.Run(fam, func(t *testing.T) {
			m, err := Load(filepath.Join("../testdata/arch", fam, "hf"), LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			tokens := []int{1, 15, 250, 999, 3, 87}
			whole, err := m.Forward(Input{Tokens: tokens}, nil)
			if err != nil {
				t.Fatal(err)
			}
			s := m.NewSession()
			if _, err := s.StepAll(tokens[:3], nil); err != nil {
				t.Fatal(err)
			}
			for i := 3; i < len(tokens); i++ {
				logits, err := s.Step(tokens[i : i+1])
				if err != nil {
					t.Fatal(err)
				}
				var worst float64
				for j, v := range logits {
					worst = max(worst, math.Abs(float64(v-whole.Logits[i][j])))
				}
				if worst > maxLogitDiffF32 {
					t.Errorf("position %d: incremental logits differ from the whole run's by %g", i, worst)
				}
			}
			for l := range s.cache.K {
				if k, v := len(s.cache.K[l]), len(s.cache.V[l]); k != len(tokens)*16 || v != len(tokens)*8 {
					t.Fatalf("layer %d caches %d and %d floats for %d positions, want the 16-wide latent and 8-wide key", l, k, v, len(tokens))
				}
			}
		})
	}
}

// TestDeepSeek2NewerGGUF runs the newer llama.cpp's own conversion of the
// deepseek3 fixture (testdata/arch/README.md: W_kvb split into attn_k_b,
// transposed per head, and attn_v_b; head_count_kv 1 and the latent's
// key/value lengths beside key_length_mla/value_length_mla; the expert
// groups kept): its logits must be that llama.cpp's and, since the groups
// are kept now, transformers' too (c392e509's form of the same checkpoint
// chooses among all experts, 4.0 away).
func TestDeepSeek2NewerGGUF(t *testing.T) {
	dir := "../testdata/arch/deepseek3"
	var lc cppLogits
	readJSON(t, filepath.Join(dir, "gguf", "deepseek3-newer-f32.logits.json"), &lc)
	var ref reference
	readJSON(t, filepath.Join(dir, "hf", "reference.json"), &ref)
	m, err := Load(filepath.Join(dir, "gguf", "deepseek3-newer-f32.gguf"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Forward(Input{Tokens: ref.InputIDs}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		what   string
		logits [][]float32
	}{{"the newer llama.cpp", lc.Logits}, {"transformers", ref.Logits}} {
		d, _ := maxDiff(t, out.Logits, w.logits, nil)
		t.Logf("max |Δ| %.3g against %s", d, w.what)
		if d > maxLogitDiffF32 {
			t.Errorf("logits differ from %s's by %.3g (> %g)", w.what, d, maxLogitDiffF32)
		}
	}
}

// TestKimiK2RampRuns: a Kimi-K2-shaped checkpoint (the deepseek3 fixture
// with model_type kimi_k2) converted to GGUF runs to the logits tfconv
// computes on the checkpoint itself, with the V3 routing Kimi K2 runs and
// a YaRN ramp of its own: the ramp travels in
// rope.scaling.yarn_beta_fast/slow. (Kimi K2's own 1 and 1 give the
// fixture's 8 rotated dimensions the bounds DeepSeek's 32 and 1 give them;
// 0.2 and 0.01 move both, and the logits with them.) llama.cpp d32676d7
// reads no ramp from a GGUF and rotates with 32 and 1 (it is 1.95 from
// these logits, and 5.7e-6 from --match-llamacpp's, measured by hand with
// its logits dump): under MatchLlamaCpp the GGUF runs as the same
// checkpoint with DeepSeek's ramp does.
func TestKimiK2RampRuns(t *testing.T) {
	t.Parallel()
	src := "../testdata/arch/deepseek3/hf"
	var ref reference
	readJSON(t, filepath.Join(src, "reference.json"), &ref)
	run := func(path string, match bool) [][]float32 {
		m, err := Load(path, LoadOptions{MatchLlamaCpp: match})
		if err != nil {
			t.Fatal(err)
		}
		out, err := m.Forward(Input{Tokens: ref.InputIDs}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return out.Logits
	}
	// kimi writes the fixture with model_type kimi_k2 and the ramp's
	// bounds fast, slow, and converts it: the folder and the GGUF.
	kimi := func(fast, slow float64) (string, string) {
		dir := t.TempDir()
		entries, err := os.ReadDir(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(src, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if e.Name() == "config.json" {
				var c map[string]any
				if err := json.Unmarshal(b, &c); err != nil {
					t.Fatal(err)
				}
				c["model_type"] = "kimi_k2"
				rs := c["rope_scaling"].(map[string]any)
				rs["beta_fast"], rs["beta_slow"] = fast, slow
				if b, err = json.Marshal(c); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		gg := filepath.Join(t.TempDir(), "kimi.gguf")
		if _, err := convert.Run(dir, gg, convert.Options{OutType: convert.OutF32}); err != nil {
			t.Fatal(err)
		}
		return dir, gg
	}
	dir, gg := kimi(0.2, 0.01)
	hf, gguf := run(dir, false), run(gg, false)
	if d, _ := maxDiff(t, gguf, hf, nil); d > maxLogitDiffF32 {
		t.Errorf("the GGUF's logits differ from the checkpoint's by %.3g (> %g)", d, maxLogitDiffF32)
	}
	if d, _ := maxDiff(t, hf, ref.Logits, nil); d < 1e-3 {
		t.Errorf("the ramp changes the logits by %.3g only: it is not exercised", d)
	}
	_, deepseek := kimi(32, 1)
	if d, _ := maxDiff(t, run(gg, true), run(deepseek, false), nil); d != 0 {
		t.Errorf("under MatchLlamaCpp the ramp's GGUF is %.3g from DeepSeek's ramp, want 0 (llama.cpp reads no ramp)", d)
	}
}
