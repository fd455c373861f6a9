package model

import (
	"fmt"
	"math"

	spec "github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/kernels"
	"github.com/tfconv/tfconv/tensor"
)

// deltaNet is the gated DeltaNet of Qwen3-Next's linear_attention layers
// (arch.GatedDeltaNet). For the normed input h of each token:
//
//	q, k, v = SiLU(conv(W_qkv·h))            causal depthwise convolution
//	q, k    = q/‖q‖, k/‖k‖                   per key head
//	β       = σ(b),  g = A·softplus(a + dt)  b, a from W_ba·h; A = −exp(A_log)
//	o       = the gated delta rule of q, k, v, g, β (kernels.GatedDeltaRule),
//	          each value head reading key head j/(value heads / key heads)
//	out     = W_out·(RMSNorm(o)·SiLU(W_z·h))  per value head
//
// Its state is the convolution's last K−1 inputs, then the delta rule's
// [value heads][key width][value width] matrices.
type deltaNet struct {
	QKV  linear    // [2·kHeads·kDim + vHeads·vDim][d]: all q heads, all k heads, all v heads
	Z    linear    // [vHeads·vDim][d]: the output gate
	BA   linear    // [2·vHeads][d]: per key head, β's then a's of its value heads
	Conv []float32 // [channels][K]
	A    []float32 // [vHeads]: −exp(A_log)
	Dt   []float32 // [vHeads]: the decay's bias
	Norm *norm     // [vDim]: the gated RMSNorm's weight
	Out  linear    // [d][vHeads·vDim]

	kHeads, kDim, vHeads, vDim, K int
}

// l2Eps is what the L2 norm of q and k adds under its square root
// (transformers' l2norm, as fla's kernels do).
const l2Eps = 1e-6

func (n *deltaNet) channels() int { return 2*n.kHeads*n.kDim + n.vHeads*n.vDim }

func (n *deltaNet) stateSize() int {
	return (n.K-1)*n.channels() + n.vHeads*n.kDim*n.vDim
}

func (n *deltaNet) forward(dst, h, state []float32, T int, obs Observer) error {
	C, kw, vw := n.channels(), n.kHeads*n.kDim, n.vHeads*n.vDim
	H, r := n.vHeads, n.vHeads/n.kHeads
	convState, S := state[:(n.K-1)*C], state[(n.K-1)*C:]
	sc := getScratch(T * (2*C + 2*vw + 2*H + 2*H*n.kDim + vw + 2*H + vw))
	defer putScratch(sc)
	qkv, x := sc.take(T*C), sc.take(T*C)
	z, ba := sc.take(T*vw), sc.take(T*2*H)
	obs.apply(&n.QKV, qkv, h, T)
	obs.apply(&n.Z, z, h, T)
	obs.apply(&n.BA, ba, h, T)
	kernels.CausalConv1D(x, qkv, convState, n.Conv, nil, T, C, n.K)
	kernels.SiLU(x)

	q, k := sc.take(T*H*n.kDim), sc.take(T*H*n.kDim)
	v := sc.take(T * vw)
	g, beta := sc.take(T*H), sc.take(T*H)
	for t := 0; t < T; t++ {
		row := x[t*C : (t+1)*C]
		for i := 0; i < n.kHeads; i++ {
			qi, ki := row[i*n.kDim:(i+1)*n.kDim], row[kw+i*n.kDim:kw+(i+1)*n.kDim]
			l2Normalize(qi)
			l2Normalize(ki)
			for m := 0; m < r; m++ {
				j := i*r + m
				copy(q[(t*H+j)*n.kDim:], qi)
				copy(k[(t*H+j)*n.kDim:], ki)
				b, a := ba[t*2*H+i*2*r+m], ba[t*2*H+i*2*r+r+m]
				beta[t*H+j] = float32(1 / (1 + math.Exp(-float64(b))))
				sp := [1]float32{a + n.Dt[j]}
				kernels.Softplus(sp[:])
				g[t*H+j] = n.A[j] * sp[0]
			}
		}
		copy(v[t*vw:(t+1)*vw], row[2*kw:])
	}
	o := sc.take(T * vw)
	kernels.GatedDeltaRule(o, q, k, v, g, beta, S, T, H, n.kDim, n.vDim, float32(1/math.Sqrt(float64(n.kDim))))
	n.Norm.apply(o, o, T*H, n.vDim)
	kernels.SiLU(z)
	kernels.Mul(o, z)
	obs.apply(&n.Out, dst, o, T)
	return nil
}

