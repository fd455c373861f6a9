package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/quantize"
	"github.com/tfconv/tfconv/tensor"
)

// Issue 29 item 9: llama-quantize's positional form SRC DST TYPE
// [NTHREADS] works as --type and --threads do (any case), -o may take
// DST's place, and a value given both ways must agree (exit 2 otherwise).
func TestQuantizePositional(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dst := filepath.Join(dir, "out.gguf")
	report := func(args ...string) quantizeReport {
		t.Helper()
		code, out, errs := run(t, append(append([]string{"quantize"}, args...), "--dry-run", "--json", "--pure")...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		var r quantizeReport
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v: %v: %s", args, err, out)
		}
		return r
	}
	want := report(quantizeSrc, dst, "--type", "q8_0", "--threads", "2")
	for _, args := range [][]string{
		{quantizeSrc, dst, "Q8_0", "2"},
		{quantizeSrc, dst, "q8_0"},
		{quantizeSrc, "-o", dst, "Q8_0", "2"},
		{quantizeSrc, dst, "Q8_0", "-t", "2"},
		{quantizeSrc, dst, "q8_0", "2", "--type", "Q8_0", "--threads", "2"}, // the same both ways
	} {
		got := report(args...)
		if len(got.Tensors) != len(want.Tensors) {
			t.Fatalf("%v: %d tensors; --type q8_0: %d", args, len(got.Tensors), len(want.Tensors))
		}
		for i := range got.Tensors {
			if got.Tensors[i].Type != want.Tensors[i].Type {
				t.Errorf("%v: %s is %s, --type q8_0 gives %s", args, got.Tensors[i].Name, got.Tensors[i].Type, want.Tensors[i].Type)
			}
		}
	}
	q8 := 0
	for _, tr := range want.Tensors {
		if tr.Type == "Q8_0" {
			q8++
		}
	}
	if q8 == 0 {
		t.Fatal("no Q8_0 tensor in the report")
	}
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{quantizeSrc, dst, "q8_0", "--type", "q4_0"}, "type given twice"},
		{[]string{quantizeSrc, dst, "q8_0", "2", "--threads", "3"}, "threads given twice"},
		{[]string{quantizeSrc, dst, "q8_0", "two"}, "NTHREADS"},
		{[]string{quantizeSrc, dst, "q8_0", "0"}, "NTHREADS"},
		{[]string{quantizeSrc, dst, "q8_0", "2", "x"}, "expected 2 arguments"},
		{[]string{quantizeSrc, dst, "q9_9"}, "unknown type"},
		{[]string{quantizeSrc, "-o", dst, dst, "q8_0", "2"}, "expected 2 arguments"},
	} {
		code, _, errs := run(t, append([]string{"quantize"}, append(c.args, "--dry-run")...)...)
		if code != 2 || !strings.Contains(errs, c.msg) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errs, c.msg)
		}
	}
}

// Issue 29 item 17 (quantize): --help lists every type with its base type,
// its bits per weight from tensor's block layout and a quality hint.
func TestQuantizeHelpListsTypes(t *testing.T) {
	t.Parallel()
	code, out, errs := run(t, "quantize", "--help")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(l, "  ") && !strings.HasPrefix(l, "   ") {
			lines[f[0]] = l
		}
	}
	for _, tg := range quantize.Targets() {
		l, ok := lines[tg.Name]
		if !ok {
			t.Errorf("--help does not list %s", tg.Name)
			continue
		}
		if tg.Copy {
			if !strings.Contains(l, "COPY") {
				t.Errorf("copy: %q", l)
			}
			continue
		}
		f := strings.Fields(l)
		if len(f) < 4 || f[1] != tg.Type.String() || f[2] != fmt.Sprintf("%.2f", tg.Type.BitsPerElement()) {
			t.Errorf("%s: %q; want %s %.2f and a hint", tg.Name, l, tg.Type, tg.Type.BitsPerElement())
		}
	}
	// A few figures checked by hand against ggml's block layouts.
	for name, bpw := range map[string]string{"q4_k_m": "4.50", "q6_k": "6.56", "iq2_xxs": "2.06", "q8_0": "8.50", "f32": "32.00"} {
		if f := strings.Fields(lines[name]); len(f) < 3 || f[2] != bpw {
			t.Errorf("%s: %q, want %s bits per weight", name, lines[name], bpw)
		}
	}
	if tensor.Q4_K.BitsPerElement() != 4.5 {
		t.Errorf("Q4_K: %g bits per weight", tensor.Q4_K.BitsPerElement())
	}
}

