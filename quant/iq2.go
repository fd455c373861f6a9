package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/tfconv/tfconv/tensor"
)

// The 2-bit grid encoders: ggml's quantize_row_iq2_xxs_impl,
// quantize_row_iq2_xs_impl and quantize_row_iq2_s_impl (llama.cpp c392e509,
// ggml-quants.c). IQ2_XXS and IQ2_XS need importance weights (ggml asserts
// them; llama-quantize refuses to run without an imatrix); IQ2_S takes them
// when given and otherwise weighs each value by σ²/4 + x². As in iq4nl.go,
// each float32 operation is one IEEE operation, as in ggml's build.
//
// All three quantize groups of 8 magnitudes |x| to a point of their grid (8
// levels, each one of the odd values 2l+1, l = 0..2, times a scale) and keep
// the signs apart: IQ2_XXS and IQ2_XS store 7 sign bits and make the 8th
// the parity (an odd number of negatives flips the sign of the value that
// costs least, w·x²); IQ2_S stores all 8. The search tries 13 (IQ2_XXS) or
// 19 (IQ2_XS, IQ2_S) scales per block of 32 or 16 values, rounds each value
// to l ∈ 0..2 at that scale and, when the 8 levels are not a grid point,
// takes the nearest grid point among its precomputed neighbours (iq2Search).
// A block's scale is stored as 4 bits against the super-block's d.
//
// IQ2_XXS super-block (256 values, 66 bytes): per 32-value block two u32s,
// the 4 grid indices (a byte each) and 4×7 sign bits with the scale s in
// the top 4 bits; x = d·(0.5+s)·0.25·grid·sign:
//
//	+------+--------------------------------------------+
//	| d    | 8 × { u32 grid[4] | u32 signs[4]×7 | s<<28 } |
//	+------+--------------------------------------------+
//	0      2                                            66
//
// IQ2_XS (256, 74): per 8 values a u16, 9-bit grid index | 7 sign bits<<9;
// a 4-bit scale per 16 values:
//
//	+------+-------------------------+-------------------+
//	| d    | qs[32] u16 index|signs  | scales[8] nibbles |
//	+------+-------------------------+-------------------+
//	0      2                         66                  74
//
// IQ2_S (256, 82): per 8 values the low byte of a 10-bit grid index, its
// 8 sign bits and, 4 groups to a byte, the index's top 2 bits; d is stored
// times 0.9875:
//
//	+------+----------+------------+--------+-------------------+
//	| d    | qs[32]   | signs[32]  | qh[8]  | scales[8] nibbles |
//	+------+----------+------------+--------+-------------------+
//	0      2          34           66       74                  82

// iq2MaxQ is ggml's kMaxQ for the 2-bit grids: their points and the
// search's roundings have levels 0..iq2MaxQ-1.
const iq2MaxQ = 3

// groupMaxEpsIQ2S is ggml's GROUP_MAX_EPS_IQ2_S.
const groupMaxEpsIQ2S = 1e-8

// iq2Search is what ggml's iq2xs_init_impl builds from one grid of 8
// values per point, each at one of iq2MaxQ levels l (the 2-bit grids'
// magnitudes, the 1-bit grid's −1, 0, 1): each grid point's levels as the
// odd values 2l+1, the map from a level pattern (2 bits per value, value i
// at bits 2i) to its grid index or, for a pattern off the grid, to its
// neighbour list, and the neighbour lists: the grid points at the nwant
// smallest squared distances, ordered by distance and then index, each
// list preceded by its length.
type iq2Search struct {
	pos        [][8]int8
	kmap       []int32 // ≥ 0: grid index; < 0: −(offset+1) into neighbours; unset: iq2NotSearched
	neighbours []uint16
}

// iq2NotSearched marks a level pattern holding a 3: neither the grids nor
// the search's roundings (clamped to 0..2) have one, so ggml's neighbour
// lists for them are never read; they are not built.
const iq2NotSearched = math.MinInt32

// iq2MapSize is ggml's kmap_size: patterns up to all values at level 2
// (0xAAAA) and beyond.
const iq2MapSize = 43692

