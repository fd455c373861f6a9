package vision

import (
	"fmt"
	"io"
	"os"
)

// WhisperSamples is the samples one Whisper window holds (30 s at
// 16 kHz): transformers' WhisperFeatureExtractor pads or truncates every
// clip to it (n_samples).
const WhisperSamples = 480000

// Qwen2AudioInput is the log-mel input of a Whisper-style audio encoder
// (Qwen2-Audio's qwen2a) with nMel bins as method m's reference makes it,
// and per window the frames the encoder attends over:
//
//   - Transformers: Qwen2AudioProcessor's WhisperFeatureExtractor
//     (padding "max_length", truncation on): the clip cut to its first
//     30 s, one window of WhisperFrames frames, and
//     feature_attention_mask's count, ⌈samples / hop⌉ (at most 3000): the
//     model masks the attention to the frames that hold sound.
//   - Mtmd: mtmd_audio_preprocessor_whisper: every whole 30 s window of
//     the clip (WhisperMel), each attended whole (3000 frames): mtmd runs
//     the encoder on the full window, silence included.
//
// The log-mel itself is mtmd's in both (WhisperMel); transformers'
// float32 STFT (torch.stft) is within maxMelDiff of it
// (TestWhisperMelMatchesTransformers), not bit for bit.
func Qwen2AudioInput(a *Audio, nMel int, m Method) ([]Mel, []int, error) {
	if a == nil || len(a.Samples) == 0 {
		return nil, nil, fmt.Errorf("vision: empty audio")
	}
	cfg := WhisperMelConfig(nMel)
	switch m {
	case Transformers:
		clip := *a
		if len(clip.Samples) > WhisperSamples {
			clip.Samples = clip.Samples[:WhisperSamples]
		}
		mels, err := WhisperMel(&clip, cfg)
		if err != nil {
			return nil, nil, err
		}
		if len(mels) == 0 {
			return nil, nil, fmt.Errorf("vision: the log-mel of %d samples has no whole window", len(clip.Samples))
		}
		frames := min((len(clip.Samples)+cfg.Hop-1)/cfg.Hop, WhisperFrames)
		return mels[:1], []int{frames}, nil
	case Mtmd:
		mels, err := WhisperMel(a, cfg)
		if err != nil {
			return nil, nil, err
		}
		frames := make([]int, len(mels))
		for i := range frames {
			frames[i] = WhisperFrames
		}
		return mels, frames, nil
	}
	return nil, nil, fmt.Errorf("vision: unknown preprocessing %v", m)
}

// ReadMedia reads the file at path as what its content is: a WAV file
// (RIFF … WAVE, DecodeWAV) gives audio, anything else is decoded as an
// image (PNG, JPEG, GIF; ReadFile). Exactly one of the two is non-nil
// when err is nil. This is how run --image takes "PNG/JPEG, and WAV for
// audio" with one flag, whatever the file's name.
func ReadMedia(path string) (*Image, *Audio, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("vision: %w", err)
	}
	var head [12]byte
	n, _ := io.ReadFull(f, head[:])
	f.Close()
	if n == 12 && string(head[:4]) == "RIFF" && string(head[8:]) == "WAVE" {
		a, err := OpenWAV(path)
		return nil, a, err
	}
	img, err := ReadFile(path)
	return img, nil, err
}
