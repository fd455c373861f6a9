package model

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"os"
	"slices"
	"strconv"
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

// maxLlavaFixtureDiffF32 bounds the features and logits of gen_llava.py's
// fixtures (SmolVLM, SmolVLM2, LLaVA-1.5, LLaVA-NeXT) against transformers': issue
// 33's 1e-5. Their towers' residual streams are O(1–10) (the patch
// convolution drawn N(0, 1/fan_in); drawn 1 + N(0, 0.2²) as a norm, the
// stream was O(150) and float32 summation order alone moved the features
// by 2e-5–5e-5). Measured, wide / tall image: SmolVLM features 1.9e-6 /
// 1.7e-6, logits 3.3e-6 / 3.3e-6; SmolVLM2 features 2.2e-6 / 2.3e-6,
// logits 3.1e-6 / 3.2e-6; LLaVA-1.5 features 1.7e-6 / 1.3e-6,
// logits 3.5e-6 / 3.7e-6; LLaVA-NeXT features 2.0e-6 / 1.8e-6, logits
// 3.1e-6 / 2.6e-6.
const maxLlavaFixtureDiffF32 = 1e-5

// run --image on the SmolVLM folder equals transformers on both images
// (each cut into 12 tiles and the whole image): pixel_values bit for bit,
// the connector's features and the logits within maxLlavaFixtureDiffF32, the
// prompt's ids (from the tokens with <image> once, and from the text) the
// processor's.
func TestImageIdefics3HF(t *testing.T) {
	t.Parallel()
	testImageIdefics3HF(t, idefics3Fixture)
}

// run --image on the SmolVLM2 folder (SmolVLMForConditionalGeneration:
// the same model under transformers' own class and processor, its own
// weights) equals transformers as the Idefics3 folder does.
func TestImageSmolVLMHF(t *testing.T) {
	t.Parallel()
	testImageIdefics3HF(t, "../testdata/vision/smolvlm")
}

func testImageIdefics3HF(t *testing.T, fixture string) {
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
		if df > maxLlavaFixtureDiffF32 {
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
			if d > maxLlavaFixtureDiffF32 {
				t.Errorf("%s: logits differ from transformers' by %g", name, d)
			}
			t.Logf("%s (text %v): max |Δ features| = %.3g, max |Δ logits| = %.3g over %d positions", name, fromText, df, d, len(c.Logits))
		}
	}
}

// idefics3Mtmd is testdata/vision/idefics3/gguf/mtmd.json
// (tools/gen_mtmd_llava.py): llama.cpp mtmd's outputs on llama.cpp's own
// GGUF pair of the fixture.
type idefics3Mtmd struct {
	TextGGUF   string `json:"text_gguf"`
	TextGGUF32 string `json:"text_gguf_f32"`
	MmprojGGUF string `json:"mmproj_gguf"`
	Cases      []struct {
		Image  string               `json:"image"`
		Prompt string               `json:"prompt"`
		Grid   []int                `json:"grid"`
		Tiles  []string             `json:"tiles_sha256"`
		Tokens []int                `json:"tokens"`
		Embd   [][]float32          `json:"image_embd"`
		Logits map[string][]float32 `json:"logits"`
		// LogitsF32 are mtmd's with the f32 text GGUF (not shipped: 889 KB).
		LogitsF32 map[string][]float32 `json:"logits_f32_text"`
	} `json:"cases"`
}

// idefics3Out is where gen_llava.py leaves llama.cpp's conversions of the
// fixture (the f32 text GGUF is not shipped).
const idefics3Out = "/work/fixtures-out/vision/idefics3"