// iq2GridMagnitudes returns the iq2MaxQ magnitudes the 2-bit grids' bytes
// take, in increasing order: level l is the l-th.
func iq2GridMagnitudes() []uint8 {
	var mags []uint8
	for _, grid := range [][]uint64{iq2xxsGrid[:], iq2xsGrid[:], iq2sGrid[:]} {
		for _, g := range grid {
			for j := range 8 {
				if b := uint8(g >> (8 * j)); !slices.Contains(mags, b) {
					mags = append(mags, b)
				}
			}
		}
	}
	slices.Sort(mags)
	if len(mags) != iq2MaxQ {
		panic(fmt.Sprintf("quant: the 2-bit grids hold %d magnitudes", len(mags)))
	}
	return mags
}

// iq2Level returns the level of a 2-bit grid byte: its magnitude's rank.
func iq2Level() func(uint8) int {
	mags := iq2GridMagnitudes()
	return func(b uint8) int { return slices.Index(mags, b) }
}

// newIQ2Search builds the search tables of grid (a tables.go grid: 8 bytes
// per point, level(byte) the level of each) with neighbour lists of nwant
// distances.
func newIQ2Search(grid []uint64, level func(uint8) int, nwant int) *iq2Search {
	s := &iq2Search{pos: make([][8]int8, len(grid)), kmap: make([]int32, iq2MapSize)}
	for i := range s.kmap {
		s.kmap[i] = iq2NotSearched
	}
	for i, g := range grid {
		var u int
		for j := range 8 {
			l := level(uint8(g >> (8 * j)))
			if l < 0 || l >= iq2MaxQ {
				panic(fmt.Sprintf("quant: grid point %d holds the byte %#x, not a level", i, uint8(g>>(8*j))))
			}
			s.pos[i][j] = int8(2*l + 1)
			u |= l << (2 * j)
		}
		s.kmap[u] = int32(i)
	}
	d2 := make([]int, len(grid))
	var levels [8]int8
	for u := range s.kmap {
		if s.kmap[u] != iq2NotSearched {
			continue
		}
		reachable := true
		for j := range 8 {
			l := (u >> (2 * j)) & 3
			reachable = reachable && l < iq2MaxQ
			levels[j] = int8(2*l + 1)
		}
		if !reachable {
			continue
		}
		for i, p := range s.pos {
			d := 0
			for j := range 8 {
				e := int(p[j] - levels[j])
				d += e * e
			}
			d2[i] = d
		}
		// The points at the nwant smallest distinct distances, by distance
		// and then index: ggml's qsort of (distance, index) pairs, cut.
		var dists []int
		for _, d := range d2 {
			if !slices.Contains(dists, d) {
				dists = append(dists, d)
			}
		}
		slices.Sort(dists)
		dists = dists[:min(nwant, len(dists))]
		s.kmap[u] = -int32(len(s.neighbours) + 1)
		start := len(s.neighbours)
		s.neighbours = append(s.neighbours, 0)
		for _, d := range dists {
			for i, di := range d2 {
				if di == d {
					s.neighbours = append(s.neighbours, uint16(i))
				}
			}
		}
		s.neighbours[start] = uint16(len(s.neighbours) - start - 1)
	}
	return s
}

var (
	iq2xxsOnce, iq2xsOnce, iq2sOnce, iq1Once            sync.Once
	iq2xxsSearch, iq2xsSearch, iq2sSearchTbl, iq1Search *iq2Search
)

