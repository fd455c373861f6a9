package convert

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// qwen2Audio is the tiny Qwen2AudioForConditionalGeneration of
// testdata/vision (gen_audio.py).
var qwen2Audio = filepath.Join("..", "testdata", "vision", "qwen2audio", "hf")

// TestQwen2AudioMatchesLlamaCpp: --mmproj of the tiny
// Qwen2AudioForConditionalGeneration writes, at f32, f16 and q8_0, the text
// GGUF (qwen2) and the audio projector (qwen2a: a Whisper encoder and a
// linear map) that llama.cpp d32676d7's converter writes (llamacpp.json):
// every key and value in its order, every tensor's name, type, shape and
// bytes in its order (the text GGUF's general.quantization_version's place
// aside, as every newer family's); where the converter's own files are at
// hand (/work/fixtures-out) the mmproj is byte-identical to it. --text-only
// reports the tower it left out.
func TestQwen2AudioMatchesLlamaCpp(t *testing.T) {
	t.Parallel()
	ref := readLlamacppRecord(t, "qwen2audio")
	for _, ot := range []string{OutF32, OutF16, OutQ8_0} {
		t.Run(ot, func(t *testing.T) {
			t.Parallel()
			dst := filepath.Join(t.TempDir(), "qwen2audio-"+ot+".gguf")
			rep, err := Run(qwen2Audio, dst, Options{OutType: ot, Multimodal: MultimodalBoth})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Mmproj == nil || rep.Mmproj.Output != MmprojPath(dst) || rep.Mmproj.SelfCheck != "ok" {
				t.Fatalf("report's mmproj %+v, want %s checked", rep.Mmproj, MmprojPath(dst))
			}
			matchRecord(t, ref, "text-"+ot, dst)
			matchRecord(t, ref, "mmproj-"+ot, MmprojPath(dst))
			theirs := filepath.Join("/work/fixtures-out/vision/qwen2audio", "qwen2audio-mmproj-"+ot+".gguf")
			if tb, err := os.ReadFile(theirs); err == nil {
				ob, err := os.ReadFile(MmprojPath(dst))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(ob, tb) {
					t.Errorf("mmproj: %d bytes, not byte-identical to %s (%d bytes)", len(ob), theirs, len(tb))
				}
			}
			text := filepath.Join(t.TempDir(), "text.gguf")
			trep, err := Run(qwen2Audio, text, Options{OutType: ot, Multimodal: MultimodalText})
			if err != nil {
				t.Fatal(err)
			}
			if want := 3*15 + 7 + 2; trep.LeftOut == nil || trep.LeftOut.Tensors != want {
				t.Errorf("--text-only left out %+v, want the tower's %d tensors (3 layers of 15, 7 around them, the projection's 2)", trep.LeftOut, want)
			}
		})
	}
}

// TestQwen2AudioRoundTrip: HF → text GGUF + mmproj (f32) → HF gives the
// fixture's tensors back (the conv biases' columns flattened again), all
// byte-identical but the two convolution kernels, which the mmproj keeps
// F16 (within its rounding); config.json's class, token id, audio_config
// and text_config entries, and the published preprocessor_config.json.
func TestQwen2AudioRoundTrip(t *testing.T) {
	t.Parallel()
	out, identical, total := vlRoundTrip(t, qwen2Audio, func(name string, a float64) (float64, bool) {
		if name != "audio_tower.conv1.weight" && name != "audio_tower.conv2.weight" {
			return 0, false
		}
		return 0x1p-11 * max(math.Abs(a), 0x1p-14), true // float16's rounding
	})
	if want := total - 2; identical != want {
		t.Errorf("%d tensors byte-identical, want all but the two F16 kernels (%d)", identical, want)
	}
	vlConfigMatches(t, qwen2Audio, out, []string{"architectures", "model_type", "audio_token_index"}, map[string]string{
		"audio_config": "d_model encoder_ffn_dim encoder_layers encoder_attention_heads num_mel_bins max_source_positions model_type activation_function scale_embedding",
		"text_config":  "hidden_size intermediate_size num_hidden_layers num_attention_heads num_key_value_heads vocab_size rope_theta rms_norm_eps model_type",
	}, "preprocessor_config.json")
}
