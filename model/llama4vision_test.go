package model

import (
	"slices"
	"sort"
	"testing"

	"github.com/tfconv/tfconv/tokenizer"
	"github.com/tfconv/tfconv/vision"
)

// llama4Fixture is testdata/vision/llama4: gen_llama4.py's tiny
// Llama4ForConditionalGeneration with transformers' outputs.
const llama4Fixture = "../testdata/vision/llama4"

// llama4Ref is hf/reference.json, per image.
type llama4Ref struct {
	Images map[string]struct {
		Prompt       string      `json:"prompt"`
		InputIDs     []int       `json:"input_ids"`
		PixelShape   []int       `json:"pixel_values_shape"`
		Pixels       []float32   `json:"pixel_values"`
		VisionOutput []float32   `json:"vision_output"`
		Features     [][]float32 `json:"image_features"`
		LogitRows    []int       `json:"logits_rows"`
		Logits       [][]float32 `json:"logits"`
	} `json:"images"`
}

func readLlama4Ref(t *testing.T) (llama4Ref, []string) {
	t.Helper()
	var ref llama4Ref
	readJSON(t, llama4Fixture+"/hf/reference.json", &ref)
	var names []string
	for n := range ref.Images {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) != 2 {
		t.Fatalf("reference has %d images, want 2", len(names))
	}
	return ref, names
}

// The HF folder's preprocessing equals Llama4ImageProcessorFast's
// pixel_values bit for bit (the wide image on a 1×2 canvas, the tall one
// on 2×1, each with the global tile), and the tower, adapter and projector
// give get_image_features within maxVisionDiffF32.
func TestVisionLlama4HF(t *testing.T) {
	t.Parallel()
	ref, names := readLlama4Ref(t)
	v, err := LoadVision(llama4Fixture+"/hf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := v.Config(); c.Tokens != 4 || c.Image != 1005 || c.TextDModel != 64 {
		t.Fatalf("config %+v", c)
	}
	grids := map[string][]int{"wide.png": {1, 2}, "tall.png": {2, 1}}
	for _, name := range names {
		c := ref.Images[name]
		img, err := vision.ReadFile("../testdata/vision/images/" + name)
		if err != nil {
			t.Fatal(err)
		}
		pr, err := v.Prepare(img, vision.Transformers)
		if err != nil {
			t.Fatal(err)
		}
		if len(pr.Tiles) != c.PixelShape[0] || !slices.Equal(pr.Grid, grids[name]) {
			t.Fatalf("%s: %d tiles on grid %v; the processor's %d (grid %v)", name, len(pr.Tiles), pr.Grid, c.PixelShape[0], grids[name])
		}
		if d := maxAbsDiff(pr.Pixels, c.Pixels); d != 0 {
			t.Errorf("%s: pixel_values differ from transformers' by %g", name, d)
		}
		in := &Prepared{Pixels: c.Pixels, Tiles: pr.Tiles, Rows: pr.Rows, Grid: pr.Grid}
		feat, err := v.EncodePrepared(in, nil)
		if err != nil {
			t.Fatal(err)
		}
		d := maxAbsDiff(feat, slices.Concat(c.Features...))
		if d > maxVisionDiffF32 {
			t.Errorf("%s: image features differ by %g", name, d)
		}
		t.Logf("%s: %d tiles; max |Δ image features| = %.3g", name, len(pr.Tiles), d)
	}
}

// run --image on the HF folder: Llama4Processor's expansion of <|image|>
// (<|image_start|>, the tiles' <|patch|> runs with their separators, then
// <|image|> and the global tile's, <|image_end|>) from the text and from
// the ids holding <|image|> once, and the last 8 logit rows transformers'
// within maxLogitDiffF32 on both images.
func TestImageLogitsLlama4HF(t *testing.T) {
	t.Parallel()
	ref, names := readLlama4Ref(t)
	m, err := Load(llama4Fixture+"/hf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := LoadVision(llama4Fixture+"/hf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		c := ref.Images[name]
		img, err := vision.ReadFile("../testdata/vision/images/" + name)
		if err != nil {
			t.Fatal(err)
		}
		run, err := m.ImageInput(v, ImagePrompt{Image: img, Method: vision.Transformers, Text: c.Prompt})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(run.Input.Tokens, c.InputIDs) {
			t.Fatalf("%s: from the text, ids %v, the processor's %v", name, run.Input.Tokens, c.InputIDs)
		}
		ids, err := m.Tokenizer().Encode(c.Prompt, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true})
		if err != nil {
			t.Fatal(err)
		}
		run, err = m.ImageInput(v, ImagePrompt{Image: img, Method: vision.Transformers, Tokens: ids})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(run.Input.Tokens, c.InputIDs) {
			t.Fatalf("%s: from the ids, %v, the processor's %v", name, run.Input.Tokens, c.InputIDs)
		}
		out, err := m.Forward(run.Input, nil)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := maxDiff(t, out.Logits, c.Logits, c.LogitRows)
		if d > maxLogitDiffF32 {
			t.Errorf("%s: logits differ from transformers' by %g", name, d)
		}
		t.Logf("%s: max |Δ logits| = %.3g over the last %d positions", name, d, len(c.LogitRows))
	}
}
