package model

import (
	"crypto/sha256"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/vision"
)

// audioFixture is testdata/vision/qwen2audio: vlaudio's tiny
// Qwen2AudioForConditionalGeneration with transformers' outputs.
const audioFixture = "../testdata/vision/qwen2audio"

// audioRef is the part of testdata/vision/qwen2audio/hf/reference.json the
// tests read.
type audioRef struct {
	Prompt string `json:"prompt"`
	Cases  []struct {
		Audio     string        `json:"audio"`
		InputIDs  []int         `json:"input_ids"`
		Frames    int           `json:"feature_frames"`
		Kept      int           `json:"input_features_kept"`
		Pad       float32       `json:"input_features_pad"`
		Features  [][]float32   `json:"input_features"`
		Positions int           `json:"encoder_positions"`
		Tokens    int           `json:"audio_tokens"`
		States    [][][]float32 `json:"audio_hidden_states"`
		Last      [][]float32   `json:"audio_last_hidden_state"`
		Audio2    [][]float32   `json:"audio_features"`
		Logits    [][]float32   `json:"logits"`
	} `json:"cases"`
}

// refMel rebuilds transformers' input_features [n_mel][3000] from the
// reference: the kept frames, then the one padding value.
func refMel(feats [][]float32, kept int, pad float32) []float32 {
	T := vision.WhisperFrames
	out := make([]float32, len(feats)*T)
	for b, row := range feats {
		for f := range T {
			if f < kept {
				out[b*T+f] = row[f]
			} else {
				out[b*T+f] = pad
			}
		}
	}
	return out
}

// The HF folder's Whisper encoder, pool and projector equal transformers'
// on the processor's input_features: every hidden state of the encoder,
// the pooled and normed state and the audio features within
// maxVisionDiffF32; and on tfconv's own log-mel of the WAV (mtmd's
// algorithm, 7.5e-5 from the feature extractor's) within
// maxAudioDiffOwnMel.
func TestAudioQwen2AudioHF(t *testing.T) {
	t.Parallel()
	var ref audioRef
	readJSON(t, audioFixture+"/hf/reference.json", &ref)
	v, err := LoadVision(audioFixture+"/hf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !v.IsAudio() || v.DefaultMethod() != vision.Transformers {
		t.Fatalf("audio %v, method %v", v.IsAudio(), v.DefaultMethod())
	}
	for _, c := range ref.Cases {
		mel := refMel(c.Features, c.Kept, c.Pad)
		p := &Prepared{Pixels: mel, Tiles: [][2]int{{len(c.Features), vision.WhisperFrames}}, Grid: []int{c.Frames}, Rows: c.Tokens}
		var states [][]float32
		feat, err := v.EncodePrepared(p, &states)
		if err != nil {
			t.Fatal(err)
		}
		cfg := v.Config()
		if len(states) != cfg.Layers+2 {
			t.Fatalf("%s: %d states, want embeddings + %d layers + pooled", c.Audio, len(states), cfg.Layers)
		}
		for i, s := range c.States {
			if d := maxAbsDiff(states[i], flatRows(s)); d > maxVisionDiffF32 {
				t.Errorf("%s: encoder state %d differs by %g", c.Audio, i, d)
			}
		}
		if d := maxAbsDiff(states[len(states)-1], flatRows(c.Last)); d > maxVisionDiffF32 {
			t.Errorf("%s: last_hidden_state differs by %g", c.Audio, d)
		}
		d := maxAbsDiff(feat, flatRows(c.Audio2))
		if d > maxVisionDiffF32 {
			t.Errorf("%s: audio features differ by %g", c.Audio, d)
		}
		t.Logf("%s: max |Δ audio features| = %.3g (from transformers' input_features)", c.Audio, d)

		a, err := vision.OpenWAV("../testdata/vision/" + c.Audio)
		if err != nil {
			t.Fatal(err)
		}
		own, err := v.PrepareAudio(a, vision.Transformers)
		if err != nil {
			t.Fatal(err)
		}
		if own.Rows != c.Tokens || !slices.Equal(own.Grid, []int{c.Frames}) {
			t.Fatalf("%s: %d rows over %v frames, transformers %d over %d", c.Audio, own.Rows, own.Grid, c.Tokens, c.Frames)
		}
		feat, err = v.EncodePrepared(own, nil)
		if err != nil {
			t.Fatal(err)
		}
		d = maxAbsDiff(feat, flatRows(c.Audio2))
		if d > maxAudioDiffOwnMel {
			t.Errorf("%s: audio features from tfconv's log-mel differ by %g", c.Audio, d)
		}
		t.Logf("%s: max |Δ audio features| = %.3g (from tfconv's log-mel)", c.Audio, d)
	}
}

