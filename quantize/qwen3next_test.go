package quantize

import (
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
)

// TestQwen3NextMatchesLlamaQuantize quantizes the qwen3next fixture's
// GGUF (a gated DeltaNet layer: ssm_conv1d stays F32, ssm_a and ssm_dt are
// 1-D) and compares the file with llama-quantize d32676d7's of the same
// GGUF, by SHA-256 (`llama-quantize qwen3next-f32.gguf out.gguf TYPE 1`).
// Q4_K_M is not among them: d32676d7 counts attn_qkv (the DeltaNet's) as
// attn_v-like (its use_more_bits), where tfconv keeps c392e509's rule for
// attn_qkv: blk.0.attn_qkv Q5_1 here, Q5_0 there, and blk.2.attn_v with it.
func TestQwen3NextMatchesLlamaQuantize(t *testing.T) {
	t.Parallel()
	c, err := checkpoint.Open("../testdata/arch/qwen3next/gguf/qwen3next-f32.gguf")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for typ, want := range map[string]string{
		"q8_0": "1df62e00de3265d62a1c96b2c89782b3ae4526a571c680bdcfb922fa16ea85fe",
		"q4_0": "ee3776676fb66e89b5f36efa1da69349d8b2e9683bb1fbda2176b0ea9f2fbfb7",
	} {
		target, err := ParseTarget(typ)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := Plan(c, Options{Target: target})
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		if _, err := Write(h, c, plan, target, GGUF, RunOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%x", h.Sum(nil)); got != want {
			t.Errorf("%s: SHA-256 %s, llama-quantize's %s", typ, got, want)
		}
	}
}
