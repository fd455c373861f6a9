package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/internal/opencount"
	"github.com/tfconv/tfconv/synth"
	"github.com/tfconv/tfconv/verify"
)

// verifyTokens are in the vocabulary of every test model (1000 tokens).
const verifyTokens = "1,314,351,864,330,390,888,716,741,287,541,302,276,286,426,296,281,341,923"

var verifyLlama = filepath.Join("..", "..", "testdata", "verify", "llama")

// verifyPerturb copies the HF checkpoint in dir with row `row` of tensor name
// scaled by factor (synth.Perturb).
func verifyPerturb(t *testing.T, dir, name string, row int, factor float32) string {
	t.Helper()
	out := t.TempDir()
	if err := synth.Perturb(dir, out, name, row, factor); err != nil {
		t.Fatal(err)
	}
	return out
}

// verifyJSON is the part of the --json schema the tests read.
type verifyJSON struct {
	MaxAbs float64 `json:"max_abs"`
	KLD    struct {
		Mean, Median, P99, Max float64
	} `json:"kld"`
	Top1     float64  `json:"top1"`
	PPLRatio *float64 `json:"ppl_ratio"`
	Layers   []struct {
		Layer             int
		Cosine, NMSE, Max float64
		MaxAbs            float64 `json:"max_abs"`
	} `json:"layers"`
	FirstDivergentLayer *int     `json:"first_divergent_layer"`
	Pass                bool     `json:"pass"`
	Failures            []string `json:"failures"`
}

// TestVerifyBaselineCommand: the Done-when of the baseline: unperturbed
// model exit 0, one row of layer 1 scaled by 1.01 exit 1 with the layer
// named.
func TestVerifyBaselineCommand(t *testing.T) {
	golden := filepath.Join(t.TempDir(), "golden.json")
	code, _, errs := run(t, "verify", verifyLlama, "--save-baseline", golden, "--tokens", verifyTokens)
	if code != 0 {
		t.Fatalf("save-baseline: exit %d: %s", code, errs)
	}
	code, out, errs := run(t, "verify", verifyLlama, "--baseline", golden, "--json")
	if code != 0 {
		t.Fatalf("unperturbed: exit %d: %s", code, errs)
	}
	var ok verifyJSON
	if err := json.Unmarshal([]byte(out), &ok); err != nil {
		t.Fatal(err)
	}
	if !ok.Pass || ok.Top1 != 1 || ok.FirstDivergentLayer != nil || len(ok.Layers) != 2 || ok.PPLRatio == nil {
		t.Errorf("unperturbed: %+v", ok)
	}
	// --json must carry first_divergent_layer as null, not leave it out.
	if !strings.Contains(out, `"first_divergent_layer": null`) {
		t.Error("first_divergent_layer is not null in the JSON")
	}

	bad := verifyPerturb(t, verifyLlama, "model.layers.1.self_attn.o_proj.weight", 3, 1.01)
	code, out, errs = run(t, "verify", bad, "--baseline", golden, "--json")
	if code != 1 {
		t.Fatalf("perturbed: exit %d, want 1: %s", code, errs)
	}
	var fail verifyJSON
	if err := json.Unmarshal([]byte(out), &fail); err != nil {
		t.Fatal(err)
	}
	if fail.Pass || fail.FirstDivergentLayer == nil || *fail.FirstDivergentLayer != 1 || fail.Layers[0].NMSE != 0 || fail.Layers[1].NMSE == 0 {
		t.Errorf("perturbed: %+v", fail)
	}
	if !strings.Contains(errs, "layer 1") {
		t.Errorf("stderr does not name layer 1: %q", errs)
	}
	// Human output names the layer too.
	code, out, _ = run(t, "verify", bad, "--baseline", golden)
	if code != 1 || !strings.Contains(out, "first divergent layer: 1") || !strings.Contains(out, "result: FAIL") {
		t.Errorf("perturbed table: exit %d\n%s", code, out)
	}
	// A looser custom layer limit and KLD limit let it pass.
	code, _, errs = run(t, "verify", bad, "--baseline", golden, "--layer-nmse", "1", "--max-kld", "1", "--min-top1", "0")
	if code != 0 {
		t.Errorf("custom thresholds: exit %d: %s", code, errs)
	}
}

// TestVerifyTwoModels compares a model with its perturbed copy and writes
// the HTML report.
func TestVerifyTwoModels(t *testing.T) {
	bad := verifyPerturb(t, verifyLlama, "model.layers.0.mlp.up_proj.weight", 7, 1.01)
	report := filepath.Join(t.TempDir(), "report.html")
	code, out, errs := run(t, "verify", verifyLlama, bad, "--tokens", verifyTokens, "--json", "--report", report, "--attn-layer", "1", "--attn-head", "1")
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, errs)
	}
	var r verifyJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.FirstDivergentLayer == nil || *r.FirstDivergentLayer != 0 || r.MaxAbs == 0 || r.KLD.Max == 0 {
		t.Errorf("report: %+v", r)
	}
	h, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(h), "<svg"); n != 6 || // KLD, its histogram, layers, 3 attention maps
		!strings.Contains(string(h), "Attention, layer 1 head 1") {
		t.Errorf("report has %d plots", n)
	}
	// Same model against itself: exit 0, everything exactly equal.
	code, out, errs = run(t, "verify", verifyLlama, verifyLlama, "--tokens", verifyTokens, "--json")
	if code != 0 {
		t.Fatalf("self: exit %d: %s", code, errs)
	}
	var self verifyJSON
	json.Unmarshal([]byte(out), &self)
	if self.MaxAbs != 0 || self.KLD.Max != 0 || self.Top1 != 1 || *self.PPLRatio != 1 {
		t.Errorf("self: %+v", self)
	}
}

