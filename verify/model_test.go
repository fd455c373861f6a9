package verify

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/convert"
	"github.com/tfconv/tfconv/internal/fixtures"
	"github.com/tfconv/tfconv/model"
	"github.com/tfconv/tfconv/synth"
)

// Tolerances of the end-to-end tests.
const (
	// pplTolF32 is the Done-when tolerance of an f32 perplexity against
	// llama-perplexity with an f32 KV cache (0.01 %).
	pplTolF32 = 1e-4
	// pplTolQuant is the tolerance for f16 and quantized files (0.5 %):
	// llama.cpp rounds activations to 8 bits inside quantized products and
	// keeps an f16 KV cache, which tfconv's float32 forward does not.
	pplTolQuant = 5e-3
	// maxKLDRoPELayout bounds the KLD between an HF llama and its GGUF form:
	// the GGUF runs RoPE on interleaved pairs (the Q/K rows permuted), the
	// same numbers in another order, so logits differ by float32 rounding
	// (~4e-6) and the KLD is ~1e-13, not 0.
	maxKLDRoPELayout = 1e-10
)

// testTokens are in every test model's vocabulary (1000 tokens).
var testTokens = []int{1, 314, 351, 864, 330, 390, 888, 716, 741, 287, 541, 302, 276, 286, 426, 296, 281, 341, 923}

