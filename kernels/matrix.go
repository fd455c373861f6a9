package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// Matrix is a weight matrix of Rows×Cols elements, row-major, kept in the
// dtype its checkpoint stores it in. Data holds the rows back to back in that
// dtype's on-disk layout: little-endian scalars for F32/F16/BF16, one int8 per
// element for I8 (with one float32 scale per row in Scales), and whole ggml
// blocks for the block types (a row of Cols elements is Cols/BlockSize
// blocks). Matrices are read-only once built and safe for concurrent use.
type Matrix struct {
	DType      tensor.DType
	Rows, Cols int
	Data       []byte
	Scales     []float32 // I8 only: the dequantized row r is Scales[r]·Data[r]

	// RoundActivations makes MatMul compute MatMulQ: the activations are
	// rounded to the weight type's ggml vec_dot_type first, as llama.cpp's
	// CPU backend rounds them, instead of multiplying in float32. It is a
	// property of how a model uses the matrix (model.LoadOptions
	// MatchLlamaCpp sets it), not of the weights.
	RoundActivations bool
}

// NewMatrix checks that data holds exactly rows×cols elements of dtype t laid
// out as Matrix documents, and returns the Matrix. For I8, scales must hold
// one value per row; it is ignored for every other dtype.
func NewMatrix(t tensor.DType, rows, cols int, data []byte, scales []float32) (*Matrix, error) {
	if rows < 0 || cols < 0 {
		return nil, fmt.Errorf("kernels: matrix %d×%d: negative dimension", rows, cols)
	}
	if !quant.CanDequantize(t) {
		return nil, tensor.Unsupported("kernels: matrix dtype %v is not supported", t)
	}
	if bs := int(t.BlockSize()); cols%bs != 0 {
		return nil, fmt.Errorf("kernels: matrix %v: row length %d is not a multiple of the block size %d", t, cols, bs)
	}
	rb, err := t.ByteSize(int64(cols))
	if err != nil {
		return nil, fmt.Errorf("kernels: matrix %d×%d %v: %w", rows, cols, t, err)
	}
	want, err := tensor.MulInt64(rb, int64(rows))
	if err != nil || want != int64(len(data)) {
		return nil, fmt.Errorf("kernels: matrix %d×%d %v needs %d bytes, have %d", rows, cols, t, want, len(data))
	}
	m := &Matrix{DType: t, Rows: rows, Cols: cols, Data: data}
	if t == tensor.I8 {
		if len(scales) != rows {
			return nil, fmt.Errorf("kernels: int8 matrix with %d rows has %d scales", rows, len(scales))
		}
		m.Scales = scales
	}
	return m, nil
}

// F32Matrix wraps a []float32 as an F32 Matrix without copying.
func F32Matrix(rows, cols int, w []float32) *Matrix {
	if len(w) != rows*cols {
		panic(fmt.Sprintf("kernels: F32Matrix %d×%d given %d values", rows, cols, len(w)))
	}
	var data []byte
	if len(w) > 0 {
		data = unsafeBytes(w)
	}
	return &Matrix{DType: tensor.F32, Rows: rows, Cols: cols, Data: data}
}

// RowBytes is the size in bytes of one row.
func (m *Matrix) RowBytes() int {
	n, _ := m.DType.ByteSize(int64(m.Cols))
	return int(n)
}

// Row decodes row r into dst (len Cols) as float32: the exact values ggml's
// dequantize_row_* gives for block types. It is what an embedding lookup
// uses.
func (m *Matrix) Row(dst []float32, r int) {
	rb := m.RowBytes()
	src := m.Data[r*rb : (r+1)*rb]
	if m.DType == tensor.F32 {
		for i := range dst[:m.Cols] {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
		return
	}
	if err := quant.Dequantize(dst[:m.Cols], src, m.DType); err != nil {
		panic(err) // NewMatrix checked dtype and sizes
	}
	if m.DType == tensor.I8 {
		s := m.Scales[r]
		for i := range dst[:m.Cols] {
			dst[i] *= s
		}
	}
}

var rowPool = sync.Pool{New: func() any { return new([]float32) }}

// MatMul computes dst = x·Wᵀ for x of M rows by w.Cols columns and dst of M
// rows by w.Rows columns:
//
//	dst[m][n] = Σ_k x[m][k] · W[n][k]
//
// with W's elements the float32 values Row decodes, and float32
// accumulation. The generic version (matMulGeneric) decodes one weight row at
// a time and accumulates in index order; the SIMD versions never decode the
// whole matrix either (f32 rows are used in place, block types are decoded
// one small block at a time) and differ from it only by the order of the
// float32 additions (and, for Q8_0 and Q4_0 at M = 1, by one rounding a
// block: the package doc's Accuracy). Work is split over Threads() goroutines by weight rows.
// A matrix with RoundActivations set is multiplied by MatMulQ instead.
func MatMul(dst, x []float32, M int, w *Matrix) {
	if w.RoundActivations {
		MatMulQ(dst, x, M, w)
		return
	}
	countStreamed(M, w)
	matMulF32(dst, x, M, w)
}

// matMulF32 is MatMul with float32 activations whatever RoundActivations says.
func matMulF32(dst, x []float32, M int, w *Matrix) {
	K, N := w.Cols, w.Rows
	if M < 0 || len(x) < M*K || len(dst) < M*N {
		panic(fmt.Sprintf("kernels: MatMul M=%d K=%d N=%d with len(x)=%d len(dst)=%d", M, K, N, len(x), len(dst)))
	}
	s := active
	switch {
	case M == 0 || N == 0:
	case s == nil:
		matMulGeneric(dst, x, M, w)
	case K == 0:
		clear(dst[:M*N])
	case M == 1:
		gemvSIMD(s, dst[:N], x[:K], w)
	default:
		gemmSIMD(s, dst[:M*N], x[:M*K], M, w)
	}
}

// matMulGeneric is MatMul in plain Go.
func matMulGeneric(dst, x []float32, M int, w *Matrix) {
	K, N := w.Cols, w.Rows
	parallelFor(N, 16, func(lo, hi int) {
		p := rowPool.Get().(*[]float32)
		if cap(*p) < K {
			*p = make([]float32, K)
		}
		row := (*p)[:K]
		for n := lo; n < hi; n++ {
			w.Row(row, n)
			for m := 0; m < M; m++ {
				dst[m*N+n] = dotGeneric(x[m*K:(m+1)*K], row)
			}
		}
		rowPool.Put(p)
	})
}

// Dot returns Σ a[i]·b[i] over len(a) elements in float32. The generic
// version accumulates in index order; the SIMD versions keep several
// partial sums and add them at the end.
func Dot(a, b []float32) float32 {
	if s := active; s != nil {
		return dotSIMD(s, a, b)
	}
	return dotGeneric(a, b)
}

// dotGeneric is Dot in plain Go, accumulated in index order.
func dotGeneric(a, b []float32) float32 {
	b = b[:len(a)]
	var s float32
	for i, v := range a {
		s += v * b[i]
	}
	return s
}
