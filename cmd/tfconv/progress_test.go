package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every long command takes --progress and prints the one progress line on
// stderr (issue 14); without it, on a pipe, stderr has none.
func TestProgressFlag(t *testing.T) {
	tmp := t.TempDir()
	tiny := "../../testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf"
	text := filepath.Join(tmp, "t.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("The best way to go back to the old house. ", 40)), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		label string
		args  []string
	}{
		{"convert", []string{"convert", convertSample, filepath.Join(tmp, "a.gguf")}},
		{"quantize", []string{"quantize", tiny, filepath.Join(tmp, "q.gguf"), "--type", "q4_0", "--allow-requantize"}},
		{"verify", []string{"verify", tiny, tiny, "--tokens", "1,15,250,999"}},
		{"perplexity", []string{"perplexity", tiny, "--file", text, "--ctx", "64", "--chunks", "2"}},
		{"bench", []string{"bench", tiny, "--prompt", "8", "--gen", "2"}},
		{"diff", []string{"diff", tiny, tiny}},
	}
	for _, c := range cases {
		code, _, errOut := run(t, append(c.args, "--progress")...)
		if code != 0 || !strings.Contains(errOut, "\r"+c.label+": ") {
			t.Errorf("%s --progress: exit %d, stderr %q", c.label, code, errOut)
		}
		os.Remove(filepath.Join(tmp, "a.gguf"))
		os.Remove(filepath.Join(tmp, "q.gguf"))
		code, _, errOut = run(t, c.args...)
		if code != 0 || strings.Contains(errOut, "\r") {
			t.Errorf("%s without --progress: exit %d, stderr %q", c.label, code, errOut)
		}
		os.Remove(filepath.Join(tmp, "a.gguf"))
		os.Remove(filepath.Join(tmp, "q.gguf"))
	}
}

// TestProgressCountsBytes: quantize, diff, check and every model load,
// which read the tensors' bytes, count their progress in bytes (of the whole source: the sample is
// 3.7 MiB of tensors) and end the line with the time taken.
func TestProgressCountsBytes(t *testing.T) {
	t.Parallel()
	tiny := "../../testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf"
	for _, c := range []struct {
		label string
		args  []string
	}{
		{"quantize", []string{"quantize", tiny, filepath.Join(t.TempDir(), "q.gguf"), "--type", "q4_0", "--allow-requantize"}},
		{"diff", []string{"diff", tiny, tiny}},
		{"check", []string{"check", tiny}},
		{"edit", []string{"edit", tiny, "--set", "general.name=x", "--out", filepath.Join(t.TempDir(), "e.gguf")}},
		{"load", []string{"run", tiny, "--tokens", "1,15"}}, // reading the weights
		{"load", []string{"generate", tiny, "--tokens", "1,15", "--max-new", "1"}},
	} {
		code, _, errOut := run(t, append(c.args, "--progress")...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c.label, code, errOut)
		}
		lines := strings.Split(errOut, "\r")
		last := strings.TrimSpace(lines[len(lines)-1])
		total := "3.7 MiB" // the sample's tensor bytes, 3895552
		if c.label == "diff" || c.label == "edit" {
			total = "7.4 MiB" // both files' tensors; edit copies, then reads the copy back
		}
		if !strings.HasPrefix(last, c.label+": "+total+" / "+total+" (100.0%)") || !strings.Contains(last, " in ") {
			t.Errorf("%s: last progress line %q, want %s counted in bytes and the time taken", c.label, last, total)
		}
	}
}
