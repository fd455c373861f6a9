package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
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
