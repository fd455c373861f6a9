package kernels

import (
	"fmt"
	"math"
)

// AttentionParams describes one scaled dot-product attention call.
type AttentionParams struct {
	Heads   int // query heads
	KVHeads int // key/value heads; Heads must be a multiple (grouped-query attention)
	HeadDim int
	Scale   float32 // usually 1/√HeadDim; T5 uses 1

	// Causal masks key j for query i unless j ≤ QPos0+i: query i sits at
	// absolute position QPos0+i and keys at positions 0..Tk-1 (a KV cache
	// holds the earlier positions).
	Causal bool
	QPos0  int

	// KeyMask, when non-nil, has one entry per key; false masks the key out
	// (padding).
	KeyMask []bool

	// Bias, when non-nil, is added to the scaled score of head h, query i
	// (relative to the call, absolute QPos0+i) and key j: ALiBi slopes and
	// T5's relative position buckets come in here.
	Bias func(h, i, j int) float32
}

// Attention computes, for every query row i and head h,
//
//	dst[i,h] = Σ_j softmax_j(Scale·q[i,h]·k[j,g] + Bias(h,i,j))·v[j,g]
//
// with g = h/(Heads/KVHeads), masked keys excluded. q and dst are
// [Tq][Heads][HeadDim]; k and v are [Tk][KVHeads][HeadDim]. It never builds
// the Tq×Tk score matrix: each (query, head) pair keeps a running maximum and
// sum (online softmax, as in FlashAttention) over the keys. A query that can
// see no key gets a zero output. The score dot products (Dot) and the
// accumulation of the weighted values run on the SIMD kernels when active;
// the exponentials are float64 math.Exp rounded to float32.
func Attention(dst, q, k, v []float32, Tq, Tk int, p AttentionParams) {
	H, G, D := p.Heads, p.KVHeads, p.HeadDim
	if G <= 0 || H%G != 0 || len(q) < Tq*H*D || len(dst) < Tq*H*D || len(k) < Tk*G*D || len(v) < Tk*G*D {
		panic(fmt.Sprintf("kernels: Attention Tq=%d Tk=%d heads=%d kv=%d dim=%d with len q=%d k=%d v=%d dst=%d",
			Tq, Tk, H, G, D, len(q), len(k), len(v), len(dst)))
	}
	group := H / G
	parallelFor(Tq*H, 1, func(lo, hi int) {
		acc := make([]float32, D)
		for t := lo; t < hi; t++ {
			i, h := t/H, t%H
			g := h / group
			qv := q[(i*H+h)*D : (i*H+h+1)*D]
			out := dst[(i*H+h)*D : (i*H+h+1)*D]
			clear(acc)
			mx := float32(math.Inf(-1))
			var sum float32
			kmax := Tk
			if p.Causal {
				kmax = min(Tk, p.QPos0+i+1)
			}
			for j := 0; j < kmax; j++ {
				if p.KeyMask != nil && !p.KeyMask[j] {
					continue
				}
				s := p.Scale * Dot(qv, k[(j*G+g)*D:(j*G+g+1)*D])
				if p.Bias != nil {
					s += p.Bias(h, i, j)
				}
				vv := v[(j*G+g)*D : (j*G+g+1)*D]
				if s > mx {
					c := float32(math.Exp(float64(mx - s)))
					sum *= c
					for d := range acc {
						acc[d] *= c
					}
					mx = s
				}
				e := float32(math.Exp(float64(s - mx)))
				sum += e
				axpy(acc, e, vv)
			}
			if sum == 0 {
				clear(out)
				continue
			}
			inv := 1 / sum
			for d := range out {
				out[d] = acc[d] * inv
			}
		}
	})
}
