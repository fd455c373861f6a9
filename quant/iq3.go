package quant

import (
	"encoding/binary"
	"math"
	"sync"
)

// The 3-bit lattice encoders: ggml's quantize_row_iq3_xxs_impl (IQ3_XXS,
// a grid of 256 points) and quantize_row_iq3_s_impl (IQ3_S, 512 points),
// with or without importance weights (llama.cpp c392e509, ggml-quants.c).
// Each 32-value block is split into eight groups of four magnitudes; a
// group is stored as the index of a grid point whose coordinates are the
// odd levels 1, 3, …, 15, and signs are stored apart. The scale search
// tries inverse scales around 15/max, rounds each group onto the lattice and,
// for a group that lands off the grid, takes the nearest of the grid points
// ggml lists as its neighbours. As in kquants.go every float32 operation is
// one IEEE operation, as in ggml, which is compiled without FMA.
//
// IQ3_XXS super-block (256 values, 98 bytes): per 32-value block b eight
// grid indices qs[8b…8b+7] and a u32 holding four 7-bit sign masks (the
// eighth sign of each group of eight is their parity) and a 4-bit scale
// ls in its top bits; x = d·(0.5+ls)·0.5·grid[q]·sign:
//
//	+------+---------------------+-------------------------------------+
//	| d    | qs[64] grid indices | 8 × u32: signs 7+7+7+7 bits | ls<<28 |
//	| f16  | (256-point grid)    |                                     |
//	+------+---------------------+-------------------------------------+
//	0      2                     66                                    98
//
// IQ3_S super-block (256 values, 110 bytes): the 9-bit grid index of group
// g is qs[g] | bit g%8 of qh[g/8] <<8, signs[32] hold one bit per value,
// scales[4] two 4-bit ls per byte; x = d·(1+2·ls)·grid[q]·sign:
//
//	+------+--------+--------+------------+-----------+
//	| d    | qs[64] | qh[8]  | signs[32]  | scales[4] |
//	| f16  |        |        |            |           |
//	+------+--------+--------+------------+-----------+
//	0      2        66       74           106         110

// iq3Table is what ggml's iq3xs_init_impl builds for one grid: the grid
// points as levels 0..7 (the stored coordinate is 2l+1), a map from the
// 4096 points of the 8⁴ lattice to their grid index, and for every lattice
// point off the grid the grid points at its nwant smallest squared
// distances, ordered by distance and then by index.
type iq3Table struct {
	levels [][4]int8
	// index[u] for the lattice point u = Σ l_i<<3i is its grid index, or
	// −1−o with o the offset in neighbours of its list: a count, then the
	// grid indices.
	index      [4096]int32
	neighbours []uint16
}

var (
	iq3xxsOnce, iq3sOnce   sync.Once
	iq3xxsTable, iq3sTable *iq3Table
)

// iq3XXSTable returns the 256-point table (grid bytes 8l+4, and 62 for
// l = 7, so l = byte>>3).
func iq3XXSTable() *iq3Table {
	iq3xxsOnce.Do(func() { iq3xxsTable = newIQ3Table(iq3xxsGrid[:], 3, 2) })
	return iq3xxsTable
}

// iq3STable returns the 512-point table (grid bytes 2l+1, l = byte>>1).
func iq3STable() *iq3Table {
	iq3sOnce.Do(func() { iq3sTable = newIQ3Table(iq3sGrid[:], 1, 3) })
	return iq3sTable
}

// newIQ3Table builds the table of a dequantization grid whose bytes give
// the level as byte>>shift; nwant is how many distinct distances each
// off-grid point's neighbour list spans (2 for 256 points, 3 for 512).
func newIQ3Table(grid []uint32, shift uint, nwant int) *iq3Table {
	t := &iq3Table{levels: make([][4]int8, len(grid))}
	for i := range t.index {
		t.index[i] = -1
	}
	for k, g := range grid {
		u := 0
		for i := range 4 {
			l := int8(uint8(g>>(8*i)) >> shift)
			t.levels[k][i] = l
			u |= int(l) << (3 * i)
		}
		t.index[u] = int32(k)
	}
	d2 := make([]int, len(grid))
	for u := range t.index {
		if t.index[u] >= 0 {
			continue
		}
		for j, lv := range t.levels {
			d2[j] = 0
			for i := range 4 {
				d := 2 * (int(lv[i]) - (u>>(3*i))&7)
				d2[j] += d * d
			}
		}
		start := len(t.neighbours)
		t.index[u] = int32(-1 - start)
		t.neighbours = append(t.neighbours, 0)
		// The grid points at the nwant smallest distances, by distance and
		// then by index (ggml sorts the (distance, index) pairs).
		last := -1
		for range nwant {
			next := math.MaxInt
			for _, d := range d2 {
				if d > last && d < next {
					next = d
				}
			}
			for j, d := range d2 {
				if d == next {
					t.neighbours = append(t.neighbours, uint16(j))
				}
			}
			last = next
		}
		t.neighbours[start] = uint16(len(t.neighbours) - start - 1)
	}
	return t
}

