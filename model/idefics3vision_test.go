package model

import (
	"slices"
	"testing"

	"github.com/tfconv/tfconv/vision"
)

// idefics3Fixture is testdata/vision/idefics3: gen_llava.py's tiny
// Idefics3ForConditionalGeneration (SmolVLM) with transformers' outputs.
const idefics3Fixture = "../testdata/vision/idefics3"

// llavaRef is the part of gen_llava.py's reference.json the tests read
// (idefics3, llava15, llavanext).
type llavaRef struct {
	Images map[string]struct {
		Prompt      string      `json:"prompt"`
		InputIDs    []int       `json:"input_ids"`
		PixelShape  []int       `json:"pixel_values_shape"`
		PixelValues []float32   `json:"pixel_values"`
		ImageSizes  [][]int     `json:"image_sizes"`
		Features    [][]float32 `json:"image_features"`
		LogitsRows  []int       `json:"logits_rows"`
		Logits      [][]float32 `json:"logits"`
	} `json:"images"`
}

// collapseSpan undoes a processor's expansion: ids from the first to the
// last occurrence of one of the markers become the placeholder once.
func collapseSpan(t *testing.T, ids []int, placeholder int, markers ...int) []int {
	t.Helper()
	s, e := -1, -1
	for i, id := range ids {
		if slices.Contains(markers, id) {
			if s < 0 {
				s = i
			}
			e = i
		}
	}
	if s < 0 {
		t.Fatalf("ids %v hold no image", ids)
	}
	return append(append(append([]int(nil), ids[:s]...), placeholder), ids[e+1:]...)
}

// maxIdefics3DiffF32 bounds the features and logits of the SmolVLM
// fixture against transformers'. The fixture's patch convolution kernel
// is drawn 1 + N(0, 0.2²) (gen_fixtures.randomize's rule for a 4-D
// tensor), so the tower's residual stream is O(150) and float32 summation
// order alone moves the features by ~1e-5: scaling every pixel value by
// 1 + 1.2e-7 moves our own features by 2.7e-5. Measured against
// transformers: features 4.8e-5 (wide) and 5.4e-5 (tall), logits 3.7e-5
// and 3.8e-5.
const maxIdefics3DiffF32 = 1e-4

// run --image on the SmolVLM folder equals transformers on both images
// (each cut into 12 tiles and the whole image): pixel_values bit for bit,
// the connector's features and the logits within maxIdefics3DiffF32, the
// prompt's ids (from the tokens with <image> once, and from the text) the
// processor's.
func TestImageIdefics3HF(t *testing.T) {
	t.Parallel()
	var ref llavaRef
	readJSON(t, idefics3Fixture+"/hf/reference.json", &ref)
	if len(ref.Images) != 2 {
		t.Fatalf("reference has %d images, want 2", len(ref.Images))
	}
	m, err := Load(idefics3Fixture+"/hf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := LoadVision(idefics3Fixture+"/hf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range ref.Images {
		img, err := vision.ReadFile("../testdata/vision/images/" + name)
		if err != nil {
			t.Fatal(err)
		}
		pr, err := v.Prepare(img, vision.Transformers)
		if err != nil {
			t.Fatal(err)
		}
		if len(pr.Tiles) != c.PixelShape[1] {
			t.Fatalf("%s: %d tiles, the processor %d", name, len(pr.Tiles), c.PixelShape[1])
		}
		if d := maxAbsDiff(pr.Pixels, c.PixelValues); d != 0 {
			t.Errorf("%s: pixel_values differ from transformers' by %g", name, d)
		}
		feat, err := v.EncodePrepared(pr, nil)
		if err != nil {
			t.Fatal(err)
		}
		df := maxAbsDiff(feat, flatRows(c.Features))
		if df > maxIdefics3DiffF32 {
			t.Errorf("%s: image features differ by %g", name, df)
		}
		for _, fromText := range []bool{false, true} {
			p := ImagePrompt{Image: img, Method: vision.Transformers}
			if fromText {
				p.Text = c.Prompt
			} else {
				p.Tokens = collapseSpan(t, c.InputIDs, v.Config().Image, v.Config().Image, 1037)
			}
			run, err := m.ImageInput(v, p)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(run.Input.Tokens, c.InputIDs) {
				t.Fatalf("%s (text %v): ids\n%v\nthe processor's\n%v", name, fromText, run.Input.Tokens, c.InputIDs)
			}
			out, err := m.Forward(run.Input, nil)
			if err != nil {
				t.Fatal(err)
			}
			d, _ := maxDiff(t, out.Logits, c.Logits, c.LogitsRows)
			if d > maxIdefics3DiffF32 {
				t.Errorf("%s: logits differ from transformers' by %g", name, d)
			}
			t.Logf("%s (text %v): max |Δ features| = %.3g, max |Δ logits| = %.3g over %d positions", name, fromText, df, d, len(c.Logits))
		}
	}
}
