package model

import (
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

// pixtralFixture is testdata/vision/mistral3: gen_pixtral.py's tiny
// Mistral3ForConditionalGeneration with transformers' outputs, the
// converter's mmproj and mtmd's outputs (gguf/mtmd.json).
const pixtralFixture = "../testdata/vision/mistral3"

// pixtralOut is gen_pixtral.py's output folder: llama.cpp's converter's
// GGUF pair of the fixture (the text GGUF, 0.9 MB, is not shipped), and
// gen_mtmd_pixtral.py's mmproj with the [IMG_BREAK] row mtmd needs.
const pixtralOut = "/work/fixtures-out/vision/mistral3"

// pixtralRef is the part of mistral3/hf/reference.json the tests read.
type pixtralRef struct {
	Prompt string `json:"prompt"`
	Cases  []struct {
		Image       string        `json:"image"`
		InputIDs    []int         `json:"input_ids"`
		ImageSizes  []int         `json:"image_sizes"`
		PixelValues [][][]float32 `json:"pixel_values"`
		States      [][][]float32 `json:"vision_hidden_states"`
		Last        [][]float32   `json:"vision_last_hidden_state"`
		Features    [][]float32   `json:"image_features"`
		Logits      [][]float32   `json:"logits"`
	} `json:"cases"`
}

func readPixtralRef(t *testing.T) pixtralRef {
	t.Helper()
	var ref pixtralRef
	readJSON(t, pixtralFixture+"/hf/reference.json", &ref)
	if len(ref.Cases) != 2 {
		t.Fatalf("reference has %d cases, want 2", len(ref.Cases))
	}
	return ref
}

// The HF folder's preprocessing, tower and projector equal transformers'
// on both images (96×40 shrunk and padded up to 84×56 — two rows of
// three tokens —, 45×77 enlarged to 56×84): pixel_values bit for bit, the
// tower's hidden states and the image features within maxVisionDiffF32.
func TestVisionPixtralHF(t *testing.T) {
	t.Parallel()
	ref := readPixtralRef(t)
	v, err := LoadVision(pixtralFixture+"/hf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ref.Cases {
		img, err := vision.ReadFile("../testdata/vision/" + c.Image)
		if err != nil {
			t.Fatal(err)
		}
		pr, err := v.Prepare(img, vision.Transformers)
		if err != nil {
			t.Fatal(err)
		}
		if got := []int{pr.Tiles[0][0], pr.Tiles[0][1]}; !slices.Equal(got, c.ImageSizes) {
			t.Fatalf("%s: resized to %v (h, w), transformers %v", c.Image, got, c.ImageSizes)
		}
		var want []float32
		for _, ch := range c.PixelValues {
			want = append(want, flatRows(ch)...)
		}
		if d := maxAbsDiff(pr.Pixels, want); d != 0 {
			t.Errorf("%s: pixel_values differ from transformers' by %g", c.Image, d)
		}
		var states [][]float32
		feat, err := v.EncodePrepared(pr, &states)
		if err != nil {
			t.Fatal(err)
		}
		if len(states) != len(c.States) {
			t.Fatalf("%s: %d states, transformers %d", c.Image, len(states), len(c.States))
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

// The converter's mmproj (Q and K rows permuted for ggml's paired RoPE) on
// transformers' pixel_values gives transformers' tower states within
// maxVisionDiffF32: the permuted form of the 2-D RoPE is the same rotation.
// (Its projector is llama.cpp's: GELU's tanh form and the tower's eps, so
// the features are compared with mtmd's, TestVisionPixtralMtmd.)
func TestVisionPixtralGGUFTower(t *testing.T) {
	t.Parallel()
	ref := readPixtralRef(t)
	v, err := LoadVision(pixtralFixture+"/gguf/mmproj-mistral3-f32.gguf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ref.Cases {
		var px []float32
		for _, ch := range c.PixelValues {
			px = append(px, flatRows(ch)...)
		}
		h, w := c.ImageSizes[0], c.ImageSizes[1]
		pr := &Prepared{Pixels: px, Tiles: [][2]int{{h, w}}, Rows: h * w / (28 * 28), Grid: []int{h / 28, w / 28, 0}}
		var states [][]float32
		if _, err := v.EncodePrepared(pr, &states); err != nil {
			t.Fatal(err)
		}
		var d float64
		for i, s := range c.States {
			d = max(d, maxAbsDiff(states[i], flatRows(s)))
		}
		if d > maxVisionDiffF32 {
			t.Errorf("%s: the mmproj's tower states differ from transformers' by %g", c.Image, d)
		}
		t.Logf("%s: max |Δ tower states| = %.3g", c.Image, d)
	}
}

// collapsePixtral undoes PixtralProcessor's expansion: the image's [IMG],
// [IMG_BREAK] and [IMG_END] tokens back to one [IMG].
func collapsePixtral(ids []int, img, brk, end int) []int {
	var out []int
	in := false
	for _, id := range ids {
		switch {
		case id == img || id == brk:
			if !in {
				out = append(out, img)
			}
			in = true
		case id == end:
			in = false
		default:
			out = append(out, id)
		}
	}
	return out
}

// run --image on the HF folder: the prompt's ids, from the tokens with
// [IMG] once and from the text, equal the processor's, and the logits
// transformers' within maxLogitDiffF32 on both images.
func TestImageLogitsPixtralHF(t *testing.T) {
	t.Parallel()
	ref := readPixtralRef(t)
	m, err := Load(pixtralFixture+"/hf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := LoadVision(pixtralFixture+"/hf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tok := m.Tokenizer()
	brk, _ := tok.ID("[IMG_BREAK]")
	end, _ := tok.ID("[IMG_END]")
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
				p.Tokens = collapsePixtral(c.InputIDs, v.Config().Image, brk, end)
			}
			run, err := m.ImageInput(v, p)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(run.Input.Tokens, c.InputIDs) {
				t.Fatalf("%s (text %v): ids %v, the processor's %v", c.Image, fromText, run.Input.Tokens, c.InputIDs)
			}
			first, last := -1, -1
			for i, id := range c.InputIDs {
				if id == v.Config().Image {
					last = i
					if first < 0 {
						first = i
					}
				}
			}
			if run.First != first || run.Last != last || run.Count != len(c.Features) {
				t.Errorf("%s: image rows at %d..%d (%d), the processor's [IMG] at %d..%d (%d)", c.Image, run.First, run.Last, run.Count, first, last, len(c.Features))
			}
			out, err := m.Forward(run.Input, nil)
			if err != nil {
				t.Fatal(err)
			}
			d, _ := maxDiff(t, out.Logits, c.Logits, nil)
			if d > pixtralLogitDiff {
				t.Errorf("%s: logits differ from transformers' by %g", c.Image, d)
			}
			t.Logf("%s (text %v): max |Δ logits| = %.3g over %d positions", c.Image, fromText, d, len(c.Logits))
		}
	}
}

// pixtralMtmdRef is testdata/vision/mistral3/gguf/mtmd.json
// (tools/gen_mtmd_pixtral.py): llama.cpp mtmd's outputs on the
// converter's text GGUF and its mmproj with the [IMG_BREAK] row.
type pixtralMtmdRef struct {
	TextGGUF   string `json:"text_gguf"`
	MmprojGGUF string `json:"mmproj_gguf"`
	Prompt     string `json:"prompt"`
	Cases      []struct {
		Image  string               `json:"image"`
		Tile   int                  `json:"tile"`
		TileH  int                  `json:"tile_height"`
		Pixels []byte               `json:"pixels"` // float32 LE, [3][tile_height][tile]
		Tokens []int                `json:"tokens"`
		Embd   [][]float32          `json:"image_embd"`
		Logits map[string][]float32 `json:"logits"`
	} `json:"cases"`
}

// maxPixtralDiffMtmd bounds our image embeddings with MatchLlamaCpp against
// mtmd's. That mode computes as ggml does (the patch convolution's im2col
// and kernel in binary16, the projection's GELU through ggml's binary16
// table), so what is left is summation order and what it does to a
// binary16 rounding: every token's features are within 6e-7 of mtmd's but
// one per image (token 7 of the tall image, 1.27e-4; token 8 of the wide
// one, 1.42e-4; and token 10 of the tall, 1.1e-5), where a value lying at
// a binary16 midpoint rounds the other way.
// maxPixtralDiffMtmdF32 is the float32 forward's bound (no
// MatchLlamaCpp): those binary16 roundings unmodelled (2.2e-3 measured on
// features up to 2.3).
const (
	maxPixtralDiffMtmd    = 2e-4
	maxPixtralDiffMtmdF32 = 5e-3
)

// maxPixtralDiffMtmdF16 and maxPixtralLogitDiffMtmdF16 bound the f16 pair
// with MatchLlamaCpp: every matrix product rounds its input to binary16
// first (as ggml's F16 vec_dot_type), so the binary16 flips of
// maxPixtralDiffMtmd happen at every product of every layer, not once in
// the projector, and spread to every token through attention: the tower's
// states after layer 0 already part from mtmd's by a few 1e-4 (sum of
// 1536 values 73.41145 against 73.41506, MTMD_DUMP_TENSORS). Measured:
// embeddings 1.30e-3 (tall) and 1.19e-3 (wide), the last position's
// logits 2.8e-3 and 3.5e-3 (logits up to ~4).
const (
	maxPixtralDiffMtmdF16      = 3e-3
	maxPixtralLogitDiffMtmdF16 = 1e-2
)

// maxPixtralLogitDiffMtmd bounds the logits of the text after the image
// against mtmd's with MatchLlamaCpp: the image rows' distance above
// carried through Mistral's two layers (2.0e-4 measured);
// maxPixtralLogitDiffMtmdF32 without it (3.0e-3 measured).
const (
	maxPixtralLogitDiffMtmd    = 5e-4
	maxPixtralLogitDiffMtmdF32 = 5e-3
)

// The converter's mmproj through mtmd's preprocessing equals mtmd's image
// bit for bit (96×40 letterboxed into 140×56, 45×77 into 84×112: its own
// resize rule) and its image embeddings within maxPixtralDiffMtmd; the
// mmproj with the [IMG_BREAK] row gives mtmd's whole image chunk.
func TestVisionPixtralMtmd(t *testing.T) {
	t.Parallel()
	var ref pixtralMtmdRef
	readJSON(t, pixtralFixture+"/gguf/mtmd.json", &ref)
	if len(ref.Cases) != 2 {
		t.Fatalf("mtmd.json has %d cases, want 2", len(ref.Cases))
	}
	paths := []string{pixtralFixture + "/gguf/mmproj-mistral3-f32.gguf"}
	if p := filepath.Join(pixtralOut, ref.MmprojGGUF); fileExists(p) {
		paths = append(paths, p)
	} else {
		t.Logf("%s absent (gen_mtmd_pixtral.py's output): the [IMG_BREAK] rows are not compared", p)
	}
	for _, path := range paths {
		for _, match := range []bool{false, true} {
			v, err := LoadVision(path, LoadOptions{MatchLlamaCpp: match})
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
				pr, err := v.Prepare(img, vision.Mtmd)
				if err != nil {
					t.Fatal(err)
				}
				if pr.Tiles[0] != [2]int{c.TileH, c.Tile} {
					t.Fatalf("%s: resized to %v (h, w), mtmd %d×%d", c.Image, pr.Tiles[0], c.TileH, c.Tile)
				}
				if d := maxAbsDiff(pr.Pixels, float32s(c.Pixels)); d != 0 {
					t.Errorf("%s: the image differs from mtmd's by %g", c.Image, d)
				}
				feat, err := v.EncodePrepared(pr, nil)
				if err != nil {
					t.Fatal(err)
				}
				want := c.Embd
				if pr.Grid[2] == 0 {
					// mtmd's chunk without its [IMG_BREAK] rows.
					want = nil
					for i, r := range c.Embd {
						if (i+1)%(pr.Grid[1]+1) != 0 {
							want = append(want, r)
						}
					}
				}
				d := maxAbsDiff(feat, flatRows(want))
				if tol := map[bool]float64{true: maxPixtralDiffMtmd, false: maxPixtralDiffMtmdF32}[match]; d > tol {
					t.Errorf("%s %s (match llama.cpp %v): image embeddings differ from mtmd's by %g", filepath.Base(path), c.Image, match, d)
				}
				t.Logf("%s %s (match llama.cpp %v): max |Δ image embeddings| = %.3g over %d rows", filepath.Base(path), c.Image, match, d, len(want))
			}
		}
	}
}

// run --image on llama.cpp's GGUF pair: the prompt's ids (mtmd's
// tokenization of the text around <__media__>, [IMG_END] opening the text
// after the image) and the logits of the text positions after the image
// equal mtmd's, with the mmproj that has the [IMG_BREAK] row and with the
// converter's own (the text model's [IMG_BREAK] token standing in).
func TestImageLogitsPixtralMtmd(t *testing.T) {
	t.Parallel()
	var ref pixtralMtmdRef
	readJSON(t, pixtralFixture+"/gguf/mtmd.json", &ref)
	text := filepath.Join(pixtralOut, ref.TextGGUF)
	if !fileExists(text) {
		t.Skipf("%s (the converter's text GGUF of mistral3/hf, gen_pixtral.py's output) is not present", text)
	}
	projs := []string{pixtralFixture + "/gguf/mmproj-mistral3-f32.gguf"}
	if p := filepath.Join(pixtralOut, ref.MmprojGGUF); fileExists(p) {
		projs = append(projs, p)
	}
	for _, match := range []bool{true, false} {
		opts := LoadOptions{MatchLlamaCpp: match}
		m, err := Load(text, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, proj := range projs {
			v, err := LoadVision(proj, opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range ref.Cases {
				img, err := vision.ReadFile("../testdata/vision/" + c.Image)
				if err != nil {
					t.Fatal(err)
				}
				run, err := m.ImageInput(v, ImagePrompt{Text: ref.Prompt, Image: img, Method: vision.Mtmd})
				if err != nil {
					t.Fatal(err)
				}
				if len(run.Input.Tokens) != len(c.Tokens) {
					t.Fatalf("%s: %d ids, mtmd %d", c.Image, len(run.Input.Tokens), len(c.Tokens))
				}
				for i, id := range c.Tokens {
					if id >= 0 && (run.Input.Tokens[i] != id || run.Input.Embeds[i] != nil) {
						t.Fatalf("%s: ids %v, mtmd's %v (-1: the image chunk)", c.Image, run.Input.Tokens, c.Tokens)
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
						scale = max(scale, math.Abs(float64(x)))
					}
					p, err := strconv.Atoi(pos)
					if err != nil || p >= len(out.Logits) {
						t.Fatalf("%s: logits of position %q", c.Image, pos)
					}
					d = max(d, maxAbsDiff(out.Logits[p], want))
				}
				if tol := map[bool]float64{true: maxPixtralLogitDiffMtmd, false: maxPixtralLogitDiffMtmdF32}[match]; d > tol {
					t.Errorf("%s %s (match llama.cpp %v): logits differ from mtmd's by %g", filepath.Base(proj), c.Image, match, d)
				}
				t.Logf("%s %s (match llama.cpp %v): max |Δ logits| = %.3g over %d positions (logits up to %.3g)", filepath.Base(proj), c.Image, match, d, len(c.Logits), scale)
			}
		}
	}
}

// LoadVision refuses a Mistral 3 config whose tower or preprocessing
// tfconv would not reproduce, naming the file and key; a prompt without
// [IMG], or with two, is an error.
func TestVisionPixtralRefusals(t *testing.T) {
	t.Parallel()
	src, err := filepath.Abs(pixtralFixture + "/hf")
	if err != nil {
		t.Fatal(err)
	}
	var cfg, pre map[string]any
	readJSON(t, src+"/config.json", &cfg)
	readJSON(t, src+"/preprocessor_config.json", &pre)
	for _, c := range []struct {
		key  string
		edit func(cfg, pre map[string]any)
	}{
		{"vision_feature_layer", func(cfg, _ map[string]any) { cfg["vision_feature_layer"] = []any{-1, -2} }},
		{"vision_feature_layer", func(cfg, _ map[string]any) { cfg["vision_feature_layer"] = -7 }},
		{"resample", func(_, pre map[string]any) { pre["resample"] = 2 }},
		{"size", func(_, pre map[string]any) { pre["size"] = map[string]any{"height": 84, "width": 84} }},
		{"head_dim", func(cfg, _ map[string]any) { cfg["vision_config"].(map[string]any)["head_dim"] = 8 }},
		{"spatial_merge_size", func(cfg, _ map[string]any) { cfg["spatial_merge_size"] = 0 }},
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
	img := vision.NewImage(30, 20)
	for _, p := range []ImagePrompt{
		{Tokens: []int{35, 274}, Image: img},
		{Tokens: []int{35, 1000, 274, 1000}, Image: img},
		{Text: "no marker", Image: img},
		{Text: "[IMG] and <__media__> <__media__>", Image: img},
		{Tokens: []int{35, 1000}},
		{Tokens: []int{35, 1000}, Image: vision.NewImage(0, 0)},
	} {
		if _, err := m.ImageInput(v, p); err == nil {
			t.Errorf("%+v: no error", p)
		}
	}
}

func deepCopyJSON(t *testing.T, v map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// The f16 pair (the converter's --outtype f16 text GGUF and mmproj, the
// latter with the [IMG_BREAK] row; gen_mtmd_pixtral.py): mtmd's image chunk
// and the last position's logits (mtmd.json's "f16"), with MatchLlamaCpp
// within maxPixtralDiffMtmdF16 and maxPixtralLogitDiffMtmdF16.
func TestImagePixtralMtmdF16(t *testing.T) {
	t.Parallel()
	var ref struct {
		Prompt string `json:"prompt"`
		F16    struct {
			TextGGUF   string `json:"text_gguf"`
			MmprojGGUF string `json:"mmproj_gguf"`
			Cases      []struct {
				Image  string               `json:"image"`
				Embd   [][]float32          `json:"image_embd"`
				Logits map[string][]float32 `json:"logits"`
			} `json:"cases"`
		} `json:"f16"`
	}
	readJSON(t, pixtralFixture+"/gguf/mtmd.json", &ref)
	text, proj := filepath.Join(pixtralOut, ref.F16.TextGGUF), filepath.Join(pixtralOut, ref.F16.MmprojGGUF)
	for _, p := range []string{text, proj} {
		if !fileExists(p) {
			t.Skipf("%s (gen_pixtral.py's and gen_mtmd_pixtral.py's output) is not present", p)
		}
	}
	if len(ref.F16.Cases) != 2 {
		t.Fatalf("mtmd.json's f16 has %d cases, want 2", len(ref.F16.Cases))
	}
	opts := LoadOptions{MatchLlamaCpp: true}
	m, err := Load(text, opts)
	if err != nil {
		t.Fatal(err)
	}
	v, err := LoadVision(proj, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ref.F16.Cases {
		img, err := vision.ReadFile("../testdata/vision/" + c.Image)
		if err != nil {
			t.Fatal(err)
		}
		run, err := m.ImageInput(v, ImagePrompt{Text: ref.Prompt, Image: img, Method: vision.Mtmd})
		if err != nil {
			t.Fatal(err)
		}
		de := maxAbsDiff(run.Features, flatRows(c.Embd))
		if de > maxPixtralDiffMtmdF16 {
			t.Errorf("%s: image embeddings differ from mtmd's by %g", c.Image, de)
		}
		out, err := m.Forward(run.Input, nil)
		if err != nil {
			t.Fatal(err)
		}
		var dl float64
		for pos, want := range c.Logits {
			p, err := strconv.Atoi(pos)
			if err != nil || p >= len(out.Logits) {
				t.Fatalf("%s: logits of position %q", c.Image, pos)
			}
			dl = max(dl, maxAbsDiff(out.Logits[p], want))
		}
		if dl > maxPixtralLogitDiffMtmdF16 {
			t.Errorf("%s: logits differ from mtmd's by %g", c.Image, dl)
		}
		t.Logf("%s: max |Δ image embeddings| = %.3g, |Δ last logits| = %.3g", c.Image, de, dl)
	}
}

// pixtralLogitDiff bounds the image prompts' logits against transformers':
// the text positions are within 2.2e-6, the image rows (logits up to 4)
// within 9.8e-6 on the SIMD kernels and 1.0014e-5 on the plain-Go ones
// (-tags noasm: another float32 summation order), a relative 2.5e-6.
const pixtralLogitDiff = 1.1e-5
