package quant

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/tfconv/tfconv/tensor"
)

// The 1-bit grid encoders: ggml's quantize_row_iq1_s_impl and
// quantize_row_iq1_m_impl (llama.cpp c392e509, ggml-quants.c). IQ1_S needs
// importance weights (ggml asserts them; llama-quantize refuses to run
// without an imatrix); IQ1_M takes them when given and otherwise weighs
// each value by x². As in iq2.go, each float32 operation is one IEEE
// operation, as in ggml's build.
//
// Both store groups of 8 values as a point of the 2048-point 1-bit grid
// (iq1sGrid: each value −1, 0 or 1) moved by a shift δ = ±iq1Delta, times a
// block scale: x = d·(2s+1)·(grid + δ). A block (32 values for IQ1_S, 16
// for IQ1_M) is fitted exactly first: with three levels, the best split of
// its values, sorted, into the lowest, middle and highest level is found by
// trying every pair of boundaries (and, for each, both shifts; IQ1_M tries
// the shift of each half of the block apart). A group of 8 whose levels are
// not a grid point takes the nearest of its grid neighbours (iq2Search,
// built from iq1sGrid), and the block's scale is fitted again.
//
// IQ1_S super-block (256 values, 50 bytes): per 8 values the low byte of an
// 11-bit grid index; per 32 values a u16 qh holding the four indices' top 3
// bits (bits 3k..3k+2), the 3-bit scale s in bits 12..14 and the shift's
// sign in bit 15 (set: δ = −iq1Delta); d is stored times 1.125:
//
//	+------+----------+-------------+
//	| d    | qs[32]   | qh[8] u16   |
//	+------+----------+-------------+
//	0      2          34            50
//
// IQ1_M super-block (256, 56): per 8 values the index's low byte; per 16
// values a byte qh with the two indices' top bits in bits 0..2 and 4..6 and
// their shifts' signs in bits 3 and 7; the 16 3-bit scales, four to a u16,
// in the low 12 bits of scales[4], and the f16 d in their top nibbles
// (scales[i]>>12 is bits 4i..4i+3 of d); d is stored times 1.1125:
//
//	+----------+----------+-----------------+
//	| qs[32]   | qh[16]   | scales[4] u16   |
//	+----------+----------+-----------------+
//	0          32         48                56

// Groups whose largest magnitude is below these are stored as zero:
// ggml's GROUP_MAX_EPS_IQ1_S and GROUP_MAX_EPS_IQ1_M.
const (
	groupMaxEpsIQ1S = 1e-12
	groupMaxEpsIQ1M = 1e-7
)

// fltMin is C's FLT_MIN, the smallest normal float32: the 1-bit searches
// start from a best score of −FLT_MIN.
const fltMin = 0x1p-126

// iq1Shifted are the values of the levels 0, 1, 2 under the shift +δ
// (ggml's x_p) and −δ (x_m).
var iq1Shifted = [2][iq2MaxQ]float32{
	{-1 + iq1Delta, iq1Delta, 1 + iq1Delta},
	{-1 - iq1Delta, -iq1Delta, 1 - iq1Delta},
}

// iq1Row is the state ggml's quantize_iq1_s and quantize_iq1_m keep across
// the super-blocks and rows of one call: the shift last chosen for each
// block position (IQ1_S: ±1; IQ1_M: 0..3, the two halves' shifts), which a
// block below the group epsilon stores again. Where ggml reads it
// uninitialised (such a block before any other at its position), it is 0:
// IQ1_S then stores the +δ shift, IQ1_M +δ for both halves. The state
// lives for one QuantizeRows call; llama-quantize carries it over the rows
// of a thread's chunk, so a caller that passes one row at a time (as
// quantize.Run does) can differ from llama-quantize only in a row that
// starts with such a block (none in the files the tests compare).
type iq1Row struct {
	shifts [16]int8
}

// sortedOrder sets idx to the positions 0..len(x)−1 ordered by x, equal
// values in position order: what ggml's qsort of (value, position) pairs
// gives under glibc, whose qsort is a stable merge sort.
func sortedOrder(idx []int, x []float32) {
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return lessOrder(x[a], x[b]) })
}

