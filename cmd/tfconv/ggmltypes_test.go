package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/formats/gguf"
)

// Bounds of TestQuantizeGGMLTypes' runs of the two tiny-fortunes files
// (Q1_0; NVFP4 matrices with a Q1_0 token_embd) against llama.cpp
// d32676d7's runs of the same files, each with the figure it was set from.
const (
	// With --match-llamacpp tfconv rounds the activations to Q8_0 as
	// llama.cpp does before its Q1_0 and NVFP4 products and sums the
	// integers in ggml's AVX2 order (kernels' dotQ1_0, dotNVFP4); what is
	// left is the float32 order of norms, attention and softmax: 2.4e-6
	// (Q1_0) and 9.0e-7 (NVFP4) measured. 1e-4 is the bound of the other
	// match-mode tests (maxLogitDiffIQ4XSMatch).
	maxLogitDiffGGMLTypesMatch = 1e-4
	// Plain runs keep float32 activations: 0.166 (Q1_0) and 0.216 (NVFP4)
	// from llama.cpp's logits (largest 15.7 and 17.5), its Q8_0 rounding of
	// the activations alone; the GGUF converted to f32 safetensors runs to
	// the same figure. 0.5 is about 3 % of the largest logit.
	maxLogitDiffGGMLTypes = 0.5
)

