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

	// Window, when > 0, is a sliding window: query i sees key j only if
	// QPos0+i-j < Window (Mistral, Gemma 2's local layers).
	Window int

	// Chunk, when > 0, splits positions into aligned chunks of Chunk:
	// query i sees key j only if both lie in the same chunk, j ≥
	// ⌊(QPos0+i)/Chunk⌋·Chunk (Llama 4's local layers).
	Chunk int

	// SoftCap, when > 0, soft-caps every scaled score s to
	// SoftCap·tanh(s/SoftCap) before the bias and mask (Gemma 2).
	SoftCap float32

	// KeyMask, when non-nil, has one entry per key; false masks the key out
	// (padding).
	KeyMask []bool

	// Bias, when non-nil, is added to the scaled score of head h, query i
	// (relative to the call, absolute QPos0+i) and key j: ALiBi slopes and
	// T5's relative position buckets come in here.
	Bias func(h, i, j int) float32

	// Sinks, when non-nil, holds one learned logit per query head that
	// joins every softmax's denominator as a key with no value (attention
	// sinks, gpt-oss): weights exp(s_j)/(exp(Sinks[h]) + Σ exp(s_j)).
	Sinks []float32

	// Groups, when non-nil, has one entry per key position (absolute, as
	// the keys): positions sharing a group ≥ 0 see each other whatever the
	// causal limit, window or chunk says (Gemma 3's image tokens attend
	// bidirectionally within their image). Query i's group is
	// Groups[QPos0+i]; KeyMask still applies. A group is one contiguous
	// run of positions.
	Groups []int
}

// Attention computes, for every query row i and head h,
//
//	dst[i,h] = Σ_j softmax_j(Scale·q[i,h]·k[j,g] + Bias(h,i,j))·v[j,g]
//
// (with Sinks, the softmax's denominator also has exp(Sinks[h]))
// with g = h/(Heads/KVHeads), masked keys excluded. q and dst are
// [Tq][Heads][HeadDim]; k and v are [Tk][KVHeads][HeadDim]. It never builds
// the Tq×Tk score matrix: each (query, head) pair keeps a running maximum and
// sum (online softmax, as in FlashAttention) over the keys. A query that can
// see no key gets a zero output. The score dot products (Dot) and the
// accumulation of the weighted values run on the SIMD kernels when active;
// the keys are taken in blocks of attnBlock: the block's scores first, then
// its exponentials in one vector call (exp.go), then the weighted values,
// with the running maximum and the partial sums rescaled once per block.
// Masked keys (KeyMask, the causal limit, a Bias of -Inf) get weight 0.
func Attention(dst, q, k, v []float32, Tq, Tk int, p AttentionParams) {
	H, G, D := p.Heads, p.KVHeads, p.HeadDim
	if G <= 0 || H%G != 0 || len(q) < Tq*H*D || len(dst) < Tq*H*D || len(k) < Tk*G*D || len(v) < Tk*G*D {
		panic(fmt.Sprintf("kernels: Attention Tq=%d Tk=%d heads=%d kv=%d dim=%d with len q=%d k=%d v=%d dst=%d",
			Tq, Tk, H, G, D, len(q), len(k), len(v), len(dst)))
	}
	group := H / G
	negInf := float32(math.Inf(-1))
	parallelFor(Tq*H, 1, func(lo, hi int) {
		acc := make([]float32, D)
		var sc [attnBlock]float32
		var keep [attnBlock]bool
		for t := lo; t < hi; t++ {
			i, h := t/H, t%H
			g := h / group
			qv := q[(i*H+h)*D : (i*H+h+1)*D]
			out := dst[(i*H+h)*D : (i*H+h+1)*D]
			clear(acc)
			mx := negInf
			var sum float32
			kmax := Tk
			if p.Causal {
				kmax = min(Tk, p.QPos0+i+1)
			}
			kmin := 0
			if p.Window > 0 {
				kmin = max(0, p.QPos0+i-p.Window+1)
			}
			if p.Chunk > 0 {
				kmin = max(kmin, (p.QPos0+i)/p.Chunk*p.Chunk)
			}
			lo, hi := kmin, kmax // the reach without the query's group
			grp := -1
			if p.Groups != nil {
				if grp = p.Groups[p.QPos0+i]; grp >= 0 {
					for kmin > 0 && p.Groups[kmin-1] == grp {
						kmin--
					}
					for kmax < Tk && p.Groups[kmax] == grp {
						kmax++
					}
				}
			}
			for j0 := kmin; j0 < kmax; j0 += attnBlock {
				nb := min(attnBlock, kmax-j0)
				bmx := negInf
				for b := 0; b < nb; b++ {
					j := j0 + b
					keep[b] = (p.KeyMask == nil || p.KeyMask[j]) && (j >= lo && j < hi || grp >= 0 && p.Groups[j] == grp)
					if !keep[b] {
						continue
					}
					s := p.Scale * Dot(qv, k[(j*G+g)*D:(j*G+g+1)*D])
					if p.SoftCap > 0 {
						s = softCap(s, p.SoftCap)
					}
					if p.Bias != nil {
						s += p.Bias(h, i, j)
					}
					if s == negInf {
						keep[b] = false
						continue
					}
					sc[b] = s
					bmx = max(bmx, s)
				}
				if bmx == negInf {
					continue // every key of the block is masked
				}
				if bmx > mx {
					if mx != negInf {
						c := float32(math.Exp(float64(mx - bmx)))
						sum *= c
						for d := range acc {
							acc[d] *= c
						}
					}
					mx = bmx
				}
				for b := 0; b < nb; b++ {
					sc[b] -= mx
				}
				expInPlace(sc[:nb])
				for b := 0; b < nb; b++ {
					if keep[b] {
						j := j0 + b
						sum += sc[b]
						axpy(acc, sc[b], v[(j*G+g)*D:(j*G+g+1)*D])
					}
				}
			}
			if p.Sinks != nil {
				// The sink joins the running maximum and sum as one more
				// score whose value is zero.
				sk := p.Sinks[h]
				if sk > mx {
					if mx != negInf {
						c := float32(math.Exp(float64(mx - sk)))
						sum *= c
						for d := range acc {
							acc[d] *= c
						}
					}
					mx = sk
				}
				sum += float32(math.Exp(float64(sk - mx)))
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

// softCap is c·tanh(s/c), Gemma 2's soft-capping of attention scores and
// logits, in float32 steps as transformers computes it.
func softCap(s, c float32) float32 {
	return float32(math.Tanh(float64(s/c))) * c
}

// SoftCap soft-caps every element of x in place: x = c·tanh(x/c).
func SoftCap(x []float32, c float32) {
	for i, v := range x {
		x[i] = softCap(v, c)
	}
}

// attnBlock is how many keys Attention scores before it exponentiates
// them: enough to fill the exp kernel's vectors several times, few
// enough that the scores stay in registers' reach on the stack.
const attnBlock = 64
