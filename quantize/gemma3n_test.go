package quantize

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestGemma3nMatchesLlamaQuantize: Q4_K_M of the gemma3n fixture is
// byte-identical to the newer llama-quantize's (d32676d7,
// testdata/arch/README.md): it keeps AltUp's and LAuReL's tensors and
// per_layer_model_proj as they are and treats per_layer_token_embd as a
// token embedding (Q6_K with the head tied); without those rules they
// differ in the types of exactly those tensors.
func TestGemma3nMatchesLlamaQuantize(t *testing.T) {
	dir := filepath.Join("..", "testdata", "arch", "gemma3n", "gguf")
	c := open(t, filepath.Join(dir, "gemma3n-f32.gguf"))
	tg := target(t, "Q4_K_M")
	plan, err := Plan(c, Options{Target: tg})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := Write(&buf, c, plan, tg, GGUF, RunOptions{Threads: 2}); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(dir, "llama-quantize", "gemma3n-q4_k_m.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("%d bytes, llama-quantize's %d", buf.Len(), len(want))
	}
}
