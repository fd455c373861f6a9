package quantize

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestHybridsMatchLlamaQuantize quantizes the hybrid fixtures' f32 GGUFs
// (Falcon-H1: attention and Mamba-2 in every layer; Nemotron-H: Mamba-2,
// attention and feed-forward layers) to Q4_K_M and requires llama-quantize
// d32676d7's files byte for byte (testdata/arch/F/gguf/llama-quantize/, made by
// `llama-quantize F-f32.gguf F-q4_k_m.gguf Q4_K_M 1`): the state-space
// tensors (ssm_a, ssm_d, the convolution, ssm_dt, the grouped norm) stay
// F32, the projections take the mix's types.
func TestHybridsMatchLlamaQuantize(t *testing.T) {
	t.Parallel()
	for _, fam := range []string{"falcon_h1", "nemotron_h"} {
		t.Run(fam, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join("../testdata/arch", fam)
			c := open(t, filepath.Join(dir, "gguf", fam+"-f32.gguf"))
			tg := target(t, "Q4_K_M")
			plan, err := Plan(c, Options{Target: tg})
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if _, err := Write(&buf, c, plan, tg, GGUF, RunOptions{Threads: 2}); err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join(dir, "gguf", "llama-quantize", fam+"-q4_k_m.gguf"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				n := 0
				for n < min(len(want), buf.Len()) && want[n] == buf.Bytes()[n] {
					n++
				}
				t.Errorf("%d bytes, llama-quantize's %d; first difference at byte %d", buf.Len(), len(want), n)
			}
		})
	}
}