// iq2SearchOf returns the search tables of t, built on first use (ggml's
// ggml_quantize_init): neighbours at the 2 nearest distances for IQ2_XXS
// and IQ2_XS, the nearest only for IQ2_S, the 3 nearest for the 1-bit grid
// IQ1_S and IQ1_M share (its bytes are the signed levels −1, 0, 1).
func iq2SearchOf(t tensor.DType) *iq2Search {
	switch t {
	case tensor.IQ2_XXS:
		iq2xxsOnce.Do(func() { iq2xxsSearch = newIQ2Search(iq2xxsGrid[:], iq2Level(), 2) })
		return iq2xxsSearch
	case tensor.IQ2_XS:
		iq2xsOnce.Do(func() { iq2xsSearch = newIQ2Search(iq2xsGrid[:], iq2Level(), 2) })
		return iq2xsSearch
	case tensor.IQ2_S:
		iq2sOnce.Do(func() { iq2sSearchTbl = newIQ2Search(iq2sGrid[:], iq2Level(), 1) })
		return iq2sSearchTbl
	case tensor.IQ1_S, tensor.IQ1_M:
		iq1Once.Do(func() { iq1Search = newIQ2Search(iq1sGrid[:], func(b uint8) int { return int(int8(b)) + 1 }, 3) })
		return iq1Search
	}
	return nil
}

// iq2Values are the values the 2-bit grids' levels stand for in the
// search: the odd 2l+1.
var iq2Values = [iq2MaxQ]float32{1, 3, 5}

// nearest is the loop of ggml's iq2_find_best_neighbour and
// iq1_find_best_neighbour2: among the neighbours of the off-grid pattern
// u, the grid point whose scale·values[l] is nearest to x under weights w
// (the first of equals); it sets L to its levels and returns its index, or
// −1 when no distance is below FLT_MAX (NaN or Inf input; L is left).
func (s *iq2Search) nearest(u int, x, w []float32, scale float32, values *[iq2MaxQ]float32, L []int8) int {
	nb := s.neighbours[-s.kmap[u]-1:]
	n := int(nb[0])
	best := float32(math.MaxFloat32)
	idx := -1
	for _, gi := range nb[1 : 1+n] {
		p := &s.pos[gi]
		var d2 float32
		for i := range 8 {
			diff := float32(scale*values[(p[i]-1)/2]) - x[i]
			d2 += float32(float32(w[i]*diff) * diff)
		}
		if d2 < best {
			best, idx = d2, int(gi)
		}
	}
	if idx >= 0 {
		for i := range 8 {
			L[i] = (s.pos[idx][i] - 1) / 2
		}
	}
	return idx
}

// bestNeighbour is ggml's iq2_find_best_neighbour: nearest at the values
// 2l+1. Where every distance was NaN ggml asserts; it takes the first
// neighbour, and the caller reports the NaN scale.
func (s *iq2Search) bestNeighbour(u int, x, w []float32, scale float32, L []int8) int {
	if idx := s.nearest(u, x, w, scale, &iq2Values, L); idx >= 0 {
		return idx
	}
	idx := int(s.neighbours[-s.kmap[u]])
	for i := range 8 {
		L[i] = (s.pos[idx][i] - 1) / 2
	}
	return idx
}

// round8 sets L[0:8] to the levels nearest id·x clamped to 0..2 and, when
// that pattern is off the grid, to its best neighbour at scale; it returns
// the grid index and whether the rounded pattern was on the grid.
func (s *iq2Search) round8(L []int8, x, waux []float32, id, scale float32) (int, bool) {
	u := 0
	for i := range 8 {
		l := clamp32(nearestInt(float32(0.5*float32(float32(id*x[i])-1))), 0, iq2MaxQ-1)
		L[i] = int8(l)
		u |= int(l) << (2 * i)
	}
	if gi := s.kmap[u]; gi >= 0 {
		return int(gi), true
	}
	return s.bestNeighbour(u, x, waux, scale, L), false
}

// index returns the grid index of the levels L[0:8], packed as ggml packs
// them (into a uint16, so a level of 4, which only make_qp_quants' levels
// of an unfitted IQ2_XXS block hold, spills into the next value), or −1
// when they are not a grid point (ggml's "Oops … not on grid" abort, or a
// read past its map).
func (s *iq2Search) index(L []int8) int {
	var u uint16
	for i := range 8 {
		if L[i] < 0 {
			return -1
		}
		u |= uint16(L[i]) << (2 * i)
	}
	if int(u) >= len(s.kmap) || s.kmap[u] < 0 {
		return -1
	}
	return int(s.kmap[u])
}

