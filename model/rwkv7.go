package model

import (
	"fmt"
	"math"

	spec "github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/kernels"
)

// rwkv7TimeMix is RWKV-7's time mix (arch.RWKV7), for the normed input
// x[t] of width d, x₋ the previous token's (the token shift), H heads of
// N = head_size:
//
//	x_c  = x + (x₋ − x) ⊙ μ_c                    c ∈ {r, w, k, v, a, g} (time_mix_lerp_fused)
//	r, k, v = W_r·x_r, W_k·x_k, W_v·x_v
//	w    = exp(−e^{−½} · σ(w0 + W2·tanh(W1·x_w)))  (the decay)
//	v    = v + (v_first − v) ⊙ σ(v0 + V2·V1·x_v)  (layers after the first; v_first: layer 0's v)
//	a    = σ(a0 + A2·A1·x_a)                      (the in-context learning rate)
//	g    = G2·σ(G1·x_g)
//	κ̂    = l2norm_head(k ⊙ k_k);  k = k + k ⊙ k_a ⊙ (a − 1)
//	o    = wkv7(r, w, k, v, −κ̂, κ̂ ⊙ a)             (kernels.WKV7, its state per head)
//	o    = GroupNorm_head(o)·ln_w + ln_b + (Σ_head r ⊙ k ⊙ r_k)·v
//	out  = W_o·(o ⊙ g)
//
// The state is x₋ (d floats) and the wkv state (H·N·N floats); the layer's
// channel mix keeps its own token shift after them.
type rwkv7TimeMix struct {
	Lerp       []float32 // [6][d]: μ_r, μ_w, μ_k, μ_v, μ_a, μ_g
	R, K, V, O linear    // [d][d]
	W0         []float32 // [d]
	W1, W2     linear    // [decay rank][d], [d][decay rank]
	A0         []float32 // [d]
	A1, A2     linear    // [iclr rank][d], [d][iclr rank]
	V0         []float32 // [d]; nil in layer 0
	V1, V2     linear    // [value rank][d], [d][value rank]; W nil in layer 0
	G1, G2     linear    // [gate rank][d], [d][gate rank]
	KK, KA, RK []float32 // [d]
	LnX        *norm     // [d], one group per head
	first      bool      // layer 0: its v is v_first
	d, heads   int
	ffn        *rwkv7ChannelMix
}

// rwkv7ChannelMix is RWKV-7's channel mix, the layer's feed-forward:
// out = W_v·relu(W_k·(x + (x₋ − x) ⊙ μ_k))²; its state is x₋.
type rwkv7ChannelMix struct {
	Lerp   []float32 // [d]
	K, V   linear    // [ffn][d], [d][ffn]
	d, ffn int
}

// rwkv7Decay is e^{−½}: RWKV-7 bounds each channel's decay below by
// exp(−e^{−½}).
var rwkv7Decay = float32(math.Exp(-0.5))

