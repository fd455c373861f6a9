package arch

import (
	"fmt"
	"math"

	"github.com/tfconv/tfconv/tensor"
)

// Transform returns the rearrangement l makes of tensor name (HF → GGUF,
// or GGUF → HF when inverse) for a tensor of the given shape (the input's),
// and the shape of its output. qHeads and kHeads are the query and
// key/value head counts the Q/K permutations and the fused-QKV regrouping
// split rows by. dst and src of the returned func have the same length,
// src laid out in shape; nil means the values are copied as they are.
// convert applies it to whole tensors, model to a fused projection's
// output rows: one meaning of the layout, one place.
func (l Layout) Transform(name string, shape tensor.Shape, qHeads, kHeads int64, inverse bool) (func(dst, src []float32), tensor.Shape, error) {
	switch l {
	case LayoutPermuteQ, LayoutPermuteK:
		h := qHeads
		if l == LayoutPermuteK {
			h = kHeads
		}
		if len(shape) < 1 || len(shape) > 2 {
			return nil, nil, fmt.Errorf("arch: tensor %q: shape %v: want 1 or 2 dimensions", name, shape)
		}
		rows, cols := shape[0], int64(1)
		if len(shape) == 2 {
			cols = shape[1]
		}
		if h <= 0 || rows%(2*h) != 0 {
			return nil, nil, fmt.Errorf("arch: tensor %q: %d rows do not split into %d heads of even size", name, rows, h)
		}
		return permuteRows(int(h), int(rows), int(cols), inverse), shape.Clone(), nil
	case LayoutNormPlusOne:
		d := float32(1)
		if inverse {
			d = -1
		}
		return func(dst, src []float32) {
			for i, v := range src {
				dst[i] = v + d
			}
		}, shape.Clone(), nil
	case LayoutQKVGroups:
		rows, cols := int64(0), int64(1)
		if len(shape) >= 1 {
			rows = shape[0]
		}
		if len(shape) == 2 {
			cols = shape[1]
		}
		if len(shape) < 1 || len(shape) > 2 || qHeads <= 0 || kHeads <= 0 || qHeads%kHeads != 0 || rows%(qHeads+2*kHeads) != 0 {
			return nil, nil, fmt.Errorf("arch: tensor %q: shape %v does not split into q, k, v of %d/%d heads", name, shape, qHeads, kHeads)
		}
		return regroupQKV(int(qHeads), int(kHeads), int(rows/(qHeads+2*kHeads)), int(cols), inverse), shape.Clone(), nil
	case LayoutTranspose:
		switch len(shape) {
		case 2:
			return transpose(int(shape[0]), int(shape[1])), tensor.Shape{shape[1], shape[0]}, nil
		case 3:
			n, r, c := int(shape[0]), int(shape[1]), int(shape[2])
			one := transpose(r, c)
			return func(dst, src []float32) {
				for i := 0; i < n; i++ {
					one(dst[i*r*c:(i+1)*r*c], src[i*r*c:(i+1)*r*c])
				}
			}, tensor.Shape{shape[0], shape[2], shape[1]}, nil
		}
		return nil, nil, fmt.Errorf("arch: tensor %q: shape %v: want a matrix or a stack of them", name, shape)
	case LayoutSqueeze:
		if inverse {
			if len(shape) != 2 {
				return nil, nil, fmt.Errorf("arch: tensor %q: shape %v: want [channels, taps]", name, shape)
			}
			return nil, tensor.Shape{shape[0], 1, shape[1]}, nil
		}
		var out tensor.Shape
		for _, n := range shape {
			if n != 1 {
				out = append(out, n)
			}
		}
		return nil, out, nil
	case LayoutColumn, LayoutNegExp:
		var tf func(dst, src []float32)
		if l == LayoutNegExp {
			tf = func(dst, src []float32) {
				for i, v := range src {
					if inverse {
						dst[i] = float32(math.Log(float64(-v)))
					} else {
						dst[i] = -torchExp(v)
					}
				}
			}
		}
		if inverse {
			if len(shape) != 2 || shape[1] != 1 {
				return nil, nil, fmt.Errorf("arch: tensor %q: shape %v: want a column [n, 1]", name, shape)
			}
			return tf, tensor.Shape{shape[0]}, nil
		}
		if len(shape) != 1 {
			return nil, nil, fmt.Errorf("arch: tensor %q: shape %v: want a vector", name, shape)
		}
		return tf, tensor.Shape{shape[0], 1}, nil
	case LayoutGroups:
		if inverse {
			n := int64(1)
			for _, x := range shape {
				n *= x
			}
			return nil, tensor.Shape{n}, nil
		}
	}
	return nil, shape.Clone(), nil
}

