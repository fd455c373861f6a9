package verify

import (
	"math"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// Tolerances of the hand computations below: the values are exact
// rationals/logs evaluated in float64, so only float64 rounding separates
// them from the package's results.
const handTol = 1e-12

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }

// TestComparerByHand compares two 3-token positions whose statistics are
// written out by hand.
func TestComparerByHand(t *testing.T) {
	c := NewComparer(2)
	// Position 0: ref (1, 2, 3), cand (1, 2, 4): differences (0, 0, 1).
	// max abs 1, RMS sqrt(1/3), cosine (1+4+12)/sqrt(14·21) = 17/sqrt(294).
	// top-1 both token 2; top-2 ref {2,1}, cand {2,1}: overlap 1.
	if err := c.Add([]float32{1, 2, 3}, []float32{1, 2, 4}, 1); err != nil {
		t.Fatal(err)
	}
	// Position 1: ref (3, 0, 0), cand (0, 3, 0): top tokens 0 vs 1;
	// top-2 ref {0,1} (tie at 0 keeps the lower index), cand {1,0}: overlap 1.
	if err := c.Add([]float32{3, 0, 0}, []float32{0, 3, 0}, -1); err != nil {
		t.Fatal(err)
	}
	ps := c.Positions()
	p := ps[0]
	if p.MaxAbs != 1 || !near(p.RMS, math.Sqrt(1.0/3), handTol) || !near(p.Cosine, 17/math.Sqrt(294), handTol) {
		t.Errorf("position 0: max %g rms %g cos %g", p.MaxAbs, p.RMS, p.Cosine)
	}
	if p.RefTop != 2 || p.CandTop != 2 || p.TopKOverlap != 1 {
		t.Errorf("position 0: tops %d %d overlap %g", p.RefTop, p.CandTop, p.TopKOverlap)
	}
	// NLL of target 1: ref log-softmax(1,2,3)[1] = 2 − ln(e+e²+e³).
	lse := func(a, b, c float64) float64 { return math.Log(math.Exp(a) + math.Exp(b) + math.Exp(c)) }
	if !near(p.RefNLL, lse(1, 2, 3)-2, handTol) || !near(p.CandNLL, lse(1, 2, 4)-2, handTol) {
		t.Errorf("position 0 NLL: %g %g", p.RefNLL, p.CandNLL)
	}
	// Δp of the ref top token 2: e⁴/(e+e²+e⁴) − e³/(e+e²+e³).
	dp := math.Exp(4-lse(1, 2, 4)) - math.Exp(3-lse(1, 2, 3))
	if !near(p.DeltaP, dp, handTol) {
		t.Errorf("position 0 Δp = %g, want %g", p.DeltaP, dp)
	}
	q := ps[1]
	if q.RefTop != 0 || q.CandTop != 1 || q.TopKOverlap != 1 || q.Target != -1 {
		t.Errorf("position 1: %+v", q)
	}
	// KLD of position 1: P = (e³, 1, 1)/(e³+2), Q = (1, e³, 1)/(e³+2):
	// Σ p_i (log p_i − log q_i) = p₀·3 + p₁·(−3) = 3(e³ − 1)/(e³ + 2).
	e3 := math.Exp(3)
	if !near(q.KLD, 3*(e3-1)/(e3+2), handTol) {
		t.Errorf("position 1 KLD = %.15g, want %.15g", q.KLD, 3*(e3-1)/(e3+2))
	}
	s := c.Summary()
	if s.Top1 != 0.5 || !near(s.Top1Err, math.Sqrt(0.5*0.5/1), handTol) {
		t.Errorf("top1 %g ± %g, want 0.5 ± 0.5", s.Top1, s.Top1Err)
	}
	if s.MaxAbs != 3 {
		t.Errorf("summary max abs %g, want 3", s.MaxAbs)
	}
	// RMS over all 6 logits: differences (0,0,1,−3,3,0) → sqrt(19/6).
	if !near(s.RMS, math.Sqrt(19.0/6), handTol) {
		t.Errorf("summary RMS %g, want %g", s.RMS, math.Sqrt(19.0/6))
	}
	if s.PPL == nil || s.PPL.Count != 1 || !near(s.PPL.Ratio, math.Exp(p.CandNLL-p.RefNLL), handTol) {
		t.Errorf("PPL %+v", s.PPL)
	}
	if err := c.Add([]float32{1}, []float32{1, 2}, -1); err == nil {
		t.Error("Add accepted logits of different lengths")
	}
	if err := c.Add([]float32{1, 2}, []float32{1, 2}, 2); err == nil {
		t.Error("Add accepted a target outside the vocabulary")
	}
}