func TestVerifyUsageErrors(t *testing.T) {
	golden := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(golden, []byte(`{"format":"nope"}`), 0o644)
	for _, args := range [][]string{
		{"verify", verifyLlama, verifyLlama},                                   // no input, and no tokenizer for the built-in text
		{"verify", verifyLlama},                                                // no mode
		{"verify", verifyLlama, verifyLlama, "--tokens", "1,x"},                // bad ids
		{"verify", verifyLlama, "nonexistent", "--tokens", "1"},                // missing file
		{"verify", verifyLlama, "--baseline", golden},                          // bad baseline
		{"verify", verifyLlama, verifyLlama, "--tokens", "1", "--pair", "q3"},  // unknown pair
		{"verify", verifyLlama, verifyLlama, "--tokens", "5000"},               // outside the vocabulary
		{"verify", verifyLlama, verifyLlama, "--tokens", "1", "--prompt", "x"}, // two inputs
		{"perplexity", verifyLlama},                                            // no --file
		{"diff", verifyLlama},                                                  // one argument
	} {
		if code, _, _ := run(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

// TestDiffCommand: a checkpoint against its perturbed copy lists exactly
// that tensor, with the format-independent hashes of everything else equal.
func TestDiffCommand(t *testing.T) {
	code, out, errs := run(t, "diff", verifyLlama, verifyLlama, "--json")
	if code != 0 {
		t.Fatalf("self diff: exit %d: %s", code, errs)
	}
	var rep struct {
		Matched, Identical, Different int
		Tensors                       []struct {
			Name, Status string
			SHA256A      string   `json:"sha256_a"`
			SHA256B      string   `json:"sha256_b"`
			SQNR         *float64 `json:"sqnr_db"`
			RelErr       float64  `json:"rel_err"`
			MaxAbs       float64  `json:"max_abs"`
		}
	}
	json.Unmarshal([]byte(out), &rep)
	if rep.Matched == 0 || rep.Matched != rep.Identical {
		t.Fatalf("self diff: %+v", rep)
	}
	bad := verifyPerturb(t, verifyLlama, "model.layers.1.self_attn.o_proj.weight", 3, 1.01)
	code, out, errs = run(t, "diff", verifyLlama, bad, "--json")
	if code != 1 {
		t.Fatalf("perturbed diff: exit %d, want 1: %s", code, errs)
	}
	rep.Tensors = nil
	json.Unmarshal([]byte(out), &rep)
	if rep.Different != 1 {
		t.Fatalf("different = %d, want 1", rep.Different)
	}
	for _, d := range rep.Tensors {
		if d.Name == "model.layers.1.self_attn.o_proj.weight" {
			// One row of 64 scaled by 1.01 out of 64 rows: the relative
			// error is 0.01·‖row‖/‖W‖, about 0.01/sqrt(64) = 1.25e-3 for
			// rows of similar norm; SQNR = −20·log10(rel err).
			if d.Status != "different" || d.SQNR == nil || d.RelErr < 5e-4 || d.RelErr > 5e-3 ||
				math.Abs(*d.SQNR+20*math.Log10(d.RelErr)) > 1e-6 || d.SHA256A == d.SHA256B {
				t.Errorf("perturbed tensor: %+v", d)
			}
		} else if d.Status != "identical" || d.SHA256A != d.SHA256B || len(d.SHA256A) != 64 {
			t.Errorf("%s: %+v", d.Name, d)
		}
	}
}

// TestPerplexityCommand: the first two chunks of val.txt on the shipped
// Q8_0 file against llama-perplexity's running values [1]16.4063,
// [2]18.6402 (tiny-fortunes-Q8_0.perplexity.log), to 0.5 %.
func TestPerplexityCommand(t *testing.T) {
	td := filepath.Join("..", "..", "testdata")
	code, out, errs := run(t, "perplexity", filepath.Join(td, "tiny-fortunes", "tiny-fortunes-Q8_0.gguf"),
		"--file", filepath.Join(td, "verify", "val.txt"), "--chunks", "2", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r struct {
		Chunks, Tokens int
		PPL            float64
		Running        []float64
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	want := []float64{16.4063, 18.6402}
	if r.Chunks != 2 || r.Tokens != 126 || len(r.Running) != 2 {
		t.Fatalf("%+v", r)
	}
	for i, w := range want {
		if math.Abs(r.Running[i]/w-1) > 5e-3 {
			t.Errorf("[%d] %.4f, llama-perplexity %.4f", i+1, r.Running[i], w)
		}
	}
}

// TestVerifyOwnQuantization (shared fixtures): llama-quantize's Q8_0 of the
// interop llama and tfconv quantize's Q8_0 of the same f32 GGUF compute the
// same logits (KLD exactly 0), and diff finds every tensor identical: the
// Q8_0 encoders are bit-exact.
func TestVerifyOwnQuantization(t *testing.T) {
	dir := filepath.Join(sharedFixtures(t), "interop", "llama", "gguf")
	ours := filepath.Join(t.TempDir(), "ours-Q8_0.gguf")
	if code, _, errs := run(t, "quantize", filepath.Join(dir, "llama-f32.gguf"), ours, "--type", "q8_0"); code != 0 {
		t.Fatalf("quantize: exit %d: %s", code, errs)
	}
	code, out, errs := run(t, "verify", filepath.Join(dir, "llama-Q8_0.gguf"), ours, "--tokens", verifyTokens, "--json")
	if code != 0 {
		t.Fatalf("verify: exit %d: %s", code, errs)
	}
	var r verifyJSON
	json.Unmarshal([]byte(out), &r)
	if r.MaxAbs != 0 || r.KLD.Max != 0 || r.Top1 != 1 {
		t.Errorf("llama.cpp Q8_0 vs ours: %+v", r)
	}
	if code, out, errs := run(t, "diff", filepath.Join(dir, "llama-Q8_0.gguf"), ours); code != 0 {
		t.Errorf("diff: exit %d: %s %s", code, out, errs)
	}
	// HF checkpoint vs llama.cpp's f32 conversion: every tensor matched and
	// identical through the convert mapping (Q/K permutation undone).
	if code, out, errs := run(t, "diff", filepath.Join(dir, "..", "hf"), filepath.Join(dir, "llama-f32.gguf")); code != 0 ||
		!strings.Contains(out, "21 tensors matched: 21 identical") {
		t.Errorf("diff hf vs f32 gguf: exit %d: %s %s", code, out, errs)
	}
}

// TestVerifyOpensEachInputOnce: a verify run opens each checkpoint once
// (model.Load), whatever the mode; the dtypes that choose the thresholds
// come from the loaded model, not from opening the file again.
func TestVerifyOpensEachInputOnce(t *testing.T) {
	cand := verifyPerturb(t, verifyLlama, "model.layers.0.mlp.up_proj.weight", 7, 1.0001)
	golden := filepath.Join(t.TempDir(), "golden.json")
	for _, c := range []struct {
		name  string
		args  []string
		paths []string
	}{
		{"two models", []string{"verify", verifyLlama, cand, "--tokens", verifyTokens}, []string{verifyLlama, cand}},
		{"overrides without --pair", []string{"verify", verifyLlama, cand, "--tokens", verifyTokens, "--max-kld", "5"}, []string{verifyLlama, cand}},
		{"save baseline", []string{"verify", verifyLlama, "--save-baseline", golden, "--tokens", verifyTokens}, []string{verifyLlama}},
		{"baseline", []string{"verify", cand, "--baseline", golden, "--min-top1", "0.5"}, []string{cand}},
	} {
		opencount.Start()
		if code, _, errs := run(t, c.args...); code > 1 {
			t.Fatalf("%s: exit %d: %s", c.name, code, errs)
		}
		for _, p := range c.paths {
			if n := opencount.Of(p); n != 1 {
				t.Errorf("%s: %s opened %d times, want 1", c.name, p, n)
			}
		}
	}
}

// TestVerifyOverridesStartFromPair: a single limit replaces that limit of
// the pair the weight types choose (f32 for two f32 models), or of --pair.
func TestVerifyOverridesStartFromPair(t *testing.T) {
	for _, c := range []struct {
		args []string
		want verify.Thresholds
	}{
		{[]string{"--max-kld", "5"}, verify.Thresholds{Pair: "custom", MaxKLD: 5, MinTop1: verify.ThresholdsF32.MinTop1, LayerNMSE: verify.ThresholdsF32.LayerNMSE}},
		{[]string{"--pair", "q4", "--min-top1", "0.5"}, verify.Thresholds{Pair: "custom", MaxKLD: verify.ThresholdsQ4.MaxKLD, MinTop1: 0.5, LayerNMSE: verify.ThresholdsQ4.LayerNMSE}},
		{[]string{"--pair", "q4"}, verify.ThresholdsQ4},
		{nil, verify.ThresholdsF32},
	} {
		args := append([]string{"verify", verifyLlama, verifyLlama, "--tokens", verifyTokens, "--json"}, c.args...)
		code, out, errs := run(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", c.args, code, errs)
		}
		var r struct{ Thresholds verify.Thresholds }
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if r.Thresholds != c.want {
			t.Errorf("%v: thresholds %+v, want %+v", c.args, r.Thresholds, c.want)
		}
	}
}