// loadRWKV7 loads layer i's time mix and channel mix by the family's roles
// (fla's names on Hugging Face input, llama.cpp's on GGUF input).
func (fl familyLoader) loadRWKV7(i int, cfg *Config, c spec.Config) (recurrentMixer, error) {
	d := cfg.DModel
	hs, ok := c.Int("head_size", "head_dim")
	if !ok || hs <= 0 || int(hs) > d || d%int(hs) != 0 {
		return nil, fmt.Errorf("model: %s: layer %d: head_dim %d does not divide hidden_size %d", fl.c.Path, i, hs, d)
	}
	rank := func(key string) (int, error) {
		r, ok := fl.f.ParamInt(c, key)
		if !ok || r <= 0 || r > 1<<16 {
			return 0, fmt.Errorf("model: %s: layer %d: %s missing or out of range (%d)", fl.c.Path, i, key, r)
		}
		return int(r), nil
	}
	var rd, ra, rv, rg int
	var err error
	for _, x := range []struct {
		dst *int
		key string
	}{{&rd, "attention.decay_lora_rank"}, {&ra, "attention.iclr_lora_rank"}, {&rv, "attention.value_residual_mix_lora_rank"},
		{&rg, "attention.gate_lora_rank"}} {
		if *x.dst, err = rank(x.key); err != nil {
			return nil, err
		}
	}
	// The low-rank matrices are read without the biases fla keeps beside
	// them (w0, a0, v0 are their own roles).
	mat := func(role spec.Role, out, in int) linear {
		return linear{W: fl.matrix(fl.name(role, i, ".weight"), out, in), Name: fl.ggufName(role, i)}
	}
	vec := func(role spec.Role) []float32 { return fl.vector(fl.name(role, i, ".weight"), d) }
	m := &rwkv7TimeMix{d: d, heads: d / int(hs), first: i == 0,
		R: mat("blk.{bid}.time_mix_receptance", d, d), K: mat("blk.{bid}.time_mix_key", d, d),
		V: mat("blk.{bid}.time_mix_value", d, d), O: mat("blk.{bid}.time_mix_output", d, d),
		W0: vec("blk.{bid}.time_mix_w0"), W1: mat("blk.{bid}.time_mix_w1", rd, d), W2: mat("blk.{bid}.time_mix_w2", d, rd),
		A0: vec("blk.{bid}.time_mix_a0"), A1: mat("blk.{bid}.time_mix_a1", ra, d), A2: mat("blk.{bid}.time_mix_a2", d, ra),
		G1: mat("blk.{bid}.time_mix_g1", rg, d), G2: mat("blk.{bid}.time_mix_g2", d, rg),
		KK: vec("blk.{bid}.time_mix_k_k"), KA: vec("blk.{bid}.time_mix_k_a"), RK: vec("blk.{bid}.time_mix_r_k"),
	}
	if i > 0 {
		// layer 0's (GGUF: copies of a0/a1/a2) are never used
		m.V0, m.V1, m.V2 = vec("blk.{bid}.time_mix_v0"), mat("blk.{bid}.time_mix_v1", rv, d), mat("blk.{bid}.time_mix_v2", d, rv)
	}
	const lerp = "blk.{bid}.time_mix_lerp_fused"
	if fl.hf {
		for x := 0; x < 6; x++ {
			m.Lerp = append(m.Lerp, fl.vector(fl.f.TensorPartName(lerp, i, x, ".weight"), d)...)
		}
	} else {
		m.Lerp = fl.vector(fl.name(lerp, i, ".weight"), 6*d)
	}
	// ln_x: fla's GroupNorm takes head_dim·norm_eps; llama.cpp fixes it
	eps := float32(spec.RWKV7GroupNormEps)
	if fl.hf {
		e, _ := fl.f.ParamFloat(c, "attention.layer_norm_epsilon")
		eps = float32(float64(hs) * e)
	}
	m.LnX = &norm{W: vec("blk.{bid}.time_mix_ln"), B: fl.vector(fl.name("blk.{bid}.time_mix_ln", i, ".bias"), d), Eps: eps, Width: int(hs)}
	f := cfg.FFN
	m.ffn = &rwkv7ChannelMix{d: d, ffn: f, Lerp: vec("blk.{bid}.channel_mix_lerp_k"),
		K: mat("blk.{bid}.channel_mix_key", f, d), V: mat("blk.{bid}.channel_mix_value", d, f)}
	return m, nil
}

func (m *rwkv7TimeMix) stateSize() int { return m.d + m.d*(m.d/m.heads) }

// channelMix is the layer's stateful feed-forward (decoderBlock.FFNMix).
func (m *rwkv7TimeMix) channelMix() recurrentMixer { return m.ffn }

func (m *rwkv7TimeMix) forward(dst, h, state []float32, T int, obs Observer) error {
	var first []float32
	return m.forwardCarry(dst, h, state, &first, T, obs)
}

