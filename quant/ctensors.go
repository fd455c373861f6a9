package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"

	"github.com/tfconv/tfconv/tensor"
)

// CTQuant is compressed-tensors' round-to-nearest quantization of a weight
// (its calculate_qparams from the min and max of each group, then
// quantize), computed as the library computes it in torch: every step in
// the weight's own float type T, so each intermediate is rounded to T.
//
//	symmetric:  s = max(|min₀|, |max₀|) / (range/2),  z = 0
//	asymmetric: s = (max₀ − min₀) / range,             z = round(qmin − min₀/s) clamped
//	q = round(clamp(x/s + z, qmin, qmax))   (int: ties to even; FP8: cast to E4M3)
//
// with min₀ = min(min, 0), max₀ = max(max, 0), range = qmax − qmin (int b
// bits: −2^(b−1) … 2^(b−1)−1; FP8 E4M3: ±448) and s at least float32's
// epsilon.
type CTQuant struct {
	Bits      int  // 4 or 8 (int), 8 (FP8)
	Float     bool // FP8 E4M3 codes instead of integers
	Symmetric bool
	// GroupSize is the values per scale along a row; 0 is one scale per
	// row (strategy channel).
	GroupSize int
	// T is the weight's float type (F32, F16 or BF16).
	T tensor.DType
}

// ctEps is torch.finfo(torch.float32).eps, the smallest scale.
const ctEps = 1.1920928955078125e-07

// round is x rounded to q.T.
func (q CTQuant) round(x float32) float32 {
	switch q.T {
	case tensor.BF16:
		return BF16ToF32(F32ToBF16(x))
	case tensor.F16:
		return F16ToF32(F32ToF16(x))
	}
	return x
}

func (q CTQuant) limits() (lo, hi float32) {
	if q.Float {
		return -448, 448
	}
	return -float32(int(1) << (q.Bits - 1)), float32(int(1)<<(q.Bits-1) - 1)
}

// Check reports whether q is a scheme Quantize handles.
func (q CTQuant) Check(cols int) error {
	switch {
	case q.T != tensor.F32 && q.T != tensor.F16 && q.T != tensor.BF16:
		return fmt.Errorf("compressed-tensors quantization of a %v weight: the library computes in F32, F16 or BF16", q.T)
	case q.Float && (q.Bits != 8 || !q.Symmetric):
		return fmt.Errorf("compressed-tensors float quantization with %d bits (symmetric %v): FP8 E4M3, symmetric, is written", q.Bits, q.Symmetric)
	case !q.Float && q.Bits != 4 && q.Bits != 8:
		return fmt.Errorf("compressed-tensors int quantization with %d bits: 4 and 8 are written", q.Bits)
	case q.GroupSize < 0 || q.GroupSize > 0 && cols%q.GroupSize != 0:
		return fmt.Errorf("compressed-tensors group size %d does not divide a row of %d", q.GroupSize, cols)
	}
	return nil
}

// Groups is the number of scales per row.
func (q CTQuant) Groups(cols int) int {
	if q.GroupSize == 0 {
		return 1
	}
	return cols / q.GroupSize
}

