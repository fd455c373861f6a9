package model

import (
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/formats/safetensors"
	"github.com/tfconv/tfconv/tokenizer"
	"github.com/tfconv/tfconv/vision"
)

// qwenFixture is testdata/vision/qwen2_5_vl: gen_qwenvl.py's tiny
// Qwen2_5_VLForConditionalGeneration with transformers' outputs.
const qwenFixture = "../testdata/vision/qwen2_5_vl"

// qwenRef is the part of hf/reference.json the tests read; the arrays are
// in reference.safetensors.
type qwenRef struct {
	Cases []struct {
		Image    string `json:"image"`
		Grid     []int  `json:"image_grid_thw"`
		Prompt   []int  `json:"prompt_ids"`
		InputIDs []int  `json:"input_ids"`
	} `json:"cases"`
}

// refTensor reads one float32 tensor of reference.safetensors.
func refTensor(t *testing.T, f *safetensors.File, name string) []float32 {
	t.Helper()
	x, ok := f.Tensor(name)
	if !ok {
		t.Fatalf("reference.safetensors has no %s", name)
	}
	b, err := io.ReadAll(x.Open())
	if err != nil {
		t.Fatal(err)
	}
	return float32s(b)
}

func readQwenRef(t *testing.T) (qwenRef, *safetensors.File) {
	t.Helper()
	var ref qwenRef
	readJSON(t, qwenFixture+"/hf/reference.json", &ref)
	if len(ref.Cases) != 2 {
		t.Fatalf("reference has %d cases, want 2", len(ref.Cases))
	}
	f, err := safetensors.Open(qwenFixture + "/hf/reference.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return ref, f
}

func imageName(path string) string {
	name := path[len("images/"):]
	return name[:len(name)-len(".png")]
}

// The HF folder's preprocessing equals Qwen2VLImageProcessor's
// pixel_values bit for bit (smart_resize, Pillow's BICUBIC, the patch
// order), and the tower and merger give get_image_features within
// maxVisionDiffF32 on both images (the wide one scaled down past
// max_pixels, the tall one rounded up; both with partial windows).
func TestVisionQwen25VLHF(t *testing.T) {
	t.Parallel()
	ref, st := readQwenRef(t)
	v, err := LoadVision(qwenFixture+"/hf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ref.Cases {
		img, err := vision.ReadFile("../testdata/vision/" + c.Image)
		if err != nil {
			t.Fatal(err)
		}
		name := imageName(c.Image)
		pr, err := v.Prepare(img, vision.Transformers)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(pr.Grid, c.Grid[1:]) || pr.Rows != c.Grid[1]*c.Grid[2]/4 {
			t.Fatalf("%s: grid %v (%d rows), the processor's %v", c.Image, pr.Grid, pr.Rows, c.Grid)
		}
		want := refTensor(t, st, "pixel_values."+name)
		if d := maxAbsDiff(pr.Pixels, want); d != 0 {
			t.Errorf("%s: pixel_values differ from transformers' by %g", c.Image, d)
		}
		feat, err := v.EncodePrepared(&Prepared{Pixels: want, Tiles: pr.Tiles, Rows: pr.Rows, Grid: pr.Grid}, nil)
		if err != nil {
			t.Fatal(err)
		}
		d := maxAbsDiff(feat, refTensor(t, st, "image_features."+name))
		if d > maxVisionDiffF32 {
			t.Errorf("%s: image features differ by %g", c.Image, d)
		}
		t.Logf("%s: max |Δ image features| = %.3g", c.Image, d)
	}
}

// run --image on the HF folder: the processor's expansion of the prompt
// (from the ids with <|image_pad|> once, and from the text), the M-RoPE
// positions of get_rope_index, and the logits transformers' within
// maxLogitDiffF32 on both images.
func TestImageLogitsQwen25VLHF(t *testing.T) {
	t.Parallel()
	ref, st := readQwenRef(t)
	m, err := Load(qwenFixture+"/hf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := LoadVision(qwenFixture+"/hf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ref.Cases {
		img, err := vision.ReadFile("../testdata/vision/" + c.Image)
		if err != nil {
			t.Fatal(err)
		}
		want := refTensor(t, st, "logits."+imageName(c.Image))
		// From the text: Qwen2_5_VLProcessor repeats <|image_pad|> in the
		// text and tokenizes the whole; the fixture's ids do not come back
		// from their text (15 250 87 are arbitrary), so the text's own ids
		// are held to that rule.
		text := promptText(t, m, c.Prompt)
		expanded := strings.Replace(text, "<|image_pad|>", strings.Repeat("<|image_pad|>", len(c.InputIDs)-len(c.Prompt)+1), 1)
		whole, err := m.Tokenizer().Encode(expanded, tokenizer.EncodeOptions{ParseSpecial: true})
		if err != nil {
			t.Fatal(err)
		}
		run, err := m.ImageInput(v, ImagePrompt{Image: img, Method: vision.Transformers, Text: text})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(run.Input.Tokens, whole) {
			t.Fatalf("%s: from the text, ids %v, the expanded text's %v", c.Image, run.Input.Tokens, whole)
		}
		{
			p := ImagePrompt{Image: img, Method: vision.Transformers, Tokens: c.Prompt}
			run, err := m.ImageInput(v, p)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(run.Input.Tokens, c.InputIDs) {
				t.Fatalf("%s: ids %v, the processor's %v", c.Image, run.Input.Tokens, c.InputIDs)
			}
			out, err := m.Forward(run.Input, nil)
			if err != nil {
				t.Fatal(err)
			}
			V := len(want) / len(c.InputIDs)
			rows := make([][]float32, len(c.InputIDs))
			for i := range rows {
				rows[i] = want[i*V : (i+1)*V]
			}
			d, _ := maxDiff(t, out.Logits, rows, nil)
			if d > maxLogitDiffF32 {
				t.Errorf("%s: logits differ from transformers' by %g", c.Image, d)
			}
			t.Logf("%s: max |Δ logits| = %.3g over %d positions", c.Image, d, len(rows))
		}
	}
}

// promptText is the text of ids: the special tokens' pieces (ids from
// 1000, the fixture's added tokens) and the decoded text between them.
func promptText(t *testing.T, m *Model, ids []int) string {
	t.Helper()
	tok := m.Tokenizer()
	var text string
	run := []int{}
	flush := func() {
		s, err := tok.Decode(run)
		if err != nil {
			t.Fatal(err)
		}
		text += s
		run = run[:0]
	}
	for _, id := range ids {
		if id < 1000 {
			run = append(run, id)
			continue
		}
		flush()
		text += tok.Piece(id)
	}
	flush()
	return text
}