// Bounds against mtmd for the idefics3 fixture, per mode (MatchLlamaCpp
// or not) and text GGUF (the shipped f16 one, or the f32 one where
// /work/fixtures-out has it).
//
// The image embeddings (the f32 mmproj): ggml's graph parts from ours by
// summation order and by what MatchLlamaCpp does not model: 1.9e-4 (wide)
// and 1.5e-4 (tall) with MatchLlamaCpp (the patch convolution's binary16
// im2col and ggml's GELU table made as ggml makes them), 1.7e-3 and 1.1e-3
// without.
//
// The logits of the text after the image: with the f32 text GGUF and
// mtmd's own embeddings in the image's places, 3.8e-6 and 3.3e-6 (the
// text model alone); with ours, 1.8e-5 and 1.5e-5 (MatchLlamaCpp), 8.0e-4
// and 5.4e-4 (not). With the f16 text GGUF, whose products llama.cpp makes
// with binary16 activations, 1.6e-3 and 1.3e-3 from the text model alone
// (MatchLlamaCpp; 3.1e-3 and 2.5e-3 not), 3.5e-3 and 1.8e-3 in all (3.3e-3
// and 2.6e-3 not).
var idefics3MtmdBounds = mtmdBounds{
	true:  {embd: 5e-4, text: 3e-3, logits: 6e-3, text32: 1e-5, logits32: 5e-5},
	false: {embd: 4e-3, text: 6e-3, logits: 6e-3, text32: 1e-5, logits32: 2e-3},
}

// run --image on llama.cpp's GGUF pair of the SmolVLM fixture equals mtmd:
// its 12 slices and overview bit for bit (by sha256), the grid, the
// prompt's ids, the embeddings of every image chunk and the logits of the
// text after the image (idefics3MtmdBounds), with the shipped f16 text
// GGUF and, where /work/fixtures-out holds it, the f32 one.
func TestImageIdefics3Mtmd(t *testing.T) {
	t.Parallel()
	testImageMtmd(t, idefics3Fixture, idefics3Out, idefics3MtmdBounds)
}

// tileDigests are the sha256 of p's tiles, each as float32 little-endian
// [3][H][W] (gen_mtmd_llava.py's tiles_sha256).
func tileDigests(p *Prepared) []string {
	var out []string
	at := 0
	for _, hw := range p.Tiles {
		n := 3 * hw[0] * hw[1]
		b := make([]byte, 4*n)
		for j, x := range p.Pixels[at : at+n] {
			binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(x))
		}
		at += n
		s := sha256.Sum256(b)
		out = append(out, hex.EncodeToString(s[:]))
	}
	return out
}

// mtmdBounds are one fixture's bounds against mtmd per mode
// (MatchLlamaCpp or not): the image embeddings, the logits with mtmd's
// embeddings in the image's places (text) and with ours (logits), with the
// shipped text GGUF and the f32 one (…32). A mode without bounds is not
// compared (Llama 4's mmproj runs mtmd's graph only with MatchLlamaCpp).
type mtmdBounds = map[bool]struct{ embd, text, logits, text32, logits32 float64 }

