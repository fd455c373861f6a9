package quantize

import (
	"fmt"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// The rule itself, type by type.
func TestSourceReencodes(t *testing.T) {
	t.Parallel()
	plain, gptq := Source{Types: []tensor.DType{tensor.Q8_0}}, Source{Packed: "GPTQ 4-bit"}
	for _, c := range []struct {
		src      Source
		from, to tensor.DType
		lost     bool
		want     bool
	}{
		{plain, tensor.Q8_0, tensor.Q4_K, false, true},
		{plain, tensor.Q8_0, tensor.Q8_0, false, false},
		{plain, tensor.Q8_0, tensor.F16, false, false},
		{plain, tensor.Q8_0, tensor.F32, false, false},
		{plain, tensor.F32, tensor.Q4_K, false, false}, // a float tensor beside the quantized ones
		{plain, tensor.F32, tensor.I8, true, true},     // converted to f32 first: its source type is gone
		{plain, tensor.I8, tensor.Q8_0, false, true},
		{gptq, tensor.F16, tensor.Q4_K, true, true},
		{gptq, tensor.F16, tensor.BF16, true, false},
		{Source{}, tensor.F8_E4M3, tensor.Q8_0, false, false},
		{Source{}, tensor.BF16, tensor.Q4_K, true, false},
	} {
		if got := c.src.Reencodes(c.from, c.to, c.lost); got != c.want {
			t.Errorf("%v: %v -> %v (lost %v): %v, want %v", c.src, c.from, c.to, c.lost, got, c.want)
		}
	}
}

// llama-quantize takes a type by its llama_ftype number too.
func TestParseTargetFileTypeNumber(t *testing.T) {
	t.Parallel()
	for num, want := range map[string]tensor.DType{"15": tensor.Q4_K, "7": tensor.Q8_0, "0": tensor.F32, "1": tensor.F16, "32": tensor.BF16, "18": tensor.Q6_K} {
		got, err := ParseTarget(num)
		if err != nil || got.Type != want || fmt.Sprint(uint32(got.FileType)) != num {
			t.Errorf("ParseTarget(%q) = %+v, %v; want %v", num, got, err, want)
		}
	}
	for _, bad := range []string{"4", "99", "-1"} {
		if got, err := ParseTarget(bad); err == nil {
			t.Errorf("ParseTarget(%q) = %+v", bad, got)
		}
	}
}
