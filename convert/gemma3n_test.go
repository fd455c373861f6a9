package convert

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/formats/safetensors"
	"github.com/tfconv/tfconv/tensor"
)

// TestGemma3nNestedTextConfig: a Gemma3nForConditionalGeneration
// config.json with the text model's keys under text_config (google's
// published form) converts as the converter converts it, lifting them to
// the top level: the same GGUF as the flat config.json's, byte for byte.
func TestGemma3nNestedTextConfig(t *testing.T) {
	src := filepath.Join("..", "testdata", "arch", "gemma3n", "hf")
	// The same folder name: the GGUF's general.* names come from it.
	dir := filepath.Join(t.TempDir(), "hf")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == "config.json" {
			d := json.NewDecoder(bytes.NewReader(b))
			d.UseNumber() // the numbers as written: 30.0 stays 30.0
			if err := d.Decode(&cfg); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	nested := map[string]any{"architectures": []any{"Gemma3nForConditionalGeneration"}, "model_type": "gemma3n",
		"text_config": cfg}
	b, _ := json.Marshal(nested)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	for i, in := range []string{src, dir} {
		if _, err := Run(in, filepath.Join(out, []string{"flat.gguf", "nested.gguf"}[i]), Options{OutType: OutF32, ModelName: "gemma3n"}); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
	}
	flat, _ := os.ReadFile(filepath.Join(out, "flat.gguf"))
	got, _ := os.ReadFile(filepath.Join(out, "nested.gguf"))
	if !bytes.Equal(flat, got) {
		t.Fatalf("the nested config.json's GGUF (%d bytes) differs from the flat one's (%d bytes)", len(got), len(flat))
	}
}

// TestGemma3nTowersDropped: Gemma3nForConditionalGeneration's language
// model converts as the converter's text model does: the same GGUF as the
// fixture's, with the vision and audio towers' tensors left out and the
// report saying where they go (the mmproj file).
func TestGemma3nTowersDropped(t *testing.T) {
	src := filepath.Join("..", "testdata", "arch", "gemma3n", "hf")
	dir := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() == "model.safetensors" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == "config.json" {
			b = bytes.Replace(b, []byte(`"Gemma3nForCausalLM"`), []byte(`"Gemma3nForConditionalGeneration"`), 1)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := checkpoint.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	towers := []string{"model.audio_tower.conformer.0.ffw_layer_start.pre_layer_norm.weight",
		"model.embed_audio.embedding.weight", "model.embed_vision.embedding.weight",
		"model.vision_tower.timm_model.conv_stem.conv.weight"}
	var infos []tensor.Info
	for _, n := range towers {
		infos = append(infos, tensor.Info{Name: n, DType: tensor.F32, Shape: tensor.Shape{2, 2}})
	}
	for _, tt := range c.Tensors {
		infos = append(infos, tensor.Info{Name: tt.Name, DType: tt.DType, Shape: tt.Shape})
	}
	f, err := os.Create(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := safetensors.NewWriter(f, infos, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, info := range infos {
		bw, _ := w.Next(info.Name)
		if i < len(towers) {
			binary.Write(bw, binary.LittleEndian, []float32{1, 2, 3, 4})
			continue
		}
		if _, err := io.Copy(bw, c.Tensors[i-len(towers)].Open()); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out := filepath.Join(t.TempDir(), "out.gguf")
	rep, err := Run(dir, out, Options{OutType: OutF32})
	if err != nil {
		t.Fatal(err)
	}
	dropped := map[string]string{}
	for _, d := range rep.Dropped {
		dropped[d.Name] = d.Reason
	}
	for _, n := range towers {
		if !strings.Contains(dropped[n], "mmproj") {
			t.Errorf("%s: dropped %q, want the reason naming the multimodal projector file", n, dropped[n])
		}
	}
	compareGGUF(t, rep.Arch, out, filepath.Join("..", "testdata", "arch", "gemma3n", "gguf", "gemma3n-f32.gguf"), false)
}
