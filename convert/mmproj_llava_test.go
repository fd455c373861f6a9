package convert

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
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

// TestLlavaTextMatchesLlamaCpp: the text GGUFs of the tiny
// LlavaForConditionalGeneration and LlavaNextForConditionalGeneration of
// testdata/vision, at f32 and f16, hold llama.cpp d32676d7's keys, values
// and tensor bytes (quantization_version's place aside).
func TestLlavaTextMatchesLlamaCpp(t *testing.T) {
	t.Parallel()
	for _, fam := range []string{"llava15", "llavanext"} {
		ref := readLlamacppRecord(t, fam)
		for _, ot := range []string{OutF32, OutF16} {
			t.Run(fam+"-"+ot, func(t *testing.T) {
				t.Parallel()
				dst := filepath.Join(t.TempDir(), fam+"-"+ot+".gguf")
				if _, err := Run(filepath.Join("..", "testdata", "vision", fam, "hf"), dst, Options{OutType: ot}); err != nil {
					t.Fatal(err)
				}
				matchRecord(t, ref, "text-"+ot, dst)
			})
		}
	}
}
