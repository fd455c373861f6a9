package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/synth"
	"github.com/tfconv/tfconv/tensor"
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

// TestProgressCountsBytes: quantize, diff, check, edit, synth and every
// model load, which read or write the tensors' bytes, count their progress
// in bytes (the sample holds 3895552 bytes of tensors) and end the line
// with the time taken.
func TestProgressCountsBytes(t *testing.T) {
	t.Parallel()
	tiny := "../../testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf"
	const sample = 3895552
	gpt2, _ := synth.Lookup("gpt2-124m")
	gpt2.Layers = 1
	infos, err := synth.GGUFTensors(gpt2, tensor.F16)
	if err != nil {
		t.Fatal(err)
	}
	var synthBytes int64
	for _, in := range infos {
		synthBytes += in.Size
	}
	for _, c := range []struct {
		label string
		args  []string
		total int64
	}{
		{"quantize", []string{"quantize", tiny, filepath.Join(t.TempDir(), "q.gguf"), "--type", "q4_0", "--allow-requantize"}, sample},
		{"diff", []string{"diff", tiny, tiny}, 2 * sample}, // both files' tensors
		{"check", []string{"check", tiny}, sample},
		{"edit", []string{"edit", tiny, "--set", "general.name=x", "--out", filepath.Join(t.TempDir(), "e.gguf")}, 2 * sample}, // copied, then read back
		{"synth", []string{"synth", "--like", "gpt2-124m", "--layers", "1", filepath.Join(t.TempDir(), "s.gguf")}, synthBytes},
		{"load", []string{"run", tiny, "--tokens", "1,15"}, sample}, // reading the weights
		{"load", []string{"generate", tiny, "--tokens", "1,15", "--max-new", "1"}, sample},
	} {
		code, _, errOut := run(t, append(c.args, "--progress")...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c.label, code, errOut)
		}
		lines := strings.Split(errOut, "\r")
		last := strings.TrimSpace(lines[len(lines)-1])
		total := fmt.Sprintf("%.1f MiB", float64(c.total)/(1<<20))
		if !strings.HasPrefix(last, c.label+": "+total+" / "+total+" (100.0%)") || !strings.Contains(last, " in ") {
			t.Errorf("%s: last progress line %q, want %s counted in bytes and the time taken", c.args[0], last, total)
		}
	}
}
