package quantize

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMixturesMatchLlamaQuantize quantizes the mixture-of-experts fixtures
// (testdata/arch: Mixtral, Qwen2-MoE) as llama-quantize did for
// testdata/arch/gen_quant.py, and requires its files byte for byte: stacked
// expert tensors, the expert-count rules of the policy, the 1-D form of
// Qwen2-MoE's [1][d] shared-expert gate; and Mamba-2's, whose state-space
// tensors (ssm_a, ssm_d, the convolution, the norm [1][inner] written 1-D)
// stay F32.
func TestMixturesMatchLlamaQuantize(t *testing.T) {
	files, err := filepath.Glob("../testdata/arch/*/gguf/*-q[0-9]*.gguf")
	if err != nil || len(files) < 3 {
		t.Fatalf("%d quantized fixtures (%v), want 3", len(files), err)
	}
	for _, ref := range files {
		t.Run(filepath.Base(ref), func(t *testing.T) {
			base := filepath.Base(ref)
			fam := base[:strings.LastIndex(base, "-")]
			typ := strings.ToUpper(strings.TrimSuffix(base[len(fam)+1:], ".gguf"))
			c := open(t, filepath.Join(filepath.Dir(ref), fam+"-f32.gguf"))
			tg := target(t, typ)
			plan, err := Plan(c, Options{Target: tg})
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if _, err := Write(&buf, c, plan, tg, GGUF, RunOptions{Threads: 2}); err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(ref)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				n := 0
				for n < min(len(want), buf.Len()) && want[n] == buf.Bytes()[n] {
					n++
				}
				t.Errorf("%s: %d bytes, llama-quantize's %d; first difference at byte %d", typ, buf.Len(), len(want), n)
			}
		})
	}
}
