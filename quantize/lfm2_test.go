package quantize

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestLFM2MatchesLlamaQuantize: Q4_K_M of the lfm2 and lfm2moe fixtures
// is byte-identical to the newer llama-quantize's (d32676d7,
// testdata/arch/README.md): the short convolutions' taps
// (shortconv.conv.weight) stay F32, their projections are quantized like
// any matrix (here falling back to Q5_0: rows of 64), and the one attention
// layer's attn_v and the later ffn_down get the more bits llama.cpp's
// mixture gives them (lfm2moe: its experts' stacks and F32 router too).
func TestLFM2MatchesLlamaQuantize(t *testing.T) {
	t.Parallel()
	for _, fam := range []string{"lfm2", "lfm2moe"} {
		dir := filepath.Join("..", "testdata", "arch", fam, "gguf")
		c := open(t, filepath.Join(dir, fam+"-f32.gguf"))
		tg := target(t, "Q4_K_M")
		plan, err := Plan(c, Options{Target: tg})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if _, err := Write(&buf, c, plan, tg, GGUF, RunOptions{Threads: 2}); err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(dir, "llama-quantize", fam+"-q4_k_m.gguf"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), want) {
			for _, ch := range plan {
				t.Logf("%s %v %s", ch.Tensor.Name, ch.Type, ch.Reason)
			}
			t.Errorf("%s: %d bytes, llama-quantize's %d", fam, buf.Len(), len(want))
		}
	}
}
