package model

import (
	"math"
	"testing"

	"github.com/tfconv/tfconv/vision"
)

// visionFixture is testdata/vision/gemma3: vlconv's tiny
// Gemma3ForConditionalGeneration with transformers' outputs.
const visionFixture = "../testdata/vision/gemma3"

// visionRef is the part of testdata/vision/gemma3/hf/reference.json the
// tests read.
type visionRef struct {
	Prompt string `json:"prompt"`
	Cases  []struct {
		Image        string        `json:"image"`
		InputIDs     []int         `json:"input_ids"`
		TokenTypeIDs []int         `json:"token_type_ids"`
		PixelValues  [][][]float32 `json:"pixel_values"`
		States       [][][]float32 `json:"vision_hidden_states"`
		Last         [][]float32   `json:"vision_last_hidden_state"`
		Features     [][]float32   `json:"image_features"`
		Logits       [][]float32   `json:"logits"`
	} `json:"cases"`
}

// maxVisionDiffF32: the tower and projector in float32 against
// transformers' eager float32 forward; summation order only.
const maxVisionDiffF32 = 1e-5

func flatRows(rows [][]float32) []float32 {
	var out []float32
	for _, r := range rows {
		out = append(out, r...)
	}
	return out
}

func maxAbsDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	var m float64
	for i := range a {
		m = math.Max(m, math.Abs(float64(a[i]-b[i])))
	}
	return m
}

// The HF folder's tower, projector and preprocessing equal transformers'
// on both images: pixel_values bit for bit, every hidden state of the
// tower and the image features within maxVisionDiffF32.
func TestVisionGemma3HF(t *testing.T) {
	t.Parallel()
	var ref visionRef
	readJSON(t, visionFixture+"/hf/reference.json", &ref)
	if len(ref.Cases) != 2 {
		t.Fatalf("reference has %d cases, want 2", len(ref.Cases))
	}
	v, err := LoadVision(visionFixture+"/hf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v.DefaultMethod() != vision.Transformers {
		t.Fatalf("HF folder preprocesses as %v", v.DefaultMethod())
	}
	for _, c := range ref.Cases {
		img, err := vision.ReadFile("../testdata/vision/" + c.Image)
		if err != nil {
			t.Fatal(err)
		}
		px := v.Preprocess(vision.Transformers).Pixels(img)
		var want []float32
		for _, ch := range c.PixelValues {
			want = append(want, flatRows(ch)...)
		}
		if d := maxAbsDiff(px, want); d != 0 {
			t.Errorf("%s: pixel_values differ from transformers' by %g", c.Image, d)
		}
		var states [][]float32
		feat, err := v.Encode(want, &states)
		if err != nil {
			t.Fatal(err)
		}
		if len(states) != len(c.States)+1 {
			t.Fatalf("%s: %d states, transformers %d hidden states + last", c.Image, len(states), len(c.States))
		}
		for i, s := range c.States {
			if d := maxAbsDiff(states[i], flatRows(s)); d > maxVisionDiffF32 {
				t.Errorf("%s: tower state %d differs by %g", c.Image, i, d)
			}
		}
		if d := maxAbsDiff(states[len(states)-1], flatRows(c.Last)); d > maxVisionDiffF32 {
			t.Errorf("%s: last_hidden_state differs by %g", c.Image, d)
		}
		d := maxAbsDiff(feat, flatRows(c.Features))
		if d > maxVisionDiffF32 {
			t.Errorf("%s: image features differ by %g", c.Image, d)
		}
		t.Logf("%s: max |Δ image features| = %.3g", c.Image, d)
	}
}