// iq2Fit returns Σw·x·q and Σw·q² for q = 2L+1.
func iq2Fit(x, w []float32, L []int8) (sumqx, sumq2 float32) {
	for i := range x {
		q := float32(2*int32(L[i]) + 1)
		sumqx += float32(float32(w[i]*x[i]) * q)
		sumq2 += float32(float32(w[i]*q) * q)
	}
	return sumqx, sumq2
}

// iq2Magnitudes sets xval to |x| of 8 values and returns their sign bits.
// With parity (IQ2_XXS, IQ2_XS), an odd count of negatives is made even
// by flipping the value of least w·x² (xval keeps its sign then, −|x|), so
// that 7 bits store the signs.
func iq2Magnitudes(xval, x, w []float32, parity bool) uint8 {
	var s uint8
	nflip := 0
	for i := range 8 {
		if x[i] >= 0 {
			xval[i] = x[i]
		} else {
			xval[i] = -x[i]
			nflip++
			s |= 1 << i
		}
	}
	if parity && nflip%2 == 1 {
		imin := 0
		mn := float32(float32(w[0]*x[0]) * x[0])
		for i := 1; i < 8; i++ {
			if ax := float32(float32(w[i]*x[i]) * x[i]); ax < mn {
				mn, imin = ax, i
			}
		}
		xval[imin] = -xval[imin]
		s ^= 1 << imin
	}
	return s
}

// maxOf is ggml's MAX fold (a > b ? a : b) over x.
func maxOf(x []float32) float32 {
	m := x[0]
	for _, v := range x[1:] {
		if !(m > v) {
			m = v
		}
	}
	return m
}

// superScale is the code s ∈ 0..maxS of a block scale against 1/d, the
// scale being d·(2s+1).
func superScale(id, scale float32, maxS int32) uint8 {
	return uint8(clamp32(nearestInt(float32(0.5*float32(float32(id*scale)-1))), 0, maxS))
}

// errIQ2Abort is where ggml aborts (a scale that is not ≥ 0, levels off
// the grid): importance weights of zero over a whole block, or NaN input.
func errIQ2Abort(t tensor.DType, ib int, scale float32) error {
	return fmt.Errorf("quant: %v: block %d: no fit (scale %v; all its importance weights zero, or NaN input), where ggml aborts", t, ib, scale)
}

// iq2Row is the state ggml's row function keeps across its blocks: L, the
// levels last chosen, which a 16-value block of IQ2_XS/IQ2_S whose search
// finds no fit (all its weights zero) stores again as ggml does; the first
// block of a row starts from level 0 where ggml reads uninitialised memory.
type iq2Row struct {
	L [32]int8
}

