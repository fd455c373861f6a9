package model

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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

// mtmdRef is testdata/vision/gemma3/gguf/mtmd.json (tools/gen_mtmd.py):
// llama.cpp mtmd's outputs on llama.cpp's own GGUF pair.
type mtmdRef struct {
	TextGGUF   string `json:"text_gguf"`
	MmprojGGUF string `json:"mmproj_gguf"`
	Cases      []struct {
		Image  string               `json:"image"`
		Tile   int                  `json:"tile"`
		Pixels []byte               `json:"pixels"` // float32 LE, [3][tile][tile]
		Tokens []int                `json:"tokens"`
		Embd   [][]float32          `json:"image_embd"`
		Logits map[string][]float32 `json:"logits"`
	} `json:"cases"`
}

// maxVisionDiffMtmd: our forward with LoadOptions.MatchLlamaCpp against
// ggml's CPU graph on the same weights. That mode computes as ggml does
// (the patch convolution's im2col and kernel in binary16, ggml's GELU
// table, the F16 projection's input rounded to binary16), so what is left
// is summation order (~1e-7 before the projection) and what it does to a
// binary16 rounding: on the tall image one input of the projection of
// token 1 lies 0.003 ulp from a binary16 midpoint and rounds the other
// way, which moves that token's features by up to 1.2e-4 (the wide image:
// 1.8e-5).
const maxVisionDiffMtmd = 2e-4

// maxVisionDiffMtmdF32: our float32 forward (no MatchLlamaCpp) against
// ggml's graph: the binary16 roundings above, unmodelled (7.4e-4 measured).
const maxVisionDiffMtmdF32 = 1e-3

// maxRelImageLogitDiffMtmdF32 bounds, relative to the largest logit, our
// float32 logits (no MatchLlamaCpp) after the image against mtmd's: the
// binary16 roundings ggml makes and this mode does not (GELU table, the
// image path's F16 projection and im2col); 2.9e-3 measured on logits up
// to ~4. maxRelImageLogitDiffMtmd is the MatchLlamaCpp bound: what is
// left is the text model's own distance to llama.cpp, as for the gemma3
// family (maxRelDiffNewerGELU, families_test.go: llama.cpp's fp16 GELU
// table and ours part by rounding), with or without an image: the
// text-only prompt of the same ids is 6.2e-4 from llama.cpp's logits
// (logits_dump), the prompts with the images 7.4e-4 and 5.2e-4 (1.9e-4 and
// 1.4e-4 of the largest logit).
const (
	maxRelImageLogitDiffMtmdF32 = 1e-3
	maxRelImageLogitDiffMtmd    = 3e-4
)

func readMtmd(t *testing.T) mtmdRef {
	t.Helper()
	var ref mtmdRef
	readJSON(t, visionFixture+"/gguf/mtmd.json", &ref)
	if len(ref.Cases) != 2 {
		t.Fatalf("mtmd.json has %d cases, want 2", len(ref.Cases))
	}
	return ref
}

