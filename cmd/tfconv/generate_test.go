package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tfconv/tfconv/tokenizer"
)

func TestGenerateCommand(t *testing.T) {
	for _, arch := range []string{"llama", "bart"} {
		dir := filepath.Join(modelTestdata, "hf-tiny", arch)
		var fix struct {
			PromptIDs []int `json:"prompt_ids"`
			Greedy    []int `json:"greedy"`
			Beam      struct {
				IDs []int `json:"ids"`
			} `json:"beam4_lp0.6"`
		}
		b, err := os.ReadFile(filepath.Join(dir, "generate.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &fix); err != nil {
			t.Fatal(err)
		}
		base := []string{"generate", dir, "--tokens", joinInts(fix.PromptIDs), "--max-new", "8", "--json"}
		if arch == "llama" {
			// The decoder-only fixtures were made with EOS disabled.
			base = append(base, "--no-eos")
		}
		for _, c := range []struct {
			extra []string
			want  []int
		}{
			{nil, fix.Greedy},
			{[]string{"--beams", "4", "--length-penalty", "0.6", "--early-stopping"}, fix.Beam.IDs},
		} {
			stdout, stderr, code := runModelCmd(t, append(append([]string(nil), base...), c.extra...)...)
			if code != 0 {
				t.Fatalf("%s %v: exit %d: %s", arch, c.extra, code, stderr)
			}
			var got generateJSON
			if err := json.Unmarshal([]byte(stdout), &got); err != nil {
				t.Fatal(err)
			}
			if joinInts(got.Tokens) != joinInts(c.want) {
				t.Errorf("%s %v: %v, want transformers' %v", arch, c.extra, got.Tokens, c.want)
			}
		}
	}
	if _, _, code := runModelCmd(t, "generate", filepath.Join(modelTestdata, "hf-tiny", "gpt2"), "--tokens", "1", "--top-p", "0"); code != exitError {
		t.Errorf("--top-p 0: exit %d", code)
	}
	if _, _, code := runModelCmd(t, "generate", filepath.Join(modelTestdata, "hf-tiny", "bert"), "--tokens", "1"); code != exitError {
		t.Errorf("generate with an encoder-only model: exit %d", code)
	}
}

// TestGenerateChat: --chat renders the model's template over --system and
// --prompt with the generation prompt, and encodes it as transformers'
// apply_chat_template(tokenize=True) does: special tokens parsed, no BOS
// added (this Mistral fixture's tokenizer adds BOS to a plain --prompt; its
// template, ChatML, writes none). A model without a template is an error.
func TestGenerateChat(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "..", "testdata", "arch", "mistral", "hf")
	stdout, stderr, code := runModelCmd(t, "generate", dir, "--chat", "--system", "You are terse.", "--prompt", "Hi", "--max-new", "2", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got struct {
		Prompt     []int  `json:"prompt"`
		ChatPrompt string `json:"chat_prompt"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	const want = "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
	if got.ChatPrompt != want {
		t.Errorf("chat prompt %q, want %q", got.ChatPrompt, want)
	}
	tok, err := tokenizer.LoadFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	ids, _ := tok.Encode(want, tokenizer.EncodeOptions{ParseSpecial: true})
	if !tok.AddBOS || joinInts(got.Prompt) != joinInts(ids) || got.Prompt[0] == tok.BOS {
		t.Errorf("prompt ids %v, want %v (no BOS added)", got.Prompt, ids)
	}
	_, stderr, code = runModelCmd(t, "generate", filepath.Join("..", "..", "testdata", "arch", "llama3", "hf"), "--chat", "--prompt", "Hi")
	if code != exitError || !strings.Contains(stderr, "no chat template") {
		t.Errorf("--chat without a template: exit %d, %s", code, stderr)
	}
	for _, args := range [][]string{{"--chat", "--tokens", "1"}, {"--system", "x", "--prompt", "Hi"}} {
		if _, _, code := runModelCmd(t, append([]string{"generate", dir}, args...)...); code != exitError {
			t.Errorf("%v: exit %d", args, code)
		}
	}
}

// TestGenerateRandomSeed: sampling without --seed draws a seed, prints it
// on stderr and in --json, and --seed with it repeats the run; two runs
// draw two seeds; an explicit --seed prints nothing on stderr.
func TestGenerateRandomSeed(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(modelTestdata, "hf-tiny", "llama")
	type sampled struct {
		Tokens []int   `json:"tokens"`
		Seed   *uint64 `json:"seed"`
	}
	sample := func(extra ...string) (sampled, string) {
		t.Helper()
		args := append([]string{"generate", dir, "--tokens", "1,15,250", "--max-new", "12", "--no-eos", "--temperature", "5", "--json"}, extra...)
		stdout, stderr, code := runModelCmd(t, args...)
		var g sampled
		if code != 0 || json.Unmarshal([]byte(stdout), &g) != nil || g.Seed == nil {
			t.Fatalf("%v: exit %d, %q, %s", extra, code, stdout, stderr)
		}
		return g, stderr
	}
	a, errA := sample()
	b, _ := sample()
	if !strings.Contains(errA, fmt.Sprintf("seed %d", *a.Seed)) {
		t.Errorf("stderr %q does not name the seed %d", errA, *a.Seed)
	}
	if *a.Seed == *b.Seed {
		t.Errorf("two runs drew the same seed %d", *a.Seed)
	}
	again, errAgain := sample("--seed", strconv.FormatUint(*a.Seed, 10))
	if joinInts(again.Tokens) != joinInts(a.Tokens) || *again.Seed != *a.Seed {
		t.Errorf("--seed %d gave %v, the run that drew it %v", *a.Seed, again.Tokens, a.Tokens)
	}
	if strings.Contains(errAgain, "seed") {
		t.Errorf("an explicit --seed printed %q", errAgain)
	}
	stdout, _, _ := runModelCmd(t, "generate", dir, "--tokens", "1,15,250", "--max-new", "2", "--json")
	if strings.Contains(stdout, `"seed"`) {
		t.Errorf("greedy --json has a seed: %s", stdout)
	}
}

// writeLog records each Write.
type writeLog struct{ writes []string }

func (w *writeLog) Write(p []byte) (int, error) {
	w.writes = append(w.writes, string(p))
	return len(p), nil
}

// TestGenerateStreams: without --json the text is written token by token,
// before the summary lines, whole characters each time, and it is the text
// --json reports. (This random-weight model emits lone byte-level pieces,
// 0xAA, 0xEC, 0x85, that begin no character: they stream as U+FFFD, as
// --json's text has them.)
func TestGenerateStreams(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "..", "testdata", "arch", "qwen2", "hf")
	args := []string{"generate", dir, "--prompt", "café 日本 🙂 café 日本 🙂", "--max-new", "24", "--no-eos"}
	var out writeLog
	var errb strings.Builder
	if code := Main(args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	stdout, _, _ := runModelCmd(t, append(args, "--json")...)
	var js generateJSON
	if err := json.Unmarshal([]byte(stdout), &js); err != nil {
		t.Fatal(err)
	}
	if len(out.writes) < 2 || out.writes[0] != "text: " {
		t.Fatalf("writes %q", out.writes)
	}
	var text strings.Builder
	pieces := 0
	for _, w := range out.writes[1:] {
		if strings.HasPrefix(w, "\n") || strings.HasPrefix(w, "new tokens:") {
			break
		}
		if !utf8.ValidString(w) {
			t.Errorf("streamed %q, not whole characters", w)
		}
		text.WriteString(w)
		pieces++
	}
	if text.String() != js.Text || pieces < 10 {
		t.Errorf("streamed %q in %d writes, want %q in about one write per token", text.String(), pieces, js.Text)
	}
	if all := strings.Join(out.writes, ""); !strings.Contains(all, "text: "+js.Text+"\nnew tokens: ") {
		t.Errorf("output %q", all)
	}
}
