package quantize

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/tensor"
)

// QuantizedTypes lists the quantized dtypes among c's tensors, in dtype
// order: the ggml block types and I8. Quantizing such a checkpoint is what
// llama-quantize calls requantizing; f32, f16 and bf16 are not quantized.
func QuantizedTypes(c *checkpoint.Checkpoint) []tensor.DType {
	var out []tensor.DType
	for _, t := range c.Tensors {
		if (t.DType.Quantized() || t.DType == tensor.I8) && !slices.Contains(out, t.DType) {
			out = append(out, t.DType)
		}
	}
	slices.Sort(out)
	return out
}

func typeList(ds []tensor.DType) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = d.String()
	}
	return strings.Join(s, "/")
}

// CheckRequantize refuses to quantize c when it is already quantized,
// unless allow (llama-quantize's --allow-requantize): the losses add up,
// and the report could only measure the error against the quantized
// weights, not the originals.
func CheckRequantize(c *checkpoint.Checkpoint, allow bool) error {
	qs := QuantizedTypes(c)
	if len(qs) == 0 || allow {
		return nil
	}
	return fmt.Errorf("quantize: %s is already quantized (%s): quantizing it again adds to that loss, and the error "+
		"reported would be measured against the %s weights, not the originals; quantize the f32/f16/bf16 original, "+
		"or pass --allow-requantize", c.Path, typeList(qs), typeList(qs))
}

// MeasuredAgainst says what the errors of a report are measured against,
// given the quantized types of the source (QuantizedTypes): "source
// weights", or for a quantized source "dequantized Q8_0 source weights".
func MeasuredAgainst(quantized []tensor.DType) string {
	if len(quantized) == 0 {
		return "source weights"
	}
	return "dequantized " + typeList(quantized) + " source weights"
}