func float32s(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// llama.cpp's mmproj GGUF through mtmd's preprocessing equals mtmd's tile
// bit for bit and its image embeddings within maxVisionDiffMtmd.
func TestVisionGemma3Mtmd(t *testing.T) {
	t.Parallel()
	ref := readMtmd(t)
	for _, match := range []bool{false, true} {
		v, err := LoadVision(visionFixture+"/gguf/"+ref.MmprojGGUF, LoadOptions{MatchLlamaCpp: match})
		if err != nil {
			t.Fatal(err)
		}
		if v.DefaultMethod() != vision.Mtmd {
			t.Fatalf("mmproj preprocesses as %v", v.DefaultMethod())
		}
		for _, c := range ref.Cases {
			img, err := vision.ReadFile("../testdata/vision/" + c.Image)
			if err != nil {
				t.Fatal(err)
			}
			px := v.Preprocess(vision.Mtmd).Pixels(img)
			if d := maxAbsDiff(px, float32s(c.Pixels)); d != 0 {
				t.Errorf("%s: the tile differs from mtmd's by %g", c.Image, d)
			}
			feat, err := v.Encode(px, nil)
			if err != nil {
				t.Fatal(err)
			}
			d := maxAbsDiff(feat, flatRows(c.Embd))
			if tol := map[bool]float64{true: maxVisionDiffMtmd, false: maxVisionDiffMtmdF32}[match]; d > tol {
				t.Errorf("%s (match llama.cpp %v): image embeddings differ from mtmd's by %g", c.Image, match, d)
			}
			t.Logf("%s (match llama.cpp %v): max |Δ image embeddings| = %.3g", c.Image, match, d)
		}
	}
}

// collapse undoes the processor's expansion: the reference's ids with the
// image's "\n\n" + BOI + soft tokens + EOI + "\n\n" back to BOI alone.
func collapse(t *testing.T, ids []int, boi, eoi int) []int {
	t.Helper()
	s, e := -1, -1
	for i, id := range ids {
		if id == boi {
			s = i
		}
		if id == eoi {
			e = i
		}
	}
	if s < 2 || e < s || e+2 >= len(ids) {
		t.Fatalf("ids %v hold no image sequence", ids)
	}
	return append(append(append([]int(nil), ids[:s-2]...), boi), ids[e+3:]...)
}

// run --image on the HF folder: the prompt's ids (from the tokens with the
// placeholder once, and from the text) equal the processor's, and the
// logits transformers' within maxLogitDiffF32 on both images.
func TestImageLogitsGemma3HF(t *testing.T) {
	t.Parallel()
	var ref visionRef
	readJSON(t, visionFixture+"/hf/reference.json", &ref)
	m, err := Load(visionFixture+"/hf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := LoadVision(visionFixture+"/hf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vc := v.Config()
	for _, c := range ref.Cases {
		img, err := vision.ReadFile("../testdata/vision/" + c.Image)
		if err != nil {
			t.Fatal(err)
		}
		for _, fromText := range []bool{false, true} {
			p := ImagePrompt{Image: img, Method: vision.Transformers}
			if fromText {
				p.Text = ref.Prompt
			} else {
				p.Tokens = collapse(t, c.InputIDs, vc.BOI, vc.EOI)
			}
			run, err := m.ImageInput(v, p)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(run.Input.Tokens, c.InputIDs) {
				t.Fatalf("%s (text %v): ids %v, the processor's %v", c.Image, fromText, run.Input.Tokens, c.InputIDs)
			}
			for i, g := range run.Input.Groups {
				if (g >= 0) != (c.TokenTypeIDs[i] == 1) {
					t.Fatalf("%s: position %d in the image group %v, token_type_ids %d", c.Image, i, g >= 0, c.TokenTypeIDs[i])
				}
			}
			out, err := m.Forward(run.Input, nil)
			if err != nil {
				t.Fatal(err)
			}
			d, _ := maxDiff(t, out.Logits, c.Logits, nil)
			if d > maxLogitDiffF32 {
				t.Errorf("%s: logits differ from transformers' by %g", c.Image, d)
			}
			t.Logf("%s (text %v): max |Δ logits| = %.3g over %d positions", c.Image, fromText, d, len(c.Logits))
		}
	}
}

// run --image on llama.cpp's GGUF pair: the prompt's ids (mtmd's
// tokenization of the text around <__media__>) and the logits of every
// text position after the image equal mtmd's within maxImageLogitDiffMtmd.
func TestImageLogitsGemma3Mtmd(t *testing.T) {
	t.Parallel()
	ref := readMtmd(t)
	const prompt = "Describe this picture: <__media__> What is in it?"
	for _, match := range []bool{true, false} {
		opts := LoadOptions{MatchLlamaCpp: match}
		m, err := Load(visionFixture+"/gguf/"+ref.TextGGUF, opts)
		if err != nil {
			t.Fatal(err)
		}
		v, err := LoadVision(visionFixture+"/gguf/"+ref.MmprojGGUF, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range ref.Cases {
			img, err := vision.ReadFile("../testdata/vision/" + c.Image)
			if err != nil {
				t.Fatal(err)
			}
			run, err := m.ImageInput(v, ImagePrompt{Text: prompt, Image: img, Method: vision.Mtmd})
			if err != nil {
				t.Fatal(err)
			}
			if len(run.Input.Tokens) != len(c.Tokens) {
				t.Fatalf("%s: %d ids, mtmd %d", c.Image, len(run.Input.Tokens), len(c.Tokens))
			}
			for i, id := range c.Tokens {
				if id >= 0 && run.Input.Tokens[i] != id || id < 0 && run.Input.Embeds[i] == nil {
					t.Fatalf("%s: ids %v, mtmd's %v (-1: the image)", c.Image, run.Input.Tokens, c.Tokens)
				}
			}
			out, err := m.Forward(run.Input, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Logits) == 0 {
				t.Fatalf("%s: mtmd.json has no logits", c.Image)
			}
			var d, scale float64
			for pos, want := range c.Logits {
				for _, x := range want {
					scale = math.Max(scale, math.Abs(float64(x)))
				}
				p, err := strconv.Atoi(pos)
				if err != nil || p >= len(out.Logits) {
					t.Fatalf("%s: logits of position %q", c.Image, pos)
				}
				d = math.Max(d, maxAbsDiff(out.Logits[p], want))
			}
			tol := scale * map[bool]float64{true: maxRelImageLogitDiffMtmd, false: maxRelImageLogitDiffMtmdF32}[match]
			if d > tol {
				t.Errorf("%s (match llama.cpp %v): logits differ from mtmd's by %g (> %.3g)", c.Image, match, d, tol)
			}
			t.Logf("%s (match llama.cpp %v): max |Δ logits| = %.3g over %d positions (logits up to %.3g)", c.Image, match, d, len(c.Logits), scale)
		}
	}
}

// LoadVision refuses what holds no encoder it runs, naming the file, and a
// prompt without (or with two) image placeholders.
func TestVisionRefusals(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"../testdata/arch/gemma3/hf", "../testdata/arch/gemma3/gguf/gemma3-f32.gguf"} {
		if _, err := LoadVision(path, LoadOptions{}); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want an error naming it", path, err)
		}
	}
	m, err := Load(visionFixture+"/hf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := LoadVision(visionFixture+"/hf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	img := vision.NewImage(3, 5)
	for _, p := range []ImagePrompt{
		{Tokens: []int{1, 5, 6}, Image: img},
		{Tokens: []int{1, 1000, 6, 1000}, Image: img},
		{Text: "no marker", Image: img},
		{Text: "<start_of_image> <__media__> <__media__>", Image: img},
		{Tokens: []int{1, 1000}},
	} {
		if _, err := m.ImageInput(v, p); err == nil {
			t.Errorf("%+v: no error", p)
		}
	}
	// Input.Embeds and Input.Groups are checked against the tokens.
	for _, in := range []Input{
		{Tokens: []int{1, 2}, Embeds: make([][]float32, 1)},
		{Tokens: []int{1, 2}, Embeds: [][]float32{nil, make([]float32, 3)}},
		{Tokens: []int{1, 2, 3}, Groups: []int{0, -1, 0}},
	} {
		if _, err := m.Forward(in, nil); err == nil {
			t.Errorf("%+v: no error", in)
		}
	}
}

// TestGemma3PoolFloors: mm_tokens_per_image that is not a square pools as
// Gemma3MultiModalProjector does (tokens_per_side = int(√T), kernel =
// patches_per_image // tokens_per_side): 2 or 3 tokens give one, 5 give
// four; the encoder then yields that many rows.
func TestGemma3PoolFloors(t *testing.T) {
	t.Parallel()
	cfgBytes, err := os.ReadFile(visionFixture + "/hf/config.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ tokens, want int }{{2, 1}, {3, 1}, {5, 4}, {4, 4}} {
		dir := t.TempDir()
		ents, err := os.ReadDir(visionFixture + "/hf")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if err := os.Symlink(filepath.Join(mustAbs(t, visionFixture+"/hf"), e.Name()), filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
		var cfg map[string]any
		if err := json.Unmarshal(cfgBytes, &cfg); err != nil {
			t.Fatal(err)
		}
		cfg["mm_tokens_per_image"] = c.tokens
		b, _ := json.Marshal(cfg)
		os.Remove(filepath.Join(dir, "config.json"))
		if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		v, err := LoadVision(dir, LoadOptions{})
		if err != nil {
			t.Fatalf("mm_tokens_per_image %d: %v", c.tokens, err)
		}
		S := v.Config().ImageSize
		feat, err := v.Encode(make([]float32, 3*S*S), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := v.Config().Tokens; got != c.want || len(feat) != c.want*v.Config().TextDModel {
			t.Errorf("mm_tokens_per_image %d: %d tokens, %d feature values; want %d tokens", c.tokens, got, len(feat), c.want)
		}
	}
}

func mustAbs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
