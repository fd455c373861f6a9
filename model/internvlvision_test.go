package model

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/formats/safetensors"
	"github.com/tfconv/tfconv/tokenizer"
	"github.com/tfconv/tfconv/vision"
)

// internVLFixture is testdata/vision/internvl: gen_internvl.py's tiny
// InternVLForConditionalGeneration with transformers' outputs;
// internVLChatFixture the same weights in the original InternVLChatModel
// layout (one fused qkv, mlp1.*).
const (
	internVLFixture     = "../testdata/vision/internvl"
	internVLChatFixture = "../testdata/vision/internvl_chat"
)

// internVLRef is the part of hf/reference.json the tests read; the arrays
// are in reference.safetensors.
type internVLRef struct {
	Cases []struct {
		Image    string `json:"image"`
		Tiles    int    `json:"tiles"`
		Tokens   int    `json:"image_tokens"`
		Prompt   string `json:"prompt"`
		InputIDs []int  `json:"input_ids"`
	} `json:"cases"`
}

func readInternVLRef(t *testing.T) (internVLRef, *safetensors.File) {
	t.Helper()
	var ref internVLRef
	readJSON(t, internVLFixture+"/hf/reference.json", &ref)
	if len(ref.Cases) != 2 {
		t.Fatalf("reference has %d cases, want 2", len(ref.Cases))
	}
	f, err := safetensors.Open(internVLFixture + "/hf/reference.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return ref, f
}

// The HF folder's preprocessing equals GotOcr2ImageProcessorFast's
// pixel_values bit for bit (the wide image in 5×2 tiles and the thumbnail,
// the tall one in 2×3 and the thumbnail), and the tower and projector give
// get_image_features within maxVisionDiffF32; the tower's last state too.
// The original layout's folder (the same weights, q, k, v fused) gives the
// same features from the same pixels.
func TestVisionInternVLHF(t *testing.T) {
	t.Parallel()
	ref, st := readInternVLRef(t)
	v, err := LoadVision(internVLFixture+"/hf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	chat, err := LoadVision(internVLChatFixture+"/hf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := v.Config(); c.Tokens != 4 || c.Image != 1004 || c.TextDModel != 64 {
		t.Fatalf("config %+v", c)
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
		if len(pr.Tiles) != c.Tiles || pr.Rows != c.Tokens {
			t.Fatalf("%s: %d tiles, %d rows; the processor's %d, %d", c.Image, len(pr.Tiles), pr.Rows, c.Tiles, c.Tokens)
		}
		want := refTensor(t, st, "pixel_values."+name)
		if d := maxAbsDiff(pr.Pixels, want); d != 0 {
			t.Errorf("%s: pixel_values differ from transformers' by %g", c.Image, d)
		}
		in := &Prepared{Pixels: want, Tiles: pr.Tiles, Rows: pr.Rows, Grid: pr.Grid}
		var states [][]float32
		feat, err := v.EncodePrepared(in, &states)
		if err != nil {
			t.Fatal(err)
		}
		d := maxAbsDiff(feat, refTensor(t, st, "image_features."+name))
		if d > maxVisionDiffF32 {
			t.Errorf("%s: image features differ by %g", c.Image, d)
		}
		last := refTensor(t, st, "vision_last_hidden_state."+name)
		ds := maxAbsDiff(states[len(states)-1], last[:len(states[0])])
		if ds > maxVisionDiffF32 {
			t.Errorf("%s: the tower's last state (tile 0) differs by %g", c.Image, ds)
		}
		fc, err := chat.EncodePrepared(in, nil)
		if err != nil {
			t.Fatal(err)
		}
		dc := maxAbsDiff(fc, refTensor(t, st, "image_features."+name))
		if dc > maxVisionDiffF32 {
			t.Errorf("%s: the original layout's features differ by %g", c.Image, dc)
		}
		t.Logf("%s: %d tiles; max |Δ image features| = %.3g (original layout %.3g), |Δ tower| = %.3g", c.Image, c.Tiles, d, dc, ds)
	}
}

// run --image on the HF folder: InternVLProcessor's expansion (<img>, 4
// <IMG_CONTEXT> a tile, </img>) from the ids holding <IMG_CONTEXT> once and
// from the text, and the logits transformers' within maxLogitDiffF32 on
// both images (11 and 7 tiles).
func TestImageLogitsInternVLHF(t *testing.T) {
	t.Parallel()
	ref, st := readInternVLRef(t)
	m, err := Load(internVLFixture+"/hf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := LoadVision(internVLFixture+"/hf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ref.Cases {
		img, err := vision.ReadFile("../testdata/vision/" + c.Image)
		if err != nil {
			t.Fatal(err)
		}
		run, err := m.ImageInput(v, ImagePrompt{Image: img, Method: vision.Transformers, Text: c.Prompt})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(run.Input.Tokens, c.InputIDs) {
			t.Fatalf("%s: from the text, ids %v, the processor's %v", c.Image, run.Input.Tokens, c.InputIDs)
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
			t.Fatalf("%s: from the ids, %v, the processor's %v", c.Image, run.Input.Tokens, c.InputIDs)
		}
		out, err := m.Forward(run.Input, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := refTensor(t, st, "logits."+imageName(c.Image))
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

// internVLOut is where gen_internvl.py leaves llama.cpp's conversions (the
// f32 text GGUF, 849 KB, is not shipped).
const internVLOut = "/work/fixtures-out/vision/internvl"

// Bounds against mtmd for the internvl_chat fixture (see
// idefics3MtmdBounds for what each is), over the measured figures (wide,
// tall):
//
// The image embeddings (the f32 mmproj; features of O(2)): 8.2e-4 and
// 3.2e-4 with MatchLlamaCpp, 1.05e-3 and 1.6e-3 without — against
// transformers the same tower is within 1.7e-6, and its last layer
// within 1e-6 of ggml's (tile 0, by MTMD_DUMP_TENSORS): the rest is the
// projector's GELU, which ggml looks up in a binary16 table, so a
// pre-activation a few ulps off can flip the rounding of its input by one
// binary16 step (about 1e-3 at |x| ≈ 1).
//
// The logits after the image: the f32 text GGUF with mtmd's embeddings,
// 3.6e-6 and 2.5e-6 (the text model alone); with ours, 3.8e-4 and 2.8e-4
// (MatchLlamaCpp), 2.8e-3 and 2.2e-3 (not). The shipped f16 text GGUF:
// 7.4e-4 and 1.4e-3 from the text model alone, 3.0e-3 and 3.3e-3 in all
// (MatchLlamaCpp); 4.4e-3 and 3.4e-3, 4.8e-3 and 3.4e-3 (not).
var internVLMtmdBounds = mtmdBounds{
	true:  {embd: 1e-3, text: 2e-3, logits: 5e-3, text32: 1e-5, logits32: 6e-4},
	false: {embd: 2e-3, text: 6e-3, logits: 8e-3, text32: 1e-5, logits32: 4e-3},
}

// run --image on llama.cpp's GGUF pair of the InternVL fixture (the
// original layout's mmproj, the text GGUF of either) equals mtmd: its
// slices (llava-uhd over InternVL's grids: 2×1 and 1×2 here) and overview
// bit for bit, the grid, the prompt's ids (<img>, the image, </img>), the
// embeddings and the logits of the text after the image.
func TestImageInternVLMtmd(t *testing.T) {
	t.Parallel()
	testImageMtmd(t, internVLChatFixture, internVLOut, internVLMtmdBounds)
}

// LoadVision refuses an InternVL config whose tower or preprocessing
// tfconv would not reproduce, naming the file and key; a prompt without
// <IMG_CONTEXT>, or with two, is an error.
func TestVisionInternVLRefusals(t *testing.T) {
	t.Parallel()
	src, err := filepath.Abs(internVLFixture + "/hf")
	if err != nil {
		t.Fatal(err)
	}
	var cfg, pre map[string]any
	readJSON(t, src+"/config.json", &cfg)
	readJSON(t, src+"/preprocessor_config.json", &pre)
	vc := func(cfg map[string]any) map[string]any { return cfg["vision_config"].(map[string]any) }
	for _, c := range []struct {
		key  string
		edit func(cfg, pre map[string]any)
	}{
		{"vision_feature_layer", func(cfg, _ map[string]any) { cfg["vision_feature_layer"] = -2 }},
		{"vision_feature_select_strategy", func(cfg, _ map[string]any) { cfg["vision_feature_select_strategy"] = "full" }},
		{"downsample_ratio", func(cfg, _ map[string]any) { cfg["downsample_ratio"] = 0.3 }},
		{"use_qk_norm", func(cfg, _ map[string]any) { vc(cfg)["use_qk_norm"] = true }},
		{"norm_type", func(cfg, _ map[string]any) { vc(cfg)["norm_type"] = "rms_norm" }},
		{"use_mean_pooling", func(cfg, _ map[string]any) { vc(cfg)["use_mean_pooling"] = false }},
		{"image_size", func(cfg, _ map[string]any) { vc(cfg)["image_size"] = []any{56, 84} }},
		{"resample", func(_, pre map[string]any) { pre["resample"] = 2 }},
		{"size", func(_, pre map[string]any) { pre["size"] = map[string]any{"height": 84, "width": 84} }},
		{"image_processor_type", func(_, pre map[string]any) { pre["image_processor_type"] = "CLIPImageProcessor" }},
		{"image_seq_length", func(cfg, _ map[string]any) { vc(cfg)["patch_size"] = []any{7, 7} }},
	} {
		dir := t.TempDir()
		entries, err := os.ReadDir(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if err := os.Symlink(filepath.Join(src, e.Name()), filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
		cc, pc := deepCopyJSON(t, cfg), deepCopyJSON(t, pre)
		c.edit(cc, pc)
		for name, v := range map[string]any{"config.json": cc, "preprocessor_config.json": pc} {
			os.Remove(filepath.Join(dir, name))
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		_, err = LoadVision(dir, LoadOptions{})
		if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%s: %v, want an error naming %s and %s", c.key, err, dir, c.key)
		}
	}
	m, err := Load(src, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := LoadVision(src, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	img, err := vision.ReadFile("../testdata/vision/images/tall.png")
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"no image here", "<IMG_CONTEXT> and <IMG_CONTEXT>"} {
		if _, err := m.ImageInput(v, ImagePrompt{Image: img, Method: vision.Transformers, Text: text}); err == nil {
			t.Errorf("%q: no error", text)
		}
	}
	if _, err := m.ImageInput(v, ImagePrompt{Image: img, Method: vision.Transformers, Tokens: []int{1, 2, 3}}); err == nil {
		t.Error("ids without <IMG_CONTEXT>: no error")
	}
}
