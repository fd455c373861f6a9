package convert_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/convert"
	"github.com/tfconv/tfconv/quantize"
)

// Run converts a Hugging Face checkpoint (a tiny GPT-2 written by
// transformers) to a GGUF as llama.cpp's convert_hf_to_gguf.py does, with
// f16 weights by default, and re-reads the output to check it. Every
// tensor's bytes then equal those of the file llama.cpp's converter wrote
// (their SHA-256 are in testdata/convert/gpt2/expected.json).
func ExampleRun() {
	dir, err := os.MkdirTemp("", "tfconv-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	dst := filepath.Join(dir, "gpt2.gguf")
	rep, err := convert.Run("../testdata/convert/gpt2/hf", dst, convert.Options{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(rep.Format, rep.Arch, rep.OutType, len(rep.Tensors), "tensors, self-check", rep.SelfCheck)

	var exp struct {
		Files map[string]struct {
			Tensors []struct{ Name, SHA256 string }
		}
	}
	b, err := os.ReadFile("../testdata/convert/gpt2/expected.json")
	if err != nil {
		log.Fatal(err)
	}
	if err := json.Unmarshal(b, &exp); err != nil {
		log.Fatal(err)
	}
	c, err := checkpoint.Open(dst)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	same := 0
	want := exp.Files["f16"].Tensors
	for i, t := range c.Tensors {
		data, err := t.ReadAll()
		if err != nil {
			log.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if i < len(want) && want[i].Name == t.Name && want[i].SHA256 == hex.EncodeToString(sum[:]) {
			same++
		}
	}
	fmt.Printf("%d of %d tensors equal llama.cpp's, in its order\n", same, len(want))
	// Output:
	// gguf gpt2 f16 29 tensors, self-check ok
	// 29 of 29 tensors equal llama.cpp's, in its order
}

// Quantize is the whole of tfconv quantize SRC DST: open the source (any
// checkpoint tfconv reads; a Hugging Face folder streams through convert's
// GGUF view, no scratch file), check the destination, plan, quantize and
// commit the output whole. Here the output is the Q4_K_M file
// llama-quantize wrote for the same tiny BERT, byte for byte.
func ExampleQuantize() {
	target, err := quantize.ParseTarget("q4_k_m")
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	dst := dir + "/bert-Q4_K_M.gguf"
	rep, err := convert.Quantize("../testdata/quantize/bert-f32.gguf", dst, convert.QuantizeOptions{Options: quantize.Options{Target: target}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d tensors, %.2f bits per weight, errors measured against the %s\n", len(rep.Tensors), rep.BitsPerWeight, rep.MeasuredAgainst)
	out, err := os.ReadFile(dst)
	if err != nil {
		log.Fatal(err)
	}
	var expected map[string]map[string]struct{ SHA256 string } // llama-quantize's files, by model and type
	if b, err := os.ReadFile("../testdata/quantize/expected.json"); err != nil || json.Unmarshal(b, &expected) != nil {
		log.Fatal("testdata/quantize/expected.json: ", err)
	}
	fmt.Println("same bytes as llama-quantize:", fmt.Sprintf("%x", sha256.Sum256(out)) == expected["bert"]["Q4_K_M"].SHA256)
	// Output:
	// 37 tensors, 5.74 bits per weight, errors measured against the source weights
	// same bytes as llama-quantize: true
}
