package verify_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/tfconv/tfconv/convert"
	"github.com/tfconv/tfconv/model"
	"github.com/tfconv/tfconv/verify"
)

// Compare runs two loaded models on the same tokens and measures how far
// the candidate's logits are from the reference's (KLD, top-1 agreement,
// per-layer hidden states), against thresholds chosen from the weight
// types the models were loaded with. Here the candidate is an f32 GGUF
// converted from the reference, a tiny LLaMA transformers wrote, so it
// computes the same numbers: the f32 pair's thresholds hold.
func ExampleCompare() {
	dir, err := os.MkdirTemp("", "tfconv-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	const hf = "../testdata/verify/llama"
	gguf := filepath.Join(dir, "llama-f32.gguf")
	if _, err := convert.Run(hf, gguf, convert.Options{OutType: convert.OutF32}); err != nil {
		log.Fatal(err)
	}
	ref, err := model.Load(hf, model.LoadOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer ref.Close()
	cand, err := model.Load(gguf, model.LoadOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer cand.Close()

	rep, err := verify.Compare(ref, cand, verify.Options{Tokens: []int{1, 314, 351, 864, 330, 390, 888, 716}, AttnLayer: -1})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("weights:", rep.RefTypes, rep.CandTypes, "thresholds:", rep.Thresholds.Pair)
	fmt.Println("positions:", rep.Summary.Positions, "layers:", len(rep.Layers), "pass:", rep.Pass)
	// Output:
	// weights: [F32] [F32] thresholds: f32
	// positions: 8 layers: 2 pass: true
}
