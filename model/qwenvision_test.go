package model

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/convert"
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

func readQwenRef(t *testing.T, fix string) (qwenRef, *safetensors.File) {
	t.Helper()
	var ref qwenRef
	readJSON(t, fix+"/hf/reference.json", &ref)
	if len(ref.Cases) != 2 {
		t.Fatalf("reference has %d cases, want 2", len(ref.Cases))
	}
	f, err := safetensors.Open(fix + "/hf/reference.safetensors")
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
	testVisionQwenHF(t, qwenFixture)
}

// Qwen3-VL's likewise (the fast image processor: torch's antialiased
// bicubic on u8; the learned positions interpolated to the grid), and the
// deepstack mergers' features.
func TestVisionQwen3VLHF(t *testing.T) {
	t.Parallel()
	testVisionQwenHF(t, qwen3Fixture)
}

// qwen3Fixture is testdata/vision/qwen3_vl (gen_qwenvl.py).
const qwen3Fixture = "../testdata/vision/qwen3_vl"

func testVisionQwenHF(t *testing.T, fix string) {
	ref, st := readQwenRef(t, fix)
	v, err := LoadVision(fix+"/hf", LoadOptions{})
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
		in := &Prepared{Pixels: want, Tiles: pr.Tiles, Rows: pr.Rows, Grid: pr.Grid}
		feat, err := v.EncodePrepared(in, nil)
		if err != nil {
			t.Fatal(err)
		}
		d := maxAbsDiff(feat, refTensor(t, st, "image_features."+name))
		for j, ds := range in.Deepstack {
			d = math.Max(d, maxAbsDiff(ds, refTensor(t, st, "deepstack_features."+strconv.Itoa(j)+"."+name)))
		}
		if d > maxVisionDiffF32 {
			t.Errorf("%s: image features differ by %g", c.Image, d)
		}
		t.Logf("%s: max |Δ image features| = %.3g (%d deepstack)", c.Image, d, len(in.Deepstack))
	}
}

// run --image on the HF folder: the processor's expansion of the prompt
// (from the ids with <|image_pad|> once, and from the text), the M-RoPE
// positions of get_rope_index, and the logits transformers' within
// maxLogitDiffF32 on both images.
func TestImageLogitsQwen25VLHF(t *testing.T) {
	t.Parallel()
	testImageLogitsQwenHF(t, qwenFixture)
}

// Qwen3-VL's likewise: interleaved M-RoPE and the deepstack features
// added after the first text layers.
func TestImageLogitsQwen3VLHF(t *testing.T) {
	t.Parallel()
	testImageLogitsQwenHF(t, qwen3Fixture)
}

