package convert

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// TestIdefics3VLMatchesLlamaCpp: tfconv's two GGUFs of the tiny
// Idefics3ForConditionalGeneration (SmolVLM) of testdata/vision, at f32 and
// f16, against llama.cpp d32676d7's (llamacpp.json, gen_llava.py): the text
// GGUF equal in every key, value and tensor byte (quantization_version's
// place aside), the mmproj too and, where the converter's files are at
// hand (/work/fixtures-out), byte-identical to it.
func TestIdefics3VLMatchesLlamaCpp(t *testing.T) {
	t.Parallel()
	testVLMatchesLlamaCpp(t, "idefics3")
}

// TestSmolVLMMatchesLlamaCpp: the same for SmolVLM2's class,
// SmolVLMForConditionalGeneration (testdata/vision/smolvlm, gen_llava.py).
func TestSmolVLMMatchesLlamaCpp(t *testing.T) {
	t.Parallel()
	testVLMatchesLlamaCpp(t, "smolvlm")
}

// testVLMatchesLlamaCpp converts testdata/vision/fam/hf with --mmproj at
// f32 and f16 and holds both outputs to the family's llamacpp.json.
func testVLMatchesLlamaCpp(t *testing.T, fam string) {
	ref := readLlamacppRecord(t, fam)
	hf := filepath.Join("..", "testdata", "vision", fam, "hf")
	for _, ot := range []string{OutF32, OutF16} {
		t.Run(ot, func(t *testing.T) {
			t.Parallel()
			dst := filepath.Join(t.TempDir(), fam+"-"+ot+".gguf")
			rep, err := Run(hf, dst, Options{OutType: ot, Multimodal: MultimodalBoth})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Mmproj == nil || rep.Mmproj.SelfCheck != "ok" {
				t.Fatalf("report's mmproj %+v", rep.Mmproj)
			}
			matchRecord(t, ref, "text-"+ot, dst)
			matchRecord(t, ref, "mmproj-"+ot, MmprojPath(dst))
			theirs := filepath.Join("/work/fixtures-out/vision", fam, "mmproj-"+fam+"-"+ot+".gguf")
			if tb, err := os.ReadFile(theirs); err == nil {
				ob, err := os.ReadFile(MmprojPath(dst))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(ob, tb) {
					t.Errorf("mmproj: %d bytes, not byte-identical to %s (%d bytes)", len(ob), theirs, len(tb))
				}
			}
		})
	}
}

// TestLlavaVLMatchesLlamaCpp: tfconv's two GGUFs of the tiny
// LlavaForConditionalGeneration (LLaVA-1.5) and
// LlavaNextForConditionalGeneration (LLaVA-NeXT) of testdata/vision, at f32
// and f16: the text GGUF equal to llama.cpp d32676d7's convert_hf_to_gguf.py
// output in every key, value and tensor byte (quantization_version's place
// aside); the mmproj, which that converter refuses for both classes, equal
// to its documented legacy path's (llava_surgery_v2.py +
// convert_image_encoder_to_gguf.py: "mmproj-legacy-…" in llamacpp.json) in
// every key and value but general.name (the legacy writer names the file
// after its work folder, "vit"; tfconv after the checkpoint) and in every
// tensor's name, place, type and bytes.
func TestLlavaVLMatchesLlamaCpp(t *testing.T) {
	t.Parallel()
	for _, fam := range []string{"llava15", "llavanext"} {
		ref := readLlamacppRecord(t, fam)
		for _, ot := range []string{OutF32, OutF16} {
			t.Run(fam+"-"+ot, func(t *testing.T) {
				t.Parallel()
				if w := ref.Outputs["mmproj-"+ot]; w.Refused == "" {
					t.Fatalf("llamacpp.json: the converter's --mmproj no longer refuses %s: compare with its output", fam)
				}
				dst := filepath.Join(t.TempDir(), fam+"-"+ot+".gguf")
				rep, err := Run(filepath.Join("..", "testdata", "vision", fam, "hf"), dst, Options{OutType: ot, Multimodal: MultimodalBoth})
				if err != nil {
					t.Fatal(err)
				}
				if rep.Mmproj == nil || rep.Mmproj.SelfCheck != "ok" {
					t.Fatalf("report's mmproj %+v", rep.Mmproj)
				}
				matchRecord(t, ref, "text-"+ot, dst)
				// The legacy mmproj holds part of the tower: no way back.
				if _, err := Run(dst, filepath.Join(t.TempDir(), "back"), Options{MmprojFile: MmprojPath(dst)}); !errors.Is(err, tensor.ErrUnsupported) {
					t.Errorf("GGUF → HF with the LLaVA mmproj: %v, want a refusal", err)
				}
				legacy := ref.Outputs["mmproj-legacy-"+ot]
				for i, kv := range legacy.Metadata {
					if kv[0] == "general.name" {
						g := openGGUF(t, MmprojPath(dst))
						if v, ok := g.Metadata.Get("general.name"); !ok || !sameValue(v, "Hf") {
							t.Errorf("mmproj general.name %v, want the checkpoint's name Hf", v)
						}
						kv = append([]any(nil), kv...)
						kv[2] = "Hf"
						legacy.Metadata = append(append([][]any(nil), legacy.Metadata[:i]...), append([][]any{kv}, legacy.Metadata[i+1:]...)...)
					}
				}
				ref := &llamacppRecord{Outputs: map[string]recordOutput{"mmproj-legacy-" + ot: legacy}}
				matchRecord(t, ref, "mmproj-legacy-"+ot, MmprojPath(dst))
				// Named as the legacy writer names it, the projector alone is
				// its file byte for byte, where gen_llava.py's output is here.
				theirs := filepath.Join("/work/fixtures-out/vision", fam, "mmproj-"+fam+"-"+ot+".legacy.gguf")
				if tb, err := os.ReadFile(theirs); err == nil {
					mine := filepath.Join(t.TempDir(), "vit.gguf")
					if _, err := Run(filepath.Join("..", "testdata", "vision", fam, "hf"), mine,
						Options{OutType: ot, Multimodal: MultimodalProjector, ModelName: "vit"}); err != nil {
						t.Fatal(err)
					}
					if ob, err := os.ReadFile(mine); err != nil || !bytes.Equal(ob, tb) {
						t.Errorf("--mmproj-only --model-name vit: %d bytes, not byte-identical to %s (%d bytes) (%v)", len(ob), theirs, len(tb), err)
					}
				}
			})
		}
	}
}
