package model

import (
	"fmt"

	spec "github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/kernels"
	"github.com/tfconv/tfconv/tensor"
)

// mambaMixer is Mamba-1's selective state-space mixer (arch.Mamba), for
// an input h of width d:
//
//	x, z = h·W_inᵀ                            (each d_inner wide)
//	x    = SiLU(CausalConv1D(x) + b_conv)     (kernel d_conv over time)
//	Δ₀, B, C = x·W_xᵀ                         (dt_rank, d_state, d_state)
//	Δ    = softplus(Δ₀·W_dtᵀ + b_dt)          (d_inner)
//	y    = SelectiveScan(x, Δ, A, B, C) + D ⊙ x
//	out  = (y ⊙ SiLU(z))·W_outᵀ
//
// with A = −exp(A_log) per channel and state element. Its state per
// sequence is the convolution's last d_conv−1 inputs, then the scan's
// [d_inner][d_state] state.
type mambaMixer struct {
	In    linear    // [2·inner][d]: x, then z
	ConvW []float32 // [inner][conv]
	ConvB []float32 // [inner]; nil without
	X     linear    // [dtRank+2·state][inner]
	DT    linear    // [inner][dtRank], with bias
	A     []float32 // [inner][state], negative
	D     []float32 // [inner]
	Out   linear    // [d][inner]
	// DTNorm, BNorm, CNorm are RMSNorms of Δ₀ [dtRank], B and C [state]
	// (Jamba's); nil without.
	DTNorm, BNorm, CNorm *norm

	inner, state, dtRank, conv int
}

// mamba loads layer i's Mamba-1 mixer.
func (fl familyLoader) mamba(i int, cfg *Config, c spec.Config) (recurrentMixer, error) {
	if fl.f.SSM == nil {
		return nil, fmt.Errorf("model: %s: %s states no Mamba sizes", fl.c.Path, fl.f.Name)
	}
	inner, state, dtRank, conv := fl.f.SSM(c)
	const maxDim = 1 << 20
	for _, v := range []int64{inner, state, dtRank, conv} {
		if v <= 0 || v > maxDim {
			return nil, fmt.Errorf("model: %s: mamba config: size %d out of range (d_inner %d, d_state %d, dt_rank %d, d_conv %d)",
				fl.c.Path, v, inner, state, dtRank, conv)
		}
	}
	if !fl.hf && mdBool(fl.c.Metadata, "mamba.ssm.dt_b_c_rms", false) {
		// Falcon-Mamba's RMSNorms of Δ, B and C.
		return nil, tensor.Unsupported("model: %s: mamba.ssm.dt_b_c_rms is true (Falcon-Mamba): not supported", fl.c.Path)
	}
	d := cfg.DModel
	m := &mambaMixer{inner: int(inner), state: int(state), dtRank: int(dtRank), conv: int(conv)}
	n, s, r := m.inner, m.state, m.dtRank
	m.In = fl.lin("blk.{bid}.ssm_in", i, 2*n, d)
	m.ConvW = fl.vector(fl.name("blk.{bid}.ssm_conv1d", i, ".weight"), n*m.conv)
	m.ConvB = fl.optVector(fl.name("blk.{bid}.ssm_conv1d", i, ".bias"), n)
	m.X = fl.lin("blk.{bid}.ssm_x", i, r+2*s, n)
	m.DT = fl.lin("blk.{bid}.ssm_dt", i, n, r)
	m.D = fl.vector(fl.name("blk.{bid}.ssm_d", i, ""), n)
	m.Out = fl.lin("blk.{bid}.ssm_out", i, d, n)
	m.DTNorm = fl.norm("blk.{bid}.ssm_dt_norm", i, r, cfg.Eps, false)
	m.BNorm = fl.norm("blk.{bid}.ssm_b_norm", i, s, cfg.Eps, false)
	m.CNorm = fl.norm("blk.{bid}.ssm_c_norm", i, s, cfg.Eps, false)
	aName := fl.name("blk.{bid}.ssm_a", i, "")
	m.A = fl.vector(aName, n*s)
	if fl.hf && m.A != nil {
		// A_log → A, as the converter (and transformers) compute it.
		t, _ := fl.f.Tensor("blk.{bid}.ssm_a")
		negExp, _, err := t.Layout.Transform(aName, tensor.Shape{int64(len(m.A))}, 0, 0, false)
		if err != nil {
			return nil, err
		}
		negExp(m.A, m.A)
	}
	return m, nil
}

func (m *mambaMixer) stateSize() int { return (m.conv-1)*m.inner + m.inner*m.state }

func (m *mambaMixer) forward(dst, h, state []float32, T int, obs Observer) error {
	n, s, r := m.inner, m.state, m.dtRank
	convState, ssm := state[:(m.conv-1)*n], state[(m.conv-1)*n:]
	sc := getScratch(T * (2*n + n + n + (r + 2*s) + r + s + s + n + n))
	defer putScratch(sc)
	take := sc.take
	xz, x, xc := take(T*2*n), take(T*n), take(T*n)
	w := r + 2*s
	xdb, dt0, b, c, dt, y := take(T*w), take(T*r), take(T*s), take(T*s), take(T*n), take(T*n)
	obs.apply(&m.In, xz, h, T)
	for t := 0; t < T; t++ {
		copy(x[t*n:(t+1)*n], xz[t*2*n:t*2*n+n])
	}
	kernels.CausalConv1D(xc, x, convState, m.ConvW, m.ConvB, T, n, m.conv)
	kernels.SiLU(xc)

	obs.apply(&m.X, xdb, xc, T)
	for t := 0; t < T; t++ {
		row := xdb[t*w : (t+1)*w]
		copy(dt0[t*r:(t+1)*r], row[:r])
		copy(b[t*s:(t+1)*s], row[r:r+s])
		copy(c[t*s:(t+1)*s], row[r+s:])
	}
	if m.DTNorm != nil {
		m.DTNorm.apply(dt0, dt0, T, r)
	}
	if m.BNorm != nil {
		m.BNorm.apply(b, b, T, s)
	}
	if m.CNorm != nil {
		m.CNorm.apply(c, c, T, s)
	}
	obs.apply(&m.DT, dt, dt0, T)
	kernels.Softplus(dt)

	kernels.SelectiveScan(y, ssm, xc, dt, m.A, b, c, m.D, T, n, s)
	// gate: y ⊙ SiLU(z), z reusing x's buffer
	for t := 0; t < T; t++ {
		copy(x[t*n:(t+1)*n], xz[t*2*n+n:(t+1)*2*n])
	}
	kernels.SiLU(x)
	kernels.Mul(y, x)
	obs.apply(&m.Out, dst, y, T)
	return nil
}