// lessOrder is ggml's iq1_sort_helper: −1, 1, or 0 when neither is less
// (equal, or a NaN).
func lessOrder(a, b float32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// iq1Weights sets w to ggml's weights of the values x of a block: qw·√(σ²+x²)
// with importance qw, x² without.
func iq1Weights(w, x, qw []float32, sigma2 float32) {
	if qw != nil {
		elementWeights(w, x, qw, sigma2)
		return
	}
	for i, v := range x {
		w[i] = v * v
	}
}

// absMax is ggml's fold max = MAX(max, |x[i]|) from |x[0]|.
func absMax(x []float32) float32 {
	m := abs32(x[0])
	for _, v := range x[1:] {
		if a := abs32(v); !(m > a) {
			m = a
		}
	}
	return m
}

// iq1Group stores the levels L[0:8] of a group as its grid index, or, off
// the grid, as the neighbour nearest to x at scale·values (setting L to
// its levels); onGrid reports which. It fails where ggml aborts.
func iq1Group(s *iq2Search, L []int8, x, w []float32, scale float32, values *[iq2MaxQ]float32) (gi int, onGrid bool, err error) {
	u := 0
	for j := range 8 {
		u |= int(L[j]) << (2 * j)
	}
	if k := s.kmap[u]; k >= 0 {
		return int(k), true, nil
	}
	gi = s.nearest(u, x, w, scale, values, L)
	if gi < 0 {
		// ggml then scans the whole grid reading past the group's values.
		return 0, false, fmt.Errorf("no grid point at a finite distance (scale %v)", scale)
	}
	return gi, false, nil
}

// iq1Refit is the least-squares scale of values x under weights w with the
// groups' grid points gi at their shifts' values (ggml's second fit, used
// when a group left the grid); ok is false when it is not positive.
func iq1Refit(s *iq2Search, x, w []float32, gi []int, values []*[iq2MaxQ]float32) (scale float32, ok bool) {
	var sumqx, sumq2 float32
	for k, g := range gi {
		for j := range 8 {
			wj := w[8*k+j]
			q := values[k][(s.pos[g][j]-1)/2]
			sumqx += float32(float32(wj*q) * x[8*k+j])
			sumq2 += float32(float32(wj*q) * q)
		}
	}
	if sumqx > 0 && sumq2 > 0 {
		return sumqx / sumq2, true
	}
	return 0, false
}

// errIQ1Abort is where ggml aborts: no split with a positive fit (all of a
// block's importance weights zero), a NaN scale, or a group no grid point
// is at a finite distance from.
func errIQ1Abort(t tensor.DType, ib int, why string) error {
	return fmt.Errorf("quant: %v: block %d: %s, where ggml aborts", t, ib, why)
}

// quantIQ1_S encodes one 256-value super-block with importance qw.
func (r *iq1Row) quantIQ1_S(b []byte, x, qw []float32) error {
	const bs = 32
	s := iq2SearchOf(tensor.IQ1_S)
	var scales [qkK / bs]float32
	var weight [bs]float32
	var sumx, sumw [bs + 1]float32
	var idx [bs]int
	var L [bs]int8
	var gi [bs / 8]int
	clear(b[:50])
	qs := b[2:34]
	var qh [qkK / bs]uint16
	var sumx2 float32
	for _, v := range x[:qkK] {
		sumx2 += float32(v * v)
	}
	sigma2 := float32(2*sumx2) / qkK
	var maxScale float32
	for ib := range qkK / bs {
		xb := x[bs*ib : bs*ib+bs]
		elementWeights(weight[:], xb, qw[bs*ib:bs*ib+bs], sigma2)
		mx := absMax(xb)
		if mx < groupMaxEpsIQ1S {
			scales[ib] = 0
			continue
		}
		sortedOrder(idx[:], xb)
		for j, i := range idx {
			sumx[j+1] = sumx[j] + float32(weight[i]*xb[i])
			sumw[j+1] = sumw[j] + weight[i]
		}
		// Every split into levels 0 (sorted positions < i1), 1 and 2, under
		// both shifts: the one of best sumqx²/sumq2.
		bestScore, scale := float32(-fltMin), mx
		besti1, besti2, bestShift := -1, -1, 0
		for i1 := 0; i1 <= bs; i1++ {
			for i2 := i1; i2 <= bs; i2++ {
				for sh, xx := range iq1Shifted {
					sumqx := float32(float32(float32(sumx[i1]-sumx[0])*xx[0])+float32(float32(sumx[i2]-sumx[i1])*xx[1])) +
						float32(float32(sumx[bs]-sumx[i2])*xx[2])
					sumq2 := float32(float32(float32(float32(sumw[i1]-sumw[0])*xx[0])*xx[0])+
						float32(float32(float32(sumw[i2]-sumw[i1])*xx[1])*xx[1])) +
						float32(float32(float32(sumw[bs]-sumw[i2])*xx[2])*xx[2])
					if sumq2 > 0 && float32(sumqx*sumqx) > float32(bestScore*sumq2) {
						scale = sumqx / sumq2
						bestScore = float32(scale * sumqx)
						besti1, besti2, bestShift = i1, i2, 1-2*sh
					}
				}
			}
		}
		if besti1 < 0 {
			return errIQ1Abort(tensor.IQ1_S, ib, "no split fits (all its importance weights zero, or NaN input)")
		}
		var flipped bool
		if scale, flipped = iq1SplitLevels(L[:], idx[:], besti1, besti2, scale); flipped {
			bestShift = -bestShift
		}
		xx := &iq1Shifted[(1-bestShift)/2]
		allOnGrid := true
		for k := range gi {
			g, on, err := iq1Group(s, L[8*k:8*k+8], xb[8*k:8*k+8], weight[8*k:8*k+8], scale, xx)
			if err != nil {
				return errIQ1Abort(tensor.IQ1_S, ib, err.Error())
			}
			gi[k], allOnGrid = g, allOnGrid && on
		}
		if !allOnGrid {
			if sc, ok := iq1Refit(s, xb, weight[:], gi[:], []*[iq2MaxQ]float32{xx, xx, xx, xx}); ok {
				scale = sc
			}
		}
		for k, g := range gi {
			qs[4*ib+k] = uint8(g)
			qh[ib] |= uint16(g>>8) << (3 * k)
		}
		if !(scale >= 0) {
			return errIQ1Abort(tensor.IQ1_S, ib, fmt.Sprintf("scale %v", scale))
		}
		scales[ib] = scale
		r.shifts[ib] = int8(bestShift)
		if !(maxScale > scale) {
			maxScale = scale
		}
	}
	if maxScale != 0 {
		d := maxScale / 15
		putHalf(b, float32(d*1.125))
		id := 1 / d
		for ib, sc := range scales {
			l := uint16(superScale(id, sc, 7))
			if r.shifts[ib] == -1 {
				l |= 8
			}
			qh[ib] |= l << 12
		}
	}
	for ib, h := range qh {
		binary.LittleEndian.PutUint16(b[34+2*ib:], h)
	}
	return nil
}

// iq1SplitLevel is the level of the j-th smallest value under the split
// (i1, i2).
// iq1SplitLevels sets the levels L of a block from its best split (idx: the
// elements in sorted order; levels 0, 1, 2 below i1, below i2, from i2) and,
// for a negative scale, mirrors them (2 − L) and returns the scale's
// magnitude with flipped set: the caller then mirrors its shift.
func iq1SplitLevels(L []int8, idx []int, i1, i2 int, scale float32) (float32, bool) {
	for j, i := range idx {
		L[i] = iq1SplitLevel(j, i1, i2)
	}
	if !(scale < 0) { // NaN included, as ggml
		return scale, false
	}
	for j := range L {
		L[j] = 2 - L[j]
	}
	return -scale, true
}

func iq1SplitLevel(j, i1, i2 int) int8 {
	switch {
	case j < i1:
		return 0
	case j < i2:
		return 1
	}
	return 2
}

// iq1MHalfShift is which shift (0: +δ, 1: −δ) group half (0, 1) of an IQ1_M
// block takes under the choice k ∈ 0..3 (ggml's best_k).
func iq1MHalfShift(k int8, half int) int {
	if half == 0 {
		return int(k) >> 1
	}
	return int(k) & 1
}

// iq1MMasks is ggml's masks: the qh bits of the shifts of choice k.
var iq1MMasks = [4]uint8{0x00, 0x80, 0x08, 0x88}

// quantIQ1_M encodes one 256-value super-block, with importance qw or,
// when nil, weights x².
func (r *iq1Row) quantIQ1_M(b []byte, x, qw []float32) error {
	const bs = 16
	s := iq2SearchOf(tensor.IQ1_M)
	var scales [qkK / bs]float32
	var weight [bs]float32
	var idx [bs]int
	var L [bs]int8
	var gi [bs / 8]int
	clear(b[:56])
	qs, qh := b[0:32], b[32:48]
	var sc [4]uint16
	var sumx2 float32
	for _, v := range x[:qkK] {
		sumx2 += float32(v * v)
	}
	sigma2 := float32(2*sumx2) / qkK
	var maxScale float32
	for ib := range qkK / bs {
		xb := x[bs*ib : bs*ib+bs]
		var qwb []float32
		if qw != nil {
			qwb = qw[bs*ib : bs*ib+bs]
		}
		iq1Weights(weight[:], xb, qwb, sigma2)
		mx := absMax(xb)
		if mx < groupMaxEpsIQ1M {
			scales[ib] = 0
			continue
		}
		sortedOrder(idx[:], xb)
		// Every split, under the four choices of the halves' shifts k
		// (first half's shift k>>1, second's k&1; 0 is +δ): ggml sums each
		// choice's sumqx and sumq2 afresh, value by value in sorted order.
		bestScore, scale := float32(-fltMin), mx
		besti1, besti2, bestK := -1, -1, int8(-1)
		for i1 := 0; i1 <= bs; i1++ {
			for i2 := i1; i2 <= bs; i2++ {
				var sumqx, sumq2 [4]float32
				for j, i := range idx {
					l := iq1SplitLevel(j, i1, i2)
					for k := range 4 {
						q := iq1Shifted[iq1MHalfShift(int8(k), i/8)][l]
						wq := float32(weight[i] * q)
						sumqx[k] += float32(wq * xb[i])
						sumq2[k] += float32(wq * q)
					}
				}
				for k := range 4 {
					if sumq2[k] > 0 && float32(sumqx[k]*sumqx[k]) > float32(bestScore*sumq2[k]) {
						scale = sumqx[k] / sumq2[k]
						bestScore = float32(scale * sumqx[k])
						besti1, besti2, bestK = i1, i2, int8(k)
					}
				}
			}
		}
		if besti1 < 0 {
			return errIQ1Abort(tensor.IQ1_M, ib, "no split fits (all its importance weights zero, or NaN input)")
		}
		var flipped bool
		if scale, flipped = iq1SplitLevels(L[:], idx[:], besti1, besti2, scale); flipped {
			bestK = 3 - bestK
		}
		values := []*[iq2MaxQ]float32{&iq1Shifted[iq1MHalfShift(bestK, 0)], &iq1Shifted[iq1MHalfShift(bestK, 1)]}
		allOnGrid := true
		for k := range gi {
			g, on, err := iq1Group(s, L[8*k:8*k+8], xb[8*k:8*k+8], weight[8*k:8*k+8], scale, values[k])
			if err != nil {
				return errIQ1Abort(tensor.IQ1_M, ib, err.Error())
			}
			gi[k], allOnGrid = g, allOnGrid && on
		}
		if !allOnGrid {
			if sc, ok := iq1Refit(s, xb, weight[:], gi[:], values); ok {
				scale = sc
			}
		}
		qs[2*ib], qs[2*ib+1] = uint8(gi[0]), uint8(gi[1])
		qh[ib] = uint8(gi[0]>>8) | uint8(gi[1]>>8)<<4
		if !(scale >= 0) {
			return errIQ1Abort(tensor.IQ1_M, ib, fmt.Sprintf("scale %v", scale))
		}
		scales[ib] = scale
		r.shifts[ib] = bestK
		if !(maxScale > scale) {
			maxScale = scale
		}
	}
	if maxScale == 0 {
		return nil
	}
	// The block scales' codes against d = max/15, then d refitted over the
	// whole super-block with the codes and grid points chosen (blocks
	// below the epsilon included, at grid point 0).
	d := maxScale / 15
	id := 1 / d
	var sumqx, sumq2 float32
	for ib := range qkK / bs {
		l := superScale(id, scales[ib], 7)
		sc[ib/4] |= uint16(l) << (3 * (ib % 4))
		qh[ib] |= iq1MMasks[r.shifts[ib]&3]
		xb := x[bs*ib : bs*ib+bs]
		var qwb []float32
		if qw != nil {
			qwb = qw[bs*ib : bs*ib+bs]
		}
		iq1Weights(weight[:], xb, qwb, sigma2)
		for k := range 2 {
			xx := &iq1Shifted[iq1MHalfShift(r.shifts[ib], k)]
			g := int(qs[2*ib+k]) + (int(qh[ib])<<(8-4*k))&0x700
			for j := range 8 {
				wj := weight[8*k+j]
				q := float32(xx[(s.pos[g][j]-1)/2] * float32(2*int32(l)+1))
				sumqx += float32(float32(wj*q) * xb[8*k+j])
				sumq2 += float32(float32(wj*q) * q)
			}
		}
	}
	if sumq2 > 0 {
		d = sumqx / sumq2
	}
	h := F32ToF16(float32(d * 1.1125))
	sc[0] |= (h & 0x000f) << 12
	sc[1] |= (h & 0x00f0) << 8
	sc[2] |= (h & 0x0f00) << 4
	sc[3] |= h & 0xf000
	for i, v := range sc {
		binary.LittleEndian.PutUint16(b[48+2*i:], v)
	}
	return nil
}

// isIQ1 reports whether t is one of the 1-bit grid types this file encodes.
func isIQ1(t tensor.DType) bool { return t == tensor.IQ1_S || t == tensor.IQ1_M }

// quantizeIQ1Rows encodes rows of rowLen values of src as t (an isIQ1
// type), every row with the importance qw[rowLen] (nil only for IQ1_M), as
// one call of ggml's quantize_iq1_s or quantize_iq1_m over those rows; it
// fails where ggml would abort.
func quantizeIQ1Rows(dst []byte, src []float32, t tensor.DType, rowLen int, qw []float32) error {
	if qw == nil && t != tensor.IQ1_M {
		return tensor.Unsupported("quant: %v needs importance weights (an imatrix), as in ggml", t)
	}
	bb := int(t.BlockBytes())
	var st iq1Row
	for r := 0; r < len(src)/rowLen; r++ {
		x := src[r*rowLen : (r+1)*rowLen]
		for i := 0; i < rowLen/qkK; i++ {
			var w []float32
			if qw != nil {
				w = qw[i*qkK : (i+1)*qkK]
			}
			o := dst[(r*rowLen/qkK+i)*bb:]
			xb := x[i*qkK : (i+1)*qkK]
			var err error
			if t == tensor.IQ1_S {
				err = st.quantIQ1_S(o, xb, w)
			} else {
				err = st.quantIQ1_M(o, xb, w)
			}
			if err != nil {
				return fmt.Errorf("%w (row %d, super-block %d)", err, r, i)
			}
		}
	}
	return nil
}

// IQ1Unpack decodes one IQ1_S or IQ1_M super-block b as the small integers
// ggml's dot products multiply and returns its scale d: q[i] the grid value
// (−1, 0 or 1) of value i, ls[g] the odd scale 2s+1 of values 16g..16g+15,
// neg[k] whether the 8 values 8k..8k+7 take the shift −δ rather than +δ,
// so that value i is d·ls[i/16]·(q[i] ± 1/8) (quant owns the grid; the
// kernels read it through this).
func IQ1Unpack(t tensor.DType, q *[256]int8, ls *[16]int16, neg *[32]bool, b []byte) float32 {
	grid := func(o int, idx int) {
		g := iq1sGrid[idx]
		for j := range 8 {
			q[o+j] = int8(uint8(g >> (8 * j)))
		}
	}
	switch t {
	case tensor.IQ1_S:
		b = b[:50]
		for ib := range 8 {
			qh := binary.LittleEndian.Uint16(b[34+2*ib:])
			ls[2*ib] = int16(2*((qh>>12)&7) + 1)
			ls[2*ib+1] = ls[2*ib]
			for k := range 4 {
				grid(32*ib+8*k, int(b[2+4*ib+k])|int((qh>>(3*k))&7)<<8)
				neg[4*ib+k] = qh&0x8000 != 0
			}
		}
		return half(b)
	case tensor.IQ1_M:
		b = b[:56]
		var sc [4]uint16
		for i := range sc {
			sc[i] = binary.LittleEndian.Uint16(b[48+2*i:])
		}
		for ib := range 16 {
			qh := b[32+ib]
			ls[ib] = int16(2*((sc[ib/4]>>(3*(ib%4)))&7) + 1)
			for k := range 2 {
				grid(16*ib+8*k, int(b[2*ib+k])|int(qh>>(4*k)&7)<<8)
				neg[2*ib+k] = qh&(0x08<<(4*k)) != 0
			}
		}
		return F16ToF32(sc[0]>>12 | (sc[1]>>8)&0x00f0 | (sc[2]>>4)&0x0f00 | sc[3]&0xf000)
	}
	panic("quant: IQ1Unpack " + t.String())
}
