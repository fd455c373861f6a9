package main

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

func TestBenchCommand(t *testing.T) {
	for _, m := range []string{filepath.Join("hf-tiny", "llama"), filepath.Join("hf-tiny", "t5"), filepath.Join("gguf", "llama-Q4_K_M.gguf")} {
		stdout, stderr, code := runModelCmd(t, "bench", filepath.Join(modelTestdata, m), "--prompt", "16", "--gen", "4", "--threads", "1", "--json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", m, code, stderr)
		}
		var got benchJSON
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatal(err)
		}
		if got.PrefillTokS <= 0 || got.DecodeTokS <= 0 || got.Threads != 1 || got.Prompt != 16 || got.Gen != 4 {
			t.Errorf("%s: %+v", m, got)
		}
	}
	// 128 positions: a 200-token prompt does not fit.
	if _, _, code := runModelCmd(t, "bench", filepath.Join(modelTestdata, "hf-tiny", "gpt2"), "--prompt", "200"); code != exitError {
		t.Errorf("prompt beyond the context: exit %d", code)
	}
}
