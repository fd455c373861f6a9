package model_test

import (
	"fmt"
	"log"

	"github.com/tfconv/tfconv/model"
)

// Load reads a checkpoint into a runnable model (here a tiny LLaMA that
// transformers wrote; a GGUF or .tfn loads the same way), which keeps what
// it read: the tensors' stored types and the metadata. Generate decodes
// greedily; the eight new tokens are those transformers' generate() gives
// for this prompt (testdata/model/hf-tiny/llama/generate.json).
func ExampleLoad() {
	m, err := model.Load("../testdata/model/hf-tiny/llama", model.LoadOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	c := m.Config()
	fmt.Println(c.Arch, c.Layers, "layers, vocab", c.Vocab, "-", len(m.Tensors), "tensors stored as", m.Tensors[0].DType)

	g, err := m.Generate([]int{1, 15, 250, 999, 3, 87}, model.GenerateOptions{MaxNewTokens: 8, NoEOS: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(g.Tokens)
	// Output:
	// llama 2 layers, vocab 1000 - 21 tensors stored as F32
	// [1 15 250 999 3 87 57 960 960 726 826 855 997 122]
}