// Issue 29 items 5, 10 and 11 through the command: a GPTQ checkpoint is
// refused for a k-quant without --allow-requantize (exit 2), a Q8_0 GGUF
// is dequantized to f32 and copied with COPY without it, and a DST without
// an extension is a Hugging Face directory, as convert makes it.
func TestQuantizeRequantizeRuleCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gptq := "../../testdata/gptq/gptq-4bit-actorder"
	q8 := "../../testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf"
	code, _, errs := run(t, "quantize", gptq, filepath.Join(dir, "g.gguf"), "q4_k_m", "--dry-run")
	if code != 2 || !strings.Contains(errs, "GPTQ 4-bit") || !strings.Contains(errs, "--allow-requantize") {
		t.Errorf("GPTQ to q4_k_m: exit %d, stderr %q", code, errs)
	}
	if code, _, errs := run(t, "quantize", gptq, filepath.Join(dir, "g.gguf"), "q4_k_m", "--dry-run", "--allow-requantize"); code != 0 {
		t.Errorf("GPTQ to q4_k_m --allow-requantize: exit %d: %s", code, errs)
	}
	for _, typ := range []string{"f32", "COPY", "q8_0"} {
		if code, _, errs := run(t, "quantize", q8, filepath.Join(dir, typ+".gguf"), typ, "--dry-run"); code != 0 {
			t.Errorf("Q8_0 to %s: exit %d: %s", typ, code, errs)
		}
	}
	// No extension: a Hugging Face directory, which holds no Q8_0.
	code, _, errs = run(t, "quantize", quantizeSrc, filepath.Join(dir, "bert-q8"), "q8_0", "--dry-run")
	if code != 2 || !strings.Contains(errs, "safetensors holds") {
		t.Errorf("DST without extension: exit %d, stderr %q", code, errs)
	}
}

// Issue 29 item 9: sizes take gguf-split's and convert_hf_to_gguf.py's
// forms (decimal K, M, G) beside transformers' (KB, MB, GB) and the binary
// KiB, MiB, GiB.
func TestParseSizeForms(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]int64{
		"1G": 1e9, "500M": 500e6, "40K": 40e3, "2g": 2e9, "1GB": 1e9, "500MB": 500e6, "1GiB": 1 << 30,
		"3MiB": 3 << 20, "4096": 4096, "10B": 10, "1.5G": 1.5e9,
	} {
		if got, err := parseSize("split-max-size", s); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "G", "-1G", "0M", "lots", "1X", "1 T"} {
		if got, err := parseSize("split-max-size", s); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", s, got)
		}
	}
}

// Issue 29 item 9: llama.cpp's short flags, with llama.cpp's meanings
// (-f a text file, -t threads, -c context, -o an output file), on the
// existing long flags of every command where they apply.
func TestLlamaCppShortFlags(t *testing.T) {
	t.Parallel()
	root := newRootCmd(&app{out: io.Discard, err: io.Discard})
	for cmd, want := range map[string]map[string]string{
		"perplexity": {"f": "file", "t": "threads", "c": "ctx"},
		"bench":      {"t": "threads"},
		"imatrix":    {"f": "file", "t": "threads", "c": "ctx-size", "o": "output-file"},
		"quantize":   {"f": "calib", "t": "threads", "c": "calib-ctx", "o": "output"},
		"run":        {"f": "file", "t": "threads", "o": "out"},
		"generate":   {"f": "file", "t": "threads"},
		"verify":     {"f": "prompt-file", "t": "threads", "c": "ctx"},
	} {
		c, _, err := root.Find([]string{cmd})
		if err != nil || c.Name() != cmd {
			t.Fatalf("%s: %v", cmd, err)
		}
		for short, long := range want {
			if f := c.Flags().ShorthandLookup(short); f == nil || f.Name != long {
				t.Errorf("%s -%s: %v, want --%s", cmd, short, f, long)
			}
		}
	}
}

// run and generate read the prompt from -f FILE as from --prompt TEXT,
// without the file's last newline, as llama.cpp's -f reads it.
func TestPromptFile(t *testing.T) {
	t.Parallel()
	model := "../../testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf"
	text := "She said that they would go"
	file := filepath.Join(t.TempDir(), "prompt.txt")
	if err := os.WriteFile(file, []byte(text+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{"run", model, "--json", "-t", "1"}, {"generate", model, "--max-new", "2", "--json"}} {
		code, want, errs := run(t, append(cmd, "--prompt", text)...)
		if code != 0 {
			t.Fatalf("%v --prompt: exit %d: %s", cmd, code, errs)
		}
		code, got, errs := run(t, append(cmd, "-f", file)...)
		if code != 0 || got != want {
			t.Errorf("%v -f: exit %d: %s\n%.200s\nwant\n%.200s", cmd, code, errs, got, want)
		}
		if code, _, errs := run(t, append(cmd, "-f", file, "--prompt", text)...); code != 2 || !strings.Contains(errs, "not both") {
			t.Errorf("%v -f and --prompt: exit %d: %s", cmd, code, errs)
		}
	}
}
