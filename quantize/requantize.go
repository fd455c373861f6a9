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
		if intQuantized(t.DType) && !slices.Contains(out, t.DType) {
			out = append(out, t.DType)
		}
	}
	slices.Sort(out)
	return out
}

// intQuantized reports whether d holds integer codes with scales: a ggml
// block type (Q*, IQ*, TQ*, MXFP4) or I8 with per-row scales. FP8 is not:
// like bf16 it is a published precision, each value a float of its own.
func intQuantized(d tensor.DType) bool { return d.Quantized() || d == tensor.I8 }

// Source is how a checkpoint's weights are already integer-quantized, for
// the one requantize rule (Source.Reencodes).
type Source struct {
	// Types are the ggml block types and I8 among its tensors
	// (QuantizedTypes).
	Types []tensor.DType
	// Packed names a GPTQ or AWQ checkpoint ("GPTQ 4-bit"), whose packed
	// integer weights the checkpoint presents dequantized, as float
	// tensors; "" for any other.
	Packed string
}

// SourceOf describes c's quantization. An FP8 checkpoint (quant_method
// fp8, compressed-tensors float, fbgemm_fp8) is not quantized in this
// sense: its weights are floats of a published precision.
func SourceOf(c *checkpoint.Checkpoint) Source {
	s := Source{Types: QuantizedTypes(c)}
	switch m, _ := c.SourceInfo.Str(checkpoint.SourceInfoQuantMethod); m {
	case "gptq", "gptq_v2", "awq":
		s.Packed = strings.ToUpper(strings.TrimSuffix(m, "_v2"))
		if bits, ok := c.SourceInfo.Int(checkpoint.SourceInfoQuantBits); ok {
			s.Packed += fmt.Sprintf(" %d-bit", bits)
		}
	}
	return s
}

// Quantized reports whether any of the source's weights are integer codes.
func (s Source) Quantized() bool { return len(s.Types) > 0 || s.Packed != "" }

// String names the source's quantization: "Q8_0", "Q4_K/Q6_K",
// "GPTQ 4-bit".
func (s Source) String() string {
	names := make([]string, 0, len(s.Types)+1)
	if s.Packed != "" {
		names = append(names, s.Packed)
	}
	for _, d := range s.Types {
		names = append(names, d.String())
	}
	return strings.Join(names, "/")
}

// Reencodes is the requantize rule, the one place it is decided: writing a
// tensor read as from into the type to re-encodes integer-quantized data
// when to is itself integer-quantized (a ggml block type or int8) and
// different, and from is integer-quantized, or stands for such data (every
// weight of a GPTQ/AWQ source, and every tensor of a quantized source that
// was converted to f32 first, lost says so). Only that needs
// --allow-requantize: a same-type copy, a lossless pass-through,
// dequantizing (to f32, f16 or bf16) and an FP8 source do not.
func (s Source) Reencodes(from, to tensor.DType, lost bool) bool {
	if from == to || !intQuantized(to) {
		return false
	}
	return intQuantized(from) || s.Packed != "" || (lost && len(s.Types) > 0)
}

// CheckRequantize refuses a plan that re-encodes src's integer-quantized
// weights into another quantized type (Reencodes) unless allow
// (llama-quantize's --allow-requantize): the losses add up, and the report
// could only measure the error against the quantized weights, not the
// originals. lost: the plan was made from src converted to f32 first, so
// its tensors no longer carry their source types. path names the source.
func CheckRequantize(path string, src Source, plan []Choice, lost, allow bool) error {
	if allow {
		return nil
	}
	for _, ch := range plan {
		if !ch.Copy && !ch.Exact && src.Reencodes(ch.Tensor.DType, ch.Type, lost) {
			if !src.Quantized() && intQuantized(ch.Tensor.DType) {
				// Blocks a conversion view copied from the checkpoint
				// (gpt-oss's MXFP4 experts): name their type.
				src.Types = []tensor.DType{ch.Tensor.DType}
			}
			return RequantizeError(path, src, ch.Tensor.Name, ch.Type)
		}
	}
	return nil
}

// RequantizeError is the refusal of re-encoding the quantized source at path
// as to without --allow-requantize; name, when not "", is the first tensor
// it would re-encode.
func RequantizeError(path string, src Source, name string, to tensor.DType) error {
	what := ""
	if name != "" {
		what = fmt.Sprintf(" (tensor %q)", name)
	}
	return fmt.Errorf("quantize: %s is already quantized (%s): re-encoding it as %v%s adds to that loss, and the error "+
		"reported would be measured against the %s weights, not the originals; quantize the f32/f16/bf16 original, "+
		"or pass --allow-requantize (a same-type copy, dequantizing with --type f32/f16/bf16, and --type copy need no flag)",
		path, src, to, what, src)
}

// MeasuredAgainst says what the errors of a report are measured against,
// given the source's quantization: "source weights", or for a quantized
// source "dequantized Q8_0 source weights" ("dequantized GPTQ 4-bit source
// weights").
func MeasuredAgainst(src Source) string {
	if !src.Quantized() {
		return "source weights"
	}
	return "dequantized " + src.String() + " source weights"
}
