package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxLogitDiffMLXLlamaCpp bounds our logits against llama.cpp's on the
// f32 GGUF of a dequantized MLX model: the f32 fixtures' own agreement
// (float32 sums in another order), not a quantization error — both sides
// run the same dequantized weights.
const maxLogitDiffMLXLlamaCpp = 1e-5

// TestMLXToGGUFLlamaCpp: MLX directories mlx-lm's own save wrote
// (testdata/mlx, gen_mlxlm.py; the fixture's tokenizer files beside each)
// convert to f32 GGUFs — the very files llama.cpp d32676d7 ran (their
// sha256 in llamacpp.logits.json) — and run gives llama.cpp's logits both
// on that GGUF and on the MLX directory itself (the dequantized model):
//   - smollm3-q4g64: a dense model, affine 4 bits, group 64;
//   - qwen3moe-q4g32: experts stacked in switch_mlp, quantized 3-D, read
//     back under Hugging Face's names through the family record and
//     stacked again;
//   - gptoss: its MXFP4 experts, loaded and saved by mlx-lm as mxfp4
//     layers, copied as blocks (MXFP4 at any outtype); run as llama.cpp
//     computes (--match-llamacpp: its MXFP4 product takes Q8_0
//     activations, 0.064 from the exact product here,
//     TestGptOssMatchesLlamaCpp). Those logits are the Hugging Face
//     model's: llama.cpp's run of its converter's GGUF of the fixture
//     differs from them by 2.2e-7 (testdata/mlx/README.md).
func TestMLXToGGUFLlamaCpp(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		flags []string
	}{{"smollm3-q4g64", nil}, {"qwen3moe-q4g32", nil}, {"gptoss", []string{"--match-llamacpp"}}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := mlxWithTokenizer(t, c.name)
			out := filepath.Join(t.TempDir(), c.name+"-mlx-f32.gguf")
			if code, _, stderr := run(t, "convert", dir, out, "--outtype", "f32"); code != 0 {
				t.Fatalf("convert: exit %d: %s", code, stderr)
			}
			matchLlamaCpp(t, c.name, out, c.flags, out, dir)
		})
	}
}

// TestMLXMXFP4ToGGUFLlamaCpp: mlx-lm's own mxfp4 directory
// (testdata/mlx/smollm3-mxfp4) quantized to an f32 GGUF (quantize reads the
// dequantized model: the very file llama.cpp d32676d7 ran) and run give
// llama.cpp's logits, on that GGUF, on the MLX directory, and on the GGUF
// convert writes with the MXFP4 blocks copied (the same values).
func TestMLXMXFP4ToGGUFLlamaCpp(t *testing.T) {
	t.Parallel()
	dir := mlxWithTokenizer(t, "smollm3-mxfp4")
	f32 := filepath.Join(t.TempDir(), "smollm3-mlx-mxfp4-f32.gguf")
	if code, _, stderr := run(t, "quantize", dir, f32, "f32"); code != 0 {
		t.Fatalf("quantize: exit %d: %s", code, stderr)
	}
	blocks := filepath.Join(t.TempDir(), "smollm3-mlx-mxfp4.gguf")
	if code, _, stderr := run(t, "convert", dir, blocks); code != 0 {
		t.Fatalf("convert: exit %d: %s", code, stderr)
	}
	matchLlamaCpp(t, "smollm3-mxfp4", f32, nil, f32, dir, blocks)
}

// mlxWithTokenizer copies testdata/mlx/NAME and the tokenizer files of the
// fixture it was made from (NAME up to its "-": smollm3, qwen3moe, gptoss) into a
// new directory.
func mlxWithTokenizer(t *testing.T, name string) string {
	t.Helper()
	ref := filepath.Join("..", "..", "testdata", "mlx", name)
	fam, _, _ := strings.Cut(name, "-")
	fix := filepath.Join("..", "..", "testdata", "arch", fam, "hf")
	dir := filepath.Join(t.TempDir(), "mlx")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct{ from, name string }{
		{ref, "model.safetensors"}, {ref, "config.json"}, {fix, "tokenizer.json"}, {fix, "tokenizer_config.json"},
		{fix, "special_tokens_map.json"}, {fix, "vocab.json"}, {fix, "merges.txt"}, {fix, "generation_config.json"},
	} {
		b, err := os.ReadFile(filepath.Join(f.from, f.name))
		if f.name == "generation_config.json" && errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// matchLlamaCpp holds gguf to the sha256 of the file llama.cpp ran
// (testdata/mlx/NAME/llamacpp.logits.json) and run of each source, with
// flags, to its logits within maxLogitDiffMLXLlamaCpp.
func matchLlamaCpp(t *testing.T, name, gguf string, flags []string, sources ...string) {
	t.Helper()
	var cpp struct {
		GGUFSHA256 string      `json:"gguf_sha256"`
		Tokens     []int       `json:"tokens"`
		Logits     [][]float32 `json:"logits"`
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "mlx", name, "llamacpp.logits.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &cpp); err != nil {
		t.Fatal(err)
	}
	g, err := os.ReadFile(gguf)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(g); hex.EncodeToString(sum[:]) != cpp.GGUFSHA256 {
		t.Errorf("the GGUF's sha256 is %x, llama.cpp ran %s", sum, cpp.GGUFSHA256)
	}
	for _, src := range sources {
		code, stdout, stderr := run(t, append([]string{"run", src, "--tokens", joinInts(cpp.Tokens), "--json"}, flags...)...)
		if code != 0 {
			t.Fatalf("run %s: exit %d: %s", src, code, stderr)
		}
		var got struct {
			Logits [][]float32 `json:"logits"`
		}
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Logits) != len(cpp.Logits) {
			t.Fatalf("run %s: %d rows, llama.cpp %d", src, len(got.Logits), len(cpp.Logits))
		}
		var d float64
		for i := range cpp.Logits {
			for j := range cpp.Logits[i] {
				d = math.Max(d, math.Abs(float64(got.Logits[i][j]-cpp.Logits[i][j])))
			}
		}
		t.Logf("run %s: max |Δlogit| vs llama.cpp %.3g", filepath.Base(src), d)
		if !(d <= maxLogitDiffMLXLlamaCpp) {
			t.Errorf("run %s: logits differ from llama.cpp's by %.3g > %.3g", src, d, maxLogitDiffMLXLlamaCpp)
		}
	}
}
