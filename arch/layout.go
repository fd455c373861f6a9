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
	case LayoutConv1D:
		switch {
		case !inverse && len(shape) == 3 && shape[1] == 1:
			return nil, tensor.Shape{shape[0], shape[2]}, nil
		case inverse && len(shape) == 2:
			return nil, tensor.Shape{shape[0], 1, shape[1]}, nil
		}
		return nil, nil, fmt.Errorf("arch: tensor %q: shape %v is not a depthwise convolution's weight", name, shape)
	case LayoutNegExp:
		if inverse {
			return func(dst, src []float32) {
				for i, v := range src {
					dst[i] = torchLogf(-v)
				}
			}, shape.Clone(), nil
		}
		return func(dst, src []float32) {
			for i, v := range src {
				dst[i] = -torchExpf(v)
			}
		}, shape.Clone(), nil
	}
	return nil, shape.Clone(), nil
}

// torchExpf is eˣ in float32 as torch's vectorised CPU kernel computes it
// (SLEEF's expf of 1 ulp, with fused multiply-adds), which the converter
// runs on A_log: x = q·ln2 + s with q = rint(x/ln2) (ln2 split in two
// parts), a degree-6 polynomial in s, then the exponent q added. It is
// not the correctly rounded eˣ (which differs in the last bit of 165 of
// the fixture's 2048 values of a layer's A); this gives the converter's
// bytes.
func torchExpf(x float32) float32 {
	const (
		invLn2 = float32(1.442695040888963407359924681001892137426645954152985934135449406931)
		ln2Hi  = float32(0.693145751953125)
		ln2Lo  = float32(1.428606765330187045e-06)
	)
	switch {
	case x != x:
		return x
	case x < -104:
		return 0
	case x > 104:
		return float32(math.Inf(1))
	}
	fma := func(a, b, c float32) float32 { return float32(math.FMA(float64(a), float64(b), float64(c))) }
	q := float32(math.RoundToEven(float64(x * invLn2)))
	s := fma(q, -ln2Hi, x)
	s = fma(q, -ln2Lo, s)
	u := float32(0.000198527617612853646278381)
	u = fma(u, s, 0.00139304355252534151077271)
	u = fma(u, s, 0.00833336077630519866943359)
	u = fma(u, s, 0.0416664853692054748535156)
	u = fma(u, s, 0.166666671633720397949219)
	u = fma(u, s, 0.5)
	u = 1 + fma(s*s, u, s)
	return float32(math.Ldexp(float64(u), int(q)))
}

// torchLogf is the inverse of torchExpf: ln a, moved by up to 4 ulps to a
// value torchExpf takes back to a exactly when there is one, so that
// GGUF → HF → GGUF gives the same A bytes (A_log itself need not come
// back: several values of it round to one A).
func torchLogf(a float32) float32 {
	x := float32(math.Log(float64(a)))
	if torchExpf(x) == a || math.IsInf(float64(x), 0) || x != x {
		return x
	}
	for d := 1; d <= 4; d++ {
		up, down := x, x
		for i := 0; i < d; i++ {
			up = math.Nextafter32(up, float32(math.Inf(1)))
			down = math.Nextafter32(down, float32(math.Inf(-1)))
		}
		if torchExpf(up) == a {
			return up
		}
		if torchExpf(down) == a {
			return down
		}
	}
	return x
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
