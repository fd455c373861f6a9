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
	for _, arch := range []string{"gpt2", "bert", "t5"} {
		dir := filepath.Join(modelTestdata, "hf-tiny", arch)
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
