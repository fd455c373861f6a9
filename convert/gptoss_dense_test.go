package convert

import (
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/formats/safetensors"
	"github.com/tfconv/tfconv/model"
	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// TestGptOssDense: gpt-oss as transformers saves a model it did not
// quantize (experts.gate_up_proj [experts][hidden][2·ffn], gate and up
// columns alternating, and down_proj [experts][ffn][hidden], float, no
// quantization_config) converts as the newer converter converts it
// (transposed, gate and up split) and runs: here the fixture's experts
// dequantized into that form, whose GGUF experts must equal the MXFP4
// fixture's values exactly, every other tensor byte for byte, and whose
// logits (HF and GGUF) transformers' on the fixture.
func TestGptOssDense(t *testing.T) {
	t.Parallel()
	src := "../testdata/arch/gptoss/hf"
	c, err := checkpoint.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var infos []tensor.Info
	bodies := map[string][]byte{}
	for _, x := range c.Tensors {
		b := read(t, x)
		name := x.Name
		switch {
		case strings.HasSuffix(name, "_scales"):
			continue
		case strings.HasSuffix(name, "_blocks"):
			base := strings.TrimSuffix(name, "_blocks")
			sc := read(t, mustTensor(t, c, base+"_scales"))
			e, rows, g := int(x.Shape[0]), int(x.Shape[1]), int(x.Shape[2])
			in := g * 32
			blocks := make([]byte, len(sc)*17)
			if err := quant.MXFP4FromOCP(blocks, b, sc); err != nil {
				t.Fatal(err)
			}
			vals := make([]float32, e*rows*in)
			if err := quant.Dequantize(vals, blocks, tensor.MXFP4); err != nil {
				t.Fatal(err)
			}
			dense := make([]byte, 4*len(vals)) // [e][in][rows]
			for xe := 0; xe < e; xe++ {
				for r := 0; r < rows; r++ {
					for i := 0; i < in; i++ {
						v := vals[(xe*rows+r)*in+i]
						binary.LittleEndian.PutUint32(dense[4*((xe*in+i)*rows+r):], math.Float32bits(v))
					}
				}
			}
			name, b = base, dense
			infos = append(infos, tensor.Info{Name: name, DType: tensor.F32, Shape: tensor.Shape{int64(e), int64(in), int64(rows)}})
		default:
			infos = append(infos, tensor.Info{Name: name, DType: x.DType, Shape: x.Shape.Clone()})
		}
		bodies[name] = b
	}
	files := map[string][]byte{}
	for _, n := range []string{"tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt", "special_tokens_map.json"} {
		b, err := os.ReadFile(filepath.Join(src, n))
		if err != nil {
			t.Fatal(err)
		}
		files[n] = b
	}
	var cfg map[string]any
	b, err := os.ReadFile(filepath.Join(src, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	delete(cfg, "quantization_config")
	if files["config.json"], err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "dense")
	if _, err := safetensors.WriteFolder(dir, false, files, infos, 1<<30, tensor.Metadata{{Key: "format", Value: tensor.String("pt")}},
		func(next func(string) (io.Writer, error)) error {
			for _, ti := range infos {
				w, err := next(ti.Name)
				if err != nil {
					return err
				}
				if _, err := w.Write(bodies[ti.Name]); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(t.TempDir(), "dense.gguf")
	if _, err := Run(dir, out, Options{OutType: OutF32}); err != nil {
		t.Fatal(err)
	}
	got, err := checkpoint.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	ref, err := checkpoint.Open("../testdata/arch/gptoss/gguf/gptoss-f32.gguf")
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	if len(got.Tensors) != len(ref.Tensors) {
		t.Fatalf("%d tensors, the converter's MXFP4 file %d", len(got.Tensors), len(ref.Tensors))
	}
	for _, w := range ref.Tensors {
		g := mustTensor(t, got, w.Name)
		a, b := read(t, g), read(t, w)
		if w.DType == tensor.MXFP4 {
			if g.DType != tensor.F32 || !g.Shape.Equal(w.Shape) {
				t.Fatalf("%s: %v %v, want F32 %v", w.Name, g.DType, g.Shape, w.Shape)
			}
			deq := make([]float32, len(a)/4)
			if err := quant.Dequantize(deq, b, tensor.MXFP4); err != nil {
				t.Fatal(err)
			}
			for i, v := range deq {
				if math.Float32frombits(binary.LittleEndian.Uint32(a[4*i:])) != v {
					t.Fatalf("%s[%d] is not the MXFP4 value %g", w.Name, i, v)
				}
			}
			continue
		}
		if string(a) != string(b) {
			t.Errorf("%s differs from the converter's", w.Name)
		}
	}
	var want struct {
		InputIDs []int       `json:"input_ids"`
		Logits   [][]float32 `json:"logits"`
	}
	rb, err := os.ReadFile(filepath.Join(src, "reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(rb, &want); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, out} {
		m, err := model.Load(p, model.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		o, err := m.Forward(model.Input{Tokens: want.InputIDs}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var worst float64
		for i := range o.Logits {
			for j := range o.Logits[i] {
				worst = max(worst, math.Abs(float64(o.Logits[i][j]-want.Logits[i][j])))
			}
		}
		t.Logf("%s: max |Δ| %.3g from transformers", filepath.Base(p), worst)
		if worst > 1e-5 {
			t.Errorf("%s: logits %.3g from transformers'", p, worst)
		}
	}
}