// quantIQ2_XXS encodes one 256-value super-block with importance qw.
func (r *iq2Row) quantIQ2_XXS(b []byte, x, qw []float32) error {
	s := iq2SearchOf(tensor.IQ2_XXS)
	var scales [8]float32
	var weight, xval, waux [32]float32
	var Laux [32]int8
	var q2 [16]uint32
	L := r.L[:]
	clear(b[:66])
	sigma2 := rowSigma2(x[:qkK])
	var maxScale float32
	for ib := range 8 {
		xb := x[32*ib : 32*ib+32]
		elementWeights(weight[:], xb, qw[32*ib:32*ib+32], sigma2)
		for i := range waux {
			waux[i] = sqrt32(weight[i])
		}
		var signs [4]uint8
		for k := range 4 {
			signs[k] = iq2Magnitudes(xval[8*k:8*k+8], xb[8*k:8*k+8], weight[8*k:8*k+8], true) & 127
		}
		if maxOf(xval[:]) < groupMaxEps {
			scales[ib] = 0
			clear(L)
			continue
		}
		var Lu [32]uint8
		scale := makeQPQuants(iq2MaxQ+1, xval[:], Lu[:], weight[:])
		for i := range L {
			L[i] = int8(Lu[i])
		}
		effMax := float32(scale * iq2MaxQ)
		var best float32
		for is := -6; is <= 6; is++ {
			id := float32(float32(2*iq2MaxQ-1)+float32(float32(is)*0.1)) / effMax
			thisScale := 1 / id
			for k := range 4 {
				s.round8(Laux[8*k:8*k+8], xval[8*k:8*k+8], waux[8*k:8*k+8], id, thisScale)
			}
			sumqx, sumq2 := iq2Fit(xval[:], weight[:], Laux[:])
			if sumq2 > 0 && float32(sumqx*sumqx) > float32(best*sumq2) {
				scale = sumqx / sumq2
				best = float32(scale * sumqx)
				copy(L, Laux[:])
			}
		}
		if scale > 0 {
			id := 1 / scale
			for k := range 4 {
				s.round8(L[8*k:8*k+8], xval[8*k:8*k+8], waux[8*k:8*k+8], id, scale)
			}
			if sumqx, sumq2 := iq2Fit(xval[:], weight[:], L[:32]); sumq2 > 0 {
				scale = sumqx / sumq2
			}
		}
		if scale < 0 {
			scale = -scale
			for k := range signs {
				signs[k] = ^signs[k] & 127
			}
		}
		for k := range 4 {
			gi := s.index(L[8*k : 8*k+8])
			if gi < 0 {
				return errIQ2Abort(tensor.IQ2_XXS, ib, scale)
			}
			q2[2*ib] |= uint32(gi) << (8 * k)
			q2[2*ib+1] |= uint32(signs[k]) << (7 * k)
		}
		if !(scale >= 0) {
			return errIQ2Abort(tensor.IQ2_XXS, ib, scale)
		}
		scales[ib] = scale
		maxScale = max(maxScale, scale)
	}
	if maxScale == 0 {
		return nil
	}
	d := maxScale / 31
	putHalf(b, d)
	id := 1 / d
	for ib, sc := range scales {
		q2[2*ib+1] |= uint32(superScale(id, sc, 15)) << 28
	}
	for i, v := range q2 {
		binary.LittleEndian.PutUint32(b[2+4*i:], v)
	}
	return nil
}

// quant16 is the search of one 16-value block of IQ2_XS and IQ2_S (19
// trial scales around max/5; the groups left off the grid are rounded
// again at the fitted scale): it returns the block's scale and leaves its
// levels in r.L[0:16].
func (r *iq2Row) quant16(s *iq2Search, xval, weight, waux []float32) float32 {
	var Laux [16]int8
	L := r.L[:16]
	mx := maxOf(xval[:16])
	var best float32
	scale := mx / (2*iq2MaxQ - 1)
	onGrid := [2]bool{true, true}
	for is := -9; is <= 9; is++ {
		id := float32(float32(2*iq2MaxQ-1)+float32(float32(is)*0.1)) / mx
		thisScale := 1 / id
		var on [2]bool
		for k := range 2 {
			_, on[k] = s.round8(Laux[8*k:8*k+8], xval[8*k:8*k+8], waux[8*k:8*k+8], id, thisScale)
		}
		sumqx, sumq2 := iq2Fit(xval[:16], weight[:16], Laux[:])
		if sumq2 > 0 && float32(sumqx*sumqx) > float32(best*sumq2) {
			scale = sumqx / sumq2
			best = float32(scale * sumqx)
			copy(L, Laux[:])
			onGrid = on
		}
	}
	if (!onGrid[0] || !onGrid[1]) && scale > 0 {
		id := 1 / scale
		for k := range 2 {
			if !onGrid[k] {
				s.round8(L[8*k:8*k+8], xval[8*k:8*k+8], waux[8*k:8*k+8], id, scale)
			}
		}
		if sumqx, sumq2 := iq2Fit(xval[:16], weight[:16], L); sumq2 > 0 {
			scale = sumqx / sumq2
		}
	}
	return scale
}

