package convert

import (
	"os"
	"path/filepath"
	"testing"
)

// TestKimiK2MatchesConverter: a DeepSeek-V3-shaped checkpoint with
// model_type kimi_k2 and Kimi K2's tokenizer (a tiktoken.model read by the
// publisher's tokenization_kimi.py) converts as llama.cpp d32676d7's
// converter converts it: every tensor and metadata key, the tokenizer's
// included (tokens, types, the merges recovered from the ranks, pre
// "kimi-k2", bos/eos). testdata/tokenizer/kimi-k2/README.md says how the
// reference was made.
func TestKimiK2MatchesConverter(t *testing.T) {
	t.Parallel()
	kimi := filepath.Join("..", "testdata", "tokenizer", "kimi-k2")
	src := t.TempDir()
	for _, f := range []string{
		filepath.Join(kimi, "config.json"), filepath.Join(kimi, "tokenizer_config.json"), filepath.Join(kimi, "tiktoken.model"),
		filepath.Join("..", "testdata", "arch", "deepseek3", "hf", "model.safetensors"),
	} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "out.gguf")
	rep, err := Run(src, out, Options{OutType: OutF32})
	if err != nil {
		t.Fatal(err)
	}
	compareGGUF(t, rep.Arch, out, filepath.Join(kimi, "kimi-k2-f32.gguf"), false)
}