// l2Normalize scales x to unit length (l2Eps under the root).
func l2Normalize(x []float32) {
	var s float32
	for _, v := range x {
		s += v * v
	}
	inv := float32(1 / math.Sqrt(float64(s)+l2Eps))
	for i := range x {
		x[i] *= inv
	}
}

// deltaNet loads layer i's gated DeltaNet; its sizes are config.json's
// linear_* keys (a GGUF's ssm.* keys, read back into them).
func (fl familyLoader) deltaNet(i int, cfg *Config, c spec.Config) (recurrentMixer, error) {
	size := func(key string) (int, error) {
		v, ok := c.Int(key)
		if !ok || v <= 0 || v > 1<<20 {
			return 0, fmt.Errorf("model: %s: layer %d is a gated DeltaNet, and config %s is %d", fl.c.Path, i, key, v)
		}
		return int(v), nil
	}
	n := &deltaNet{}
	var err error
	for _, s := range []struct {
		dst *int
		key string
	}{{&n.kHeads, "linear_num_key_heads"}, {&n.kDim, "linear_key_head_dim"}, {&n.vHeads, "linear_num_value_heads"},
		{&n.vDim, "linear_value_head_dim"}, {&n.K, "linear_conv_kernel_dim"}} {
		if *s.dst, err = size(s.key); err != nil {
			return nil, err
		}
	}
	if n.vHeads%n.kHeads != 0 {
		return nil, fmt.Errorf("model: %s: layer %d: %d value heads do not share %d key heads evenly", fl.c.Path, i, n.vHeads, n.kHeads)
	}
	d, C, vw := cfg.DModel, n.channels(), n.vHeads*n.vDim
	n.QKV = fl.lin("blk.{bid}.attn_qkv", i, C, d)
	n.Z = fl.lin("blk.{bid}.attn_gate", i, vw, d)
	n.BA = fl.lin("blk.{bid}.ssm_ba", i, 2*n.vHeads, d)
	n.Conv = fl.vector(fl.name("blk.{bid}.ssm_conv1d", i, ".weight"), C*n.K)
	n.A = fl.ggufVector("blk.{bid}.ssm_a", i, "", n.vHeads)
	n.Dt = fl.vector(fl.name("blk.{bid}.ssm_dt", i, ".bias"), n.vHeads)
	n.Norm = fl.norm("blk.{bid}.ssm_norm", i, n.vDim, cfg.Eps, true)
	n.Out = fl.lin("blk.{bid}.ssm_out", i, d, vw)
	return n, fl.err
}

// ggufVector loads role's vector of n values at layer in the GGUF form:
// a Hugging Face checkpoint's values pass the converter's layout change
// (A_log → −exp(A_log)).
func (fl familyLoader) ggufVector(role spec.Role, layer int, suffix string, n int) []float32 {
	name := fl.name(role, layer, suffix)
	v := fl.vector(name, n)
	t, _ := fl.f.Tensor(role)
	if v == nil || !fl.hf || t == nil || t.Layout == spec.LayoutSame {
		return v
	}
	tf, _, err := t.Layout.Transform(name, tensor.Shape{int64(n)}, 0, 0, false)
	if err != nil {
		fl.fail(fmt.Errorf("model: %s: %w", fl.c.Path, err))
		return nil
	}
	if tf != nil {
		out := make([]float32, n)
		tf(out, v)
		v = out
	}
	return v
}
