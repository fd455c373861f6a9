package vision

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// maxMelDiff is how far tfconv's log-mel spectrogram (mtmd's float32 FFT
// and filters) may be from transformers' WhisperFeatureExtractor (numpy's
// float64 STFT): the float32 rounding of the power spectrum, seen through
// log10 and the /4 of the normalisation.
const maxMelDiff = 1e-4

// qwen2AudioRef is the part of testdata/vision/qwen2audio/hf/reference.json
// the audio front end is held to.
type qwen2AudioRef struct {
	Cases []struct {
		Audio            string      `json:"audio"`
		Samples          int         `json:"samples"`
		Frames           int         `json:"feature_frames"`
		Kept             int         `json:"input_features_kept"`
		Pad              float64     `json:"input_features_pad"`
		Features         [][]float64 `json:"input_features"`
		SamplingRate     int         `json:"sampling_rate"`
		EncoderPositions int         `json:"encoder_positions"`
	} `json:"cases"`
}

func readQwen2AudioRef(t *testing.T) *qwen2AudioRef {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "vision", "qwen2audio", "hf", "reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r qwen2AudioRef
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Cases) == 0 {
		t.Fatal("reference.json has no cases")
	}
	return &r
}

// TestWhisperMelMatchesTransformers: the log-mel spectrogram of
// testdata/vision/audio/chirp.wav and tones.wav equals transformers v4.57.6's
// WhisperFeatureExtractor input_features (the Qwen2-Audio processor's) to
// maxMelDiff over the frames holding audio and after, and every later
// frame of the 3000 is the extractor's one padding value.
func TestWhisperMelMatchesTransformers(t *testing.T) {
	t.Parallel()
	ref := readQwen2AudioRef(t)
	for _, c := range ref.Cases {
		a, err := OpenWAV(filepath.Join("..", "testdata", "vision", c.Audio))
		if err != nil {
			t.Fatal(err)
		}
		if a.Rate != c.SamplingRate || len(a.Samples) != c.Samples {
			t.Fatalf("WAV: %d samples at %d Hz, the reference's %d at %d", len(a.Samples), a.Rate, c.Samples, c.SamplingRate)
		}
		mels, err := WhisperMel(a, WhisperMelConfig(len(c.Features)))
		if err != nil {
			t.Fatal(err)
		}
		if len(mels) != 1 || mels[0].Frames != WhisperFrames {
			t.Fatalf("%d windows, want 1 of %d frames", len(mels), WhisperFrames)
		}
		m := mels[0]
		var worst float64
		for b := range m.NMel {
			for f := range WhisperFrames {
				want := c.Pad
				if f < c.Kept {
					want = c.Features[b][f]
				}
				d := math.Abs(float64(m.Data[b*WhisperFrames+f]) - want)
				if d > worst {
					worst = d
				}
				if d > maxMelDiff {
					t.Fatalf("%s: bin %d frame %d: %g, transformers' %g (|Δ| %.3g)", c.Audio, b, f, m.Data[b*WhisperFrames+f], want, d)
				}
			}
		}
		t.Logf("%s: max |Δ| vs WhisperFeatureExtractor over %d×%d: %.3g", c.Audio, m.NMel, WhisperFrames, worst)
	}
}

// wavBytes is a WAV file of the given format holding frames (interleaved
// samples already encoded).
func wavBytes(format, channels uint16, rate uint32, bits uint16, data []byte) []byte {
	var b bytes.Buffer
	w := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("RIFF")
	w(uint32(36 + len(data)))
	b.WriteString("WAVEfmt ")
	w(uint32(16))
	w(format)
	w(channels)
	w(rate)
	w(rate * uint32(channels) * uint32(bits/8))
	w(channels * bits / 8)
	w(bits)
	b.WriteString("data")
	w(uint32(len(data)))
	b.Write(data)
	return b.Bytes()
}

