package kernels

import (
	"math"
	"testing"

	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// Every quant record that names a row-dot activation type has a row-dot
// kernel here (MatMulQ through QuantizeActivations and qdot), and every
// type quantize may write multiplies (MatMul, MatMulQ); the product agrees
// with the dequantized weights' to the rounding of the activations.
func TestEveryTypeHasARowDot(t *testing.T) {
	t.Parallel()
	const rows, cols = 3, 512
	x := make([]float32, cols)
	for i := range x {
		x[i] = float32(math.Cos(float64(i) * 0.11))
	}
	for _, r := range quant.Types() {
		d := r.DType
		if r.RowDot == tensor.Invalid && r.Write == 0 {
			continue
		}
		src := make([]float32, rows*cols)
		for i := range src {
			src[i] = float32(math.Sin(float64(i)*0.37)) * 0.5
		}
		size, _ := d.ByteSize(rows * cols)
		data := make([]byte, size)
		var err error
		if r.Encode != nil {
			err = quant.Quantize(data, src, d)
		} else {
			w := make([]float32, cols)
			for i := range w {
				w[i] = 1
			}
			err = quant.QuantizeRows(data, src, d, cols, w)
		}
		if err != nil {
			t.Fatalf("%v: %v", d, err)
		}
		if r.RowDot != tensor.Invalid {
			ab, _ := r.RowDot.ByteSize(cols)
			if err := QuantizeActivations(make([]byte, ab), x, r.RowDot); err != nil {
				t.Errorf("%v: its row-dot activations %v: %v", d, r.RowDot, err)
				continue
			}
		}
		m, err := NewMatrix(d, rows, cols, data, nil)
		if err != nil {
			t.Errorf("%v: %v", d, err)
			continue
		}
		deq := make([]float32, rows*cols)
		if err := quant.Dequantize(deq, data, d); err != nil {
			t.Fatal(err)
		}
		want := make([]float32, rows)
		for n := 0; n < rows; n++ {
			var s float64
			for k := 0; k < cols; k++ {
				s += float64(deq[n*cols+k]) * float64(x[k])
			}
			want[n] = float32(s)
		}
		got := make([]float32, rows)
		MatMulQ(got, x, 1, m)
		for n := range got {
			if e := math.Abs(float64(got[n] - want[n])); e > 0.05+0.01*math.Abs(float64(want[n])) {
				t.Errorf("%v row %d: MatMulQ %g, dequantized dot %g", d, n, got[n], want[n])
			}
		}
	}
}