func testImageLogitsQwenHF(t *testing.T, fix string) {
	ref, st := readQwenRef(t, fix)
	m, err := Load(fix+"/hf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := LoadVision(fix+"/hf", LoadOptions{})
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

// qwenMtmdRef is testdata/vision/qwen2_5_vl/gguf/mtmd.json
// (tools/gen_mtmd.py): llama.cpp mtmd's outputs on llama.cpp's own GGUF
// pair, the tile by the sha256 of its float32 bytes [3][H][W].
type qwenMtmdRef struct {
	MmprojGGUF string `json:"mmproj_gguf"`
	Prompt     string `json:"prompt"`
	Cases      []struct {
		Image  string               `json:"image"`
		W      int                  `json:"tile"`
		H      int                  `json:"tile_height"`
		Pixels string               `json:"pixels_sha256"`
		Tokens []int                `json:"tokens"`
		Embd   [][]float32          `json:"image_embd"`
		Logits map[string][]float32 `json:"logits"`
	} `json:"cases"`
}

// maxQwenDiffMtmd: the tower and merger with MatchLlamaCpp against ggml's
// graph on the f32 mmproj. That mode computes the patch embedding as
// ggml_conv_2d does (its im2col is binary16 for an F32 kernel too, and the
// kernel is rounded to it), ggml's rotary angles and its GELU table; the
// tower's output then agrees to ~1e-6 (measured on the layer sums of
// mtmd_dump's MTMD_DUMP_TENSORS trace), and what is left is the merger's
// GELU: its table is indexed by the binary16 rounding of the input, and an
// input 1e-6 away from a rounding midpoint takes the neighbouring entry
// (2.4e-4 measured on the wide image, 1.0e-4 on the tall).
const maxQwenDiffMtmd = 5e-4

// maxQwen3DiffMtmd: Qwen3-VL's tower with MatchLlamaCpp against ggml's:
// as maxQwenDiffMtmd, but the tower's MLP is a GELU too (ggml's binary16
// table in every layer), so a table entry that flips moves the layer's
// output, and the next: the layers agree to ~1e-5 of their sums
// (MTMD_DUMP_TENSORS trace against the tower's states), the embeddings to
// 7.7e-4 (wide) and 7.3e-4 (tall).
const maxQwen3DiffMtmd = 1e-3

// maxQwenDiffMtmdF32: our float32 forward (no MatchLlamaCpp) against
// ggml's: the binary16 patch embedding and GELU table unmodelled, and
// erf's GELU where ggml's is the tanh form (1.6e-3 measured).
const maxQwenDiffMtmdF32 = 3e-3

func readQwenMtmd(t *testing.T, fix string) qwenMtmdRef {
	t.Helper()
	var ref qwenMtmdRef
	readJSON(t, fix+"/gguf/mtmd.json", &ref)
	if len(ref.Cases) != 2 {
		t.Fatalf("mtmd.json has %d cases, want 2", len(ref.Cases))
	}
	return ref
}

// llama.cpp's mmproj GGUF through mtmd's preprocessing (its smart_resize in
// float32, the letterbox on black with its bilinear filter) equals mtmd's
// tile bit for bit and its image embeddings within maxQwenDiffMtmd.
func TestVisionQwen25VLMtmd(t *testing.T) {
	t.Parallel()
	testVisionQwenMtmd(t, qwenFixture, maxQwenDiffMtmd, maxQwenDiffMtmdF32)
}

// Qwen3-VL's mmproj likewise; mtmd's embeddings hold the merger's row and
// each deepstack merger's side by side (llama.cpp's qwen3vl text model
// takes them as one input row).
func TestVisionQwen3VLMtmd(t *testing.T) {
	t.Parallel()
	testVisionQwenMtmd(t, qwen3Fixture, maxQwen3DiffMtmd, maxQwenDiffMtmdF32)
}

func testVisionQwenMtmd(t *testing.T, fix string, tolMatch, tolF32 float64) {
	ref := readQwenMtmd(t, fix)
	for _, match := range []bool{false, true} {
		v, err := LoadVision(fix+"/gguf/"+ref.MmprojGGUF, LoadOptions{MatchLlamaCpp: match})
		if err != nil {
			t.Fatal(err)
		}
		if v.DefaultMethod() != vision.Mtmd {
			t.Fatalf("mmproj preprocesses as %v", v.DefaultMethod())
		}
		q := v.enc.(*qwenVision)
		for _, c := range ref.Cases {
			img, err := vision.ReadFile("../testdata/vision/" + c.Image)
			if err != nil {
				t.Fatal(err)
			}
			tile, h, w, err := q.preprocess(vision.Mtmd).Tile(img)
			if err != nil {
				t.Fatal(err)
			}
			b := make([]byte, 4*len(tile))
			for i, x := range tile {
				binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
			}
			if sum := sha256.Sum256(b); h != c.H || w != c.W || hex.EncodeToString(sum[:]) != c.Pixels {
				t.Errorf("%s: tile %d×%d differs from mtmd's %d×%d", c.Image, w, h, c.W, c.H)
			}
			pr, err := v.Prepare(img, vision.Mtmd)
			if err != nil {
				t.Fatal(err)
			}
			feat, err := v.EncodePrepared(pr, nil)
			if err != nil {
				t.Fatal(err)
			}
			D := v.Config().TextDModel
			rows := make([]float32, 0, len(feat)*(1+len(pr.Deepstack)))
			for r := 0; r < pr.Rows; r++ {
				rows = append(rows, feat[r*D:(r+1)*D]...)
				for _, ds := range pr.Deepstack {
					rows = append(rows, ds[r*D:(r+1)*D]...)
				}
			}
			d := maxAbsDiff(rows, flatRows(c.Embd))
			if tol := map[bool]float64{true: tolMatch, false: tolF32}[match]; d > tol {
				t.Errorf("%s (match llama.cpp %v): image embeddings differ from mtmd's by %g", c.Image, match, d)
			}
			t.Logf("%s (match llama.cpp %v): %d rows, max |Δ image embeddings| = %.3g", c.Image, match, pr.Rows, d)
		}
	}
}

// run --image on the GGUF pair (the text GGUF tfconv converts from the HF
// folder, whose tensors and keys are llama.cpp's — convert.TestQwenVLText;
// the mmproj llama.cpp's own): mtmd's chunking of the prompt
// (<|vision_start|>, the image, <|vision_end|>), its M-RoPE positions (the
// text after the image at the image's start + max(rows, columns)), and the
// logits of every text position after the image within
// maxRelImageLogitDiffMtmd of the largest.
func TestImageLogitsQwen25VLMtmd(t *testing.T) {
	t.Parallel()
	testImageLogitsQwenMtmd(t, qwenFixture)
}

// Qwen3-VL's likewise: interleaved M-RoPE with mtmd's image positions
// (the pairs outside the sections at the extra stream, 0 for the image),
// the deepstack rows added after the first text layers.
func TestImageLogitsQwen3VLMtmd(t *testing.T) {
	t.Parallel()
	testImageLogitsQwenMtmd(t, qwen3Fixture)
}

func testImageLogitsQwenMtmd(t *testing.T, fix string) {
	ref := readQwenMtmd(t, fix)
	gg := filepath.Join(t.TempDir(), "text.gguf")
	if _, err := convert.Run(fix+"/hf", gg, convert.Options{OutType: convert.OutF32, Multimodal: convert.MultimodalText}); err != nil {
		t.Fatal(err)
	}
	for _, match := range []bool{true, false} {
		opts := LoadOptions{MatchLlamaCpp: match}
		m, err := Load(gg, opts)
		if err != nil {
			t.Fatal(err)
		}
		v, err := LoadVision(fix+"/gguf/"+ref.MmprojGGUF, opts)
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
					t.Fatalf("%s: logits of index %q", c.Image, pos)
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

// The Qwen-VL prompt without (or with two) <|image_pad|>, and M-RoPE
// positions or deepstack rows a model cannot take, are refused.
func TestQwenVLRefusals(t *testing.T) {
	t.Parallel()
	m, err := Load(qwenFixture+"/hf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := LoadVision(qwenFixture+"/hf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	img := vision.NewImage(40, 30)
	for _, p := range []ImagePrompt{
		{Tokens: []int{1000, 15, 1002, 1003}, Image: img},
		{Tokens: []int{1000, 1005, 15, 1005}, Image: img},
		{Text: "no marker", Image: img, Method: vision.Transformers},
		{Text: "<__media__> <__media__>", Image: img, Method: vision.Mtmd},
		{Tokens: []int{1000, 1005}},
	} {
		if _, err := m.ImageInput(v, p); err == nil {
			t.Errorf("%+v: no error", p)
		}
	}
	for _, in := range []Input{
		{Tokens: []int{1, 2}, Positions: make([][4]int, 1)},
		{Tokens: []int{1, 2}, Positions: [][4]int{{0, 0, 0, 0}, {-1, 0, 0, 0}}},
		{Tokens: []int{1, 2}, Deepstack: make([][][]float32, 3)},
		{Tokens: []int{1, 2}, Deepstack: [][][]float32{make([][]float32, 1)}},
		{Tokens: []int{1, 2}, Deepstack: [][][]float32{{nil, make([]float32, 3)}}},
	} {
		if _, err := m.Forward(in, nil); err == nil {
			t.Errorf("%+v: no error", in)
		}
	}
	// A model without M-RoPE takes no position triples.
	g, err := Load(visionFixture+"/hf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Forward(Input{Tokens: []int{1, 2}, Positions: make([][4]int, 2)}, nil); err == nil {
		t.Error("gemma3 with M-RoPE positions: no error")
	}
}
