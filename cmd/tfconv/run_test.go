package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/internal/fixtures"
)

// maxRunLogitDiff is model's maxLogitDiffF32: the command must print what
// the model computed, which matches transformers to 1e-5.
const maxRunLogitDiff = 1e-5

var modelTestdata = filepath.Join("..", "..", "testdata", "model")

// runModelCmd runs args through the root command (as tfconv would) and
// returns stdout, stderr and the exit code.
func runModelCmd(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(args, &out, &errb)
	return out.String(), errb.String(), code
}

type cutReference struct {
	InputIDs        []int       `json:"input_ids"`
	DecoderInputIDs []int       `json:"decoder_input_ids"`
	Positions       []int       `json:"positions"`
	Logits          [][]float32 `json:"logits"`
	LastHiddenState [][]float32 `json:"last_hidden_state"`
}

func joinInts(v []int) string {
	var s []string
	for _, x := range v {
		s = append(s, strconv.Itoa(x))
	}
	return strings.Join(s, ",")
}

func TestRunCommandLogits(t *testing.T) {
	for _, arch := range []string{"gpt2", "bert", "t5", "bloom"} {
		dir := filepath.Join(modelTestdata, "hf-tiny", arch)
		if arch == "bloom" {
			dir = filepath.Join(modelTestdata, "bloom") // ALiBi; made by testdata/model/gen_references.py
		}
		var ref cutReference
		b, err := os.ReadFile(filepath.Join(dir, "reference.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &ref); err != nil {
			t.Fatal(err)
		}
		args := []string{"run", dir, "--tokens", joinInts(ref.InputIDs), "--json", "--threads", "1"}
		if ref.DecoderInputIDs != nil {
			args = append(args, "--decoder-tokens", joinInts(ref.DecoderInputIDs))
		}
		stdout, stderr, code := runModelCmd(t, args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", arch, code, stderr)
		}
		var got runJSON
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		rowsGot, rowsWant := got.Logits, ref.Logits
		if arch == "bert" {
			rowsGot, rowsWant = got.Hidden, ref.LastHiddenState
			if got.Logits != nil {
				t.Errorf("bert: JSON has logits")
			}
		}
		var d, scale float64
		for i, p := range ref.Positions {
			for j, w := range rowsWant[i] {
				d = math.Max(d, math.Abs(float64(rowsGot[p][j]-w)))
				scale = math.Max(scale, math.Abs(float64(w)))
			}
		}
		if arch == "t5" {
			d /= scale // T5's logits are small: relative
		}
		if d > maxRunLogitDiff {
			t.Errorf("%s: run --json differs from transformers by %g", arch, d)
		}
	}
}

func TestRunCommandSummaryAndOut(t *testing.T) {
	dir := filepath.Join(modelTestdata, "gguf", "llama-Q4_K_M.gguf")
	out := filepath.Join(t.TempDir(), "logits.json")
	stdout, stderr, code := runModelCmd(t, "run", dir, "--prompt", "She said", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// The GGUF's SentencePiece tokenizer: BOS, then the pieces, decoded in
	// the summary.
	if !strings.Contains(stdout, `1 "<s>"`) || len(strings.Split(strings.TrimSpace(stdout), "\n")) < 3 {
		t.Errorf("summary:\n%s", stdout)
	}
	var got runJSON
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Tokens[0] != 1 || len(got.Logits) != len(got.Tokens) || len(got.Logits[0]) != 1000 {
		t.Errorf("--out JSON: tokens %v, %d logit rows", got.Tokens, len(got.Logits))
	}
	// Refuses to overwrite without --force.
	if _, _, code := runModelCmd(t, "run", dir, "--tokens", "1,2", "--out", out); code != exitError {
		t.Errorf("overwrite without --force: exit %d", code)
	}
}

func TestRunCommandUsageErrors(t *testing.T) {
	gpt2 := filepath.Join(modelTestdata, "hf-tiny", "gpt2")
	for _, args := range [][]string{
		{"run", gpt2},
		{"run", gpt2, "--tokens", "1,x"},
		{"run", gpt2, "--tokens", "1", "--prompt", "a"},
		{"run", gpt2, "--prompt", "no tokenizer here"},
		{"run", gpt2, "--tokens", "5000"},
		{"run", gpt2, "--tokens", "1", "--decoder-tokens", "2"},
		{"run", filepath.Join(modelTestdata, "README.md"), "--tokens", "1"},
	} {
		if _, _, code := runModelCmd(t, args...); code != exitError {
			t.Errorf("%v: exit %d, want %d", args, code, exitError)
		}
	}
}

// TestRunCommandMask runs --mask, --decoder-mask and --token-types on the
// cases transformers computed and compares the JSON rows.
func TestRunCommandMask(t *testing.T) {
	for _, arch := range []string{"gpt2", "bert", "t5"} {
		var ref fixtures.MaskedFile
		b, err := os.ReadFile(filepath.Join(modelTestdata, "masked", arch+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &ref); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(modelTestdata, "hf-tiny", arch)
		for _, c := range ref.Cases {
			name := arch + "/" + c.Name
			args := []string{"run", dir, "--tokens", joinInts(ref.InputIDs), "--mask", joinInts(c.AttentionMask), "--json", "--threads", "1"}
			if ref.DecoderInputIDs != nil {
				args = append(args, "--decoder-tokens", joinInts(ref.DecoderInputIDs))
			}
			if c.DecoderAttentionMask != nil {
				args = append(args, "--decoder-mask", joinInts(c.DecoderAttentionMask))
			}
			if c.TokenTypeIDs != nil {
				args = append(args, "--token-types", joinInts(c.TokenTypeIDs))
			}
			stdout, stderr, code := runModelCmd(t, args...)
			if code != 0 {
				t.Fatalf("%s: exit %d: %s", name, code, stderr)
			}
			var got runJSON
			if err := json.Unmarshal([]byte(stdout), &got); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if joinInts(got.Mask) != joinInts(c.AttentionMask) || joinInts(got.TokenTypes) != joinInts(c.TokenTypeIDs) ||
				joinInts(got.DecoderMask) != joinInts(c.DecoderAttentionMask) {
				t.Errorf("%s: JSON echoes mask %v, decoder mask %v, types %v", name, got.Mask, got.DecoderMask, got.TokenTypes)
			}
			rowsGot, rowsWant := got.Logits, c.Logits
			if arch == "bert" {
				rowsGot, rowsWant = got.Hidden, c.LastHiddenState
			}
			var d, scale float64
			for i, p := range c.Positions {
				for j, w := range rowsWant[i] {
					d = math.Max(d, math.Abs(float64(rowsGot[p][j]-w)))
					scale = math.Max(scale, math.Abs(float64(w)))
				}
			}
			if arch == "t5" {
				d /= scale
			}
			if d > maxRunLogitDiff {
				t.Errorf("%s: run --json differs from transformers by %g", name, d)
			}
		}
	}
	// The summary marks padded positions.
	stdout, stderr, code := runModelCmd(t, "run", filepath.Join(modelTestdata, "hf-tiny", "gpt2"), "--tokens", "5,6,7", "--mask", "1,1,0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if lines := strings.Split(strings.TrimSpace(stdout), "\n"); len(lines) != 4 || strings.Contains(lines[2], "(pad)") || !strings.Contains(lines[3], "7 (pad)") {
		t.Errorf("summary:\n%s", stdout)
	}
}

func TestRunCommandMaskUsageErrors(t *testing.T) {
	gpt2 := filepath.Join(modelTestdata, "hf-tiny", "gpt2")
	bert := filepath.Join(modelTestdata, "hf-tiny", "bert")
	t5 := filepath.Join(modelTestdata, "hf-tiny", "t5")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", gpt2, "--tokens", "1,2,3", "--mask", "1,1"}, "--mask has 2 values for 3 tokens"},
		{[]string{"run", gpt2, "--tokens", "1,2,3", "--mask", "1,1,1,1"}, "--mask has 4 values for 3 tokens"},
		{[]string{"run", gpt2, "--tokens", "1,2,3", "--mask", "1,2,1"}, "value 2 at index 1 is not 0 or 1"},
		{[]string{"run", gpt2, "--tokens", "1,2,3", "--mask", "1,x,1"}, "--mask"},
		{[]string{"run", gpt2, "--tokens", "1,2,3", "--mask", "0,0,0"}, "hides every one"},
		{[]string{"run", gpt2, "--tokens", "1,2,3", "--token-types", "0,0,0"}, "gpt2 has no token types"},
		{[]string{"run", gpt2, "--tokens", "1,2,3", "--decoder-mask", "1"}, "not an encoder-decoder model"},
		{[]string{"run", bert, "--tokens", "1,2,3", "--token-types", "0,1"}, "--token-types has 2 values for 3 tokens"},
		{[]string{"run", bert, "--tokens", "1,2,3", "--token-types", "0,2,1"}, "type 2 at index 1 is outside 0..1"},
		{[]string{"run", bert, "--tokens", "1,2,3", "--token-types", "0,-1,1"}, "type -1"},
		{[]string{"run", t5, "--tokens", "1,2,3", "--decoder-tokens", "0,5", "--decoder-mask", "1"}, "--decoder-mask has 1 values for 2 decoder tokens"},
		{[]string{"run", t5, "--tokens", "1,2,3", "--decoder-mask", "1,1"}, "--decoder-mask has 2 values for 1 decoder tokens"},
	} {
		_, stderr, code := runModelCmd(t, c.args...)
		if code != exitError || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args[2:], code, stderr, exitError, c.want)
		}
	}
}