func load(t *testing.T, path string) *model.Model {
	t.Helper()
	m, err := model.Load(path, model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestConvertedF32Identical: an HF checkpoint and tfconv's own f32 GGUF
// conversion of it compute the same logits (gpt2: bit for bit, KLD exactly
// 0; llama: equal up to RoPE-layout rounding), top-1 agreement 1, and diff
// reports every tensor matched and identical.
func TestConvertedF32Identical(t *testing.T) {
	for _, arch := range []string{"gpt2", "llama"} {
		t.Run(arch, func(t *testing.T) {
			src := filepath.Join("..", "testdata", "verify", arch)
			dst := filepath.Join(t.TempDir(), arch+"-f32.gguf")
			if _, err := convert.Run(src, dst, convert.Options{OutType: convert.OutF32}); err != nil {
				t.Fatal(err)
			}
			rep, err := Compare(load(t, src), load(t, dst), Options{Tokens: testTokens, AttnLayer: -1})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Top1 != 1 || !rep.Pass || rep.FirstDivergentLayer != nil {
				t.Errorf("top1 %g pass %v first %v failures %v", rep.Top1, rep.Pass, rep.FirstDivergentLayer, rep.Failures)
			}
			if rep.Thresholds.Pair != "f32" || rep.Summary.Positions != len(testTokens) || rep.PPL == nil {
				t.Errorf("pair %s positions %d ppl %v", rep.Thresholds.Pair, rep.Summary.Positions, rep.PPL)
			}
			if arch == "gpt2" && (rep.KLD.Max != 0 || rep.MaxAbs != 0 || *rep.PPLRatio != 1) {
				t.Errorf("gpt2: KLD max %g, max abs %g, ppl ratio %v; want exactly 0, 0, 1", rep.KLD.Max, rep.MaxAbs, *rep.PPLRatio)
			}
			if rep.KLD.Max > maxKLDRoPELayout {
				t.Errorf("KLD max %g above %g", rep.KLD.Max, maxKLDRoPELayout)
			}
			a, _ := checkpoint.Open(src)
			defer a.Close()
			b, _ := checkpoint.Open(dst)
			defer b.Close()
			d, err := Diff(a, b, ConvertNames, ConvertNames)
			if err != nil {
				t.Fatal(err)
			}
			if !d.Same() || d.Matched == 0 || d.Matched != d.Identical {
				t.Errorf("diff: %d matched, %d identical, %d missing, %d extra", d.Matched, d.Identical, d.Missing, d.Extra)
			}
		})
	}
}

// writePerturbed copies the HF checkpoint in dir with row `row` of tensor name
// scaled by factor (synth.Perturb).
func writePerturbed(t *testing.T, dir, name string, row int, factor float32) string {
	t.Helper()
	out := t.TempDir()
	if err := synth.Perturb(dir, out, name, row, factor); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPerturbedWeightFailsBaseline: one row of layer 1's MLP down
// projection scaled by 1.01 fails the baseline and is located at layer 1;
// the unperturbed model passes (KLD at float32 rounding of the stored
// log-probabilities, identical hidden states).
func TestPerturbedWeightFailsBaseline(t *testing.T) {
	src := filepath.Join("..", "testdata", "verify", "llama")
	m := load(t, src)
	b, err := MakeBaseline(m, Options{Tokens: testTokens})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := b.Write(&buf); err != nil {
		t.Fatal(err)
	}
	b, err = ReadBaseline(&buf, "golden.json")
	if err != nil {
		t.Fatal(err)
	}
	if b.Layers != 2 || len(b.Positions) != len(testTokens) || b.TopK != DefaultTopK || len(b.WeightTypes) != 1 || b.WeightTypes[0] != "F32" {
		t.Fatalf("baseline: %d layers, %d positions, k %d, types %v", b.Layers, len(b.Positions), b.TopK, b.WeightTypes)
	}
	same, err := CompareToBaseline(b, m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The baseline keeps log-probabilities as float32: KLD ~1e-15, not 0.
	if !same.Pass || same.KLD.Max > 1e-12 || same.Top1 != 1 || same.FirstDivergentLayer != nil || same.PPLRatio == nil || math.Abs(*same.PPLRatio-1) > 1e-6 {
		t.Errorf("unperturbed: pass %v KLD max %g top1 %g first %v failures %v", same.Pass, same.KLD.Max, same.Top1, same.FirstDivergentLayer, same.Failures)
	}
	bad := writePerturbed(t, src, "model.layers.1.mlp.down_proj.weight", 5, 1.01)
	rep, err := CompareToBaseline(b, load(t, bad), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Pass || rep.FirstDivergentLayer == nil || *rep.FirstDivergentLayer != 1 {
		t.Fatalf("perturbed: pass %v first %v layers %+v", rep.Pass, rep.FirstDivergentLayer, rep.Layers)
	}
	if rep.Layers[0].NMSE != 0 || rep.Layers[1].NMSE <= ThresholdsF32.LayerNMSE {
		t.Errorf("perturbed layers %+v", rep.Layers)
	}
	// The same comparison against the model itself rather than a baseline
	// names the same layer.
	full, err := Compare(m, load(t, bad), Options{Tokens: testTokens, AttnLayer: 1, AttnHead: 0})
	if err != nil {
		t.Fatal(err)
	}
	if full.Pass || full.FirstDivergentLayer == nil || *full.FirstDivergentLayer != 1 || full.Attention == nil ||
		len(full.Attention.Ref) != len(testTokens) {
		t.Errorf("perturbed vs model: pass %v first %v", full.Pass, full.FirstDivergentLayer)
	}
	var html bytes.Buffer
	if err := WriteHTML(&html, full); err != nil {
		t.Fatal(err)
	}
	h := html.String()
	if strings.Count(h, "<svg") != 6 || // KLD, its histogram, layers, 3 attention maps
		strings.Contains(h, "<script src") || strings.Contains(h, "<link") || strings.Contains(h, "http://") ||
		!strings.Contains(h, "First divergent layer: <b>1</b>") ||
		!strings.Contains(h, `class="fail"`) {
		t.Errorf("HTML report: %d plots, or missing verdict", strings.Count(h, "<svg"))
	}
}

func TestReadBaselineRejects(t *testing.T) {
	for name, doc := range map[string]string{
		"format":  `{"format":"x","version":1,"tokens":[1]}`,
		"version": `{"format":"tfconv-verify-baseline","version":9,"tokens":[1]}`,
		"tokens":  `{"format":"tfconv-verify-baseline","version":1,"tokens":[]}`,
		"lengths": `{"format":"tfconv-verify-baseline","version":1,"tokens":[1],"positions":[{"top":[1],"logits":[],"logprobs":[1]}]}`,
		"hidden":  `{"format":"tfconv-verify-baseline","version":1,"tokens":[1],"layers":2,"d_model":4,"layer_positions":[0],"hidden":"AAAA"}`,
		"json":    `{"format":`,
	} {
		if _, err := ReadBaseline(strings.NewReader(doc), "b.json"); err == nil || !strings.Contains(err.Error(), "b.json") {
			t.Errorf("%s: err = %v, want an error naming the file", name, err)
		}
	}
}

// runningPPL reads llama-perplexity's running values "[i]x," from a log.
func runningPPL(t *testing.T, path string) []float64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []float64
	for _, m := range regexp.MustCompile(`\[(\d+)\]([0-9.]+),`).FindAllSubmatch(data, -1) {
		v, _ := strconv.ParseFloat(string(m[2]), 64)
		out = append(out, v)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no running perplexities", path)
	}
	return out
}

// pplChunks is how many chunks the default tests score (the first 20 of
// 466: about a second per model).
const pplChunks = 20

// TestPerplexityQ8_0: the shipped tiny-fortunes Q8_0 GGUF over the first
// chunks of val.txt matches llama-perplexity's running values from its log.
func TestPerplexityQ8_0(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("..", "testdata", "verify", "val.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := runningPPL(t, filepath.Join("..", "testdata", "verify", "tiny-fortunes-Q8_0.perplexity.log"))
	m := load(t, filepath.Join("..", "testdata", "tiny-fortunes", "tiny-fortunes-Q8_0.gguf"))
	res, err := ModelPerplexity(m, string(text), 128, pplChunks, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Chunks != pplChunks || res.Tokens != pplChunks*63 {
		t.Fatalf("%d chunks, %d tokens scored; want %d, %d", res.Chunks, res.Tokens, pplChunks, pplChunks*63)
	}
	for i, got := range res.Running {
		if math.Abs(got/want[i]-1) > pplTolQuant {
			t.Errorf("[%d] PPL %.4f, llama-perplexity %.4f", i+1, got, want[i])
		}
	}
}

// TestPerplexityShared checks every tiny-fortunes file against the
// llama-perplexity logs (f32 with an f32 KV cache). By default over the
// first chunks; with TFCONV_PPL_FULL=1 over all 466 chunks against the
// final figures (about 25 s per model).
func TestPerplexityShared(t *testing.T) {
	dir := filepath.Join(fixtures.Require(t), "trained", "tiny-fortunes")
	text, err := os.ReadFile(filepath.Join(dir, "val.txt"))
	if err != nil {
		t.Fatal(err)
	}
	chunks := pplChunks
	if os.Getenv("TFCONV_PPL_FULL") != "" {
		chunks = 0
	}
	gg := func(name string) string { return filepath.Join(dir, "gguf", name) }
	cases := []struct{ model, log string }{
		{"hf", gg("tiny-fortunes-f32.perplexity-kv_f32.log")},
		{"gguf/tiny-fortunes-f16.gguf", gg("tiny-fortunes-f16.perplexity.log")},
		{"gguf/tiny-fortunes-Q8_0.gguf", gg("tiny-fortunes-Q8_0.perplexity.log")},
		{"gguf/tiny-fortunes-Q4_K_M.gguf", gg("tiny-fortunes-Q4_K_M.perplexity.log")},
		// llama.cpp's Q4_0 figure depends on its micro-batch size (see
		// testdata/verify/README.md); the -ub 16 run is the one whose
		// arithmetic is that of the dequantized weights.
		{"gguf/tiny-fortunes-Q4_0.gguf", filepath.Join("..", "testdata", "verify", "tiny-fortunes-Q4_0.perplexity-ub16.log")},
	}
	for _, c := range cases {
		want := runningPPL(t, c.log)
		res, err := ModelPerplexity(load(t, filepath.Join(dir, c.model)), string(text), 128, chunks, nil)
		if err != nil {
			t.Fatal(err)
		}
		tol := pplTolQuant
		if c.model == "hf" {
			tol = pplTolF32
		}
		w := want[len(res.Running)-1]
		t.Logf("%s: PPL %.4f ± %.4f over %d chunks; llama-perplexity %.4f", c.model, res.PPL, res.PPLErr, res.Chunks, w)
		if math.Abs(res.PPL/w-1) > tol {
			t.Errorf("%s: PPL %.4f, llama-perplexity %.4f (tolerance %g)", c.model, res.PPL, w, tol)
		}
	}
}

// TestInteropShared: on the interop fixtures, llama.cpp's own f32 GGUF
// agrees with the HF checkpoint, and for half and quantized files the KLD,
// top-1 and max |Δlogit| verify reports are those of the fixture's own
// logits: transformers on the dequantized weights (dequant-hf.json) against
// transformers on the originals (reference.json).
func TestInteropShared(t *testing.T) {
	root := filepath.Join(fixtures.Require(t), "interop")
	for _, arch := range []string{"gpt2", "llama"} {
		hf := load(t, filepath.Join(root, arch, "hf"))
		var ref struct {
			IDs    []int       `json:"input_ids"`
			Logits [][]float32 `json:"logits"`
		}
		readJSON(t, filepath.Join(root, arch, "hf", "reference.json"), &ref)
		f32 := load(t, filepath.Join(root, arch, "gguf", arch+"-f32.gguf"))
		rep, err := Compare(hf, f32, Options{Tokens: ref.IDs, AttnLayer: -1})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Top1 != 1 || rep.KLD.Max > maxKLDRoPELayout || !rep.Pass {
			t.Errorf("%s f32: top1 %g KLD max %g failures %v", arch, rep.Top1, rep.KLD.Max, rep.Failures)
		}
		for _, typ := range []string{"f16", "bf16", "Q8_0", "Q4_K"} {
			var dq struct {
				Logits [][]float32 `json:"logits"`
			}
			readJSON(t, filepath.Join(root, arch, "gguf", arch+"-"+typ+".dequant-hf.json"), &dq)
			fromFixture := NewComparer(0)
			if err := addAll(fromFixture, ref.Logits, dq.Logits, ref.IDs); err != nil {
				t.Fatal(err)
			}
			want := fromFixture.Summary()
			rep, err := Compare(hf, load(t, filepath.Join(root, arch, "gguf", arch+"-"+typ+".gguf")), Options{Tokens: ref.IDs, AttnLayer: -1})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s %s: max|Δ| %.4g KLD mean %.3g max %.3g top1 %.3f (fixture logits: %.4g %.3g %.3g %.3f) pass %v",
				arch, typ, rep.MaxAbs, rep.KLD.Mean, rep.KLD.Max, rep.Top1, want.MaxAbs, want.KLD.Mean, want.KLD.Max, want.Top1, rep.Pass)
			// The model reproduces dequant-hf to ~1e-5 in the logits, so
			// the statistics agree to about that much.
			if math.Abs(rep.MaxAbs-want.MaxAbs) > 1e-4 || math.Abs(rep.KLD.Mean-want.KLD.Mean) > 1e-6+1e-3*want.KLD.Mean ||
				rep.Top1 != want.Top1 {
				t.Errorf("%s %s: verify and the fixture's logits disagree", arch, typ)
			}
			if !rep.Pass {
				t.Errorf("%s %s: an honest conversion fails: %v", arch, typ, rep.Failures)
			}
		}
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := json.NewDecoder(bufio.NewReader(f)).Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