// iq3Point returns the lattice point of the four levels in L.
func iq3Point(L []int8) int {
	return int(L[0]) | int(L[1])<<3 | int(L[2])<<6 | int(L[3])<<9
}

// bestNeighbour is ggml's iq3_find_best_neighbour: of the off-grid point
// u's neighbours, the one nearest to xval/scale by Σw·(scale·q−x)² (the
// first on ties), whose levels it writes to L. If no distance is below
// FLT_MAX (NaN or Inf input), where ggml aborts, it takes the first.
func (t *iq3Table) bestNeighbour(u int, xval, w []float32, scale float32, L []int8) int {
	nb := t.neighbours[-1-t.index[u]:]
	n := int(nb[0])
	best, bestD2 := int(nb[1]), float32(math.MaxFloat32)
	for _, j := range nb[1 : n+1] {
		var d2 float32
		for i, l := range t.levels[j] {
			diff := float32(scale*float32(2*l+1)) - xval[i]
			d2 += float32(float32(w[i]*diff) * diff)
		}
		if d2 < bestD2 {
			bestD2, best = d2, int(j)
		}
	}
	copy(L[:4], t.levels[best][:])
	return best
}

// iq3State is the part of ggml's per-call scratch that carries from one
// 32-value block to the next: the levels and on-grid flags of the last
// accepted trial, which a block whose search accepts no trial (all its
// weights zero) reuses, as ggml does.
type iq3State struct {
	L      [32]int8
	onGrid [8]bool
}

// iq3Levels rounds the group xval[0:4] at inverse scale id to levels 0..7
// (l = nearest_int(0.5·(id·x−1))) in L and returns its lattice point.
func iq3Levels(L []int8, xval []float32, id float32) int {
	for i := range 4 {
		l := nearestInt(float32(0.5 * float32(float32(id*xval[i])-1)))
		L[i] = int8(max(0, min(7, l)))
	}
	return iq3Point(L)
}

// iq3Sums returns Σw·x·q and Σw·q² over a block, q = 2l+1.
func iq3Sums(weight, xval []float32, L []int8) (sumqx, sumq2 float32) {
	for i, w := range weight {
		q := float32(2*int32(L[i]) + 1)
		sumqx += float32(float32(w*xval[i]) * q)
		sumq2 += float32(float32(w*q) * q)
	}
	return sumqx, sumq2
}

// search is the scale search of one 32-value block of magnitudes xval
// (largest mx): for each trial inverse scale (15+0.2·is)/mx, is in
// −ntry..ntry, every group is rounded to the lattice (an off-grid group
// takes its best neighbour at that scale), and the trial with the largest
// (Σw·x·q)²/Σw·q² is kept in st. If a kept group is off the grid and the
// scale is positive, the groups (all of them if redoAll, else the off-grid
// ones) are rounded again at the kept scale and the scale refitted.
func (t *iq3Table) search(st *iq3State, xval, weight, waux []float32, mx float32, ntry int, redoAll bool) float32 {
	var laux [32]int8
	var onGridAux [8]bool
	var best float32
	scale := mx / 15
	for is := -ntry; is <= ntry; is++ {
		id := float32(15+float32(float32(is)*0.2)) / mx
		thisScale := 1 / id
		for k := range 8 {
			u := iq3Levels(laux[4*k:4*k+4], xval[4*k:4*k+4], id)
			onGridAux[k] = t.index[u] >= 0
			if !onGridAux[k] {
				t.bestNeighbour(u, xval[4*k:4*k+4], waux[4*k:4*k+4], thisScale, laux[4*k:4*k+4])
			}
		}
		sumqx, sumq2 := iq3Sums(weight, xval, laux[:])
		if sumq2 > 0 && float32(sumqx*sumqx) > float32(best*sumq2) {
			scale = sumqx / sumq2
			best = float32(scale * sumqx)
			st.L = laux
			st.onGrid = onGridAux
		}
	}
	offGrid := false
	for _, on := range st.onGrid {
		offGrid = offGrid || !on
	}
	if offGrid && scale > 0 {
		id := 1 / scale
		var lk [4]int8
		for k := range 8 {
			if st.onGrid[k] && !redoAll {
				continue
			}
			u := iq3Levels(lk[:], xval[4*k:4*k+4], id)
			if gi := t.index[u]; gi >= 0 {
				copy(st.L[4*k:4*k+4], t.levels[gi][:])
			} else {
				t.bestNeighbour(u, xval[4*k:4*k+4], waux[4*k:4*k+4], scale, st.L[4*k:4*k+4])
			}
		}
		sumqx, sumq2 := iq3Sums(weight, xval, st.L[:])
		if sumq2 > 0 {
			scale = sumqx / sumq2
		}
	}
	return scale
}

