package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The PEFT adapter of testdata/lora (PEFT v0.12.0) through the CLI:
// inspect and check describe it, convert --base writes llama.cpp's GGUF
// adapter byte for byte, merge-lora writes PEFT's merged weights, and verify
// shows the merged model computes what PEFT's does.
func TestLoRACLI(t *testing.T) {
	const ad = "../../testdata/lora/mistral-r4/adapter"
	const base = "../../testdata/arch/mistral-headdim/hf"
	code, out, errs := run(t, "inspect", ad, "--json")
	var s struct {
		Adapter struct {
			Type    string   `json:"type"`
			Rank    int      `json:"rank"`
			Alpha   float64  `json:"alpha"`
			Scale   float64  `json:"scale"`
			Targets []string `json:"targets"`
			Base    string   `json:"base_model"`
			Pairs   int      `json:"pairs"`
		} `json:"adapter"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &s) != nil {
		t.Fatalf("inspect: %d %s %s", code, out, errs)
	}
	if a := s.Adapter; a.Type != "lora" || a.Rank != 4 || a.Alpha != 8 || a.Scale != 2 || len(a.Targets) != 7 || a.Base != "mistral-headdim" || a.Pairs != 14 {
		t.Errorf("inspect adapter: %+v", a)
	}
	if code, out, errs := run(t, "check", ad); code != 0 {
		t.Errorf("check: %d %s %s", code, out, errs)
	}

	dir := t.TempDir()
	g := filepath.Join(dir, "a.gguf")
	if code, _, errs := run(t, "convert", ad, g, "--base", base, "--outtype", "f32"); code != 0 {
		t.Fatalf("convert: %d %s", code, errs)
	}
	got, _ := os.ReadFile(g)
	want, _ := os.ReadFile("../../testdata/lora/mistral-r4/mistral-r4-f32.gguf")
	if !bytes.Equal(got, want) {
		t.Errorf("convert --base: output differs from convert_lora_to_gguf.py's")
	}

	m := filepath.Join(dir, "merged")
	code, out, errs = run(t, "merge-lora", base, ad, m, "--json")
	if code != 0 || !strings.Contains(out, `"merged": 14`) {
		t.Fatalf("merge-lora: %d %s %s", code, out, errs)
	}
	code, out, errs = run(t, "verify", "../../testdata/lora/mistral-r4/merged", m, "--tokens", "1,15,250,999,3,87,512,640,33,998,421,77")
	if code != 0 || !strings.Contains(out, "PASS") {
		t.Errorf("verify PEFT merged vs ours: %d %s %s", code, out, errs)
	}
	// Without --force the output is not replaced; a wrong base is refused with exit 2.
	if code, _, errs := run(t, "merge-lora", base, ad, m); code != 2 || !strings.Contains(errs, "--force") {
		t.Errorf("existing OUT: %d %s", code, errs)
	}
	if code, _, errs := run(t, "merge-lora", "../../testdata/arch/llama3/hf", ad, filepath.Join(dir, "x")); code != 2 || !strings.Contains(errs, "k_proj") {
		t.Errorf("wrong base: %d %s", code, errs)
	}
}
