package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestMatchLlamaCppFlag runs bench and generate with --match-llamacpp on
// llama.cpp's Q8_0 fixture: bench reports the mode, and the first token
// generated greedily is the argmax of llama.cpp's own logits for the last
// prompt position.
func TestMatchLlamaCppFlag(t *testing.T) {
	gguf := filepath.Join(modelTestdata, "gguf", "llama-Q8_0.gguf")
	stdout, stderr, code := runModelCmd(t, "bench", gguf, "--prompt", "8", "--gen", "2", "--threads", "1", "--json", "--match-llamacpp")
	if code != 0 {
		t.Fatalf("bench: exit %d: %s", code, stderr)
	}
	var b benchJSON
	if err := json.Unmarshal([]byte(stdout), &b); err != nil {
		t.Fatal(err)
	}
	if !b.MatchLlamaCpp || b.PrefillTokS <= 0 || b.DecodeTokS <= 0 {
		t.Errorf("bench --match-llamacpp: %+v", b)
	}

	var cpp struct {
		Tokens    []int       `json:"tokens"`
		Positions []int       `json:"positions"`
		Logits    [][]float32 `json:"logits"`
	}
	raw, err := os.ReadFile(filepath.Join(modelTestdata, "gguf", "llama-Q8_0.logits.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &cpp); err != nil {
		t.Fatal(err)
	}
	last := cpp.Logits[len(cpp.Logits)-1]
	if cpp.Positions[len(cpp.Positions)-1] != len(cpp.Tokens)-1 {
		t.Fatalf("the cut's last row is position %d, not the last token", cpp.Positions[len(cpp.Positions)-1])
	}
	want := 0
	for j, v := range last {
		if v > last[want] {
			want = j
		}
	}
	stdout, stderr, code = runModelCmd(t, "generate", gguf, "--tokens", joinInts(cpp.Tokens), "--max-new", "1", "--no-eos", "--json", "--match-llamacpp")
	if code != 0 {
		t.Fatalf("generate: exit %d: %s", code, stderr)
	}
	var g generateJSON
	if err := json.Unmarshal([]byte(stdout), &g); err != nil {
		t.Fatal(err)
	}
	if len(g.New) != 1 || g.New[0] != want {
		t.Errorf("generate --match-llamacpp: new tokens %v, want llama.cpp's argmax %d", g.New, want)
	}
}