// gridIndex returns the grid index of the four levels in L (0 if they are
// off the grid, which the search never leaves them, where ggml aborts).
func (t *iq3Table) gridIndex(L []int8) int {
	return max(0, int(t.index[iq3Point(L)]))
}

// iq3Weights sets the fit weights of a 32-value block xb (x², or with
// importance qw·√(σ² + x²)) and their square roots, the weights of the
// neighbour search.
func iq3Weights(weight, waux, xb, qw []float32, sigma2 float32) {
	iq4Weights(weight, xb, qw, sigma2)
	for i, w := range weight {
		waux[i] = sqrt32(w)
	}
}

// iq3Sigma2 is 2·Σx²/256 over a super-block, computed in that order.
func iq3Sigma2(x []float32) float32 {
	var s float32
	for _, v := range x {
		s += float32(v * v)
	}
	return float32(2*s) / qkK
}

// groupMaxEpsIQ3XXS is ggml's GROUP_MAX_EPS_IQ3_XXS: an IQ3_XXS block whose
// largest magnitude is below it is stored as zero.
const groupMaxEpsIQ3XXS = 1e-8

// quantIQ3_XXS encodes one 256-value super-block without importance.
func quantIQ3_XXS(b []byte, x []float32) {
	var st iq3State
	quantIQ3_XXSW(b, x, nil, &st)
}

// quantIQ3_XXSW encodes one 256-value super-block with importance qw (nil:
// weights x²). Signs are taken per group of eight with an even number of
// negatives: for an odd count the value of least w·x² is flipped. Block
// scales are fitted by search, the super-block's d is max/31 (stored times
// ggml's fudge factor 1.0125) and each block keeps l = round((s/d−1)/2),
// clamped to 0..15.
func quantIQ3_XXSW(b []byte, x, qw []float32, st *iq3State) {
	t := iq3XXSTable()
	var weight, waux, xval [32]float32
	var scales [8]float32
	x = x[:qkK]
	clear(b[:98])
	qs, ss := b[2:66], b[66:98]
	sigma2 := iq3Sigma2(x)
	var maxScale float32
	for ib := range 8 {
		xb := x[32*ib : 32*ib+32]
		var qwb []float32
		if qw != nil {
			qwb = qw[32*ib : 32*ib+32]
		}
		iq3Weights(weight[:], waux[:], xb, qwb, sigma2)
		var signs [4]uint32
		for k := range 4 {
			nflip, s := 0, uint32(0)
			for i := 8 * k; i < 8*k+8; i++ {
				if xb[i] >= 0 {
					xval[i] = xb[i]
				} else {
					xval[i] = -xb[i]
					nflip++
					s |= 1 << (i - 8*k)
				}
			}
			if nflip%2 != 0 {
				imin := 8 * k
				mn := float32(float32(weight[imin]*xb[imin]) * xb[imin])
				for i := 8*k + 1; i < 8*k+8; i++ {
					if ax := float32(float32(weight[i]*xb[i]) * xb[i]); ax < mn {
						mn, imin = ax, i
					}
				}
				xval[imin] = -xval[imin]
				s ^= 1 << (imin - 8*k)
			}
			signs[k] = s & 127
		}
		mx := xval[0]
		for _, v := range xval[1:] {
			if !(mx > v) {
				mx = v
			}
		}
		if mx < groupMaxEpsIQ3XXS {
			scales[ib] = 0
			st.L = [32]int8{}
			continue
		}
		scale := t.search(st, xval[:], weight[:], waux[:], mx, 15, false)
		if scale < 0 {
			scale = -scale
			for k := range signs {
				signs[k] = ^signs[k] & 127
			}
		}
		for k := range 8 {
			qs[8*ib+k] = uint8(t.gridIndex(st.L[4*k : 4*k+4]))
		}
		binary.LittleEndian.PutUint32(ss[4*ib:], signs[0]|signs[1]<<7|signs[2]<<14|signs[3]<<21)
		scales[ib] = scale
		if !(maxScale > scale) {
			maxScale = scale
		}
	}
	if maxScale == 0 {
		clear(b[:98])
		return
	}
	d := maxScale / 31
	putHalf(b, float32(d*1.0125))
	id := 1 / d
	for ib, s := range scales {
		l := max(0, min(15, nearestInt(float32(0.5*float32(float32(id*s)-1)))))
		ss[4*ib+3] |= uint8(l) << 4
	}
}