// maxAudioDiffOwnMel bounds the audio features computed from tfconv's
// log-mel (mtmd's float32 FFT, up to 7.5e-5 from the feature extractor's
// torch.stft) against transformers': the encoder's convolutions average
// the mel's differences away (5.1e-6 measured on chirp.wav, 1.5e-6 on
// tones.wav), so the 1e-5 holds end to end.
const maxAudioDiffOwnMel = maxVisionDiffF32

// collapseAudio undoes the processor's expansion: the run of <|AUDIO|>
// ids back to one.
func collapseAudio(ids []int, audio int) []int {
	var out []int
	for i, id := range ids {
		if id == audio && i > 0 && ids[i-1] == audio {
			continue
		}
		out = append(out, id)
	}
	return out
}

// run --audio on the HF folder: the prompt's ids (from the tokens with
// <|AUDIO|> once, from the text with <|AUDIO|>, and from the text with
// mtmd's marker in place of all three audio tokens) equal the processor's,
// and the logits transformers' within maxLogitDiffF32.
func TestAudioLogitsQwen2AudioHF(t *testing.T) {
	t.Parallel()
	var ref audioRef
	readJSON(t, audioFixture+"/hf/reference.json", &ref)
	m, err := Load(audioFixture+"/hf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := LoadVision(audioFixture+"/hf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	audio := v.Config().Image
	for _, c := range ref.Cases {
		a, err := vision.OpenWAV("../testdata/vision/" + c.Audio)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range []ImagePrompt{
			{Tokens: collapseAudio(c.InputIDs, audio)},
			{Text: ref.Prompt},
			{Text: strings.Replace(ref.Prompt, "<|audio_bos|><|AUDIO|><|audio_eos|>", MediaMarker, 1)},
		} {
			p.Audio, p.Method = a, vision.Transformers
			run, err := m.ImageInput(v, p)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(run.Input.Tokens, c.InputIDs) {
				t.Fatalf("%s (prompt %d): ids %v, the processor's %v", c.Audio, i, run.Input.Tokens, c.InputIDs)
			}
			if run.First != 1 || run.Count != c.Tokens {
				t.Fatalf("%s: audio at %d (%d rows), want 1 (%d)", c.Audio, run.First, run.Count, c.Tokens)
			}
			out, err := m.Forward(run.Input, nil)
			if err != nil {
				t.Fatal(err)
			}
			d, _ := maxDiff(t, out.Logits, c.Logits, nil)
			if d > maxLogitDiffF32 {
				t.Errorf("%s (prompt %d): logits differ from transformers' by %g", c.Audio, i, d)
			}
			t.Logf("%s (prompt %d): max |Δ logits| = %.3g over %d positions", c.Audio, i, d, len(c.Logits))
		}
	}
}

// The audio encoder refuses an image, a clip too short to encode, and a
// prompt without (or with two) audio placeholders; an image encoder
// refuses audio.
func TestAudioRefusals(t *testing.T) {
	t.Parallel()
	m, err := Load(audioFixture+"/hf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := LoadVision(audioFixture+"/hf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	clip := &vision.Audio{Rate: 16000, Samples: make([]float32, 4000)}
	for _, p := range []ImagePrompt{
		{Text: "<|AUDIO|>", Image: vision.NewImage(4, 4)},
		{Text: "<|AUDIO|>", Audio: &vision.Audio{Rate: 16000, Samples: make([]float32, 300)}},
		{Text: "<|AUDIO|>", Audio: &vision.Audio{Rate: 8000, Samples: make([]float32, 4000)}},
		{Text: "no marker", Audio: clip},
		{Text: "<|AUDIO|> and <|AUDIO|>", Audio: clip},
		{Tokens: []int{1, 2, 3}, Audio: clip},
		{Tokens: []int{1000, 2, 1000}, Audio: clip},
	} {
		p.Method = vision.Transformers
		if _, err := m.ImageInput(v, p); err == nil {
			t.Errorf("%+v: no error", p)
		}
	}
	iv, err := LoadVision(visionFixture+"/hf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := iv.PrepareAudio(clip, vision.Transformers); err == nil {
		t.Error("the gemma3 image encoder took audio")
	}
}

// audioMtmdRef is testdata/vision/qwen2audio/gguf/mtmd.json
// (tools/gen_mtmd_audio.py): llama.cpp mtmd's outputs on llama.cpp's own
// GGUF pair of the fixture.
type audioMtmdRef struct {
	TextGGUF   string `json:"text_gguf"`
	TextSHA    string `json:"text_sha256"`
	MmprojGGUF string `json:"mmproj_gguf"`
	MmprojSHA  string `json:"mmproj_sha256"`
	Prompt     string `json:"prompt"`
	Cases      []struct {
		Audio  string               `json:"audio"`
		Tokens []int                `json:"tokens"`
		Rows   int                  `json:"audio_embd_rows"`
		Embd   []byte               `json:"audio_embd_f32"`
		Logits map[string][]float32 `json:"logits"`
	} `json:"cases"`
}

// audioPairDir holds gen_audio.py's llama.cpp conversion of
// qwen2audio/hf (1.7 MB at f32: not kept in the repository).
const audioPairDir = "/work/fixtures-out/vision/qwen2audio"

// audioPair returns the GGUF pair mtmd.json was made from, or skips t
// naming where it should be.
func audioPair(t *testing.T, ref *audioMtmdRef) (text, mmproj string) {
	t.Helper()
	text, mmproj = filepath.Join(audioPairDir, ref.TextGGUF), filepath.Join(audioPairDir, ref.MmprojGGUF)
	for _, p := range []string{text, mmproj} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("%s (llama.cpp's conversion of %s/hf: testdata/vision/gen_audio.py) is not present", p, audioFixture)
		}
	}
	return text, mmproj
}

