package quantize

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestRWKV7MatchesLlamaQuantize: Q4_K_M of the rwkv7 fixture equals
// d32676d7's llama-quantize byte for byte: the LoRAs (time_mix_w0…g2) and
// the token-shift mixes stay F32, the key, value, receptance and output
// projections and the channel mix are quantized (Q5_0 here: 128 columns
// are not whole Q4_K blocks). Q8_0 and Q4_0 were checked the same way when
// it was made: identical.
func TestRWKV7MatchesLlamaQuantize(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "testdata", "arch", "rwkv7", "gguf")
	c := open(t, filepath.Join(dir, "rwkv7-f32.gguf"))
	tg := target(t, "Q4_K_M")
	plan, err := Plan(c, Options{Target: tg})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := Write(&buf, c, plan, tg, GGUF, RunOptions{Threads: 2}); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(dir, "llama-quantize", "rwkv7-q4_k_m.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		for _, ch := range plan {
			t.Logf("%s %v %s", ch.Tensor.Name, ch.Type, ch.Reason)
		}
		t.Errorf("%d bytes, llama-quantize's %d", buf.Len(), len(want))
	}
}
