package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/verify"
)

// TestVerifyTooFewPositionsSaysNA: with 10 positions or fewer no standard
// error is computed (llama.cpp's cut-off), and the report says "± n/a"
// instead of a "± 0" that reads as an exact result.
func TestVerifyTooFewPositionsSaysNA(t *testing.T) {
	t.Parallel()
	code, out, errOut := run(t, "verify", sampleGGUF, sampleGGUF, "--tokens", "1,446,287,339")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, row := range []string{"mean KLD\t0 ± n/a", "same top token\t100.000 ± n/a %", "PPL(cand)/PPL(ref)\t1.000000 ± n/a"} {
		if !strings.Contains(out, row+"\n") {
			t.Errorf("no %q in:\n%s", row, out)
		}
	}
	if strings.Contains(out, "± 0") {
		t.Errorf("a spread of 0 printed for 4 positions:\n%s", out)
	}
	if got := verify.PlusMinus(0.5, 0.01, 11, "%.2f", "%.3f"); got != "0.50 ± 0.010" {
		t.Errorf("PlusMinus over 11 values = %q", got)
	}
}

// TestVerifyTokenText: --positions shows each token's piece beside its id
// (the input, both top tokens), --json carries them, and the HTML report
// shows the prompt and labels its position axis with the tokens. The
// sample's tokenizer encodes "The best way" as <s> ▁The ▁b est ▁w ay.
func TestVerifyTokenText(t *testing.T) {
	t.Parallel()
	report := filepath.Join(t.TempDir(), "r.html")
	code, out, errOut := run(t, "verify", sampleGGUF, sampleGGUF, "--prompt", "The best way", "--positions", "--report", report)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "pos\ttoken\tmax abs\tKLD\tref top\tcand top\t") {
		t.Errorf("positions header:\n%s", out)
	}
	var row1 []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "1\t") {
			row1 = strings.Split(l, "\t")
		}
	}
	if len(row1) < 6 || row1[1] != `"▁The"` || !strings.Contains(row1[4], ` "`) || row1[4] != row1[5] {
		t.Errorf("position 1: %q", row1)
	}
	var j struct {
		Prompt    string `json:"prompt"`
		Positions []struct {
			RefTop      int    `json:"ref_top"`
			TokenText   string `json:"token_text"`
			RefTopText  string `json:"ref_top_text"`
			TargetText  string `json:"target_text"`
			CandTopText string `json:"cand_top_text"`
		} `json:"positions"`
	}
	_, jout, _ := run(t, "verify", sampleGGUF, sampleGGUF, "--prompt", "The best way", "--json")
	if err := json.Unmarshal([]byte(jout), &j); err != nil {
		t.Fatal(err)
	}
	want := []string{"<s>", "▁The", "▁b", "est", "▁w", "ay"}
	if len(j.Positions) != len(want) || j.Prompt != "The best way" {
		t.Fatalf("prompt %q, %d positions", j.Prompt, len(j.Positions))
	}
	for i, p := range j.Positions {
		if p.TokenText != want[i] || p.RefTopText == "" || p.RefTopText != p.CandTopText {
			t.Errorf("position %d: %+v, want token %q", i, p, want[i])
		}
		if i+1 < len(want) && p.TargetText != want[i+1] {
			t.Errorf("position %d: target %q, want %q", i, p.TargetText, want[i+1])
		}
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if !strings.Contains(page, "<blockquote class=prompt>The best way</blockquote>") {
		t.Error("the report does not show the prompt")
	}
	if !strings.Contains(page, "class=tok>▁The</text>") {
		t.Error("the report's attention map is not labelled with the tokens")
	}
	// A model against itself has no KLD to plot; the position axis of one
	// that has is labelled with the tokens too.
	rep := &verify.Report{Ref: "a.gguf", Cand: "b.gguf", Prompt: "The best way", Thresholds: verify.ThresholdsQ4}
	rep.Summary.Positions = len(want)
	for i, w := range want {
		rep.Positions = append(rep.Positions, verify.Position{Pos: i, KLD: 0.01 * float64(i+1), TokenText: w})
	}
	var hb strings.Builder
	if err := verify.WriteHTML(&hb, rep); err != nil {
		t.Fatal(err)
	}
	if h := hb.String(); !strings.Contains(h, "<title>position 3 est: 0.04</title>") || !strings.Contains(h, "class=tok>▁w</text>") {
		t.Errorf("the KLD plot's position axis is not labelled with the tokens:\n%s", h)
	}
}

// TestVerifyDefaultText: without --tokens, --prompt or --prompt-file,
// verify compares on the built-in text and says so (it refused before).
func TestVerifyDefaultText(t *testing.T) {
	t.Parallel()
	code, out, errOut := run(t, "verify", sampleGGUF, sampleGGUF)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "comparing on tfconv's built-in text") || !strings.Contains(out, "input: tfconv's built-in text") ||
		!strings.Contains(out, "The old lighthouse keeper") {
		t.Errorf("not said:\nstdout %s\nstderr %s", out, errOut)
	}
	var j struct {
		DefaultPrompt bool   `json:"default_prompt"`
		Prompt        string `json:"prompt"`
		Tokens        []int  `json:"tokens"`
	}
	_, jout, _ := run(t, "verify", sampleGGUF, sampleGGUF, "--json")
	if err := json.Unmarshal([]byte(jout), &j); err != nil {
		t.Fatal(err)
	}
	if !j.DefaultPrompt || j.Prompt != strings.TrimSpace(verify.DefaultText) || len(j.Tokens) < 100 {
		t.Errorf("default_prompt %v, %d tokens, prompt %q", j.DefaultPrompt, len(j.Tokens), j.Prompt)
	}
}
