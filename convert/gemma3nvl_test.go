package convert

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gemma3nVLOut is where gen_gemma3n.py leaves the tiny
// Gemma3nForConditionalGeneration (6.8 M parameters: timm's MobileNetV5
// cannot be made smaller than 27 MB, more than testdata/ may hold); a clone
// holds its config, processor files and llamacpp.json only.
const gemma3nVLOut = "/work/fixtures-out/vision/gemma3n/hf"

// TestGemma3nVLMatchesLlamaCpp: llama.cpp d32676d7's converter refuses
// Gemma 3n's mmproj (llamacpp.json records its error: its gguf-py cannot
// map the audio tower's subsample_conv_projection.conv_0.norm), so there
// is no reference projector and tfconv has no record for one: the class
// converts to its text GGUF, the towers listed among the dropped. Where
// gen_gemma3n.py's checkpoint is at hand, that text GGUF is held to the
// converter's at f32 and f16 (every key, value and tensor byte).
func TestGemma3nVLMatchesLlamaCpp(t *testing.T) {
	t.Parallel()
	ref := readLlamacppRecord(t, "gemma3n")
	for _, ot := range []string{OutF32, OutF16} {
		if r := ref.Outputs["mmproj-"+ot].Refused; !strings.Contains(r, "subsample_conv_projection.conv_0.norm") {
			t.Errorf("llamacpp.json mmproj-%s: refused %q, want the converter's error on the audio tower's conv norm", ot, r)
		}
	}
	if _, err := os.Stat(filepath.Join(gemma3nVLOut, "model.safetensors")); err != nil {
		t.Skipf("gen_gemma3n.py's checkpoint is not here (%v): the record alone was checked", err)
	}
	for _, ot := range []string{OutF32, OutF16} {
		t.Run(ot, func(t *testing.T) {
			t.Parallel()
			dst := filepath.Join(t.TempDir(), "gemma3n-"+ot+".gguf")
			rep, err := Run(gemma3nVLOut, dst, Options{OutType: ot})
			if err != nil {
				t.Fatal(err)
			}
			towers := 0
			for _, d := range rep.Dropped {
				for _, p := range []string{"model.vision_tower.", "model.audio_tower.", "model.embed_vision.", "model.embed_audio."} {
					if strings.HasPrefix(d.Name, p) {
						towers++
					}
				}
			}
			if towers == 0 {
				t.Errorf("no tower tensor among the dropped")
			}
			matchRecord(t, ref, "text-"+ot, dst)
		})
	}
}
