package convert

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/formats/safetensors"
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
	dir := t.TempDir()
	text := filepath.Join(dir, "qwen2audio.gguf")
	if _, err := Run(qwen2Audio, text, Options{OutType: OutF32, Multimodal: MultimodalBoth}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "hf")
	if _, err := Run(text, out, Options{OutType: OutF32, MmprojFile: MmprojPath(text)}); err != nil {
		t.Fatal(err)
	}
	orig, err := safetensors.Open(filepath.Join(qwen2Audio, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	back, err := safetensors.Open(filepath.Join(out, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	if len(orig.Tensors) != len(back.Tensors) {
		t.Errorf("%d tensors, the fixture has %d", len(back.Tensors), len(orig.Tensors))
	}
	identical := 0
	for i := range orig.Tensors {
		x := &orig.Tensors[i]
		y, ok := back.Tensor(x.Name)
		if !ok || y.DType != x.DType || !y.Shape.Equal(x.Shape) {
			t.Errorf("%s: missing or %+v, the fixture's %v %v", x.Name, y, x.DType, x.Shape)
			continue
		}
		xb, _ := io.ReadAll(x.Open())
		yb, _ := io.ReadAll(y.Open())
		if bytes.Equal(xb, yb) {
			identical++
			continue
		}
		if x.Name != "audio_tower.conv1.weight" && x.Name != "audio_tower.conv2.weight" {
			t.Errorf("%s: bytes differ from the fixture's", x.Name)
			continue
		}
		for k := 0; k+4 <= len(xb); k += 4 {
			a := math.Float32frombits(binary.LittleEndian.Uint32(xb[k:]))
			b := math.Float32frombits(binary.LittleEndian.Uint32(yb[k:]))
			if math.Abs(float64(a-b)) > 0x1p-11*max(math.Abs(float64(a)), 0x1p-14) { // float16's rounding
				t.Errorf("%s[%d]: %g, the fixture's %g", x.Name, k/4, b, a)
				break
			}
		}
	}
	if want := len(orig.Tensors) - 2; identical != want {
		t.Errorf("%d tensors byte-identical, want all but the two F16 kernels (%d)", identical, want)
	}
	read := func(p string) map[string]any {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	want, got := read(filepath.Join(qwen2Audio, "config.json")), read(filepath.Join(out, "config.json"))
	for _, k := range []string{"architectures", "model_type", "audio_token_index"} {
		if !reflect.DeepEqual(got[k], want[k]) {
			t.Errorf("config.json %s: %v, the fixture's %v", k, got[k], want[k])
		}
	}
	for _, sub := range []struct{ obj, keys string }{
		{"audio_config", "d_model encoder_ffn_dim encoder_layers encoder_attention_heads num_mel_bins max_source_positions model_type activation_function scale_embedding"},
		{"text_config", "hidden_size intermediate_size num_hidden_layers num_attention_heads num_key_value_heads vocab_size rope_theta rms_norm_eps model_type"},
	} {
		g, _ := got[sub.obj].(map[string]any)
		w, _ := want[sub.obj].(map[string]any)
		for _, k := range strings.Fields(sub.keys) {
			if !reflect.DeepEqual(g[k], w[k]) {
				t.Errorf("config.json %s.%s: %v, the fixture's %v", sub.obj, k, g[k], w[k])
			}
		}
	}
	pre, wpre := read(filepath.Join(out, "preprocessor_config.json")), read(filepath.Join(qwen2Audio, "preprocessor_config.json"))
	if !reflect.DeepEqual(pre, wpre) {
		t.Errorf("preprocessor_config.json %v, the fixture's %v", pre, wpre)
	}
}