// TestDescribe checks llama-perplexity's percentile definition on 1..5:
// position f·(n−1) interpolated, so p90 = 4.6, p99 = 4.96, median 3.
func TestDescribe(t *testing.T) {
	d := Describe([]float64{5, 3, 1, 4, 2})
	if d.Median != 3 || !near(d.P90, 4.6, handTol) || !near(d.P99, 4.96, handTol) || !near(d.P999, 4.996, handTol) ||
		d.Max != 5 || d.Min != 1 || d.Mean != 3 || d.MeanErr != 0 {
		t.Errorf("Describe = %+v", d)
	}
	// Even count: median is the mean of the two middle values.
	if m := Describe([]float64{1, 2, 3, 10}).Median; m != 2.5 {
		t.Errorf("median of 1,2,3,10 = %g, want 2.5", m)
	}
	// Above 10 values the standard error appears: 0..11 has mean 5.5,
	// population variance (n²−1)/12 = 143/12, so σ/sqrt(n−1) = sqrt(143/12/11).
	v := make([]float64, 12)
	for i := range v {
		v[i] = float64(i)
	}
	if e := Describe(v).MeanErr; !near(e, math.Sqrt(143.0/12/11), handTol) {
		t.Errorf("MeanErr = %g, want %g", e, math.Sqrt(143.0/12/11))
	}
}

// TestLayersAndDivergence: NMSE by hand and the two rules of MarkDivergent.
func TestLayersAndDivergence(t *testing.T) {
	ref := [][][]float32{{{3, 4}}, {{3, 4}}}
	cand := [][][]float32{{{3, 4}}, {{3, 5}}}
	ls, err := CompareLayers(ref, cand)
	if err != nil {
		t.Fatal(err)
	}
	// Layer 1: Σd² = 1, Σref² = 25 → NMSE 0.04; cosine (9+20)/(5·sqrt(34)).
	if ls[0].NMSE != 0 || ls[0].Cosine != 1 || !near(ls[1].NMSE, 0.04, handTol) || ls[1].MaxAbs != 1 ||
		!near(ls[1].Cosine, 29/(5*math.Sqrt(34)), handTol) {
		t.Fatalf("layers = %+v", ls)
	}
	if f := MarkDivergent(ls, 0.01); f == nil || *f != 1 || ls[0].Departs || !ls[1].Departs {
		t.Errorf("limit rule: first = %v, layers %+v", f, ls)
	}
	if f := MarkDivergent(ls, 0.1); f != nil {
		t.Errorf("below the limit and no jump from 0: first = %d, want none", *f)
	}
	// Rule 2: 1e-4 → 2e-3 is a 20× jump above 1 % of the limit 0.01.
	jump := []Layer{{Layer: 0, NMSE: 1e-4}, {Layer: 1, NMSE: 1.5e-4}, {Layer: 2, NMSE: 2e-3}, {Layer: 3, NMSE: 3e-3}}
	if f := MarkDivergent(jump, 0.01); f == nil || *f != 2 {
		t.Errorf("jump rule: first = %v, want 2", f)
	}
	// The same jump far below 1 % of the limit is rounding noise.
	small := []Layer{{Layer: 0, NMSE: 1e-16}, {Layer: 1, NMSE: 1e-14}}
	if f := MarkDivergent(small, 1e-10); f != nil {
		t.Errorf("noise jump flagged at %d", *f)
	}
}

func TestThresholdPairs(t *testing.T) {
	cases := []struct {
		ref, cand string
		want      string
	}{
		{"F32", "F32", "f32"},
		{"F32", "F16", "f16"},
		{"BF16", "F16", "bf16"},
		{"F32", "Q8_0", "q8_0"},
		{"F32", "Q6_K", "q6_k"},
		{"Q8_0", "Q4_K", "q4_k"},
		{"Q6_K", "IQ2_XXS", "iq2_xxs"},
	}
	for _, c := range cases {
		got := PairFor(ParseTypes([]string{c.ref}), ParseTypes([]string{c.cand}))
		if got.Pair != c.want {
			t.Errorf("PairFor(%s, %s) = %s, want %s", c.ref, c.cand, got.Pair, c.want)
		}
	}
	if _, err := NamedThresholds("q3"); err == nil {
		t.Error("unknown pair accepted")
	}
}

