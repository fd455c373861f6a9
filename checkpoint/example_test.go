package checkpoint_test

import (
	"fmt"
	"log"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// Open reads any checkpoint's headers (here a GGUF that llama.cpp's
// llama-quantize wrote; a Hugging Face folder, a .safetensors, a
// pytorch_model.bin or a .tfn opens the same way) and lists its tensors;
// data is read only when a tensor is. The counts and the file type are
// the ones llama.cpp reports for this file (testdata/tiny-fortunes/README.md).
func ExampleOpen() {
	c, err := checkpoint.Open("../testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	arch, _ := c.Metadata.Str("general.architecture")
	ftype, _ := c.Metadata.Int("general.file_type")
	count := map[tensor.DType]int{}
	for _, t := range c.Tensors {
		count[t.DType]++
	}
	fmt.Println(c.Format, arch, "file type", ftype)
	fmt.Println("F32:", count[tensor.F32], "Q8_0:", count[tensor.Q8_0])

	// One tensor's bytes, decoded to float32.
	t, _ := c.Tensor("output_norm.weight")
	raw, err := t.ReadAll()
	if err != nil {
		log.Fatal(err)
	}
	n, err := t.Shape.NumElements()
	if err != nil {
		log.Fatal(err)
	}
	w := make([]float32, n)
	if err := quant.Dequantize(w, raw, t.DType); err != nil {
		log.Fatal(err)
	}
	fmt.Println(t.Name, t.DType, t.Shape, len(w), "values")
	// Output:
	// gguf llama file type 7
	// F32: 9 Q8_0: 30
	// output_norm.weight F32 [256] 256 values
}