// quantIQ2_XS encodes one 256-value super-block with importance qw.
func (r *iq2Row) quantIQ2_XS(b []byte, x, qw []float32) error {
	s := iq2SearchOf(tensor.IQ2_XS)
	var scales [16]float32
	var weight, xval, waux [16]float32
	var q2 [32]uint16
	clear(b[:74])
	sigma2 := rowSigma2(x[:qkK])
	var maxScale float32
	for ib := range 16 {
		xb := x[16*ib : 16*ib+16]
		elementWeights(weight[:], xb, qw[16*ib:16*ib+16], sigma2)
		for i := range waux {
			waux[i] = sqrt32(weight[i])
		}
		var signs [2]uint8
		for k := range 2 {
			signs[k] = iq2Magnitudes(xval[8*k:8*k+8], xb[8*k:8*k+8], weight[8*k:8*k+8], true) & 127
		}
		if maxOf(xval[:]) < groupMaxEps {
			scales[ib] = 0
			clear(r.L[:16])
			continue
		}
		scale := r.quant16(s, xval[:], weight[:], waux[:])
		if scale < 0 {
			scale = -scale
			for k := range signs {
				signs[k] = ^signs[k] & 127
			}
		}
		for k := range 2 {
			gi := s.index(r.L[8*k : 8*k+8])
			if gi < 0 {
				return errIQ2Abort(tensor.IQ2_XS, ib, scale)
			}
			q2[2*ib+k] = uint16(gi) | uint16(signs[k])<<9
		}
		if !(scale >= 0) {
			return errIQ2Abort(tensor.IQ2_XS, ib, scale)
		}
		scales[ib] = scale
		maxScale = max(maxScale, scale)
	}
	if maxScale == 0 {
		return nil
	}
	d := maxScale / 31
	putHalf(b, d)
	id := 1 / d
	for ib, sc := range scales {
		b[66+ib/2] |= superScale(id, sc, 15) << (4 * (ib % 2))
	}
	for i, v := range q2 {
		binary.LittleEndian.PutUint16(b[2+2*i:], v)
	}
	return nil
}

// quantIQ2_S encodes one 256-value super-block, with importance qw or,
// when nil, weights σ²/4 + x² (σ² = 2·Σx²/256).
func (r *iq2Row) quantIQ2_S(b []byte, x, qw []float32) error {
	s := iq2SearchOf(tensor.IQ2_S)
	var scales [16]float32
	var weight, xval, waux [16]float32
	clear(b[:82])
	qs, signsOut, qh, sc := b[2:34], b[34:66], b[66:74], b[74:82]
	var sumx2 float32
	for _, v := range x[:qkK] {
		sumx2 += float32(v * v)
	}
	sigma2 := float32(2*sumx2) / qkK
	var maxScale float32
	for ib := range 16 {
		xb := x[16*ib : 16*ib+16]
		if qw != nil {
			elementWeights(weight[:], xb, qw[16*ib:16*ib+16], sigma2)
		} else {
			for i, v := range xb {
				weight[i] = float32(0.25*sigma2) + float32(v*v)
			}
		}
		for i := range waux {
			waux[i] = sqrt32(weight[i])
		}
		var signs [2]uint8
		for k := range 2 {
			signs[k] = iq2Magnitudes(xval[8*k:8*k+8], xb[8*k:8*k+8], nil, false)
		}
		if maxOf(xval[:]) < groupMaxEpsIQ2S {
			scales[ib] = 0
			continue
		}
		scale := r.quant16(s, xval[:], weight[:], waux[:])
		if scale < 0 {
			scale = -scale
			signs[0], signs[1] = ^signs[0], ^signs[1]
		}
		for k := range 2 {
			gi := s.index(r.L[8*k : 8*k+8])
			if gi < 0 {
				return errIQ2Abort(tensor.IQ2_S, ib, scale)
			}
			i8 := 2*ib + k
			qs[i8] = uint8(gi)
			qh[i8/4] |= uint8(gi>>8) << (2 * (i8 % 4))
			signsOut[i8] = signs[k]
		}
		if !(scale >= 0) {
			return errIQ2Abort(tensor.IQ2_S, ib, scale)
		}
		scales[ib] = scale
		maxScale = max(maxScale, scale)
	}
	if maxScale == 0 {
		return nil
	}
	d := maxScale / 31
	putHalf(b, float32(d*0.9875))
	id := 1 / d
	for ib, v := range scales {
		sc[ib/2] |= superScale(id, v, 15) << (4 * (ib % 2))
	}
	return nil
}

