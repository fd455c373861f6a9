package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
)

// requantCase is one `tfconv quantize SRC DST --type TYPE ARGS…` whose
// file llama-quantize made too, with llama.cpp's logits for it and for the
// model's f16 GGUF on the same tokens (testdata/quantize/gen_tiny_*.py).
type requantCase struct {
	typ, src, dst string
	args          []string
	sha256        string
	tokens        []int
	logits, f16   [][]float64
}

// requantFigures are what requantRun measures of tfconv's run of the file.
type requantFigures struct {
	worst, match    float64 // max |Δ| from llama.cpp's logits on the file, plain and with --match-llamacpp
	peak            float64 // llama.cpp's largest |logit|
	kld, llamaKLD   float64 // mean KL divergence from the f16 model: tfconv's run, llama.cpp's run
	top1, llamaTop1 int     // positions with the f16 model's top token
}

// requantRun quantizes as c says, checks the file is llama-quantize's byte
// for byte, runs it (plain and --match-llamacpp) and measures it against
// llama.cpp's logits. The caller holds the figures to its bounds.
func requantRun(t *testing.T, c requantCase) requantFigures {
	t.Helper()
	if len(c.tokens) == 0 || len(c.logits) != len(c.tokens) || len(c.f16) != len(c.tokens) {
		t.Fatalf("%s reference: %d tokens, %d and %d logit rows", c.typ, len(c.tokens), len(c.logits), len(c.f16))
	}
	args := append([]string{"quantize", c.src, c.dst, "--type", c.typ}, c.args...)
	if code, _, errs := run(t, args...); code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errs)
	}
	data, err := os.ReadFile(c.dst)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != c.sha256 {
		t.Errorf("%s: sha256 %x, llama-quantize's %s", c.typ, sum, c.sha256)
	}
	ids := make([]string, len(c.tokens))
	for i, id := range c.tokens {
		ids[i] = fmt.Sprint(id)
	}
	runLogits := func(flags ...string) [][]float64 {
		t.Helper()
		code, out, errs := run(t, append([]string{"run", c.dst, "--tokens", strings.Join(ids, ","), "--json"}, flags...)...)
		if code != 0 {
			t.Fatalf("run %s %v: exit %d: %s", c.typ, flags, code, errs)
		}
		var got struct {
			Logits [][]float64 `json:"logits"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Logits) != len(c.tokens) {
			t.Fatalf("run %s %v gave %d logit rows for %d tokens", c.typ, flags, len(got.Logits), len(c.tokens))
		}
		for i, row := range got.Logits {
			if len(row) != len(c.logits[i]) || len(row) != len(c.f16[i]) {
				t.Fatalf("%s position %d: %d logits, llama.cpp %d", c.typ, i, len(row), len(c.logits[i]))
			}
		}
		return got.Logits
	}
	var f requantFigures
	for i, row := range runLogits("--match-llamacpp") {
		for j := range row {
			f.match = max(f.match, math.Abs(row[j]-c.logits[i][j]))
		}
	}
	for i, row := range runLogits() {
		for j := range row {
			f.worst = max(f.worst, math.Abs(row[j]-c.logits[i][j]))
			f.peak = max(f.peak, math.Abs(c.logits[i][j]))
		}
		f.kld += klDivergence(c.f16[i], row)
		f.llamaKLD += klDivergence(c.f16[i], c.logits[i])
		if argmax(row) == argmax(c.f16[i]) {
			f.top1++
		}
		if argmax(c.logits[i]) == argmax(c.f16[i]) {
			f.llamaTop1++
		}
	}
	f.kld /= float64(len(c.tokens))
	f.llamaKLD /= float64(len(c.tokens))
	t.Logf("%s: max |Δ| from llama.cpp on the file %.3g (--match-llamacpp %.3g; largest logit %.3g); against llama.cpp's f16 logits: mean KLD %.4g (llama.cpp's run: %.4g), same top token at %d of %d (llama.cpp: %d)",
		c.typ, f.worst, f.match, f.peak, f.kld, f.llamaKLD, f.top1, len(c.tokens), f.llamaTop1)
	return f
}

// klDivergence is KL(softmax(p) ‖ softmax(q)) in nats.
func klDivergence(p, q []float64) float64 {
	lp, lq := logSoftmax(p), logSoftmax(q)
	var s float64
	for i := range lp {
		s += math.Exp(lp[i]) * (lp[i] - lq[i])
	}
	return s
}

func logSoftmax(x []float64) []float64 {
	m := x[argmax(x)]
	var z float64
	for _, v := range x {
		z += math.Exp(v - m)
	}
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v - m - math.Log(z)
	}
	return out
}

func argmax(x []float64) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// requantRef is a testdata/quantize/tiny-fortunes-<group>.json file of the
// gen_tiny_iq*.py scripts: the reference tokens, llama.cpp's logits of the
// model's f16 GGUF on them, and per llama-quantize type (key "IQ1_S", …)
// the sha256 of llama-quantize's file and llama.cpp's logits on it.
type requantRef struct {
	tokens []int
	f16    [][]float64
	files  map[string]requantFile
}

type requantFile struct {
	SHA256 string      `json:"sha256"`
	Logits [][]float64 `json:"logits"`
}

// readRequantRef reads such a file, which must hold every one of types.
func readRequantRef(t *testing.T, path string, types ...string) requantRef {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	r := requantRef{files: map[string]requantFile{}}
	if err := json.Unmarshal(raw["tokens"], &r.tokens); err != nil {
		t.Fatalf("%s: tokens: %v", path, err)
	}
	if err := json.Unmarshal(raw["f16_logits"], &r.f16); err != nil {
		t.Fatalf("%s: f16_logits: %v", path, err)
	}
	for _, typ := range types {
		var f requantFile
		if err := json.Unmarshal(raw[typ], &f); err != nil || f.SHA256 == "" {
			t.Fatalf("%s: no %s entry (%v)", path, typ, err)
		}
		r.files[typ] = f
	}
	return r
}

// run is requantRun of typ (the file's key; tfconv's --type is its lower
// case) from src into dst with the extra quantize args.
func (r requantRef) run(t *testing.T, typ, src, dst string, args ...string) requantFigures {
	t.Helper()
	f := r.files[typ]
	return requantRun(t, requantCase{typ: strings.ToLower(typ), src: src, dst: dst, args: args,
		sha256: f.SHA256, tokens: r.tokens, logits: f.Logits, f16: r.f16})
}
