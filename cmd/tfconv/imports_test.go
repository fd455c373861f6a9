package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The import direction of ../shared/STYLE.md: formats and quant sit on the
// tensor vocabulary alone; no library package imports cobra or the CLI.
// Whatever opens a checkpoint reaches formats/imatrixdat through
// internal/sniff, which asks it whether a file is an imatrix.dat.
func TestImportDirection(t *testing.T) {
	const mod = "github.com/tfconv/tfconv/"
	rules := map[string][]string{ // package -> project packages it may import
		"tensor":              {},
		"arch":                {"tensor"},
		"formats/shardindex":  {"tensor"}, // the shard index both shard formats read
		"formats/safetensors": {"tensor", "formats/shardindex"},
		"formats/gguf":        {"tensor"},
		"formats/imatrixdat":  {"tensor"},
		"formats/native":      {"tensor"},
		"formats/pytorch":     {"tensor", "formats/shardindex"},
		"quant":               {"tensor"},
		// checkpoint decodes GPTQ/AWQ packed layers with quant's codec (checkpoint/packed.go)
		// and reads a family's graph facts for the memory estimate (checkpoint/memory.go).
		"checkpoint": {"tensor", "arch", "quant", "formats/safetensors", "formats/shardindex", "formats/gguf", "formats/imatrixdat", "formats/native", "formats/pytorch"},
		// quantize.File reads a Hugging Face source through convert's GGUF view (convert.Source).
		"quantize":  {"tensor", "arch", "quant", "checkpoint", "convert", "tokenizer", "formats/safetensors", "formats/shardindex", "formats/gguf", "formats/imatrixdat", "formats/native", "formats/pytorch"},
		"tokenizer": {"tensor", "formats/gguf"},
		"kernels":   {"tensor", "quant"},
		"convert":   {"tensor", "arch", "quant", "checkpoint", "tokenizer", "formats/safetensors", "formats/shardindex", "formats/gguf", "formats/imatrixdat", "formats/native", "formats/pytorch"},
		"synth":     {"tensor", "arch", "quant", "tokenizer", "formats/safetensors", "formats/shardindex", "formats/gguf"},
		"check":     {"tensor", "quant", "formats/safetensors", "formats/shardindex", "formats/gguf", "formats/imatrixdat", "formats/native", "formats/pytorch"},
		"model":     {"tensor", "arch", "quant", "kernels", "checkpoint", "tokenizer", "formats/safetensors", "formats/shardindex", "formats/gguf", "formats/imatrixdat", "formats/native", "formats/pytorch"},
		"imatrix": {"tensor", "arch", "quant", "kernels", "model", "verify", "convert", "checkpoint", "tokenizer",
			"formats/safetensors", "formats/shardindex", "formats/gguf", "formats/imatrixdat", "formats/native", "formats/pytorch"},
		"verify": {"tensor", "arch", "quant", "kernels", "model", "convert", "checkpoint", "tokenizer",
			"formats/safetensors", "formats/shardindex", "formats/gguf", "formats/imatrixdat", "formats/native", "formats/pytorch"},
		// mixfit measures quantize's choices with model and verify's divergence.
		"mixfit": {"tensor", "arch", "quant", "kernels", "model", "verify", "convert", "quantize", "checkpoint", "tokenizer",
			"formats/safetensors", "formats/shardindex", "formats/gguf", "formats/imatrixdat", "formats/native", "formats/pytorch"},
	}
	for pkg, allowed := range rules {
		out, err := exec.Command("go", "list", "-deps", mod+pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		ok := map[string]bool{pkg: true}
		for _, a := range allowed {
			ok[a] = true
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.Contains(dep, "spf13/cobra") {
				t.Errorf("%s depends on cobra", pkg)
			}
			if rel, found := strings.CutPrefix(dep, mod); found && !ok[rel] && !strings.HasPrefix(rel, "internal/") {
				t.Errorf("%s imports %s, against the import direction", pkg, rel)
			}
		}
	}
}