// forwardCarry is forward with the value of the step's first layer in
// *first: layer 0 sets it, the later layers mix it in.
func (m *rwkv7TimeMix) forwardCarry(dst, h, state []float32, first *[]float32, T int, obs Observer) error {
	d, H := m.d, m.heads
	N := d / H
	shift, S := state[:d], state[d:]
	// the six token-shift mixes, [c][T][d]
	xs := make([]float32, 6*T*d)
	for t := 0; t < T; t++ {
		x := h[t*d : (t+1)*d]
		prev := shift
		if t > 0 {
			prev = h[(t-1)*d : t*d]
		}
		for c := 0; c < 6; c++ {
			mu := m.Lerp[c*d : (c+1)*d]
			out := xs[(c*T+t)*d : (c*T+t+1)*d]
			for j := range out {
				out[j] = (prev[j]-x[j])*mu[j] + x[j]
			}
		}
	}
	copy(shift, h[(T-1)*d:T*d])
	part := func(c int) []float32 { return xs[c*T*d : (c+1)*T*d] }
	xr, xw, xk, xv, xa, xg := part(0), part(1), part(2), part(3), part(4), part(5)

	r, k, v := make([]float32, T*d), make([]float32, T*d), make([]float32, T*d)
	obs.apply(&m.R, r, xr, T)
	obs.apply(&m.K, k, xk, T)
	obs.apply(&m.V, v, xv, T)
	w := m.lora(&m.W1, &m.W2, m.W0, xw, T, obs, func(z []float32) {
		for i, x := range z {
			z[i] = float32(math.Tanh(float64(x)))
		}
	})
	for i, x := range w {
		w[i] = float32(math.Exp(float64(-rwkv7Decay * sigmoid32(x))))
	}
	if m.first {
		*first = append((*first)[:0], v...)
	} else {
		if len(*first) != len(v) {
			return fmt.Errorf("model: rwkv7: a layer after the first ran without the first layer's value")
		}
		mix := m.lora(&m.V1, &m.V2, m.V0, xv, T, obs, nil)
		for i, x := range mix {
			v[i] += ((*first)[i] - v[i]) * sigmoid32(x)
		}
	}
	a := m.lora(&m.A1, &m.A2, m.A0, xa, T, obs, nil)
	for i, x := range a {
		a[i] = sigmoid32(x)
	}
	g := m.lora(&m.G1, &m.G2, nil, xg, T, obs, func(z []float32) {
		for i, x := range z {
			z[i] = sigmoid32(x)
		}
	})
	// κ̂ = l2norm(k ⊙ k_k) per head; wkv7's a = −κ̂, b = κ̂ ⊙ a
	na, nb := make([]float32, T*d), make([]float32, T*d)
	for t := 0; t < T; t++ {
		for hh := 0; hh < H; hh++ {
			o := t*d + hh*N
			var ss float64
			for j := 0; j < N; j++ {
				x := k[o+j] * m.KK[hh*N+j]
				na[o+j] = x
				ss += float64(x) * float64(x)
			}
			scale := float32(1 / math.Max(math.Sqrt(ss), 1e-12))
			for j := 0; j < N; j++ {
				kk := na[o+j] * scale
				na[o+j], nb[o+j] = -kk, kk*a[o+j]
			}
		}
	}
	for i := range k {
		ka := k[i] * m.KA[i%d]
		k[i] += a[i]*ka - ka
	}
	y := make([]float32, T*d)
	kernels.WKV7(y, r, w, k, v, na, nb, S, T, H, N)
	m.LnX.apply(y, y, T, d)
	for t := 0; t < T; t++ {
		for hh := 0; hh < H; hh++ {
			o := t*d + hh*N
			var rk float32
			for j := 0; j < N; j++ {
				rk += r[o+j] * k[o+j] * m.RK[hh*N+j]
			}
			for j := 0; j < N; j++ {
				y[o+j] = (y[o+j] + rk*v[o+j]) * g[o+j]
			}
		}
	}
	obs.apply(&m.O, dst, y, T)
	return nil
}

// lora is up·act(down·x) + bias ([T][d]; act nil: none, bias nil: none).
func (m *rwkv7TimeMix) lora(down, up *linear, bias, x []float32, T int, obs Observer, act func([]float32)) []float32 {
	z := make([]float32, T*down.W.Rows)
	obs.apply(down, z, x, T)
	if act != nil {
		act(z)
	}
	out := make([]float32, T*m.d)
	obs.apply(up, out, z, T)
	if bias != nil {
		for t := 0; t < T; t++ {
			kernels.Add(out[t*m.d:(t+1)*m.d], bias)
		}
	}
	return out
}

func (c *rwkv7ChannelMix) stateSize() int { return c.d }

func (c *rwkv7ChannelMix) forward(dst, h, state []float32, T int, obs Observer) error {
	d := c.d
	xk := make([]float32, T*d)
	for t := 0; t < T; t++ {
		x := h[t*d : (t+1)*d]
		prev := state
		if t > 0 {
			prev = h[(t-1)*d : t*d]
		}
		out := xk[t*d : (t+1)*d]
		for j := range out {
			out[j] = (prev[j]-x[j])*c.Lerp[j] + x[j]
		}
	}
	copy(state, h[(T-1)*d:T*d])
	k := make([]float32, T*c.ffn)
	obs.apply(&c.K, k, xk, T)
	if err := activate(k, "relu2"); err != nil {
		return err
	}
	obs.apply(&c.V, dst, k, T)
	return nil
}

func sigmoid32(x float32) float32 { return float32(1 / (1 + math.Exp(-float64(x)))) }
