package convert

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/formats/safetensors"
	"github.com/tfconv/tfconv/tensor"
)

// TestDeepSeekMTPLayerSkipped: DeepSeek-V3's and Kimi K2's checkpoints
// carry a multi-token-prediction layer past num_hidden_layers
// (model.layers.61 of 61), which the converter skips; tfconv converted
// nothing of such a checkpoint (an unexpected tensor). The deepseek3
// fixture with its last layer copied as layer 3 (plus the MTP layer's own
// enorm, hnorm and shared_head) converts to the bytes llama.cpp's
// converter wrote for the fixture, the MTP tensors dropped with a warning.
func TestDeepSeekMTPLayerSkipped(t *testing.T) {
	t.Parallel()
	src := "../testdata/arch/deepseek3/hf"
	c, err := checkpoint.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dir := t.TempDir()
	for _, aux := range []string{"config.json", "tokenizer.json", "tokenizer_config.json"} {
		if b, err := c.ReadAux(aux); err == nil {
			if err := os.WriteFile(filepath.Join(dir, aux), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	var infos []tensor.Info
	var srcs []*checkpoint.Tensor
	for _, tt := range c.Tensors {
		infos = append(infos, tensor.Info{Name: tt.Name, DType: tt.DType, Shape: tt.Shape})
		srcs = append(srcs, tt)
	}
	mtp := 0
	for _, tt := range c.Tensors {
		if rest, ok := strings.CutPrefix(tt.Name, "model.layers.2."); ok {
			infos = append(infos, tensor.Info{Name: "model.layers.3." + rest, DType: tt.DType, Shape: tt.Shape})
			srcs = append(srcs, tt)
			mtp++
		}
	}
	norm, _ := c.Tensor("model.norm.weight")
	for _, n := range []string{"enorm", "hnorm", "shared_head.norm"} {
		infos = append(infos, tensor.Info{Name: "model.layers.3." + n + ".weight", DType: norm.DType, Shape: norm.Shape})
		srcs = append(srcs, norm)
		mtp++
	}
	f, err := os.Create(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := safetensors.NewWriter(f, infos, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, tt := range srcs {
		bw, _ := w.Next(infos[i].Name)
		if _, err := io.Copy(bw, tt.Open()); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()

	out := filepath.Join(t.TempDir(), "mtp.gguf")
	rep, err := Run(dir, out, Options{OutType: OutF32})
	if err != nil {
		t.Fatal(err)
	}
	// Against llama.cpp d32676d7's own conversion of the fixture (which
	// has no MTP layer): every tensor byte, every key but provenance, the
	// newer converter's place of general.quantization_version aside.
	compareGGUF(t, rep.Arch, out, "../testdata/arch/deepseek3/gguf/deepseek3-newer-f32.gguf", false)
	dropped := 0
	for _, d := range rep.Dropped {
		if strings.HasPrefix(d.Name, "model.layers.3.") {
			dropped++
		}
	}
	if dropped != mtp {
		t.Errorf("%d MTP tensors dropped, want %d", dropped, mtp)
	}
	if !strings.Contains(strings.Join(rep.Warnings, "\n"), "multi-token-prediction") {
		t.Errorf("no warning about the MTP layer: %q", rep.Warnings)
	}
}