// maxAudioDiffMtmd bounds our embeddings with MatchLlamaCpp against
// mtmd's over the 750 rows of the window: the convolutions' im2col and
// kernels are binary16 as ggml's are, and what is left is summation order
// through 3 layers over 1500 positions (3.1e-6 on chirp.wav, 8.0e-6 on
// tones.wav). Our float32
// forward (no MatchLlamaCpp) leaves the binary16 rounding of the log-mel
// and of conv1's output unmodelled: 2.2e-4 measured, bounded by
// maxAudioDiffMtmdF32. maxAudioLogitDiffMtmd bounds the logits of the
// text after the clip with MatchLlamaCpp (3.1e-6 and 4.4e-6 measured on
// logits up to 4.4; the f32 mode gives 2.3e-4).
const (
	maxAudioDiffMtmd      = 2e-5
	maxAudioDiffMtmdF32   = 1e-3
	maxAudioLogitDiffMtmd = 1e-4
)

// readAudioMtmd reads mtmd.json and returns the GGUF pair it was made
// from, or skips t naming where the pair should be; a pair that is not
// the one mtmd.json names fails.
func readAudioMtmd(t *testing.T) (ref audioMtmdRef, text, mmproj string) {
	t.Helper()
	readJSON(t, audioFixture+"/gguf/mtmd.json", &ref)
	if len(ref.Cases) == 0 {
		t.Fatal("mtmd.json has no cases")
	}
	text, mmproj = filepath.Join(audioPairDir, ref.TextGGUF), filepath.Join(audioPairDir, ref.MmprojGGUF)
	for p, want := range map[string]string{text: ref.TextSHA, mmproj: ref.MmprojSHA} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Skipf("%s (llama.cpp's conversion of %s/hf: testdata/vision/gen_audio.py) is not present", p, audioFixture)
		}
		if got := fmt.Sprintf("%x", sha256.Sum256(b)); got != want {
			t.Fatalf("%s has sha256 %s, mtmd.json was made from %s", p, got, want)
		}
	}
	return ref, text, mmproj
}

