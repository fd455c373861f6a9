package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckCommand(t *testing.T) {
	// A real llama.cpp file: clean.
	code, out, errOut := run(t, "check", "../../testdata/gguf/llama-Q2_K.gguf")
	if code != exitOK || !strings.Contains(out, "0 error(s), 0 warning(s)") {
		t.Errorf("clean file: exit %d, %q %q", code, out, errOut)
	}
	// Several defects: all listed, exit 1, stderr names the file.
	p := filepath.Join(malformedDir, "gguf-multi-defect.gguf")
	code, out, errOut = run(t, "check", "--json", p)
	if code != exitFound || !strings.Contains(errOut, p) {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var rep checkJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	rules := map[string]bool{}
	for _, f := range rep.Findings {
		rules[f.Rule] = true
		if f.Severity != "error" && f.Severity != "warning" {
			t.Errorf("severity %q", f.Severity)
		}
	}
	for _, r := range []string{"gguf-duplicate-key", "dup-tensor-name", "gguf-misaligned", "gguf-overlap", "gguf-type"} {
		if !rules[r] {
			t.Errorf("rule %s missing from %s", r, out)
		}
	}
	if rep.OK || rep.Format != "gguf" || rep.Path != p {
		t.Errorf("report header: %+v", rep)
	}
	// Warnings only: exit 0, shown in the table.
	code, out, _ = run(t, "check", filepath.Join(malformedDir, "ok-st-unpadded-header.safetensors"))
	if code != exitOK || !strings.Contains(out, "st-header-unaligned") || !strings.Contains(out, "1 warning(s)") {
		t.Errorf("warnings only: exit %d, %q", code, out)
	}
	// Inf weights (what an overflowing f16 cast leaves) are an error, as
	// NaN ones are.
	code, out, _ = run(t, "check", filepath.Join(malformedDir, "ok-st-inf.safetensors"))
	if code != exitFound || !strings.Contains(out, "error") || !strings.Contains(out, "inf-in-weights") {
		t.Errorf("Inf weights: exit %d, %q", code, out)
	}
	// Unreadable: exit 2.
	if code, _, _ := run(t, "check", filepath.Join(t.TempDir(), "nope.gguf")); code != exitError {
		t.Errorf("missing file: exit %d", code)
	}
	// Every rule is documented in the help.
	_, out, _ = run(t, "check", "--help")
	for _, id := range []string{"st-hole", "st-overlap", "st-trailing-bytes", "gguf-misaligned", "gguf-duplicate-key", "dup-tensor-name", "nan-in-weights", "inf-in-weights", "native-crc-mismatch"} {
		if !strings.Contains(out, id) {
			t.Errorf("help lacks %s", id)
		}
	}
}

// TestZeroDimGGUF: a GGUF tensor with a 0 dimension (ggml's loader divides
// by ne[1..3]) is an error finding at the byte offset of that dimension, and
// no command writes such a tensor to GGUF: convert and quantize (also
// --dry-run) exit 2 naming it, and leave nothing behind.
func TestZeroDimGGUF(t *testing.T) {
	src := filepath.Join(malformedDir, "gguf-zero-dim.gguf")
	code, out, errOut := run(t, "check", "--json", src)
	var rep struct {
		Findings []struct {
			Rule, Severity, Item string
			Offset               int64
		} `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("exit %d: %v: %s%s", code, err, out, errOut)
	}
	// 24 bytes of header, the name (8 + 19 bytes), n_dims (4), ne[0] (8).
	const wantOffset = int64(24 + 8 + len(zeroDimTensor) + 4 + 8)
	found := false
	for _, f := range rep.Findings {
		if f.Rule == "gguf-zero-dim" {
			found = true
			if f.Severity != "error" || f.Item != `tensor "`+zeroDimTensor+`"` || f.Offset != wantOffset {
				t.Errorf("finding %+v, want an error at %d on %s", f, wantOffset, zeroDimTensor)
			}
		}
	}
	if code != exitFound || !found {
		t.Errorf("check: exit %d, findings %+v", code, rep.Findings)
	}
	if code, _, _ := run(t, "inspect", src); code != exitOK {
		t.Errorf("inspect: exit %d (the reader accepts a 0 dimension)", code)
	}

	dir := t.TempDir()
	for _, args := range [][]string{
		{"convert", src, filepath.Join(dir, "c.gguf")},
		{"quantize", src, filepath.Join(dir, "q.gguf"), "--type", "q8_0"},
		{"quantize", src, filepath.Join(dir, "q.gguf"), "--type", "q8_0", "--dry-run"},
	} {
		code, _, errOut := run(t, args...)
		if code != exitError || !strings.Contains(errOut, `tensor "`+zeroDimTensor+`": dimension 1 of [2 0 8] is 0`) {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("refused writes left %v", ents)
	}
}
