package model

import (
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
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
	llama4Features(t, v, ref, names, "HF folder")
}

// llama4Features checks v's transformers preprocessing of the reference
// images (their tiles on grids 1×2 and 2×1, pixel_values bit for bit) and
// its features from transformers' pixel_values, within maxVisionDiffF32.
func llama4Features(t *testing.T, v *Vision, ref llama4Ref, names []string, what string) {
	t.Helper()
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
			t.Fatalf("%s: %s: %d tiles on grid %v; the processor's %d (grid %v)", what, name, len(pr.Tiles), pr.Grid, c.PixelShape[0], grids[name])
		}
		if d := maxAbsDiff(pr.Pixels, c.Pixels); d != 0 {
			t.Errorf("%s: %s: pixel_values differ from transformers' by %g", what, name, d)
		}
		feat, err := v.EncodePrepared(&Prepared{Pixels: c.Pixels, Tiles: pr.Tiles, Rows: pr.Rows, Grid: pr.Grid}, nil)
		if err != nil {
			t.Fatal(err)
		}
		d := maxAbsDiff(feat, slices.Concat(c.Features...))
		if d > maxVisionDiffF32 {
			t.Errorf("%s: %s: image features differ from transformers' by %g", what, name, d)
		}
		t.Logf("%s: %s: %d tiles; max |Δ image features| = %.3g", what, name, len(pr.Tiles), d)
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

// llama4Out is where gen_llama4.py leaves llama.cpp's conversions of the
// fixture (the f32 text GGUF, 1.2 MB, and the f16 mmproj are not shipped:
// testdata holds the f16 text GGUF and the f32 mmproj, 910 KB).
const llama4Out = "/work/fixtures-out/vision/llama4"

// Bounds against mtmd for the llama4 fixture (see idefics3MtmdBounds for
// what each is), over the measured figures (wide, tall), MatchLlamaCpp
// only: without it the mmproj runs the model's graph, not mtmd's
// (TestVisionLlama4Mtmd).
//
// The image embeddings (the f32 mmproj; features of O(1)): 4.5e-4 and
// 9.4e-4. The tower's last layer is within 2e-6 of ggml's (tile 0, by
// MTMD_DUMP_TENSORS; the patch embedding's 588-term sums already part by
// 1.5e-6, float32 summation order); the rest is the adapter's two GELUs,
// which ggml reads from a binary16 table at the input rounded to binary16:
// an input a few ulps off can round to the next binary16 value, and the
// output moves by one binary16 step (4.9e-4 at |x| ≈ 0.5 — the first
// tile's fc1 output: its sum parts from ggml's by exactly that).
//
// The logits after the image: the f32 text GGUF with mtmd's embeddings,
// 3.6e-6 and 3.9e-6 (the text model alone); with ours, 3.6e-4 and 5.5e-4.
// The shipped f16 text GGUF: 2.3e-3 and 2.1e-3 from the text model alone,
// 3.4e-3 and 3.5e-3 in all; on the plain-Go kernels (-tags noasm, another
// summation order) 2.3e-3 and 1.8e-3 alone, 6.1e-3 and 3.9e-3 in all.
var llama4MtmdBounds = mtmdBounds{
	true: {embd: 1.5e-3, text: 4e-3, logits: 8e-3, text32: 1e-5, logits32: 1e-3},
}

// run --image on llama.cpp's GGUF pair of the Llama 4 fixture equals mtmd
// (MatchLlamaCpp): its tiles bit for bit (llava-uhd slices: 1×2 for the
// wide image, 2×1 for the tall one, the overview after them), the grid,
// the prompt's ids (<|image_start|>, the 12 image rows, <|image_end|>),
// the embeddings and the logits of the text after the image
// (llama4MtmdBounds), with the shipped f16 text GGUF and, where
// /work/fixtures-out holds it, the f32 one.
func TestImageLogitsLlama4Mtmd(t *testing.T) {
	t.Parallel()
	testImageMtmd(t, llama4Fixture, llama4Out, llama4MtmdBounds)
}

