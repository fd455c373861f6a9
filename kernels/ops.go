package kernels

import "math"

// Softmax replaces x by exp(x[i]-max)/Σ exp(x[j]-max), computed in float64
// for the sum. Entries equal to -Inf become 0; an all -Inf row becomes all 0.
func Softmax(x []float32) {
	if len(x) == 0 {
		return
	}
	mx := float32(math.Inf(-1))
	for _, v := range x {
		mx = max(mx, v)
	}
	if math.IsInf(float64(mx), -1) {
		clear(x)
		return
	}
	var sum float64
	for i, v := range x {
		e := math.Exp(float64(v) - float64(mx)) // exact difference: no float32 rounding before exp
		x[i] = float32(e)
		sum += e
	}
	inv := 1 / sum
	for i, v := range x {
		x[i] = float32(float64(v) * inv)
	}
}

// LayerNorm computes dst = (x-μ)/√(σ²+eps)·weight + bias over one row, with μ
// and σ² (biased) computed in float64. bias may be nil.
func LayerNorm(dst, x, weight, bias []float32, eps float32) {
	n := len(x)
	var mean float64
	for _, v := range x {
		mean += float64(v)
	}
	mean /= float64(n)
	var variance float64
	for _, v := range x {
		d := float64(v) - mean
		variance += d * d
	}
	variance /= float64(n)
	inv := 1 / math.Sqrt(variance+float64(eps))
	for i, v := range x {
		y := float32((float64(v) - mean) * inv)
		y *= weight[i]
		if bias != nil {
			y += bias[i]
		}
		dst[i] = y
	}
}

// RMSNorm computes dst = x/√(mean(x²)+eps)·weight over one row, the mean of
// squares computed in float64. weight may be nil (T5-style callers pass
// their own scale afterwards).
func RMSNorm(dst, x, weight []float32, eps float32) {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	inv := float32(1 / math.Sqrt(ss/float64(len(x))+float64(eps)))
	for i, v := range x {
		y := v * inv
		if weight != nil {
			y *= weight[i]
		}
		dst[i] = y
	}
}

// elementwiseGrain is the slice length from which the activations split
// their work over Threads(): a prefill's FFN activations are millions of
// float64 transcendental calls, worth spreading; a decode step's few
// thousand are not worth waking a goroutine for.
const elementwiseGrain = 16384

// elementwise applies f to x in place, over several threads when x is long.
// Each element is computed alone, so the split does not change the result.
func elementwise(x []float32, f func(x []float32)) {
	if len(x) < 2*elementwiseGrain {
		f(x)
		return
	}
	parallelFor(len(x), elementwiseGrain, func(lo, hi int) { f(x[lo:hi]) })
}

// GELU applies x·Φ(x) = x/2·(1+erf(x/√2)) in place (BERT, Marian's "gelu").
func GELU(x []float32) { elementwise(x, gelu) }

func gelu(x []float32) {
	for i, v := range x {
		x[i] = float32(0.5 * float64(v) * (1 + math.Erf(float64(v)/math.Sqrt2)))
	}
}

// GELUTanh applies the tanh approximation x/2·(1+tanh(√(2/π)(x+0.044715x³)))
// in place (GPT-2's "gelu_new", "gelu_pytorch_tanh").
func GELUTanh(x []float32) { elementwise(x, geluTanh) }

func geluTanh(x []float32) {
	const c = 0.7978845608028654 // √(2/π)
	for i, v := range x {
		f := float64(v)
		x[i] = float32(0.5 * f * (1 + math.Tanh(c*(f+0.044715*f*f*f))))
	}
}

// SiLU applies x·σ(x) = x/(1+e^-x) in place (LLaMA's "silu"), with the
// float32 exponential of exp.go.
func SiLU(x []float32) { elementwise(x, silu) }

func silu(x []float32) {
	var e [256]float32
	for len(x) > 0 {
		n := min(len(x), len(e))
		for i, v := range x[:n] {
			e[i] = -v
		}
		expInPlace(e[:n])
		for i, v := range x[:n] {
			x[i] = v / (1 + e[i])
		}
		x = x[n:]
	}
}

// ReLU applies max(x, 0) in place.
func ReLU(x []float32) {
	for i, v := range x {
		if v < 0 || v != v {
			x[i] = 0
		}
	}
}

// Mul sets dst[i] *= src[i] (the gate product of SwiGLU).
func Mul(dst, src []float32) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] *= src[i]
	}
}

// Add sets dst[i] += src[i] (residual connections, biases).
func Add(dst, src []float32) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] += src[i]
	}
}

// Scale sets x[i] *= s.
func Scale(x []float32, s float32) {
	for i := range x {
		x[i] *= s
	}
}

// RoPE rotates, in place, the first rotDim elements of each of heads vectors
// of length headDim laid out back to back in x, for absolute position pos and
// base theta. The angle of pair i (0 ≤ i < rotDim/2) is pos·theta^(-2i/rotDim).
//
// neox selects which elements form pair i: false pairs (2i, 2i+1), the
// interleaved layout of the original RoFormer/Meta LLaMA code and of ggml's
// default rope mode; true pairs (i, i+rotDim/2), the rotate-half layout of
// GPT-NeoX and Hugging Face's LlamaForCausalLM. The angles are computed in
// float64 and rounded to float32 before cos/sin, as torch computes inv_freq
// in float32.
func RoPE(x []float32, heads, headDim, rotDim, pos int, theta float64, neox bool) {
	RoPEFreq(x, heads, headDim, RoPEInvFreq(theta, rotDim), pos, neox)
}

// RoPEInvFreq returns the inverse frequencies theta^(-2i/rotDim) of the
// rotDim/2 pairs, rounded to float32 as torch keeps inv_freq.
func RoPEInvFreq(theta float64, rotDim int) []float32 {
	f := make([]float32, rotDim/2)
	for i := range f {
		f[i] = float32(1 / math.Pow(theta, float64(2*i)/float64(rotDim)))
	}
	return f
}

// RoPEFreq is RoPE with the inverse frequency of each pair given
// (2·len(invFreq) elements of each head rotate): the angle of pair i is
// float32(pos)·invFreq[i], so scaled frequencies (Llama 3's, LongRoPE's)
// and precomputed ones take the same path.
func RoPEFreq(x []float32, heads, headDim int, invFreq []float32, pos int, neox bool) {
	RoPEFreqScaled(x, heads, headDim, invFreq, pos, neox, 1)
}

// RoPEFreqScaled is RoPEFreq with cos and sin multiplied by scale
// (LongRoPE's attention factor; float32 products, as torch forms them).
func RoPEFreqScaled(x []float32, heads, headDim int, invFreq []float32, pos int, neox bool, scale float32) {
	half := len(invFreq)
	for i, f := range invFreq {
		ang := float32(pos) * f
		c, s := float32(math.Cos(float64(ang)))*scale, float32(math.Sin(float64(ang)))*scale
		for h := 0; h < heads; h++ {
			v := x[h*headDim : (h+1)*headDim]
			a, b := 2*i, 2*i+1
			if neox {
				a, b = i, i+half
			}
			x0, x1 := v[a], v[b]
			v[a] = x0*c - x1*s
			v[b] = x0*s + x1*c
		}
	}
}