// llama.cpp's GGUF pair with MatchLlamaCpp, through mtmd's preprocessing
// (every 30 s window, attended whole) and prompt (<|audio_bos|> + the clip
// + <|audio_eos|> around mtmd's marker): the ids equal mtmd's, the audio
// embeddings are within maxAudioDiffMtmd and the logits of the text after
// the clip within maxAudioLogitDiffMtmd.
func TestAudioQwen2AudioMtmd(t *testing.T) {
	t.Parallel()
	ref, text, mmproj := readAudioMtmd(t)
	opts := LoadOptions{MatchLlamaCpp: true}
	m, err := Load(text, opts)
	if err != nil {
		t.Fatal(err)
	}
	v, err := LoadVision(mmproj, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ref.Cases {
		a, err := vision.OpenWAV("../testdata/vision/" + c.Audio)
		if err != nil {
			t.Fatal(err)
		}
		run, err := m.ImageInput(v, ImagePrompt{Text: ref.Prompt, Audio: a, Method: v.DefaultMethod()})
		if err != nil {
			t.Fatal(err)
		}
		if len(run.Input.Tokens) != len(c.Tokens) || run.Count != c.Rows {
			t.Fatalf("%s: %d ids with %d audio rows, mtmd %d with %d", c.Audio, len(run.Input.Tokens), run.Count, len(c.Tokens), c.Rows)
		}
		for i, id := range c.Tokens {
			if id >= 0 && run.Input.Tokens[i] != id || id < 0 && run.Input.Embeds[i] == nil {
				t.Fatalf("%s: position %d: id %d, mtmd's %d (-1: the clip)", c.Audio, i, run.Input.Tokens[i], id)
			}
		}
		d := maxAbsDiff(run.Features, float32s(c.Embd))
		if d > maxAudioDiffMtmd {
			t.Errorf("%s: audio embeddings differ from mtmd's by %g", c.Audio, d)
		}
		t.Logf("%s: max |Δ audio embeddings| = %.3g over %d rows", c.Audio, d, c.Rows)
		out, err := m.Forward(run.Input, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Logits) == 0 {
			t.Fatalf("%s: mtmd.json has no logits", c.Audio)
		}
		var dl float64
		for pos, want := range c.Logits {
			p, err := strconv.Atoi(pos)
			if err != nil || p >= len(out.Logits) {
				t.Fatalf("%s: logits of position %q", c.Audio, pos)
			}
			dl = math.Max(dl, maxAbsDiff(out.Logits[p], want))
		}
		if dl > maxAudioLogitDiffMtmd {
			t.Errorf("%s: logits differ from mtmd's by %g", c.Audio, dl)
		}
		t.Logf("%s: max |Δ logits| = %.3g over %d positions", c.Audio, dl, len(c.Logits))
	}
}

// The same mmproj in our float32 forward (no MatchLlamaCpp) stays within
// maxAudioDiffMtmdF32 of mtmd's embeddings.
func TestAudioQwen2AudioMtmdF32(t *testing.T) {
	t.Parallel()
	ref, _, mmproj := readAudioMtmd(t)
	v, err := LoadVision(mmproj, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := ref.Cases[0]
	a, err := vision.OpenWAV("../testdata/vision/" + c.Audio)
	if err != nil {
		t.Fatal(err)
	}
	p, err := v.PrepareAudio(a, vision.Mtmd)
	if err != nil {
		t.Fatal(err)
	}
	feat, err := v.EncodePrepared(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := maxAbsDiff(feat, float32s(c.Embd))
	if d > maxAudioDiffMtmdF32 {
		t.Errorf("%s: audio embeddings differ from mtmd's by %g", c.Audio, d)
	}
	t.Logf("%s: max |Δ audio embeddings| = %.3g over %d rows", c.Audio, d, p.Rows)
}

// A clip longer than 30 s: the feature extractor keeps its first 30 s in
// one window attended whole (750 tokens); mtmd cuts it into every whole
// window (two here, 1500 tokens), each encoded alone.
func TestAudioQwen2AudioWindows(t *testing.T) {
	t.Parallel()
	v, err := LoadVision(audioFixture+"/hf", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := &vision.Audio{Rate: 16000, Samples: make([]float32, 31*16000)}
	for i := range a.Samples {
		a.Samples[i] = float32(math.Sin(float64(i) * 0.05))
	}
	for _, c := range []struct {
		m          vision.Method
		rows       int
		attended   []int
		windowsLen int
	}{
		{vision.Transformers, 750, []int{3000}, 1},
		{vision.Mtmd, 1500, []int{3000, 3000}, 2},
	} {
		p, err := v.PrepareAudio(a, c.m)
		if err != nil {
			t.Fatal(err)
		}
		if p.Rows != c.rows || !slices.Equal(p.Grid, c.attended) || len(p.Tiles) != c.windowsLen ||
			len(p.Pixels) != c.windowsLen*128*vision.WhisperFrames {
			t.Errorf("%v: %d rows, attended %v, %d windows (%d values); want %d, %v, %d", c.m, p.Rows, p.Grid, len(p.Tiles), len(p.Pixels), c.rows, c.attended, c.windowsLen)
		}
	}
}