// quantIQ3_S encodes one 256-value super-block without importance.
func quantIQ3_S(b []byte, x []float32) {
	var st iq3State
	quantIQ3_SW(b, x, nil, &st)
}

// quantIQ3_SW encodes one 256-value super-block with importance qw (nil:
// weights x²): one sign bit per value, block scales fitted by search, d =
// max/31 (stored times ggml's fudge factor 1.033), each block keeping
// l = round((s/d−1)/2) clamped to 0..15. As in ggml, an all-zero block
// writes no grid indices or signs: the next block's go where its would
// have gone, and the super-block's last ones stay zero.
func quantIQ3_SW(b []byte, x, qw []float32, st *iq3State) {
	t := iq3STable()
	var weight, waux, xval [32]float32
	var scales [8]float32
	x = x[:qkK]
	clear(b[:110])
	qs, qh, signs := b[2:66], b[66:74], b[74:106]
	sigma2 := iq3Sigma2(x)
	var maxScale float32
	for ib := range 8 {
		xb := x[32*ib : 32*ib+32]
		var qwb []float32
		if qw != nil {
			qwb = qw[32*ib : 32*ib+32]
		}
		iq3Weights(weight[:], waux[:], xb, qwb, sigma2)
		var bsigns [4]uint8
		for k := range 4 {
			for i := 8 * k; i < 8*k+8; i++ {
				if xb[i] >= 0 {
					xval[i] = xb[i]
				} else {
					xval[i] = -xb[i]
					bsigns[k] |= 1 << (i - 8*k)
				}
			}
		}
		mx := xval[0]
		for _, v := range xval[1:] {
			if !(mx > v) {
				mx = v
			}
		}
		if mx == 0 {
			scales[ib] = 0
			continue
		}
		st.onGrid = [8]bool{}
		scale := t.search(st, xval[:], weight[:], waux[:], mx, 9, true)
		if scale < 0 {
			scale = -scale
			for k := range bsigns {
				bsigns[k] = ^bsigns[k]
			}
		}
		for k := range 8 {
			gi := t.gridIndex(st.L[4*k : 4*k+4])
			qs[k] = uint8(gi)
			g := 8*ib + k
			qh[g/8] |= uint8(gi>>8) << (g % 8)
		}
		qs = qs[8:]
		copy(signs, bsigns[:])
		signs = signs[4:]
		scales[ib] = scale
		if !(maxScale > scale) {
			maxScale = scale
		}
	}
	if maxScale == 0 {
		return
	}
	d := maxScale / 31
	putHalf(b, float32(d*1.033))
	id := 1 / d
	for ib := 0; ib < 8; ib += 2 {
		l1 := max(0, min(15, nearestInt(float32(0.5*float32(float32(id*scales[ib])-1)))))
		l2 := max(0, min(15, nearestInt(float32(0.5*float32(float32(id*scales[ib+1])-1)))))
		b[106+ib/2] = uint8(l1 | l2<<4)
	}
}

// iq3Rows applies a super-block encoder along a row, with one scratch state
// for the row as ggml's row functions keep.
func iq3Rows(f func(b []byte, x, qw []float32, st *iq3State), bytes int) rowFunc {
	return func(b []byte, x, qw []float32) {
		var st iq3State
		for i := 0; i < len(x)/qkK; i++ {
			f(b[i*bytes:(i+1)*bytes], x[i*qkK:(i+1)*qkK], qw[i*qkK:(i+1)*qkK], &st)
		}
	}
}

// IQ3Grids returns copies of the IQ3_XXS and IQ3_S grids (ggml's
// iq3xxs_grid and iq3s_grid: four magnitudes a byte each) and of the
// sign masks of the 7-bit sign indices (ksigns_iq2xs: the eighth bit is
// the parity), for the kernels that multiply them as integers.
func IQ3Grids() (xxs [256]uint32, s [512]uint32, signs [128]uint8) {
	return iq3xxsGrid, iq3sGrid, ksignsIQ2XS
}