// isIQ2 reports whether t is one of the 2-bit grid types this file encodes.
func isIQ2(t tensor.DType) bool {
	return t == tensor.IQ2_XXS || t == tensor.IQ2_XS || t == tensor.IQ2_S
}

// quantizeIQ2Rows encodes rows of rowLen values of src as t (an isIQ2
// type), every row with the importance qw[rowLen] (nil only for IQ2_S), as
// ggml's quantize_iq2_{xxs,xs,s}; it fails where ggml would abort.
func quantizeIQ2Rows(dst []byte, src []float32, t tensor.DType, rowLen int, qw []float32) error {
	if qw == nil && t != tensor.IQ2_S {
		return tensor.Unsupported("quant: %v needs importance weights (an imatrix), as in ggml", t)
	}
	bb := int(t.BlockBytes())
	for r := 0; r < len(src)/rowLen; r++ {
		var st iq2Row
		x := src[r*rowLen : (r+1)*rowLen]
		for i := 0; i < rowLen/qkK; i++ {
			var w []float32
			if qw != nil {
				w = qw[i*qkK : (i+1)*qkK]
			}
			o := dst[(r*rowLen/qkK+i)*bb:]
			xb := x[i*qkK : (i+1)*qkK]
			var err error
			switch t {
			case tensor.IQ2_XXS:
				err = st.quantIQ2_XXS(o, xb, w)
			case tensor.IQ2_XS:
				err = st.quantIQ2_XS(o, xb, w)
			default:
				err = st.quantIQ2_S(o, xb, w)
			}
			if err != nil {
				return fmt.Errorf("%w (row %d, super-block %d)", err, r, i)
			}
		}
	}
	return nil
}

// IQ2Unpack decodes the levels of one IQ2_XXS, IQ2_XS or IQ2_S super-block
// b as the small integers ggml's dot products multiply: q[i] the grid
// magnitude of value i with its sign, ls[g] the odd scale 2s+1 of values
// 16g..16g+15, so that value i is d·ls[i/16]·q[i]/8 with d the f16 at b[0:2]
// (quant owns the grids; the kernels read them through this).
func IQ2Unpack(t tensor.DType, q *[256]int8, ls *[16]int16, b []byte) {
	signed := func(o int, g uint64, signs uint8) {
		for j := range 8 {
			v := int8(uint8(g >> (8 * j)))
			if signs&(1<<j) != 0 {
				v = -v
			}
			q[o+j] = v
		}
	}
	switch t {
	case tensor.IQ2_XXS:
		qs := b[2:66]
		for ib := range 8 {
			a0 := binary.LittleEndian.Uint32(qs[8*ib:])
			a1 := binary.LittleEndian.Uint32(qs[8*ib+4:])
			ls[2*ib] = int16(2*(a1>>28) + 1)
			ls[2*ib+1] = ls[2*ib]
			for l := range 4 {
				signed(32*ib+8*l, iq2xxsGrid[uint8(a0>>(8*l))], ksignsIQ2XS[(a1>>(7*l))&127])
			}
		}
	case tensor.IQ2_XS:
		for ib := range 8 {
			ls[2*ib] = int16(2*(b[66+ib]&0xf) + 1)
			ls[2*ib+1] = int16(2*(b[66+ib]>>4) + 1)
			for l := range 4 {
				v := binary.LittleEndian.Uint16(b[2+2*(4*ib+l):])
				signed(32*ib+8*l, iq2xsGrid[v&511], ksignsIQ2XS[v>>9])
			}
		}
	case tensor.IQ2_S:
		qs, signs, qh := b[2:34], b[34:66], b[66:74]
		for ib := range 8 {
			ls[2*ib] = int16(2*(b[74+ib]&0xf) + 1)
			ls[2*ib+1] = int16(2*(b[74+ib]>>4) + 1)
			for l := range 4 {
				idx := uint16(qs[4*ib+l]) | (uint16(qh[ib])<<(8-2*l))&0x300
				signed(32*ib+8*l, iq2sGrid[idx], signs[4*ib+l])
			}
		}
	default:
		panic("quant: IQ2Unpack " + t.String())
	}
}