// Quantize quantizes the [rows, cols] weight w (values of type T): codes
// (one per value, an integer in [qmin, qmax] or an E4M3 value), scales
// and zero points (rows × Groups, the scales exact in T).
func (q CTQuant) Quantize(w []float32, rows, cols int) (codes, scales, zeros []float32, err error) {
	if err := q.Check(cols); err != nil {
		return nil, nil, nil, err
	}
	if len(w) != rows*cols {
		return nil, nil, nil, fmt.Errorf("compressed-tensors quantization: %d values for %d×%d", len(w), rows, cols)
	}
	gs := q.GroupSize
	if gs == 0 {
		gs = cols
	}
	qmin, qmax := q.limits()
	rng := qmax - qmin
	ng := cols / gs
	codes, scales, zeros = make([]float32, len(w)), make([]float32, rows*ng), make([]float32, rows*ng)
	for r := range rows {
		for g := range ng {
			x := w[r*cols+g*gs : r*cols+(g+1)*gs]
			lo, hi := float32(0), float32(0)
			for _, v := range x {
				lo, hi = min(lo, v), max(hi, v)
			}
			var s, z float32
			if q.Symmetric {
				s = q.round(max(-lo, hi) / (rng / 2))
			} else {
				s = q.round(q.round(hi-lo) / rng)
			}
			s = max(s, q.round(ctEps))
			if !q.Symmetric {
				z = float32(math.RoundToEven(float64(min(max(q.round(qmin-q.round(lo/s)), qmin), qmax))))
			}
			scales[r*ng+g], zeros[r*ng+g] = s, z
			out := codes[r*cols+g*gs : r*cols+(g+1)*gs]
			for i, v := range x {
				y := q.round(v / s)
				if z != 0 {
					y = q.round(y + z)
				}
				y = min(max(y, qmin), qmax)
				if q.Float {
					out[i] = roundE4M3(y)
				} else {
					out[i] = float32(math.RoundToEven(float64(y)))
				}
			}
		}
	}
	return codes, scales, zeros, nil
}

// e4m3Values are the non-negative finite E4M3 values in code order (codes
// 0x00–0x7E), ascending.
var e4m3Values = func() []float32 {
	t := fp8Tables[tensor.F8_E4M3]
	v := make([]float32, 0x7F)
	for c := range v {
		v[c] = t[c]
	}
	return v
}()

// EncodeE4M3 is the E4M3 (float8_e4m3fn) code of x, rounded to nearest
// with ties to the even code as torch's cast rounds; |x| ≥ 448 gives ±448
// (the caller clamps; a NaN gives the NaN code).
func EncodeE4M3(x float32) byte {
	if x != x {
		return 0x7F
	}
	sign := byte(0)
	if math.Signbit(float64(x)) {
		sign, x = 0x80, -x
	}
	i := sort.Search(len(e4m3Values), func(i int) bool { return e4m3Values[i] >= x })
	switch {
	case i == len(e4m3Values):
		i = len(e4m3Values) - 1
	case i > 0 && e4m3Values[i] != x:
		below, above := x-e4m3Values[i-1], e4m3Values[i]-x
		if below < above || below == above && (i-1)%2 == 0 {
			i--
		}
	}
	return sign | byte(i)
}

// roundE4M3 is x rounded to the nearest E4M3 value.
func roundE4M3(x float32) float32 { return fp8Tables[tensor.F8_E4M3][EncodeE4M3(x)] }

// PackCT packs the [rows, cols] integer values (each in [−2^(bits−1),
// 2^(bits−1))) as compressed-tensors' pack_to_int32 does: each stored plus
// 2^(bits−1), 32/bits to a little-endian word, low bits first, along each
// row ([rows, ⌈cols·bits/32⌉] words, the last one of a row padded with
// zero bits) or, with alongColumns, down each column ([⌈rows·bits/32⌉,
// cols], the layout of asymmetric zero points).
func PackCT(vals []float32, rows, cols, bits int, alongColumns bool) []byte {
	per := 32 / bits
	off := int32(1) << (bits - 1)
	mask := uint32(1)<<bits - 1
	if alongColumns {
		wr := (rows + per - 1) / per
		out := make([]byte, 4*wr*cols)
		for r := range rows {
			for c := range cols {
				u := uint32(int32(vals[r*cols+c])+off) & mask
				i := 4 * ((r/per)*cols + c)
				w := binary.LittleEndian.Uint32(out[i:]) | u<<(uint(bits)*uint(r%per))
				binary.LittleEndian.PutUint32(out[i:], w)
			}
		}
		return out
	}
	wc := (cols + per - 1) / per
	out := make([]byte, 4*rows*wc)
	for r := range rows {
		for c := range cols {
			u := uint32(int32(vals[r*cols+c])+off) & mask
			i := 4 * (r*wc + c/per)
			w := binary.LittleEndian.Uint32(out[i:]) | u<<(uint(bits)*uint(c%per))
			binary.LittleEndian.PutUint32(out[i:], w)
		}
	}
	return out
}
