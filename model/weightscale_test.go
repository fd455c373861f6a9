package model

import (
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/tensor"
)

// scaledGGUF writes the tiny-fortunes Q8_0 GGUF with one more tensor, extra
// (F32 [1] holding 0.5), and with the Q8_0 block scales of the tensor
// halved (when halve is not ""), and returns its path.
func scaledGGUF(t *testing.T, extra, halve string) string {
	t.Helper()
	src, err := gguf.Open("../testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	infos := make([]tensor.Info, 0, len(src.Tensors)+1)
	for i := range src.Tensors {
		infos = append(infos, src.Tensors[i].Info)
	}
	if extra != "" {
		infos = append(infos, tensor.Info{Name: extra, DType: tensor.F32, Shape: tensor.Shape{1}})
	}
	path := filepath.Join(t.TempDir(), "scaled.gguf")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := gguf.NewWriter(f, src.Metadata, infos)
	if err != nil {
		t.Fatal(err)
	}
	for i := range src.Tensors {
		st := &src.Tensors[i]
		b, err := io.ReadAll(st.Open())
		if err != nil {
			t.Fatal(err)
		}
		if st.Name == halve {
			if st.DType != tensor.Q8_0 {
				t.Fatalf("%s is %v, not Q8_0", st.Name, st.DType)
			}
			for o := 0; o < len(b); o += 34 { // f16 d, then 32 codes: d/2 is one less in d's exponent
				h := binary.LittleEndian.Uint16(b[o:])
				if e := h >> 10 & 0x1f; e <= 1 || e == 0x1f {
					t.Fatalf("%s: block scale %04x does not halve exactly", st.Name, h)
				}
				binary.LittleEndian.PutUint16(b[o:], h-1<<10)
			}
		}
		bw, err := w.Next(st.Name)
		if err == nil {
			_, err = bw.Write(b)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if extra != "" {
		bw, err := w.Next(extra)
		if err == nil {
			err = binary.Write(bw, binary.LittleEndian, math.Float32bits(0.5))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// A GGUF holding llama.cpp's per-tensor weight scale (NAME.scale beside
// NAME.weight: NVFP4 checkpoints' second-level scale, which llama.cpp
// multiplies into the product) runs with it applied: blk.1.ffn_down.scale
// 0.5 gives exactly the logits of the same file with that weight's values
// halved. A scale beside a weight no linear reads (token_embd's, which
// llama.cpp does not read either) is refused naming it, rather than run
// without the factor; NAME.input_scale, which llama.cpp loads and never
// computes with, is left out as llama.cpp leaves it.
func TestGGUFWeightScale(t *testing.T) {
	t.Parallel()
	logits := func(path string) [][]float32 {
		m, err := Load(path, LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		out, err := m.Forward(Input{Tokens: []int{1, 5, 9, 2, 7}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return out.Logits
	}
	base := logits(scaledGGUF(t, "", ""))
	scaled := logits(scaledGGUF(t, "blk.1.ffn_down.scale", ""))
	halved := logits(scaledGGUF(t, "", "blk.1.ffn_down.weight"))
	if d, _ := maxDiff(t, scaled, halved, nil); d != 0 {
		t.Errorf("blk.1.ffn_down.scale 0.5: logits differ from the halved weight's by %.3g", d)
	}
	if d, _ := maxDiff(t, scaled, base, nil); d < 1e-3 {
		t.Errorf("blk.1.ffn_down.scale 0.5: logits within %.3g of the unscaled file's", d)
	}
	if d, _ := maxDiff(t, logits(scaledGGUF(t, "blk.0.attn_q.input_scale", "")), base, nil); d != 0 {
		t.Errorf("blk.0.attn_q.input_scale: logits differ from the file's without it by %.3g", d)
	}
	_, err := Load(scaledGGUF(t, "token_embd.scale", ""), LoadOptions{})
	if !errors.Is(err, tensor.ErrUnsupported) || !strings.Contains(err.Error(), `"token_embd.scale"`) ||
		!strings.Contains(err.Error(), `"token_embd.weight"`) {
		t.Errorf("token_embd.scale: Load: %v", err)
	}
}
