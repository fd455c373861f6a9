package model

import (
	"fmt"

	spec "github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/kernels"
)

// shortConv is LFM2's gated short convolution (arch.ShortConv), for
// input h[t] of width d:
//
//	[B; C; x] = W_in · h          (3d rows, in that order)
//	y[t]      = C[t] ⊙ Σ_{j<K} w[j] ⊙ (B ⊙ x)[t−K+1+j]   (depthwise, causal)
//	out[t]    = W_out · y[t]
//
// The state is the last K−1 rows of B ⊙ x.
type shortConv struct {
	In   linear    // [3d][d]
	Conv []float32 // [d][K], the taps of each channel, oldest first
	Out  linear    // [d][d]
	d, k int
}

// loadShortConv loads layer i's short convolution: blk.N.shortconv.in_proj,
// .conv (k taps, the GGUF key shortconv.l_cache, config.json conv_L_cache)
// and .out_proj.
func (fl familyLoader) loadShortConv(i int, cfg *Config, c spec.Config) (recurrentMixer, error) {
	d := cfg.DModel
	k, ok := c.Int("conv_L_cache")
	if !ok || k < 1 || k > 1<<10 {
		return nil, fmt.Errorf("model: %s: layer %d: conv_L_cache missing or out of range (%d)", fl.c.Path, i, k)
	}
	m := &shortConv{d: d, k: int(k),
		In:  fl.lin("blk.{bid}.shortconv.in_proj", i, 3*d, d),
		Out: fl.lin("blk.{bid}.shortconv.out_proj", i, d, d),
	}
	m.Conv = fl.vector(fl.name("blk.{bid}.shortconv.conv", i, ".weight"), d*int(k))
	if m.In.B != nil || m.Out.B != nil || fl.has(fl.name("blk.{bid}.shortconv.conv", i, ".bias")) {
		return nil, fmt.Errorf("model: %s: layer %d: the short convolution has biases, which LFM2 as llama.cpp runs it has not", fl.c.Path, i)
	}
	return m, nil
}

func (m *shortConv) stateSize() int { return (m.k - 1) * m.d }

func (m *shortConv) forward(dst, h, state []float32, T int, obs Observer) error {
	d := m.d
	sc := getScratch(T * 5 * d)
	defer putScratch(sc)
	bcx, bx, conv := sc.take(T*3*d), sc.take(T*d), sc.take(T*d)
	obs.apply(&m.In, bcx, h, T)
	for t := 0; t < T; t++ {
		row := bcx[t*3*d : (t+1)*3*d]
		b, x := row[:d], row[2*d:]
		out := bx[t*d : (t+1)*d]
		for c := range out {
			out[c] = b[c] * x[c]
		}
	}
	kernels.CausalConv1D(conv, bx, state, m.Conv, nil, T, d, m.k)
	for t := 0; t < T; t++ {
		kernels.Mul(conv[t*d:(t+1)*d], bcx[t*3*d+d:t*3*d+2*d])
	}
	obs.apply(&m.Out, dst, conv, T)
	return nil
}
