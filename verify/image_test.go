package verify

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/convert"
	"github.com/tfconv/tfconv/model"
	"github.com/tfconv/tfconv/vision"
)

// gemma3VL is the tiny Gemma3ForConditionalGeneration made by transformers
// (testdata/vision/gemma3; its gguf/ holds llama.cpp's converter's pair).
const gemma3VL = "../testdata/vision/gemma3"

// TestImageGGUFPairMatchesHF compares the Hugging Face folder with
// llama.cpp's converter's text GGUF + mmproj on both images. The tower's
// states are identical (the converter keeps them f32) and the features
// differ by the F16 projection it writes even in an f32 mmproj, which
// makes the pair f16's, within whose limits everything passes. A
// projector written at f16 throughout departs at the tower's first state
// (the f16 patch kernel) under a layer limit of 1e-9.
func TestImageGGUFPairMatchesHF(t *testing.T) {
	t.Parallel()
	f16 := filepath.Join(t.TempDir(), "text.gguf")
	if _, err := convert.Run(gemma3VL+"/hf", f16, convert.Options{OutType: convert.OutF16, Multimodal: convert.MultimodalBoth}); err != nil {
		t.Fatal(err)
	}
	text := gemma3VL + "/gguf/gemma3-f32.gguf"
	for _, img := range []string{"wide.png", "tall.png"} {
		im, err := vision.ReadFile("../testdata/vision/images/" + img)
		if err != nil {
			t.Fatal(err)
		}
		io := ImageOptions{Image: im, File: img}
		o := FileOptions{Options: Options{Prompt: "Describe this picture: <start_of_image> What is in it?", AttnLayer: -1}}
		rep, err := FilesImage(gemma3VL+"/hf", text, "", gemma3VL+"/gguf/mmproj-gemma3-f32.gguf", io, o)
		if err != nil {
			t.Fatal(err)
		}
		r := rep.Image
		t.Logf("%s: f32 pair: pixels %.3g, features max %.3g NMSE %.3g, tower %d states (last NMSE %.3g), logits max %.3g, KLD %.3g",
			img, r.PixelsMaxAbs, r.Features.MaxAbs, r.Features.NMSE, len(r.Tower), r.Tower[len(r.Tower)-1].NMSE, rep.MaxAbs, rep.KLD.Mean)
		if !rep.Pass || r.FirstDivergentTowerLayer != nil || r.PixelsMaxAbs != 0 || rep.Thresholds.Pair != "f16" {
			t.Errorf("%s: f32 pair: pass %v, failures %v, tower departs at %v, pair %s", img, rep.Pass, rep.Failures, r.FirstDivergentTowerLayer, rep.Thresholds.Pair)
		}
		for _, l := range r.Tower {
			if l.NMSE != 0 {
				t.Errorf("%s: tower state %d: NMSE %g, want identical", img, l.Layer, l.NMSE)
			}
		}
		if !(r.Features.NMSE > 0 && r.Features.NMSE < 1e-6) || rep.MaxAbs > 5e-3 {
			t.Errorf("%s: features NMSE %g, logits max %g", img, r.Features.NMSE, rep.MaxAbs)
		}
		if r.Rows != 4 || r.Preprocess != "transformers" || r.Projector != "gemma3" {
			t.Errorf("%s: %d rows, %s preprocessing, projector %s", img, r.Rows, r.Preprocess, r.Projector)
		}
		// tiny tower: embeddings, 2 blocks, post-layernorm
		if len(r.Tower) != 4 || len(rep.Layers) == 0 {
			t.Errorf("%s: %d tower states, %d text layers", img, len(r.Tower), len(rep.Layers))
		}
		o.Adjust = func(th *Thresholds) { th.LayerNMSE = 1e-9 }
		rep, err = FilesImage(gemma3VL+"/hf", text, "", convert.MmprojPath(f16), io, o)
		if err != nil {
			t.Fatal(err)
		}
		r = rep.Image
		var nm []float64
		for _, l := range r.Tower {
			nm = append(nm, l.NMSE)
		}
		t.Logf("%s: f16 projector: tower NMSE %.3g, features NMSE %.3g", img, nm, r.Features.NMSE)
		// the patch embedding and position table stay f32 (the converter's
		// rule); block 0's f16 matrices are the first cause
		if rep.Pass || r.FirstDivergentTowerLayer == nil || *r.FirstDivergentTowerLayer != 1 || nm[0] != 0 || !(r.Features.NMSE > 0) {
			t.Errorf("%s: f16 projector under a layer limit of 1e-9: pass %v, tower departs at %v, NMSE %g, features NMSE %g", img, rep.Pass, r.FirstDivergentTowerLayer, nm, r.Features.NMSE)
		}
		if !strings.Contains(strings.Join(rep.Failures, ";"), "image features") {
			t.Errorf("%s: failures %v do not name the image features", img, rep.Failures)
		}
	}
}

// TestImageRefusals: a GGUF text model without its mmproj, and an image
// against a perplexity text, are refused by name.
func TestImageRefusals(t *testing.T) {
	t.Parallel()
	im, err := vision.ReadFile("../testdata/vision/images/wide.png")
	if err != nil {
		t.Fatal(err)
	}
	text := gemma3VL + "/gguf/gemma3-f32.gguf"
	_, err = FilesImage(gemma3VL+"/hf", text, "", "", ImageOptions{Image: im}, FileOptions{Options: Options{AttnLayer: -1}})
	if err == nil || !strings.Contains(err.Error(), "--mmproj") {
		t.Errorf("GGUF without mmproj: %v", err)
	}
	m, err := model.Load(gemma3VL+"/hf", model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := model.LoadVision(gemma3VL+"/hf", model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CompareImage(m, m, v, v, ImageOptions{Image: im}, Options{Text: "some text"}); err == nil {
		t.Error("an image with a perplexity text was compared")
	}
}
