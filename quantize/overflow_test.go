package quantize

import (
	"errors"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// TestRunOverflow: values beyond the output type's range (f16 past 65504, a
// Q8_0 block whose scale passes f16's) fail the tensor, naming it with the
// count and largest magnitude over all its chunks; AllowOverflow reports
// them instead.
func TestRunOverflow(t *testing.T) {
	t.Parallel()
	const rows, cols = 4096, 256 // 4 chunks of rows
	x := make([]float32, rows*cols)
	for i := range x {
		x[i] = float32(i%17)*0.01 - 0.08
	}
	x[3] = 7e4         // chunk 0
	x[len(x)-1] = -2e7 // the last chunk
	raw := make([]byte, 4*len(x))
	if err := quant.Quantize(raw, x, tensor.F32); err != nil {
		t.Fatal(err)
	}
	info := tensor.Info{Name: "blk.0.ffn_up.weight", DType: tensor.F32, Shape: tensor.Shape{rows, cols}, Size: int64(len(raw))}
	src := checkpoint.LazyTensor(info, "mem", func() ([]byte, error) { return raw, nil })
	for _, c := range []struct {
		dt    tensor.DType
		count int64
	}{{tensor.F16, 2}, {tensor.Q8_0, 32}} {
		plan := []Choice{{Tensor: src, Type: c.dt}}
		_, err := Run(plan, nil, RunOptions{Threads: 2})
		var oe *quant.OverflowError
		if !errors.As(err, &oe) || oe.Count != c.count || oe.MaxAbs != 2e7 || !strings.Contains(err.Error(), `"blk.0.ffn_up.weight"`) ||
			!strings.Contains(err.Error(), "--allow-overflow") {
			t.Errorf("%v: %v, want %d values overflowing, largest 2e7", c.dt, err, c.count)
			continue
		}
		rep, err := Run(plan, nil, RunOptions{Threads: 2, AllowOverflow: true})
		if err != nil {
			t.Fatal(err)
		}
		if tr := rep.Tensors[0]; tr.Overflow != c.count || tr.OverflowMaxAbs != 2e7 {
			t.Errorf("%v, allowed: overflow %d, largest %g", c.dt, tr.Overflow, tr.OverflowMaxAbs)
		}
	}
}
