package convert

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/tfconv/tfconv/quantize"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// TestMXFP4BlocksCopied: gpt-oss's MXFP4 experts reach the GGUF as MXFP4,
// their blocks copied: every block of ffn_{gate,up,down}_exps, in our GGUF
// and in the newer converter's, holds the Hugging Face checkpoint's value
// and scale bytes of its row (gate the even rows of gate_up_proj, up the
// odd ones) byte for byte, and the report says the tensor was copied, not
// converted.
func TestMXFP4BlocksCopied(t *testing.T) {
	t.Parallel()
	dir := "../testdata/arch/gptoss"
	out := filepath.Join(t.TempDir(), "out.gguf")
	rep, err := Run(filepath.Join(dir, "hf"), out, Options{OutType: OutF32})
	if err != nil {
		t.Fatal(err)
	}
	hf, err := checkpoint.Open(filepath.Join(dir, "hf"))
	if err != nil {
		t.Fatal(err)
	}
	defer hf.Close()
	copied := map[string]bool{}
	for _, tr := range rep.Tensors {
		if tr.Copied {
			copied[tr.Name] = true
			if tr.DType != "MXFP4" || tr.SourceDType != "MXFP4" || tr.Lossy {
				t.Errorf("%s: dtype %s from %s (lossy %v), want MXFP4 copied", tr.Name, tr.DType, tr.SourceDType, tr.Lossy)
			}
		}
	}
	if len(copied) != 6 {
		t.Fatalf("%d tensors copied as blocks, want 6 (3 a layer): %v", len(copied), copied)
	}
	for _, file := range []string{out, filepath.Join(dir, "gguf", "gptoss-f32.gguf")} {
		g, err := checkpoint.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			gguf, hf    string
			part, parts int
		}{
			{"blk.%d.ffn_gate_exps.weight", "model.layers.%d.mlp.experts.gate_up_proj", 0, 2},
			{"blk.%d.ffn_up_exps.weight", "model.layers.%d.mlp.experts.gate_up_proj", 1, 2},
			{"blk.%d.ffn_down_exps.weight", "model.layers.%d.mlp.experts.down_proj", 0, 1},
		} {
			for l := 0; l < 2; l++ {
				name := fmt.Sprintf(c.gguf, l)
				if file == out && !copied[name] {
					t.Errorf("%s is not reported copied", name)
				}
				gt, ok := g.Tensor(name)
				if !ok || gt.DType != tensor.MXFP4 {
					t.Fatalf("%s: %s is missing or not MXFP4", file, name)
				}
				blocks := read(t, gt)
				vals := read(t, mustTensor(t, hf, fmt.Sprintf(c.hf, l)+"_blocks"))
				scales := read(t, mustTensor(t, hf, fmt.Sprintf(c.hf, l)+"_scales"))
				v, s := make([]byte, len(blocks)/17*16), make([]byte, len(blocks)/17)
				if err := quant.OCPFromMXFP4(v, s, blocks); err != nil {
					t.Fatal(err)
				}
				hv := mustTensor(t, hf, fmt.Sprintf(c.hf, l)+"_blocks").Shape
				rows, nb := int(hv[1]), int(hv[2])
				var wantV, wantS []byte
				for e := 0; e < int(hv[0]); e++ {
					for r := c.part; r < rows; r += c.parts {
						row := e*rows + r
						wantV = append(wantV, vals[row*16*nb:(row+1)*16*nb]...)
						wantS = append(wantS, scales[row*nb:(row+1)*nb]...)
					}
				}
				if !bytes.Equal(v, wantV) || !bytes.Equal(s, wantS) {
					t.Errorf("%s: %s's blocks are not the checkpoint's bytes of %s", filepath.Base(file), name, fmt.Sprintf(c.hf, l))
				}
			}
		}
		g.Close()
	}
}

func mustTensor(t *testing.T, c *checkpoint.Checkpoint, name string) *checkpoint.Tensor {
	t.Helper()
	x, ok := c.Tensor(name)
	if !ok {
		t.Fatalf("%s has no %s", c.Path, name)
	}
	return x
}

func read(t *testing.T, x *checkpoint.Tensor) []byte {
	t.Helper()
	b, err := x.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGptOssMXFP4MoE: tfconv quantize --type mxfp4_moe of gpt-oss, from
// llama.cpp's f32 GGUF and from the Hugging Face checkpoint (its experts
// carried as MXFP4 blocks), is byte-identical to the newer llama-quantize's
// MXFP4_MOE of that GGUF (testdata/arch/gptoss/gguf/gptoss-mxfp4_moe.gguf).
func TestGptOssMXFP4MoE(t *testing.T) {
	t.Parallel()
	dir := "../testdata/arch/gptoss"
	want, err := os.ReadFile(filepath.Join(dir, "gguf", "gptoss-mxfp4_moe.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	target, err := quantize.ParseTarget("mxfp4_moe")
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{filepath.Join(dir, "gguf", "gptoss-f32.gguf"), filepath.Join(dir, "hf")} {
		dst := filepath.Join(t.TempDir(), "out.gguf")
		if _, err := Quantize(src, dst, QuantizeOptions{Options: quantize.Options{Target: target}}); err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		got, err := os.ReadFile(dst)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: quantize --type mxfp4_moe differs from llama-quantize's MXFP4_MOE (%d bytes, want %d)", src, len(got), len(want))
		}
	}
}
