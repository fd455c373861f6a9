package quantize_test

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log"
	"os"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/quantize"
	"github.com/tfconv/tfconv/tensor"
)

// Plan chooses each tensor's type by llama-quantize's rules for the target,
// Write quantizes into any io.Writer (a file through atomicfile in the CLI;
// here a hash). The f32 GGUF is the one llama.cpp's converter wrote for a
// tiny BERT; the types are those of llama-quantize's Q4_K_M file, and the
// whole file comes out byte for byte as llama-quantize wrote it (its
// tensor types and SHA-256 are in testdata/quantize/expected.json).
func ExampleWrite() {
	c, err := checkpoint.Open("../testdata/quantize/bert-f32.gguf")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	target, err := quantize.ParseTarget("q4_k_m")
	if err != nil {
		log.Fatal(err)
	}
	plan, err := quantize.Plan(c, quantize.Options{Target: target})
	if err != nil {
		log.Fatal(err)
	}
	count := map[tensor.DType]int{}
	for _, info := range quantize.OutputInfos(plan) {
		count[info.DType]++
	}
	fmt.Println("F32:", count[tensor.F32], "Q4_K:", count[tensor.Q4_K], "Q6_K:", count[tensor.Q6_K], "of", len(plan))

	h := sha256.New()
	if _, err := quantize.Write(h, c, plan, target, quantize.GGUF, quantize.RunOptions{}); err != nil {
		log.Fatal(err)
	}
	fmt.Println("same bytes as llama-quantize:", fmt.Sprintf("%x", h.Sum(nil)) == llamaQuantizeSHA256("bert", "Q4_K_M"))
	// Output:
	// F32: 24 Q4_K: 10 Q6_K: 3 of 37
	// same bytes as llama-quantize: true
}

// llamaQuantizeSHA256 is the SHA-256 of llama-quantize's file of model in
// type, as testdata/quantize/expected.json records it.
func llamaQuantizeSHA256(model, typ string) string {
	var exp map[string]map[string]struct{ SHA256 string }
	b, err := os.ReadFile("../testdata/quantize/expected.json")
	if err != nil {
		log.Fatal(err)
	}
	if err := json.Unmarshal(b, &exp); err != nil {
		log.Fatal(err)
	}
	return exp[model][typ].SHA256
}
