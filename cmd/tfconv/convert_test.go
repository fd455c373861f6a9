package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/convert"
)

// The shipped GPT-2 is interop/gpt2/hf (transformers' files); its facts
// come from the fixture README and llama.cpp's files: 28 HF tensors, 29 in
// llama.cpp's GGUF (output.weight is a copy of the embedding), 19 of them
// F32 in every file, and general.file_type 1 for f16.
const convertSample = "../../testdata/convert/gpt2/hf"

type convertJSON struct {
	Source  string `json:"source"`
	Output  string `json:"output"`
	Format  string `json:"format"`
	Arch    string `json:"arch"`
	OutType string `json:"outtype"`
	Tensors []struct {
		Name       string  `json:"name"`
		SourceName string  `json:"source_name"`
		DType      string  `json:"dtype"`
		Shape      []int64 `json:"shape"`
		Bytes      int64   `json:"bytes"`
	} `json:"tensors"`
	Dropped []struct {
		Name   string `json:"name"`
		Reason string `json:"reason"`
	} `json:"dropped"`
	Bytes     int64   `json:"bytes"`
	Seconds   float64 `json:"seconds"`
	SelfCheck string  `json:"self_check"`
}

func TestConvertJSON(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "gpt2.gguf")
	code, out, errOut := run(t, "convert", "--json", convertSample, dst)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var j convertJSON
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, out)
	}
	if j.Format != "gguf" || j.Arch != "gpt2" || j.OutType != "f16" || j.SelfCheck != "ok" || j.Output != dst {
		t.Errorf("report: format %q arch %q outtype %q self_check %q output %q", j.Format, j.Arch, j.OutType, j.SelfCheck, j.Output)
	}
	if len(j.Tensors) != 29 || len(j.Dropped) != 0 {
		t.Fatalf("%d tensors, %d dropped", len(j.Tensors), len(j.Dropped))
	}
	f32, sum := 0, int64(0)
	for _, tt := range j.Tensors {
		if tt.DType == "F32" {
			f32++
		}
		sum += tt.Bytes
		if tt.Name == "blk.0.attn_qkv.weight" {
			if tt.SourceName != "transformer.h.0.attn.c_attn.weight" || len(tt.Shape) != 2 || tt.Shape[0] != 768 || tt.Shape[1] != 256 || tt.DType != "F16" {
				t.Errorf("attn_qkv: %+v", tt)
			}
		}
		if tt.Name == "output.weight" && tt.SourceName != "transformer.wte.weight" {
			t.Errorf("output.weight from %q", tt.SourceName)
		}
	}
	if f32 != 19 || sum != j.Bytes {
		t.Errorf("%d F32 tensors (want 19), bytes %d vs sum %d", f32, j.Bytes, sum)
	}
	if strings.Contains(errOut, "convert:") {
		t.Errorf("progress printed to a pipe without --progress: %q", errOut)
	}

	// An existing output needs --force: exit 2, file untouched.
	st, _ := os.Stat(dst)
	code, _, errOut = run(t, "convert", convertSample, dst)
	if code != 2 || !strings.Contains(errOut, "--force") {
		t.Errorf("existing DST: exit %d, %q", code, errOut)
	}
	if st2, _ := os.Stat(dst); st2.ModTime() != st.ModTime() || st2.Size() != st.Size() {
		t.Error("existing DST was modified")
	}
	code, out, errOut = run(t, "convert", "--force", "--progress", "--outtype", "q8_0", convertSample, dst)
	if code != 0 {
		t.Fatalf("--force: exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "MiB/s") {
		t.Errorf("--progress printed no progress: %q", errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "self-check: ok") || !strings.Contains(lines[0], "(gguf, gpt2, q8_0): 29 tensors") {
		t.Errorf("output:\n%s", out)
	}
}

func TestConvertBackToHF(t *testing.T) {
	tmp := t.TempDir()
	g := filepath.Join(tmp, "m.gguf")
	if code, _, errOut := run(t, "convert", "--outtype", "f32", convertSample, g); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	hf := filepath.Join(tmp, "hf")
	code, out, errOut := run(t, "convert", g, hf)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "output.weight") || !strings.Contains(out, "(safetensors, gpt2, f32): 28 tensors") {
		t.Errorf("output:\n%s", out)
	}
	for _, f := range []string{"config.json", "model.safetensors", "vocab.json", "merges.txt", "tokenizer_config.json", "generation_config.json"} {
		if _, err := os.Stat(filepath.Join(hf, f)); err != nil {
			t.Error(err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(hf, "model.safetensors"))
	o, _ := os.ReadFile(filepath.Join(convertSample, "model.safetensors"))
	if len(b) == 0 || string(b) != string(o) {
		t.Errorf("model.safetensors (%d bytes) differs from transformers' (%d bytes)", len(b), len(o))
	}
}

func TestConvertUsageErrors(t *testing.T) {
	tmp := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"convert"}, "expected 1 or 2 arguments"},
		{[]string{"convert", "--outtype", "q4_0", convertSample, filepath.Join(tmp, "a.gguf")}, "q4_0"},
		{[]string{"convert", "--arch", "xlstm", convertSample, filepath.Join(tmp, "b.gguf")}, "supported: " + strings.Join(convert.Supported(), ", ")},
		{[]string{"convert", "--to", "onnx", convertSample, filepath.Join(tmp, "c")}, "onnx"},
		{[]string{"convert", convertSample, filepath.Join(tmp, "d.safetensors")}, "directory"},
		{[]string{"convert", "--max-shard-size", "lots", convertSample, filepath.Join(tmp, "e")}, "max-shard-size"},
		{[]string{"convert", filepath.Join(tmp, "missing"), filepath.Join(tmp, "f.gguf")}, "missing"},
	} {
		code, _, errOut := run(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q (want %q)", c.args, code, errOut, c.want)
		}
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("failed conversions left %d entries", len(ents))
	}
}