// tfconv quantize --type q1_0 (a llama-quantize --type) and per-tensor
// NVFP4 (--tensor-type, --output-tensor-type: llama-quantize offers NVFP4
// no other way) against llama-quantize d32676d7 on the same inputs
// (testdata/quantize/ggmltypes.json, gen_ggmltypes.py): every file is
// llama-quantize's byte for byte, with its tensor names, types and
// metadata key types; llama3's 64-wide rows, for which llama-quantize has
// no Q1_0 fallback and stops, take F16 here as deepseek2's do under
// MXFP4_MOE (TestQuantizeMatchesNewerLlamaQuantize). The tiny-fortunes
// files run to llama.cpp's logits of them (bounds above), inspect names
// their types, and each converts to f32 safetensors (dequantized) that runs
// to the same logits.
func TestQuantizeGGMLTypes(t *testing.T) {
	b, err := os.ReadFile("../../testdata/quantize/ggmltypes.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Commit string `json:"llama_cpp_commit"`
		Tokens []int  `json:"tokens"`
		Cases  map[string]struct {
			Args     []string    `json:"args"`
			Input    string      `json:"input"`
			SHA256   string      `json:"sha256"`
			KV       [][2]string `json:"kv"`
			Tensors  [][3]string `json:"tensors"`
			Exit     int         `json:"exit"`
			LastLine string      `json:"last_line"`
			Logits   [][]float64 `json:"logits"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	// llama.cpp's logits of tiny-fortunes' f16 GGUF on the same ids.
	b, err = os.ReadFile("../../testdata/quantize/tiny-fortunes-IQ4_XS.json")
	if err != nil {
		t.Fatal(err)
	}
	var f16 struct {
		Tokens []int       `json:"tokens"`
		Logits [][]float64 `json:"f16_logits"`
	}
	if err := json.Unmarshal(b, &f16); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f16.Tokens, ref.Tokens) || len(ref.Cases) != 5 {
		t.Fatalf("ggmltypes.json: tokens %v (f16 reference %v), %d cases", ref.Tokens, f16.Tokens, len(ref.Cases))
	}
	dir := t.TempDir()
	t.Chdir("../..")
	identical, ran := 0, 0
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range ref.Cases {
			if !yield(k) {
				return
			}
		}
	}) {
		want := ref.Cases[name]
		n := len(want.Args)
		typ := strings.ToLower(want.Args[n-1])
		out := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".gguf")
		flags := want.Args[1 : n-3]
		if want.Exit != 0 {
			// llama-quantize: "no tensor type fallback is defined for type q1_0".
			code, stdout, errs := run(t, append([]string{"quantize", want.Input, out, "--type", typ}, flags...)...)
			if code != 0 || !strings.Contains(stdout, "fallback: row length 64 not a multiple of 128 (Q1_0) -> F16") {
				t.Errorf("%s: llama-quantize failed (%s); tfconv: exit %d %s%s", name, want.LastLine, code, stdout, errs)
			}
			continue
		}
		if want.Logits != nil {
			ran++
			f := requantRun(t, requantCase{typ: typ, src: want.Input, dst: out, args: flags, sha256: want.SHA256,
				tokens: ref.Tokens, logits: want.Logits, f16: f16.Logits})
			if !(f.match <= maxLogitDiffGGMLTypesMatch) || !(f.worst <= maxLogitDiffGGMLTypes) {
				t.Errorf("%s: max |Δ| from llama.cpp %.3g (--match-llamacpp %.3g), want ≤ %g (%g)", name, f.worst, f.match,
					maxLogitDiffGGMLTypes, maxLogitDiffGGMLTypesMatch)
			}
			checkGGMLTypesReaders(t, name, out, ref.Tokens, want.Logits)
		} else if code, _, errs := run(t, append([]string{"quantize", want.Input, out, "--type", typ}, flags...)...); code != 0 {
			t.Errorf("%s: exit %d: %s", name, code, errs)
			continue
		}
		f, err := gguf.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		got, kinds := ggufTensors(t, f), ggufKinds(f.Metadata)
		f.Close()
		if len(got) != len(want.Tensors) {
			t.Errorf("%s: %d tensors, llama-quantize %d", name, len(got), len(want.Tensors))
			continue
		}
		for i, g := range got {
			if g != want.Tensors[i] {
				t.Errorf("%s: tensor %d: tfconv %v, llama-quantize %v", name, i, g, want.Tensors[i])
			}
		}
		if !slices.Equal(kinds, want.KV) {
			t.Errorf("%s: keys %v\nllama-quantize %v", name, kinds, want.KV)
		}
		data, _ := os.ReadFile(out)
		if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != want.SHA256 {
			t.Errorf("%s: file sha256 %x, llama-quantize's %s", name, sum, want.SHA256)
		} else {
			identical++
		}
	}
	if identical != 4 || ran != 2 {
		t.Errorf("%d files byte-identical to llama-quantize %s, %d run; want 4 and 2", identical, ref.Commit, ran)
	}
}

// checkGGMLTypesReaders: inspect lists the file's Q1_0 (and NVFP4)
// tensors, convert to GGUF copies them, and convert to safetensors
// dequantizes them to f32 that runs to llama.cpp's logits of the quantized
// file within maxLogitDiffGGMLTypes.
func checkGGMLTypesReaders(t *testing.T, name, file string, tokens []int, logits [][]float64) {
	t.Helper()
	code, out, errs := run(t, "inspect", file)
	if code != 0 || !strings.Contains(out, "\nQ1_0\t") || strings.Contains(name, "NVFP4") != strings.Contains(out, "\nNVFP4\t") {
		t.Errorf("%s: inspect: exit %d: %s%s", name, code, out, errs)
	}
	// GGUF → GGUF keeps every NVFP4 and Q1_0 block as it is: the file
	// comes out byte for byte.
	same := strings.TrimSuffix(file, ".gguf") + "-copy.gguf"
	if code, _, errs := run(t, "convert", file, same); code != 0 {
		t.Fatalf("%s: convert to GGUF: exit %d: %s", name, code, errs)
	}
	a, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(same)
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Errorf("%s: convert GGUF → GGUF changed the file (%d → %d bytes)", name, len(a), len(b))
	}
	hf := strings.TrimSuffix(file, ".gguf") + "-hf"
	if code, _, errs := run(t, "convert", file, hf, "--to", "safetensors"); code != 0 {
		t.Fatalf("%s: convert: exit %d: %s", name, code, errs)
	}
	ids := make([]string, len(tokens))
	for i, id := range tokens {
		ids[i] = itoa(id)
	}
	code, out, errs = run(t, "run", hf, "--tokens", strings.Join(ids, ","), "--json")
	if code != 0 {
		t.Fatalf("%s: run of the converted checkpoint: exit %d: %s", name, code, errs)
	}
	var got struct {
		Logits [][]float64 `json:"logits"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Logits) != len(logits) {
		t.Fatalf("%s: run of the converted checkpoint: %v, %d rows", name, err, len(got.Logits))
	}
	worst := 0.0
	for i, row := range got.Logits {
		for j := range row {
			worst = max(worst, math.Abs(row[j]-logits[i][j]))
		}
	}
	t.Logf("%s converted to f32 safetensors: max |Δ| from llama.cpp's logits of the GGUF %.3g", name, worst)
	if !(worst <= maxLogitDiffGGMLTypes) {
		t.Errorf("%s converted to f32 safetensors: logits %.3g from llama.cpp's, want ≤ %g", name, worst, maxLogitDiffGGMLTypes)
	}
}