// TestDecodeWAVFormats: 16-bit PCM and float32, mono and stereo (averaged
// to mono as mtmd asks miniaudio for one channel), read to the values
// miniaudio gives.
func TestDecodeWAVFormats(t *testing.T) {
	t.Parallel()
	var pcm bytes.Buffer
	for _, v := range []int16{0, 16384, -32768, 32767, -8192, 8192} {
		_ = binary.Write(&pcm, binary.LittleEndian, v)
	}
	var fl bytes.Buffer
	for _, v := range []float32{0.5, -0.25, 1, 0} {
		_ = binary.Write(&fl, binary.LittleEndian, v)
	}
	for _, tc := range []struct {
		name string
		file []byte
		want []float32
	}{
		{"s16 mono", wavBytes(1, 1, 16000, 16, pcm.Bytes()), []float32{0, 0.5, -1, 32767.0 / 32768, -0.25, 0.25}},
		{"s16 stereo", wavBytes(1, 2, 16000, 16, pcm.Bytes()), []float32{0.25, (-1 + 32767.0/32768) / 2, 0}},
		{"f32 mono", wavBytes(3, 1, 22050, 32, fl.Bytes()), []float32{0.5, -0.25, 1, 0}},
		{"f32 stereo", wavBytes(3, 2, 22050, 32, fl.Bytes()), []float32{0.125, 0.5}},
	} {
		a, err := DecodeWAV(tc.name, bytes.NewReader(tc.file))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(a.Samples) != len(tc.want) {
			t.Fatalf("%s: %v, want %v", tc.name, a.Samples, tc.want)
		}
		for i := range tc.want {
			if a.Samples[i] != tc.want[i] {
				t.Errorf("%s: sample %d = %v, want %v", tc.name, i, a.Samples[i], tc.want[i])
			}
		}
	}
	// Another rate is read, but the Whisper front end refuses it.
	a, _ := DecodeWAV("f32", bytes.NewReader(wavBytes(3, 1, 22050, 32, fl.Bytes())))
	if _, err := WhisperMel(a, WhisperMelConfig(128)); err == nil {
		t.Error("WhisperMel took 22050 Hz audio")
	}
}

// TestDecodeWAVRefusals: malformed files are errors wrapping ErrWAV that
// name the file and the offset.
func TestDecodeWAVRefusals(t *testing.T) {
	t.Parallel()
	good := wavBytes(1, 1, 16000, 16, []byte{1, 0, 2, 0})
	long := append([]byte(nil), good...)
	binary.LittleEndian.PutUint32(long[40:], 1<<30)
	odd := wavBytes(1, 2, 16000, 16, []byte{1, 0, 2, 0, 3, 0})
	for name, b := range map[string][]byte{
		"empty": nil, "not riff": []byte("RIFX0000WAVEfmt "), "data past end": long, "partial frame": odd,
		"mulaw": wavBytes(7, 1, 8000, 8, []byte{1}), "no data": good[:36],
	} {
		_, err := DecodeWAV(name, bytes.NewReader(b))
		if !errors.Is(err, ErrWAV) {
			t.Errorf("%s: %v, want ErrWAV", name, err)
		}
	}
}

// FuzzDecodeWAV: no input panics, and what decodes is whole frames.
func FuzzDecodeWAV(f *testing.F) {
	f.Add(wavBytes(1, 1, 16000, 16, []byte{1, 0, 2, 0}))
	f.Add(wavBytes(3, 2, 44100, 32, make([]byte, 16)))
	f.Add(wavBytes(1, 1, 8000, 24, make([]byte, 6)))
	f.Add([]byte("RIFF\x04\x00\x00\x00WAVE"))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := DecodeWAV("fuzz", bytes.NewReader(b))
		if err != nil {
			return
		}
		if a.Rate <= 0 {
			t.Fatalf("rate %d", a.Rate)
		}
	})
}

// maxMelDiffMtmd is how far tfconv's log-mel may be from mtmd's own: the
// same float32 algorithm, but the C++ build may fuse multiply-adds (FMA)
// in the FFT and the filter sums where Go does not.
const maxMelDiffMtmd = 1e-5

