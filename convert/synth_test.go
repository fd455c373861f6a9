package convert

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/model"
	"github.com/tfconv/tfconv/synth"
	"github.com/tfconv/tfconv/tensor"
)

// maxSynthRunDiff bounds the logits of an HF folder against its f32 GGUF
// conversion: the same weights, rearranged (Q/K permutation, fused or
// stacked tensors), summed in a different order.
const maxSynthRunDiff = 1e-5

// TestSynthFamilies checks synth's family shapes against the converter: a
// narrow copy of each built-in shape of a decoder family (its config
// entries, head width ratio, tied head and biases kept) is written as a
// Hugging Face folder, converted to GGUF, and must give exactly the
// tensors (names, shapes) and architecture keys synth writes as GGUF
// itself; synth's GGUF must open with every tensor the family needs.
func TestSynthFamilies(t *testing.T) {
	n := 0
	for _, s := range synth.Shapes() {
		if s.Arch == synth.GPT2 || s.Arch == synth.BERT {
			continue
		}
		n++
		t.Run(s.Name, func(t *testing.T) {
			small := s
			small.Layers, small.Hidden, small.FFN, small.Context = 2, 64, 96, 64
			if s.ExpertFFN > 0 {
				small.ExpertFFN = 48
			}
			small.Heads, small.KVHeads = 4, 4*s.KVHeads/s.Heads
			if small.KVHeads == 0 {
				small.KVHeads = 1
			}
			if s.HeadDim > 0 {
				small.HeadDim = 32 // wider than hidden/heads, as the shape's
			}
			if _, ok := s.Config["mamba_n_heads"]; ok {
				// Granite 4.0-H states its Mamba-2 heads: the inner width
				// (mamba_expand · hidden) over the head width.
				small.Config = maps.Clone(s.Config)
				small.Config["mamba_n_heads"] = 2 * small.Hidden / s.Config["mamba_d_head"].(int)
			}
			if rs, ok := s.Config["rope_scaling"].(map[string]any); ok && rs["alpha"] != nil {
				// Hunyuan's alpha scaling: the converter assumes heads of 128
				// and a context of 32768, which the narrow copy has not (the
				// full shape's keys: arch's TestHunyuanMoEMetadata).
				small.Config = maps.Clone(s.Config)
				delete(small.Config, "rope_scaling")
			}
			dir := t.TempDir()
			tokens := []int{1, 5, 900, 31999, 7}
			logits := func(path string) [][]float32 {
				m, err := model.Load(path, model.LoadOptions{})
				if err != nil {
					t.Fatal(err)
				}
				o, err := m.Forward(model.Input{Tokens: tokens}, nil)
				if err != nil {
					t.Fatal(err)
				}
				return o.Logits
			}
			checkOwn := func() {
				own := filepath.Join(dir, "synth.gguf")
				var buf bytes.Buffer
				if err := synth.WriteGGUF(&buf, small, tensor.F32, 3); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(own, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				for _, row := range logits(own) {
					for _, v := range row {
						if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
							t.Fatalf("synth's GGUF gives logit %v", v)
						}
					}
				}
			}
			if f, ok := arch.ByName(s.Arch); ok && len(f.Packed) > 0 {
				// A family whose Hugging Face form packs tensors (gpt-oss's
				// MXFP4 experts): synth refuses that form, and its GGUF is
				// checked alone.
				if err := synth.WriteHF(filepath.Join(dir, "hf"), small, tensor.F32, 3); err == nil {
					t.Error("synth wrote a Hugging Face folder of a packed family")
				}
				checkOwn()
				return
			}
			hf := filepath.Join(dir, "hf")
			if err := synth.WriteHF(hf, small, tensor.F32, 3); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "conv.gguf")
			if _, err := Run(hf, out, Options{OutType: OutF32}); err != nil {
				t.Fatal(err)
			}
			conv, err := checkpoint.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			defer conv.Close()
			want, err := synth.GGUFTensors(small, tensor.F32)
			if err != nil {
				t.Fatal(err)
			}
			var got, exp []string
			for _, x := range conv.Tensors {
				got = append(got, fmt.Sprintf("%s%v", x.Name, x.Shape))
			}
			for _, x := range want {
				exp = append(exp, fmt.Sprintf("%s%v", x.Name, x.Shape))
			}
			if strings.Join(got, " ") != strings.Join(exp, " ") {
				t.Errorf("converted tensors\n%v\nsynth's\n%v", got, exp)
			}
			md, err := synth.GGUFMetadata(small, tensor.F32)
			if err != nil {
				t.Fatal(err)
			}
			prefix := small.Arch + "."
			var gk, wk []string
			for _, kv := range conv.Metadata {
				if strings.HasPrefix(kv.Key, prefix) || kv.Key == "general.file_type" {
					gk = append(gk, kv.Key+"="+kv.Value.String())
				}
			}
			for _, kv := range md {
				if strings.HasPrefix(kv.Key, prefix) || kv.Key == "general.file_type" {
					wk = append(wk, kv.Key+"="+kv.Value.String())
				}
			}
			if strings.Join(gk, " ") != strings.Join(wk, " ") {
				t.Errorf("converted keys\n%v\nsynth's\n%v", gk, wk)
			}

			// The HF folder and its conversion compute the same logits;
			// synth's own GGUF loads and runs.
			a, b := logits(hf), logits(out)
			var worst float64
			for i := range a {
				for j := range a[i] {
					worst = max(worst, math.Abs(float64(a[i][j]-b[i][j])))
				}
			}
			if worst > maxSynthRunDiff {
				t.Errorf("HF and converted GGUF logits differ by %g", worst)
			}
			checkOwn()
		})
	}
	if n < 4 {
		t.Fatalf("%d decoder-family shapes, want at least 4", n)
	}
}