// TestThresholdsForEveryType: every weight type has default thresholds of
// its own; those below 8 bits are derived from the bits per weight through
// the q4 (4.5 bits) and q8_0 (8.5 bits) anchors, so a 4.5-bit type gets
// q4's limits, the limits loosen monotonically as the bits fall, and the
// IQ types are covered (they all shared q4's before).
func TestThresholdsForEveryType(t *testing.T) {
	t.Parallel()
	for _, d := range []tensor.DType{tensor.Q4_0, tensor.Q4_K, tensor.IQ4_NL} {
		got := ForType(d)
		if got.MaxKLD != ThresholdsQ4.MaxKLD || got.MinTop1 != ThresholdsQ4.MinTop1 || got.LayerNMSE != ThresholdsQ4.LayerNMSE {
			t.Errorf("%v (4.5 bits): %+v, want q4's limits", d, got)
		}
	}
	// Q6_K: 6.5625 bits, x = 0.515625 of the way from q4 to q8_0.
	q6 := ForType(tensor.Q6_K)
	wantKLD := 0.25 * math.Pow(2e-3/0.25, 0.515625)
	if q6.Pair != "q6_k" || !near(q6.MaxKLD, wantKLD, 1e-12) || !near(q6.MinTop1, 0.40+0.50*0.515625, 1e-12) ||
		!near(q6.LayerNMSE, 0.3*math.Pow(2e-3/0.3, 0.515625), 1e-12) {
		t.Errorf("Q6_K: %+v (want max KLD %g)", q6, wantKLD)
	}
	if q6.MaxKLD < 0.02 || q6.MaxKLD > 0.022 {
		t.Errorf("Q6_K max KLD %g, want about 0.021", q6.MaxKLD)
	}
	order := []tensor.DType{tensor.Q6_K, tensor.Q5_K, tensor.Q4_K, tensor.IQ4_XS, tensor.Q3_K, tensor.IQ3_XXS,
		tensor.Q2_K, tensor.IQ2_XS, tensor.IQ2_XXS, tensor.IQ1_M, tensor.IQ1_S}
	prev := ThresholdsQ8_0
	for _, d := range order {
		th := ForType(d)
		if th.Pair != strings.ToLower(d.String()) {
			t.Errorf("%v: pair %q", d, th.Pair)
		}
		if th.MaxKLD < prev.MaxKLD || th.MinTop1 > prev.MinTop1 || th.LayerNMSE < prev.LayerNMSE {
			t.Errorf("%v (%g bits): %+v not looser than %s's %+v", d, d.BitsPerElement(), th, prev.Pair, prev)
		}
		if th.MaxKLD > 3 || th.MinTop1 < 0.05 || th.LayerNMSE > 1 {
			t.Errorf("%v: %+v beyond the caps", d, th)
		}
		prev = th
	}
	if th := ForType(tensor.IQ1_S); th.MaxKLD != 3 || th.MinTop1 != 0.05 || th.LayerNMSE != 1 {
		t.Errorf("IQ1_S (%g bits): %+v, want the caps", tensor.IQ1_S.BitsPerElement(), th)
	}
	if th, err := NamedThresholds("iq2_xxs"); err != nil || th != ForType(tensor.IQ2_XXS) {
		t.Errorf("--pair iq2_xxs: %+v, %v", th, err)
	}
	if th := ForType(tensor.Q8_K); th != ThresholdsQ8_0 {
		t.Errorf("Q8_K: %+v, want q8_0's", th)
	}
}

// The HTML report of a long run stays small and readable (issue 14: 5.4 MB
// and a solid block at 29k positions): windowed means, a histogram, and the
// attention maps labelled with the models.
func TestHTMLReportLongRun(t *testing.T) {
	r := &Report{Ref: "ref.gguf", Cand: "cand.gguf", Pass: true}
	r.Summary.Positions = 30000
	for i := 0; i < 30000; i++ {
		r.Positions = append(r.Positions, Position{KLD: 1e-4 * (1 + float64(i%97))})
	}
	r.Attention = &Attention{Layer: 0, Head: 0, Ref: [][]float32{{1, 0}, {0.5, 0.5}}, Cand: [][]float32{{1, 0}, {0.4, 0.6}}}
	var b strings.Builder
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	t.Logf("report of 30000 positions: %d bytes", len(page))
	if len(page) > 1<<20 {
		t.Errorf("report of 30000 positions is %d bytes, want under 1 MiB", len(page))
	}
	for _, want := range []string{"mean of every 100 positions", "Distribution of the KL divergence (30000 positions)",
		"reference: ref.gguf", "candidate: cand.gguf"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if n := strings.Count(page, "<rect"); n > 2*maxBars+histBins+20 {
		t.Errorf("%d rects", n)
	}
}
