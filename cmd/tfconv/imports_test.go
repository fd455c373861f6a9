package main

import (
	"go/parser"
	"go/token"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// The import direction of ../shared/STYLE.md: formats and quant sit on the
// tensor vocabulary alone; no library package imports cobra or the CLI.
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
		"formats/mlx":         {"tensor"}, // MLX's layout; its codec is quant.Affine
		"formats/ctensors":    {"tensor"}, // compressed-tensors' layout; its codecs are quant's
		"quant":               {"tensor"},
		// sniff orders the formats' magics, above them all.
		"sniff": {"tensor", "formats/gguf", "formats/imatrixdat", "formats/native", "formats/pytorch", "formats/shardindex"},
		// checkpoint decodes GPTQ/AWQ packed layers with quant's codec (checkpoint/packed.go)
		// and reads a family's graph facts for the memory estimate (checkpoint/memory.go).
		"checkpoint": {"tensor", "arch", "quant", "formats/safetensors", "formats/shardindex", "formats/gguf", "formats/imatrixdat", "sniff", "formats/native", "formats/pytorch", "formats/mlx", "formats/ctensors"},
		// quantize is llama-quantize's policy and the streaming quantizer over
		// tensors; quantizing a file (convert.Quantize) is convert's, which reads
		// a checkpoint through its converted views. GGUF names come from arch.
		"quantize":  {"tensor", "arch", "quant", "checkpoint", "tokenizer", "formats/safetensors", "formats/shardindex", "formats/gguf", "formats/imatrixdat", "sniff", "formats/native", "formats/pytorch", "formats/mlx", "formats/ctensors"},
		"tokenizer": {"tensor", "formats/gguf"},
		// vision decodes images and preprocesses them as mtmd or transformers
		// does: standard library only, below model.
		"vision":  {},
		"kernels": {"tensor", "quant"},
		"convert": {"tensor", "arch", "quant", "quantize", "checkpoint", "tokenizer", "formats/safetensors", "formats/shardindex", "formats/gguf", "formats/imatrixdat", "sniff", "formats/native", "formats/pytorch", "formats/mlx", "formats/ctensors"},
		"synth":   {"tensor", "arch", "quant", "tokenizer", "formats/safetensors", "formats/shardindex", "formats/gguf"},
		"check":   {"tensor", "quant", "formats/safetensors", "formats/shardindex", "formats/gguf", "formats/imatrixdat", "sniff", "formats/native", "formats/pytorch"},
		"model":   {"tensor", "arch", "quant", "kernels", "checkpoint", "tokenizer", "vision", "formats/safetensors", "formats/shardindex", "formats/gguf", "formats/imatrixdat", "sniff", "formats/native", "formats/pytorch", "formats/mlx", "formats/ctensors"},
		// eval: log-softmax, KLD, perplexity and text chunking, below everything that scores a model.
		"eval": {"tensor", "tokenizer", "formats/gguf"},
		"imatrix": {"tensor", "arch", "quant", "kernels", "model", "vision", "eval", "checkpoint", "tokenizer",
			"formats/safetensors", "formats/shardindex", "formats/gguf", "formats/imatrixdat", "sniff", "formats/native", "formats/pytorch", "formats/mlx", "formats/ctensors"},
		// verify pairs HF and GGUF tensors through arch's mapping, not convert.
		"verify": {"tensor", "arch", "quant", "kernels", "model", "vision", "eval", "checkpoint", "tokenizer",
			"formats/safetensors", "formats/shardindex", "formats/gguf", "formats/imatrixdat", "sniff", "formats/native", "formats/pytorch", "formats/mlx", "formats/ctensors"},
		// mixfit measures quantize's choices with model and eval's divergence.
		"mixfit": {"tensor", "arch", "quant", "kernels", "model", "vision", "eval", "quantize", "checkpoint", "tokenizer",
			"formats/safetensors", "formats/shardindex", "formats/gguf", "formats/imatrixdat", "sniff", "formats/native", "formats/pytorch", "formats/mlx", "formats/ctensors"},
	}
	// One go list for every package of the module: each line is a package
	// and everything it depends on, directly or not.
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Deps " "}}`, mod+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if rel, ok := strings.CutPrefix(f[0], mod); ok {
			deps[rel] = f[1:]
		}
	}
	// internal/ is the floor below the formats: its packages import only
	// tensor and each other.
	for rel := range deps {
		if strings.HasPrefix(rel, "internal/") {
			rules[rel] = []string{"tensor"}
		}
	}
	for pkg, allowed := range rules {
		pkgDeps, listed := deps[pkg]
		if !listed {
			t.Errorf("the rules name %s, which go list does not list", pkg)
			continue
		}
		ok := map[string]bool{pkg: true}
		for _, a := range allowed {
			ok[a] = true
		}
		for _, dep := range pkgDeps {
			if strings.Contains(dep, "spf13/cobra") {
				t.Errorf("%s depends on cobra", pkg)
			}
			if rel, found := strings.CutPrefix(dep, mod); found && !ok[rel] && !strings.HasPrefix(rel, "internal/") {
				t.Errorf("%s imports %s, against the import direction", pkg, rel)
			}
		}
	}
}

// TestInspectWithoutConvert holds inspect's code to arch for the family
// lookup: inspect reads files, and the converter is no part of that (go
// list cannot tell, cmd/tfconv being one package).
func TestInspectWithoutConvert(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"inspect.go"} {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range f.Imports {
			if p, _ := strconv.Unquote(im.Path.Value); strings.HasSuffix(p, "/tfconv/convert") {
				t.Errorf("%s imports %s", file, p)
			}
		}
	}
}
