package quantize

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestMambaMatchesLlamaQuantize quantizes the mamba and jamba fixtures'
// f32 GGUFs to Q4_K_M and requires llama-quantize's (d32676d7) output byte
// for byte: the state-space tensors' types (ssm_a, ssm_d, the convolution
// and the biases kept F32, ssm_dt F16 and ssm_in/x/out Q5_0 by the
// row-length fallback, the embedding Q8_0; Jamba's dt/B/C norms F32) and
// every block.
func TestMambaMatchesLlamaQuantize(t *testing.T) {
	t.Parallel()
	for _, fam := range []string{"mamba", "jamba"} {
		t.Run(fam, func(t *testing.T) { matchesLlamaQuantizeQ4KM(t, fam) })
	}
}

// matchesLlamaQuantizeQ4KM checks tfconv's Q4_K_M of fam's f32 fixture
// against llama-quantize's, type by type and byte for byte.
func matchesLlamaQuantizeQ4KM(t *testing.T, fam string) {
	dir := filepath.Join("..", "testdata", "arch", fam, "gguf")
	c := open(t, filepath.Join(dir, fam+"-f32.gguf"))
	tg := target(t, "Q4_K_M")
	plan, err := Plan(c, Options{Target: tg})
	if err != nil {
		t.Fatal(err)
	}
	want := open(t, filepath.Join(dir, "llama-quantize", fam+"-q4_k_m.gguf"))
	types := map[string]string{}
	for _, w := range want.Tensors {
		types[w.Name] = w.DType.String()
	}
	for _, ch := range plan {
		got := ch.Type
		if ch.Copy {
			got = ch.Tensor.DType
		}
		if got.String() != types[ch.Tensor.Name] {
			t.Errorf("%s: %s (%s), llama-quantize's %s", ch.Tensor.Name, got, ch.Reason, types[ch.Tensor.Name])
		}
	}
	var buf bytes.Buffer
	if _, err := Write(&buf, c, plan, tg, GGUF, RunOptions{Threads: 2}); err != nil {
		t.Fatal(err)
	}
	ref, err := os.ReadFile(filepath.Join(dir, "llama-quantize", fam+"-q4_k_m.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), ref) {
		t.Errorf("%d bytes, llama-quantize's %d", buf.Len(), len(ref))
	}
}
