package eval

import (
	"math"
	"testing"
)

// handTol is the relative tolerance of values worked out by hand: float64
// rounding of a few operations.
const handTol = 1e-12

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }

// TestKLDByHand: logits (0, ln 3) give P = (1/4, 3/4); logits (0, 0) give
// Q = (1/2, 1/2). KLD(P‖Q) = 1/4·ln((1/4)/(1/2)) + 3/4·ln((3/4)/(1/2))
// = −1/4·ln 2 + 3/4·ln(3/2) = 0.130812035941137...
func TestKLDByHand(t *testing.T) {
	ref := []float32{0, float32(math.Log(3))}
	cand := []float32{0, 0}
	lp := LogSoftmax(make([]float64, 2), ref)
	lq := LogSoftmax(make([]float64, 2), cand)
	want := -0.25*math.Log(2) + 0.75*math.Log(1.5)
	// ref's logit ln 3 is rounded to float32; P is exp of that, so compare
	// with P computed from the float32 value.
	l3 := float64(float32(math.Log(3)))
	p1 := math.Exp(l3) / (1 + math.Exp(l3))
	wantF32 := (1-p1)*math.Log((1-p1)/0.5) + p1*math.Log(p1/0.5)
	if got := KLD(lp, lq); !near(got, wantF32, handTol) {
		t.Errorf("KLD = %.15g, want %.15g", got, wantF32)
	}
	if math.Abs(wantF32-want) > 1e-7 {
		t.Fatalf("hand value %.15g vs float32-rounded %.15g: test arithmetic is off", want, wantF32)
	}
	if got := KLD(lp, lp); got != 0 {
		t.Errorf("KLD(P‖P) = %g, want exactly 0", got)
	}
	// Shifting logits by a constant does not change the distribution.
	shifted := []float32{5, 5 + float32(math.Log(3))}
	ls := LogSoftmax(make([]float64, 2), shifted)
	if got := KLD(lp, ls); got > 1e-12 {
		t.Errorf("KLD of shifted logits = %g, want ~0", got)
	}
}

func TestChunks(t *testing.T) {
	toks := make([]int, 2*8+5)
	for i := range toks {
		toks[i] = 100 + i
	}
	ch, err := Chunks(toks, 8, 1)
	if err != nil {
		t.Fatal(err)
	}
	// 21 tokens at ctx 8: 2 chunks, the tail of 5 dropped; each starts with
	// BOS; scoring starts at 4 (positions 4..6 score tokens 5..7).
	if len(ch) != 2 || ch[1].Tokens[0] != 1 || ch[1].Tokens[1] != 109 || ch[0].First != 4 {
		t.Fatalf("chunks = %+v", ch)
	}
	if _, err := Chunks(toks[:15], 8, 1); err == nil {
		t.Error("Chunks accepted fewer than 2·ctx tokens")
	}
	// A uniform model (all logits equal over a vocabulary of 200) has
	// perplexity exactly 200 whatever the tokens.
	res, err := Perplexity(toks, 8, 1, 0, func(tokens []int) ([][]float32, error) {
		out := make([][]float32, len(tokens))
		for i := range out {
			out[i] = make([]float32, 200)
		}
		return out, nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Tokens != 2*3 || !near(res.PPL, 200, 1e-12) || res.PPLErr != 0 || len(res.Running) != 2 {
		t.Errorf("uniform perplexity = %+v", res)
	}
}