// testImageMtmd checks run --image on fixture's GGUF pair against its
// gguf/mtmd.json (tools/gen_mtmd_llava.py), and again with the f32 text
// GGUF where out (gen_llava.py's output) holds it.
func testImageMtmd(t *testing.T, fixture, out string, bounds mtmdBounds) {
	var ref idefics3Mtmd
	readJSON(t, fixture+"/gguf/mtmd.json", &ref)
	if len(ref.Cases) != 2 {
		t.Fatalf("mtmd.json has %d cases, want 2", len(ref.Cases))
	}
	texts := []string{fixture + "/gguf/" + ref.TextGGUF}
	if _, err := os.Stat(out + "/" + ref.TextGGUF32); err == nil {
		texts = append(texts, out+"/"+ref.TextGGUF32)
	} else {
		t.Logf("%s/%s absent (gen_llava.py's output): the f32 text model is not compared", out, ref.TextGGUF32)
	}
	for _, match := range []bool{true, false} {
		opts := LoadOptions{MatchLlamaCpp: match}
		bound, ok := bounds[match]
		if !ok {
			continue
		}
		v, err := LoadVision(fixture+"/gguf/"+ref.MmprojGGUF, opts)
		if err != nil {
			t.Fatal(err)
		}
		if v.DefaultMethod() != vision.Mtmd {
			t.Fatalf("mmproj preprocesses as %v", v.DefaultMethod())
		}
		for ti, text := range texts {
			m, err := Load(text, opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range ref.Cases {
				img, err := vision.ReadFile("../testdata/vision/" + c.Image)
				if err != nil {
					t.Fatal(err)
				}
				pr, err := v.Prepare(img, vision.Mtmd)
				if err != nil {
					t.Fatal(err)
				}
				// (the grid's rows and columns; LLaVA-NeXT's Grid adds the
				// image's size)
				if len(pr.Grid) < len(c.Grid) || !slices.Equal(pr.Grid[:len(c.Grid)], c.Grid) || len(pr.Tiles) != len(c.Tiles) {
					t.Fatalf("%s: grid %v with %d tiles, mtmd %v with %d", c.Image, pr.Grid, len(pr.Tiles), c.Grid, len(c.Tiles))
				}
				for i, h := range tileDigests(pr) {
					if h != c.Tiles[i] {
						t.Errorf("%s: tile %d differs from mtmd's", c.Image, i)
					}
				}
				run, err := m.ImageInput(v, ImagePrompt{Text: c.Prompt, Image: img, Method: vision.Mtmd})
				if err != nil {
					t.Fatal(err)
				}
				de := maxAbsDiff(run.Features, flatRows(c.Embd))
				if de > bound.embd {
					t.Errorf("%s (match llama.cpp %v): image embeddings differ from mtmd's by %g", c.Image, match, de)
				}
				if len(run.Input.Tokens) != len(c.Tokens) {
					t.Fatalf("%s: %d ids, mtmd %d", c.Image, len(run.Input.Tokens), len(c.Tokens))
				}
				for i, id := range c.Tokens {
					if id >= 0 && run.Input.Tokens[i] != id || id < 0 && run.Input.Embeds[i] == nil {
						t.Fatalf("%s: ids %v, mtmd's %v (-1: the image)", c.Image, run.Input.Tokens, c.Tokens)
					}
				}
				want, tolText, tolAll := c.Logits, bound.text, bound.logits
				if ti == 1 {
					want, tolText, tolAll = c.LogitsF32, bound.text32, bound.logits32
				}
				if len(want) == 0 {
					t.Fatalf("%s: mtmd.json has no logits", c.Image)
				}
				logitDiff := func(in Input) float64 {
					out, err := m.Forward(in, nil)
					if err != nil {
						t.Fatal(err)
					}
					var d float64
					for pos, w := range want {
						p, err := strconv.Atoi(pos)
						if err != nil || p >= len(out.Logits) {
							t.Fatalf("%s: logits of position %q", c.Image, pos)
						}
						d = math.Max(d, maxAbsDiff(out.Logits[p], w))
					}
					return d
				}
				d := logitDiff(run.Input)
				// The text model alone: mtmd's embeddings in the image's
				// places.
				own := run.Input
				own.Embeds = slices.Clone(own.Embeds)
				r := 0
				for i := range own.Embeds {
					if own.Embeds[i] != nil {
						own.Embeds[i] = c.Embd[r]
						r++
					}
				}
				dt := logitDiff(own)
				if dt > tolText || d > tolAll {
					t.Errorf("%s (match llama.cpp %v, %s): logits differ from mtmd's by %g (%g with mtmd's embeddings)", c.Image, match, text, d, dt)
				}
				t.Logf("%s (match llama.cpp %v, %s): max |Δ image embeddings| = %.3g, max |Δ logits| = %.3g over %d positions (%.3g with mtmd's embeddings)",
					c.Image, match, text, de, d, len(want), dt)
			}
		}
	}
}

// The placeholder's expansion for the forms the fixtures do not reach: an
// image left whole (do_image_splitting false, or an mmproj without
// clip.vision.preproc_image_size), where mtmd still puts "\n\n" before it.
func TestIdefics3Expansion(t *testing.T) {
	t.Parallel()
	const f, g, i = "<fake_token_around_image>", "<global-img>", "<image>"
	for _, c := range []struct {
		rows, cols, n int
		mtmd          bool
		want          string
	}{
		{0, 0, 2, false, f + g + i + i + f},
		{0, 0, 2, true, "\n\n" + f + g + i + i + f},
		{1, 2, 1, false, f + "<row_1_col_1>" + i + f + "<row_1_col_2>" + i + "\n\n" + f + g + i + f},
		{1, 2, 1, true, f + "<row_1_col_1>" + i + f + "<row_1_col_2>" + i + "\n\n" + f + g + i + f},
		{2, 1, 1, false, f + "<row_1_col_1>" + i + "\n" + f + "<row_2_col_1>" + i + "\n\n" + f + g + i + f},
	} {
		if got := idefics3Expansion(c.rows, c.cols, c.n, c.mtmd); got != c.want {
			t.Errorf("%d×%d, %d tokens, mtmd %v: %q, want %q", c.rows, c.cols, c.n, c.mtmd, got, c.want)
		}
	}
}
