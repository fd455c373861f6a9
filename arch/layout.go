package arch

import (
	"fmt"

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
	case LayoutNegExp:
		if inverse {
			return func(dst, src []float32) {
				for i, v := range src {
					dst[i] = logOfExpf(-v)
				}
			}, shape.Clone(), nil
		}
		return func(dst, src []float32) {
			for i, v := range src {
				dst[i] = -expf(v)
			}
		}, shape.Clone(), nil
	case LayoutSqueeze:
		if inverse {
			if len(shape) != 2 {
				return nil, nil, fmt.Errorf("arch: tensor %q: shape %v: want [channels, kernel]", name, shape)
			}
			return nil, tensor.Shape{shape[0], 1, shape[1]}, nil
		}
		if len(shape) != 3 || shape[1] != 1 {
			return nil, nil, fmt.Errorf("arch: tensor %q: shape %v: want [channels, 1, kernel]", name, shape)
		}
		return nil, tensor.Shape{shape[0], shape[2]}, nil
	case LayoutFlatten:
		if inverse {
			if len(shape) != 1 || qHeads <= 0 || shape[0]%qHeads != 0 {
				return nil, nil, fmt.Errorf("arch: tensor %q: shape %v does not split into %d heads", name, shape, qHeads)
			}
			return nil, tensor.Shape{qHeads, shape[0] / qHeads}, nil
		}
		if len(shape) != 2 {
			return nil, nil, fmt.Errorf("arch: tensor %q: shape %v: want [heads, head_dim]", name, shape)
		}
		return nil, tensor.Shape{shape[0] * shape[1]}, nil
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
	}
	return nil, shape.Clone(), nil
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
