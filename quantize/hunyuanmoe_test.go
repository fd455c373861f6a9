package quantize

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/tfconv/tfconv/synth"
	"github.com/tfconv/tfconv/tensor"
)

// hunyuanMoEQuantShape is a Hunyuan-A13B-shaped mixture narrow enough for
// a test and wide enough for k-quants without fallbacks (rows of 256,
// heads of 128 as published): 2 layers of 4 experts, 2 used, beside a
// shared MLP. (The hunyuanmoe fixture is 8 wide: d32676d7's llama-quantize
// refuses any k-quant of it.)
var hunyuanMoEQuantShape = synth.Shape{Name: "hunyuan-moe-q", Arch: "hunyuan-moe", Layers: 2, Hidden: 256, Heads: 2,
	KVHeads: 1, HeadDim: 128, FFN: 256, Vocab: 32000, Context: 4096, RopeBase: 10000, NormEps: 1e-5, Tied: true,
	Experts: 4, ExpertsUsed: 2,
	Config: map[string]any{"num_experts": 4, "moe_topk": []any{2, 2}, "moe_intermediate_size": []any{256, 256},
		"num_shared_expert": []any{1, 1}}}

// llamaQuantizeHunyuanMoE is llama-quantize d32676d7's Q4_K_M of the f16
// GGUF synth writes for hunyuanMoEQuantShape with seed 1 (`llama-quantize
// in.gguf out.gguf Q4_K_M 1`): its size and sha256. It chose Q6_K for the
// embedding and for the second layer's attn_v, ffn_down_exps and
// ffn_down_shexp, Q4_K elsewhere.
const (
	llamaQuantizeHunyuanMoESize   = 8881728
	llamaQuantizeHunyuanMoESHA256 = "308f0ef242fa85ddb0f651e91dc8d8e032e56184adbbdb610f8280df0bd9a852"
)

// TestHunyuanMoEMatchesLlamaQuantize: tfconv's Q4_K_M of a Hunyuan-A13B
// shaped mixture is llama-quantize's file byte for byte (its routed and
// shared experts, router and per-head norms typed by llama-quantize's
// rules).
func TestHunyuanMoEMatchesLlamaQuantize(t *testing.T) {
	t.Parallel()
	in := filepath.Join(t.TempDir(), "in.gguf")
	f, err := os.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := synth.WriteGGUF(f, hunyuanMoEQuantShape, tensor.F16, 1); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	c := open(t, in)
	tg := target(t, "Q4_K_M")
	plan, err := Plan(c, Options{Target: tg})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := Write(&buf, c, plan, tg, GGUF, RunOptions{Threads: 2}); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	if buf.Len() != llamaQuantizeHunyuanMoESize || hex.EncodeToString(sum[:]) != llamaQuantizeHunyuanMoESHA256 {
		t.Errorf("%d bytes, sha256 %x; llama-quantize's %d bytes, %s", buf.Len(), sum, llamaQuantizeHunyuanMoESize, llamaQuantizeHunyuanMoESHA256)
	}
}
