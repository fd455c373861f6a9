package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/convert"
	"github.com/tfconv/tfconv/formats/gguf"
)

// llama3HF is a small LLaMA 3 checkpoint with its tokenizer.
const llama3HF = "../../testdata/arch/llama3/hf"

// TestConvertPrintSupportedModels: the list is convert's registry, every
// GGUF architecture with the config.json classes that convert to it.
func TestConvertPrintSupportedModels(t *testing.T) {
	t.Parallel()
	code, out, errs := run(t, "convert", "--print-supported-models", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var got []convert.SupportedModel
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range got {
		names = append(names, m.GGUF)
		if m.GGUF == "llama" && !slices.Contains(m.HFClasses, "MistralForCausalLM") {
			t.Errorf("llama's classes %v lack MistralForCausalLM", m.HFClasses)
		}
	}
	if !slices.Equal(names, convert.Supported()) {
		t.Errorf("listed %v, registry %v", names, convert.Supported())
	}
	code, out, _ = run(t, "convert", "--print-supported-models")
	if code != 0 || !strings.Contains(out, "Qwen2ForCausalLM") || !strings.Contains(out, "starcoder2") {
		t.Errorf("exit %d, table %q", code, out)
	}
	if code, _, _ := run(t, "convert"); code != 2 {
		t.Errorf("convert without SRC: exit %d, want 2", code)
	}
}

// TestConvertLlamaCppFlags: --model-name names the model and the default
// output, --metadata's keys reach the GGUF, --dry-run writes nothing.
func TestConvertLlamaCppFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	meta := filepath.Join(t.TempDir(), "meta.json")
	os.WriteFile(meta, []byte(`{"general.license": "apache-2.0", "general.author": "Someone"}`), 0o644)
	code, out, errs := run(t, "convert", llama3HF, dir, "--to", "gguf", "--model-name", "My Model", "--metadata", meta, "--dry-run")
	if code != 0 || !strings.Contains(out, "would write "+filepath.Join(dir, "My-Model-202K-F16.gguf")) || !strings.Contains(out, "blk.0.attn_q.weight") {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errs)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("--dry-run wrote %d files", len(ents))
	}
	code, out, errs = run(t, "convert", llama3HF, dir, "--to", "gguf", "--model-name", "My Model", "--metadata", meta, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep convert.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "My-Model-202K-F16.gguf"); rep.Output != want || !slices.Equal(rep.Files, []string{want}) {
		t.Fatalf("output %s, files %v, want %s", rep.Output, rep.Files, want)
	}
	f, err := gguf.Open(rep.Output)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for key, want := range map[string]string{"general.name": "My Model", "general.license": "apache-2.0", "general.author": "Someone"} {
		if got, _ := f.Metadata.Str(key); got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
	code, _, errs = run(t, "convert", llama3HF, filepath.Join(dir, "v.gguf"), "--vocab-only")
	if code != 0 {
		t.Fatalf("--vocab-only: exit %d: %s", code, errs)
	}
	v, err := gguf.Open(filepath.Join(dir, "v.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if len(v.Tensors) != 0 {
		t.Errorf("--vocab-only wrote %d tensors", len(v.Tensors))
	}
}
