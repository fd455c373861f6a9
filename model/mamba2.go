package model

import (
	"fmt"

	spec "github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/kernels"
	"github.com/tfconv/tfconv/tensor"
)

// mamba2Mixer is Mamba-2's token mixer (arch.Mamba2), for the normed input
// h of a layer:
//
//	z, xBC, dt = h·W_inᵀ                   (inner, inner + 2·G·N, H)
//	xBC        = SiLU(conv1d(xBC) + b)      (causal, depthwise, kernel K)
//	x, B, C    = xBC                        (inner = H·P; G groups of N each)
//	dt         = softplus(dt + dt_bias)
//	y          = SSD scan of x, B, C, dt with A = −exp(A_log), + D·x
//	out        = (RMSNorm_g(y ⊙ SiLU(z)) ⊙ w_norm)·W_outᵀ   (the norm per group)
//
// Its state per sequence is the convolution's last K−1 inputs
// ([K−1][inner + 2·G·N]) and the scan's [H][P][N].
type mamba2Mixer struct {
	In   linear // [2·inner + 2·G·N + H][d]
	Conv []float32
	// ConvB is the convolution's bias [conv]; nil without.
	ConvB []float32
	DTB   []float32 // [H] the step's bias
	A     []float32 // [H] −exp(A_log)
	D     []float32 // [H]
	Norm  *norm     // [inner], one RMSNorm per group of inner/G; nil without
	Out   linear    // [d][inner]

	inner, conv, heads, headDim, state, groups, kernel int
}

// loadMamba2 loads layer i's Mamba-2 mixer by the roles llama.cpp names
// (blk.N.ssm_*), whatever family holds it: its sizes come from the
// tensors' shapes, the group count from the config (arch.SSMGroups).
func (fl familyLoader) loadMamba2(i int, cfg *Config, c spec.Config) (recurrentMixer, error) {
	d := cfg.DModel
	m := &mamba2Mixer{groups: int(spec.SSMGroups(c))}
	outShape := fl.shapeOf("blk.{bid}.ssm_out", i, ".weight")
	convShape := fl.shapeOf("blk.{bid}.ssm_conv1d", i, ".weight")
	aShape := fl.shapeOf("blk.{bid}.ssm_a", i, "")
	if fl.err != nil {
		return nil, fl.err
	}
	if len(outShape) != 2 || len(convShape) < 2 || len(aShape) < 1 {
		return nil, fmt.Errorf("model: %s: layer %d: Mamba-2 tensors of shapes %v (ssm_out), %v (ssm_conv1d), %v (ssm_a)",
			fl.c.Path, i, outShape, convShape, aShape)
	}
	const maxDim = 1 << 20
	m.inner, m.conv, m.kernel, m.heads = int(outShape[1]), int(convShape[0]), int(convShape[len(convShape)-1]), int(aShape[0])
	for _, v := range []int{m.inner, m.conv, m.kernel, m.heads, m.groups} {
		if v <= 0 || v > maxDim {
			return nil, fmt.Errorf("model: %s: layer %d: Mamba-2 size %d out of range (inner %d, conv %d×%d, heads %d, groups %d)",
				fl.c.Path, i, v, m.inner, m.conv, m.kernel, m.heads, m.groups)
		}
	}
	m.headDim = m.inner / m.heads
	if m.inner%m.heads != 0 || m.inner%m.groups != 0 || m.heads%m.groups != 0 || m.conv <= m.inner || (m.conv-m.inner)%(2*m.groups) != 0 {
		return nil, fmt.Errorf("model: %s: layer %d: Mamba-2 sizes do not fit: inner %d, %d heads, %d groups, %d convolved channels",
			fl.c.Path, i, m.inner, m.heads, m.groups, m.conv)
	}
	m.state = (m.conv - m.inner) / (2 * m.groups)
	m.In = fl.lin("blk.{bid}.ssm_in", i, m.inner+m.conv+m.heads, d)
	m.Out = fl.lin("blk.{bid}.ssm_out", i, d, m.inner)
	m.Conv = fl.vector(fl.name("blk.{bid}.ssm_conv1d", i, ".weight"), m.conv*m.kernel)
	m.ConvB = fl.optVector(fl.name("blk.{bid}.ssm_conv1d", i, ".bias"), m.conv)
	m.DTB = fl.vector(fl.name("blk.{bid}.ssm_dt", i, ".bias"), m.heads)
	m.A = fl.ggufVector("blk.{bid}.ssm_a", i, "", m.heads)
	m.D = fl.ggufVector("blk.{bid}.ssm_d", i, "", m.heads)
	if fl.has(fl.name("blk.{bid}.ssm_norm", i, ".weight")) {
		m.Norm = &norm{W: fl.vector(fl.name("blk.{bid}.ssm_norm", i, ".weight"), m.inner), Eps: cfg.Eps, RMS: true,
			Width: m.inner / m.groups}
	}
	if fl.err != nil {
		return nil, fl.err
	}
	return m, nil
}

// shapeOf is the shape of role's tensor at layer in the checkpoint (nil,
// and the loader failed, when absent).
func (fl familyLoader) shapeOf(role spec.Role, layer int, suffix string) tensor.Shape {
	name := fl.name(role, layer, suffix)
	t, ok := fl.tensor(name)
	if !ok {
		fl.fail(fmt.Errorf("model: %s: tensor %q missing", fl.c.Path, name))
		return nil
	}
	return t.Shape
}

func (m *mamba2Mixer) stateSize() int { return (m.kernel-1)*m.conv + m.inner*m.state }

func (m *mamba2Mixer) forward(dst, h, state []float32, T int, obs Observer) error {
	inW := m.inner + m.conv + m.heads
	sc := getScratch(T * (inW + 2*m.conv + m.heads + m.inner))
	defer putScratch(sc)
	zx, xbc, conv, dt, y := sc.take(T*inW), sc.take(T*m.conv), sc.take(T*m.conv), sc.take(T*m.heads), sc.take(T*m.inner)
	obs.apply(&m.In, zx, h, T)
	for t := 0; t < T; t++ {
		row := zx[t*inW : (t+1)*inW]
		copy(xbc[t*m.conv:(t+1)*m.conv], row[m.inner:m.inner+m.conv])
		dtt := dt[t*m.heads : (t+1)*m.heads]
		for j, v := range row[m.inner+m.conv:] {
			dtt[j] = v + m.DTB[j]
		}
	}
	convState, ssm := state[:(m.kernel-1)*m.conv], state[(m.kernel-1)*m.conv:]
	kernels.CausalConv1D(conv, xbc, convState, m.Conv, m.ConvB, T, m.conv, m.kernel)
	kernels.SiLU(conv)
	kernels.Softplus(dt)
	gn := m.groups * m.state
	kernels.SSDScan(y, ssm, conv, conv[m.inner:], conv[m.inner+gn:], m.conv, dt, m.A, m.D, T, m.heads, m.headDim, m.state, m.groups)
	// Gate by SiLU(z), then the grouped norm.
	z := xbc[:T*m.inner] // reused: the convolution's input is no longer needed
	for t := 0; t < T; t++ {
		copy(z[t*m.inner:(t+1)*m.inner], zx[t*inW:t*inW+m.inner])
	}
	kernels.SiLU(z)
	kernels.Mul(y, z)
	if m.Norm != nil {
		m.Norm.apply(y, y, T, m.inner)
	}
	obs.apply(&m.Out, dst, y, T)
	return nil
}