// TestWhisperMelMatchesMtmd: the WAV decodes to mtmd's samples (its
// miniaudio, through mtmd_helper_bitmap_init_from_file) and the log-mel to
// mtmd_audio_preprocessor_whisper's, as testdata/vision/tools/mel_dump.cpp
// printed them into qwen2audio/mtmd-mel.json (its first 48 frames, and the
// last frame's value).
func TestWhisperMelMatchesMtmd(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "vision", "qwen2audio", "mtmd-mel.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Samples int         `json:"samples"`
		Windows int         `json:"windows"`
		NMel    int         `json:"n_mel"`
		NLen    int         `json:"n_len"`
		First   []float32   `json:"first"`
		Last    float32     `json:"last_frame_bin0"`
		Frames  int         `json:"frames"`
		Mel     [][]float64 `json:"mel"`
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	a, err := OpenWAV(filepath.Join("..", "testdata", "vision", "audio", "chirp.wav"))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Samples) != ref.Samples {
		t.Fatalf("%d samples, mtmd's %d", len(a.Samples), ref.Samples)
	}
	for i, v := range ref.First {
		if a.Samples[i] != v {
			t.Errorf("sample %d = %v, mtmd's %v", i, a.Samples[i], v)
		}
	}
	mels, err := WhisperMel(a, WhisperMelConfig(ref.NMel))
	if err != nil {
		t.Fatal(err)
	}
	if len(mels) != ref.Windows || mels[0].Frames != ref.NLen || len(ref.Mel) != ref.NMel {
		t.Fatalf("%d windows of %d frames, mtmd's %d of %d", len(mels), mels[0].Frames, ref.Windows, ref.NLen)
	}
	m := mels[0]
	var worst float64
	for bin := range m.NMel {
		for f, want := range ref.Mel[bin] {
			d := math.Abs(float64(m.Data[bin*m.Frames+f]) - want)
			worst = max(worst, d)
			if d > maxMelDiffMtmd {
				t.Fatalf("bin %d frame %d: %g, mtmd's %g", bin, f, m.Data[bin*m.Frames+f], want)
			}
		}
	}
	if got := m.Data[m.Frames-1]; got != ref.Last {
		t.Errorf("last frame %v, mtmd's %v", got, ref.Last)
	}
	t.Logf("max |Δ| vs mtmd over %d×%d: %.3g", m.NMel, ref.Frames, worst)
}

// ReadMedia tells a WAV file from an image by content, not by name.
func TestReadMedia(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wav, err := os.ReadFile(filepath.Join("..", "testdata", "vision", "audio", "chirp.wav"))
	if err != nil {
		t.Fatal(err)
	}
	png, err := os.ReadFile(filepath.Join("..", "testdata", "vision", "images", "wide.png"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		body  []byte
		audio bool
		bad   bool
	}{
		{"sound.png", wav, true, false}, {"picture.wav", png, false, false},
		{"short", []byte("RIFF"), false, true}, {"riff-not-wave", append([]byte("RIFF\x04\x00\x00\x00AVI "), png...), false, true},
	} {
		p := filepath.Join(dir, c.name)
		if err := os.WriteFile(p, c.body, 0o644); err != nil {
			t.Fatal(err)
		}
		img, a, err := ReadMedia(p)
		switch {
		case c.bad:
			if err == nil {
				t.Errorf("%s: no error", c.name)
			}
		case err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.audio && (a == nil || img != nil || len(a.Samples) != 6400):
			t.Errorf("%s: not read as the 6400-sample clip", c.name)
		case !c.audio && (img == nil || a != nil || img.W != 96):
			t.Errorf("%s: not read as the 96-wide image", c.name)
		}
	}
	if _, _, err := ReadMedia(filepath.Join(dir, "absent")); err == nil {
		t.Error("absent file: no error")
	}
}