// torchExp is e^d as torch computes it in float32 on the CPU, which the
// converter's −exp(A_log) runs: SLEEF's 1-ULP exp (ATen's vectorised
// exp), d = q·ln 2 + s with q = round(d·log2 e) and ln 2 in two parts,
// e^s by a degree-6 polynomial in fused multiply-adds, scaled by 2^q. A
// correctly rounded exp differs from it in about one value of eleven
// (278630 of 3000003 A_log-like values, Debian trixie's torch 2.6, AVX-512);
// this one in none of them.
func torchExp(d float32) float32 {
	const (
		log2e        = float32(1.4426950408889634)
		ln2Hi, ln2Lo = float32(0.693145751953125), float32(1.428606765330187045e-06)
	)
	if d < -104 {
		return 0
	}
	if d > 104 {
		return float32(math.Inf(1))
	}
	fma := func(x, y, z float32) float32 { return float32(math.FMA(float64(x), float64(y), float64(z))) }
	q := float32(math.RoundToEven(float64(d * log2e)))
	s := fma(q, -ln2Hi, d)
	s = fma(q, -ln2Lo, s)
	u := float32(0.000198527617612853646278381)
	for _, c := range []float32{0.00139304355252534151077271, 0.00833336077630519866943359,
		0.0416664853692054748535156, 0.166666671633720397949219, 0.5} {
		u = fma(u, s, c)
	}
	u = 1 + fma(s*s, u, s)
	return float32(math.Ldexp(float64(u), int(q)))
}

// permuteRows returns llama.cpp's rotary row permutation for a [rows, cols]
// matrix of heads heads: within each head of d rows, row j·d/2+i (j ∈ {0,1})
// goes to row 2i+j. inverse undoes it.
func permuteRows(heads, rows, cols int, inverse bool) func(dst, src []float32) {
	d := rows / heads
	half := d / 2
	return func(dst, src []float32) {
		for h := 0; h < heads; h++ {
			for i := 0; i < half; i++ {
				for j := 0; j < 2; j++ {
					hfRow := h*d + j*half + i
					ggRow := h*d + 2*i + j
					from, to := hfRow, ggRow
					if inverse {
						from, to = ggRow, hfRow
					}
					copy(dst[to*cols:(to+1)*cols], src[from*cols:(from+1)*cols])
				}
			}
		}
	}
}

// regroupQKV returns the row regrouping of a fused QKV projection of heads
// query and groups key/value heads of d rows each (cols columns): Hugging
// Face's group g holds heads/groups query heads, then one key and one value
// head; llama.cpp's layout is every query head, every key head, every value
// head. inverse undoes it.
func regroupQKV(heads, groups, d, cols int, inverse bool) func(dst, src []float32) {
	per := heads / groups
	return func(dst, src []float32) {
		move := func(hf, gg int) {
			from, to := hf*d, gg*d
			if inverse {
				from, to = to, from
			}
			copy(dst[to*cols:(to+d)*cols], src[from*cols:(from+d)*cols])
		}
		for g := 0; g < groups; g++ {
			base := g * (per + 2)
			for j := 0; j < per; j++ {
				move(base+j, g*per+j)
			}
			move(base+per, heads+g)
			move(base+per+1, heads+groups+g)
		}
	}
}

// transpose returns the transform of a [rows, cols] matrix into [cols, rows].
func transpose(rows, cols int) func(dst, src []float32) {
	return func(dst, src []float32) {
		// Blocked so both sides stay in cache for large matrices.
		const blk = 64
		for r0 := 0; r0 < rows; r0 += blk {
			r1 := min(r0+blk, rows)
			for c0 := 0; c0 < cols; c0 += blk {
				c1 := min(c0+blk, cols)
				for r := r0; r < r1; r++ {
					for c := c0; c < c1; c++ {
						dst[c*rows+r] = src[r*cols+c]
					}
				}
			}
		}
	}
}
