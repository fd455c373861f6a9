package model

import (
	"slices"
	"testing"

	"github.com/tfconv/tfconv/vision"
)

// llava15Fixture is testdata/vision/llava15: gen_llava.py's tiny
// LlavaForConditionalGeneration with transformers' outputs.
const llava15Fixture = "../testdata/vision/llava15"

// run --image on the LLaVA-1.5 folder equals transformers on both images:
// pixel_values bit for bit (CLIPImageProcessor: bicubic shortest edge,
// centre crop), the projector's features and the logits within
// maxLlavaFixtureDiffF32, the prompt's ids (from the tokens with <image>
// once, and from the text) the processor's.
func TestImageLlava15HF(t *testing.T) {
	t.Parallel()
	testImageLlavaHF(t, llava15Fixture)
}

// run --image on the LLaVA-NeXT folder equals transformers on both images
// as LLaVA-1.5's does: each image in a 2×2 grid of tiles (the best of the
// pinpoints: 64×64) after the whole image, the features packed as
// LlavaNextForConditionalGeneration packs them (unpadded, image_newline
// ending each row: 52 and 56 rows).
func TestImageLlavaNextHF(t *testing.T) {
	t.Parallel()
	testImageLlavaHF(t, "../testdata/vision/llavanext")
}

func testImageLlavaHF(t *testing.T, fixture string) {
	var ref llavaRef
	readJSON(t, fixture+"/hf/reference.json", &ref)
	if len(ref.Images) != 2 {
		t.Fatalf("reference has %d images, want 2", len(ref.Images))
	}
	m, err := Load(fixture+"/hf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := LoadVision(fixture+"/hf", LoadOptions{})
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
		if d := maxAbsDiff(pr.Pixels, c.PixelValues); d != 0 {
			t.Errorf("%s: pixel_values differ from transformers' by %g", name, d)
		}
		feat, err := v.EncodePrepared(pr, nil)
		if err != nil {
			t.Fatal(err)
		}
		df := maxAbsDiff(feat, flatRows(c.Features))
		if df > maxLlavaFixtureDiffF32 {
			t.Errorf("%s: image features differ by %g", name, df)
		}
		for _, fromText := range []bool{false, true} {
			p := ImagePrompt{Image: img, Method: vision.Transformers}
			if fromText {
				p.Text = c.Prompt
			} else {
				p.Tokens = collapseSpan(t, c.InputIDs, v.Config().Image, v.Config().Image)
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
			if d > maxLlavaFixtureDiffF32 {
				t.Errorf("%s: logits differ from transformers' by %g", name, d)
			}
			t.Logf("%s (text %v): max |Δ features| = %.3g, max |Δ logits| = %.3g over %d positions", name, fromText, df, d, len(c.Logits))
		}
	}
}

// llava15Out is where gen_llava.py leaves llama.cpp's conversions of the
// LLaVA-1.5 fixture.
const llava15Out = "/work/fixtures-out/vision/llava15"

// llava15MtmdBounds: the legacy mmproj keeps the projector's matrices and
// the patch kernel F16, which ggml multiplies with binary16 activations;
// MatchLlamaCpp rounds them so, and the embeddings then agree to float32's
// summation order. Measured, wide / tall: embeddings 6.0e-7 / 6.0e-7
// (MatchLlamaCpp), 1.2e-3 / 1.3e-3 (not); with the f32 text GGUF the
// logits 3.3e-6 / 3.6e-6 (2.0e-3 / 2.0e-3 not), 2.4e-6 / 3.6e-6 with
// mtmd's own embeddings; with the f16 one 1.6e-3 / 1.5e-3 (4.5e-3 / 5.7e-3
// not), 1.3e-3 / 1.5e-3 from the text model alone (3.4e-3 / 4.9e-3 not:
// mtmd's embeddings rounded to binary16 by the text model's products).
var llava15MtmdBounds = mtmdBounds{
	true:  {embd: 1e-5, text: 3e-3, logits: 3e-3, text32: 1e-5, logits32: 1e-5},
	false: {embd: 3e-3, text: 1e-2, logits: 1e-2, text32: 1e-5, logits32: 4e-3},
}

// run --image on llama.cpp's pair for the LLaVA-1.5 fixture (the text
// GGUF and the legacy mmproj) equals mtmd: its letterboxed tile bit for
// bit (bicubic, on {122, 116, 104}), the ids (mtmd's text after the image
// keeps its prefix space), the embeddings (llama.cpp's graph: one layer
// fewer than transformers, the class token last) and the logits of the
// text after the image.
func TestImageLlava15Mtmd(t *testing.T) {
	t.Parallel()
	testImageMtmd(t, llava15Fixture, llava15Out, llava15MtmdBounds)
}

// What the SmolVLM and LLaVA encoders do not run is refused: mtmd's
// slicing of LLaVA-NeXT, a prompt without the image marker or with two,
// tokens without the placeholder.
func TestImageLlavaRefusals(t *testing.T) {
	t.Parallel()
	img, err := vision.ReadFile("../testdata/vision/images/vlllava-wide.png")
	if err != nil {
		t.Fatal(err)
	}
	next, err := LoadVision("../testdata/vision/llavanext/hf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := next.Prepare(img, vision.Mtmd); err == nil {
		t.Error("LLaVA-NeXT with mtmd's preprocessing: no error")
	}
	for _, fixture := range []string{llava15Fixture, idefics3Fixture} {
		m, err := Load(fixture+"/hf", LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		v, err := LoadVision(fixture+"/hf", LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []ImagePrompt{
			{Text: "no marker", Image: img},
			{Text: "<image> and <image>", Image: img},
			{Tokens: []int{1, 5, 6}, Image: img},
		} {
			if _, err := m.ImageInput(v, p); err == nil {
				t.Errorf("%s: %+v: no error", fixture, p)
			}
		}
	}
}

// llavaNextMtmdBounds: as LLaVA-1.5's, over 80 image rows (five chunks
// of 16). Measured, wide / tall: embeddings 2.6e-5 / 2.8e-4
// (MatchLlamaCpp), 1.4e-3 / 1.5e-3 (not); with the f32 text GGUF the
// logits 2.5e-6 / 4.1e-5 (6.3e-4 / 6.1e-4 not), 2.3e-6 / 1.8e-6 with
// mtmd's own embeddings; with the f16 one 1.3e-3 / 1.5e-3 (1.7e-3 / 1.8e-3
// not), 9.7e-4 / 1.3e-3 from the text model alone (1.5e-3 / 1.9e-3 not).
var llavaNextMtmdBounds = mtmdBounds{
	true:  {embd: 1e-3, text: 3e-3, logits: 3e-3, text32: 1e-5, logits32: 1e-4},
	false: {embd: 3e-3, text: 4e-3, logits: 4e-3, text32: 1e-5, logits32: 2e-3},
}

// run --image on llama.cpp's pair for the LLaVA-NeXT fixture (the text
// GGUF and the legacy mmproj with pinpoints) equals mtmd: its llava-uhd
// slices (2×2) and overview bit for bit, the ids, the embeddings of the
// five chunks and the logits of the text after the image.
func TestImageLlavaNextMtmd(t *testing.T) {
	t.Parallel()
	testImageMtmd(t, "../testdata/vision/llavanext", "/work/fixtures-out/vision/llavanext", llavaNextMtmdBounds)
}
