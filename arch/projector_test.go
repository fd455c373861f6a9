package arch

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestProjectorTable: every projector's text family exists and converts its
// classes (the text half), its tower is a "clip" family whose roles resolve
// both ways, and ProjectorFor finds it by class.
func TestProjectorTable(t *testing.T) {
	t.Parallel()
	if len(Projectors()) == 0 {
		t.Fatal("no projectors")
	}
	for _, p := range Projectors() {
		text, ok := ByName(p.Text)
		if !ok {
			t.Errorf("%s: text family %q is not registered", p.Type, p.Text)
			continue
		}
		for _, cls := range p.HFClasses {
			c := Config{"architectures": []any{cls}}
			if f, ok := ForConfig(c); !ok || f != text {
				t.Errorf("%s: class %s does not convert as %s", p.Type, cls, p.Text)
			}
			if q, ok := ProjectorFor(c); !ok || q != p {
				t.Errorf("%s: ProjectorFor(%s) = %v", p.Type, cls, q)
			}
		}
		seen := map[string]bool{}
		for _, ten := range p.Tower.Tensors {
			hf, gg := expand(ten.HF[0], 3)+".weight", expand(ten.GGUF, 3)+".weight"
			if ten.NoSuffixHF {
				hf = expand(ten.HF[0], 3)
			}
			if ten.NoSuffix {
				hf, gg = expand(ten.HF[0], 3), expand(ten.GGUF, 3)
			}
			if ten.HFSuffix != "" {
				hf = expand(ten.HF[0], 3) + ten.HFSuffix
			}
			if ten.NoSuffixGGUF {
				gg = expand(ten.GGUF, 3)
			}
			// The parts of one Hugging Face tensor (Split) resolve to the
			// first; each resolves back.
			if m, ok := p.Tower.FromHF(hf); ten.Split == nil || ten.Split.Part == 1 {
				if !ok || m.Name(true) != gg {
					t.Errorf("%s: %s resolves to %v (%v), want %s", p.Type, hf, ok, m.Tensor, gg)
					continue
				}
			}
			// A role listed again for another layout of the checkpoint
			// (InternVL's fused qkv) resolves back to its first entry.
			if seen[ten.GGUF] {
				continue
			}
			seen[ten.GGUF] = true
			if back, ok := p.Tower.FromGGUF(gg); !ok || back.Name(false) != hf {
				t.Errorf("%s: %s resolves back to %v", p.Type, gg, ok)
			}
		}
		if q, ok := ProjectorByType(p.Type); !ok || q != p {
			t.Errorf("ProjectorByType(%s) = %v", p.Type, q)
		}
	}
	if _, ok := ProjectorFor(Config{"architectures": []any{"Gemma3ForCausalLM"}}); ok {
		t.Error("a text-only class has a projector")
	}
}

// TestGemma3VisionKeys: the fixture's clip.* keys, in the converter's order
// (testdata/vision/gemma3/llamacpp.json states them; convert's test holds
// the whole file to it).
func TestGemma3VisionKeys(t *testing.T) {
	t.Parallel()
	top, pre := readJSON(t, "config.json"), readJSON(t, "preprocessor_config.json")
	for k, v := range readJSON(t, "processor_config.json") {
		pre[k] = v
	}
	c, err := Gemma3Vision.TowerConfig(top, pre)
	if err != nil {
		t.Fatal(err)
	}
	md, err := Gemma3Vision.Tower.GGUFMetadata(c, 1)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range md {
		keys = append(keys, kv.Key)
	}
	want := []string{FileType, "clip.has_vision_encoder", "clip.vision.projection_dim", "clip.vision.image_size",
		"clip.vision.patch_size", "clip.vision.embedding_length", "clip.vision.feed_forward_length",
		"clip.vision.block_count", "clip.vision.attention.head_count", "clip.vision.image_mean", "clip.vision.image_std",
		"clip.projector_type", "clip.vision.attention.layer_norm_epsilon", "clip.use_gelu",
		"clip.vision.projector.scale_factor"}
	if len(keys) != len(want) {
		t.Fatalf("keys %v, want %v", keys, want)
	}
	for i := range want {
		if keys[i] != want[i] {
			t.Errorf("key %d: %s, want %s", i, keys[i], want[i])
		}
	}
	if v, _ := md.Get("clip.vision.projector.scale_factor"); v.String() != "2" {
		t.Errorf("scale_factor %v, want 2 (4×4 patches pooled to 2×2)", v)
	}
	if v, _ := md.Get("clip.vision.projection_dim"); v.String() != "64" {
		t.Errorf("projection_dim %v, want the text model's 64", v)
	}
	// The published 896/14 tower with 256 tokens pools by llama.cpp's default 4: no key.
	c["image_size"], c["patch_size"] = json.Number("896"), json.Number("14")
	c[TowerPreprocessor] = map[string]any{"image_mean": pre["image_mean"], "image_std": pre["image_std"], "image_seq_length": json.Number("256")}
	if md, err = Gemma3Vision.Tower.GGUFMetadata(c, 1); err != nil {
		t.Fatal(err)
	}
	if v, ok := md.Get("clip.vision.projector.scale_factor"); ok {
		t.Errorf("gemma-3-4b-it's tower: scale_factor %v written, the converter writes none for 4", v)
	}
	delete(c, "vision_config")
	if _, err := Gemma3Vision.TowerConfig(Config{"architectures": []any{"Gemma3ForConditionalGeneration"}}, pre); err == nil {
		t.Error("a config without vision_config: no error")
	}
}

func readJSON(t testing.TB, name string) Config {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "vision", "gemma3", "hf", name))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// FuzzProjectorConfig: any config.json and preprocessor_config.json give
// the projector's keys or an error, never a panic.
func FuzzProjectorConfig(f *testing.F) {
	for _, name := range []string{"config.json", "preprocessor_config.json"} {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "vision", "gemma3", "hf", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, []byte(`{"image_mean":[0.5],"image_std":[1e40],"image_seq_length":-4}`))
		f.Add([]byte(`{"vision_config":{"image_size":1e30,"patch_size":0},"text_config":{"hidden_size":-1}}`), b)
	}
	f.Fuzz(func(t *testing.T, cfg, pre []byte) {
		var top, p map[string]any
		for _, x := range []struct {
			b []byte
			m *map[string]any
		}{{cfg, &top}, {pre, &p}} {
			d := json.NewDecoder(bytes.NewReader(x.b))
			d.UseNumber()
			if d.Decode(x.m) != nil {
				return
			}
		}
		for _, proj := range Projectors() {
			c, err := proj.TowerConfig(top, p)
			if err != nil {
				continue
			}
			_, _ = proj.Tower.GGUFMetadata(c, 0)
		}
	})
}
