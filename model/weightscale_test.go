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

// A GGUF holding llama.cpp's per-tensor weight scale (NAME.scale beside
// NAME.weight, which llama.cpp multiplies into the product: NVFP4
// checkpoints' second-level scale) is refused, naming the tensor, rather
// than run without the factor; the same file without it loads.
func TestGGUFWeightScaleRefused(t *testing.T) {
	t.Parallel()
	src, err := gguf.Open("../testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	for _, extra := range []string{"blk.1.ffn_down.scale", "blk.0.attn_q.input_scale"} {
		infos := make([]tensor.Info, 0, len(src.Tensors)+1)
		for i := range src.Tensors {
			infos = append(infos, src.Tensors[i].Info)
		}
		infos = append(infos, tensor.Info{Name: extra, DType: tensor.F32, Shape: tensor.Shape{1}})
		path := filepath.Join(t.TempDir(), "scaled.gguf")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		w, err := gguf.NewWriter(f, src.Metadata, infos)
		if err != nil {
			t.Fatal(err)
		}
		for i := range src.Tensors {
			bw, err := w.Next(src.Tensors[i].Name)
			if err == nil {
				_, err = io.Copy(bw, src.Tensors[i].Open())
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		bw, err := w.Next(extra)
		if err == nil {
			err = binary.Write(bw, binary.LittleEndian, math.Float32bits(0.5))
		}
		if err == nil {
			err = w.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		_, err = Load(path, LoadOptions{})
		base := strings.TrimSuffix(strings.TrimSuffix(extra, ".scale"), ".input_scale")
		if !errors.Is(err, tensor.ErrUnsupported) || !strings.Contains(err.Error(), `"`+extra+`"`) ||
			!strings.Contains(err.Error(), `"`+base+`.weight"`) {
			t.Errorf("%s: Load: %v", extra, err)
		}
	}
	if m, err := Load("../testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf", LoadOptions{}); err != nil {
		t.Fatal(err)
	} else {
		m.Close()
	}
}