// llama4MtmdF16 is gguf/mtmd.json's record of mtmd with the converter's
// f16 mmproj (and the f32 text GGUF).
type llama4MtmdF16 struct {
	MmprojF16 string `json:"mmproj_gguf_f16"`
	TextF32   string `json:"text_gguf_f32"`
	Cases     []struct {
		Image     string               `json:"image"`
		Prompt    string               `json:"prompt"`
		Tiles     []string             `json:"tiles_sha256"`
		Embd      [][]float32          `json:"image_embd_f16_mmproj"`
		LogitsF16 map[string][]float32 `json:"logits_f16_mmproj"`
	} `json:"cases"`
}

// The llama4 mmproj GGUF: without MatchLlamaCpp it runs the model's own
// graph (transformers' features from transformers' pixel_values within
// maxVisionDiffF32: 9.5e-7 and 1.0e-6); with it, mtmd's graph, checked on
// the converter's f16 mmproj where /work/fixtures-out holds it (f32: see
// TestImageLogitsLlama4Mtmd): mtmd's tiles bit for bit, the embeddings
// within 2.5e-3 (measured 7.8e-4 and 1.6e-3: ggml's GELU table as for the
// f32 mmproj, and binary16 products) and, with the f32 text GGUF, the
// logits within 3e-3.
func TestVisionLlama4Mtmd(t *testing.T) {
	t.Parallel()
	hf, names := readLlama4Ref(t)
	v, err := LoadVision(llama4Fixture+"/gguf/llama4-mmproj-f32.gguf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	llama4Features(t, v, hf, names, "mmproj GGUF (the model's graph)")

	var ref llama4MtmdF16
	readJSON(t, llama4Fixture+"/gguf/mtmd.json", &ref)
	if len(ref.Cases) != 2 {
		t.Fatalf("mtmd.json has %d cases, want 2", len(ref.Cases))
	}
	mm, text := llama4Out+"/"+ref.MmprojF16, llama4Out+"/"+ref.TextF32
	for _, f := range []string{mm, text} {
		if _, err := os.Stat(f); err != nil {
			t.Skipf("%s absent (gen_llama4.py's output): the f16 mmproj is not compared", f)
		}
	}
	opts := LoadOptions{MatchLlamaCpp: true}
	v, err = LoadVision(mm, opts)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Load(text, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ref.Cases {
		img, err := vision.ReadFile("../testdata/vision/" + c.Image)
		if err != nil {
			t.Fatal(err)
		}
		run, err := m.ImageInput(v, ImagePrompt{Text: c.Prompt, Image: img, Method: vision.Mtmd})
		if err != nil {
			t.Fatal(err)
		}
		pr, err := v.Prepare(img, vision.Mtmd)
		if err != nil {
			t.Fatal(err)
		}
		if got := tileDigests(pr); !slices.Equal(got, c.Tiles) {
			t.Errorf("%s: tiles' sha256 %v, mtmd's %v", c.Image, got, c.Tiles)
		}
		de := maxAbsDiff(run.Features, slices.Concat(c.Embd...))
		out, err := m.Forward(run.Input, nil)
		if err != nil {
			t.Fatal(err)
		}
		var dl float64
		for pos, w := range c.LogitsF16 {
			p, err := strconv.Atoi(pos)
			if err != nil || p >= len(out.Logits) {
				t.Fatalf("%s: logits of position %q", c.Image, pos)
			}
			dl = math.Max(dl, maxAbsDiff(out.Logits[p], w))
		}
		if de > 2.5e-3 || dl > 3e-3 || len(c.LogitsF16) == 0 {
			t.Errorf("%s: f16 mmproj: embeddings differ from mtmd's by %g, logits by %g (%d positions)", c.Image, de, dl, len(c.LogitsF16))
		}
		t.Logf("%s: f16 mmproj (match llama.cpp): max |Δ image embeddings| = %.3g, max |Δ logits| = %.3g over %d positions", c.Image, de, dl, len(c.LogitsF16))
	}
}