// TestConvertRoundTripMixedDiff: llama.cpp's default f16 GGUF (F16 weights,
// F32 norms and biases) → native → HF → GGUF gives the same weights: diff
// exits 0. Writing f16 from f32 is stated on stderr and in --json.
func TestConvertRoundTripMixedDiff(t *testing.T) {
	tmp := t.TempDir()
	a, n, hf, b := filepath.Join(tmp, "a.gguf"), filepath.Join(tmp, "a.tfn"), filepath.Join(tmp, "hf"), filepath.Join(tmp, "b.gguf")
	for _, args := range [][]string{{convertSample, a}, {a, n}, {n, hf}, {hf, b}} {
		code, _, errOut := run(t, append([]string{"convert"}, args...)...)
		if code != 0 {
			t.Fatalf("convert %v: exit %d: %s", args, code, errOut)
		}
		if args[0] != convertSample && errOut != "" {
			t.Errorf("convert %v: stderr %q", args, errOut)
		}
	}
	code, out, errOut := run(t, "diff", a, b)
	if code != 0 || !strings.Contains(out, "28 tensors matched: 28 identical, 0 different") {
		t.Errorf("diff: exit %d, %s%s", code, out, errOut)
	}

	// llama.cpp's Q8_0 file: its F32 norms and the Q8_0 weights (as f32 in
	// HF, exact) come back identical.
	fortunes := "../../testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf"
	fn, fhf, fb := filepath.Join(tmp, "f.tfn"), filepath.Join(tmp, "fhf"), filepath.Join(tmp, "f.gguf")
	for _, args := range [][]string{{fortunes, fn}, {fn, fhf}, {"--outtype", "q8_0", fhf, fb}} {
		if code, _, errOut := run(t, append([]string{"convert"}, args...)...); code != 0 {
			t.Fatalf("convert %v: exit %d: %s", args, code, errOut)
		}
	}
	code, out, errOut = run(t, "diff", fortunes, fb)
	if code != 0 || !strings.Contains(out, "39 tensors matched: 39 identical, 0 different") {
		t.Errorf("diff Q8_0: exit %d, %s%s", code, out, errOut)
	}

	// HF f32 → GGUF f16 rounds the 10 matrices; the rest stay F32.
	code, out, errOut = run(t, "convert", "--json", "--force", convertSample, a)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var j struct {
		Tensors []struct {
			Name        string `json:"name"`
			DType       string `json:"dtype"`
			SourceDType string `json:"source_dtype"`
			Lossy       bool   `json:"lossy"`
		} `json:"tensors"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatal(err)
	}
	lossy := 0
	for _, tt := range j.Tensors {
		if tt.Lossy != (tt.DType == "F16") || tt.SourceDType != "F32" {
			t.Errorf("tensor %+v", tt)
		}
		if tt.Lossy {
			lossy++
		}
	}
	want := "10 tensor(s) written as F16 from F32"
	if lossy != 10 || len(j.Warnings) != 1 || !strings.Contains(j.Warnings[0], want) ||
		!strings.Contains(errOut, "tfconv: warning: lossy: "+want) {
		t.Errorf("%d lossy, warnings %q, stderr %q", lossy, j.Warnings, errOut)
	}
}
