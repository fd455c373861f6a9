package arch

import (
	"fmt"
	"math"
)

// Llama3Rope is rope_scaling of type "llama3" (Llama 3.1 and later): the
// low frequencies are divided by Factor, the high ones kept, and those in
// between blended, with the wavelength bounds set by the original context.
type Llama3Rope struct {
	Factor, LowFreqFactor, HighFreqFactor float64
	OriginalContext                       float64
}

// Llama3RopeOf reads a llama3 rope_scaling from c (ok false when c has
// another or none), with transformers' and the converter's defaults.
func Llama3RopeOf(c Config) (Llama3Rope, bool, error) {
	rs, ok := c.Map("rope_scaling")
	if !ok {
		return Llama3Rope{}, false, nil
	}
	typ, _ := rs.Str("rope_type")
	if typ == "" {
		typ, _ = rs.Str("type")
	}
	if typ != "llama3" {
		return Llama3Rope{}, false, nil
	}
	get := func(key string, def float64) float64 {
		if v, ok := rs.Float(key); ok {
			return v
		}
		return def
	}
	r := Llama3Rope{Factor: get("factor", 8), LowFreqFactor: get("low_freq_factor", 1),
		HighFreqFactor: get("high_freq_factor", 4), OriginalContext: get("original_max_position_embeddings", 8192)}
	// Llama 4 Scout states low_freq_factor = high_freq_factor (1): one
	// wavelength bound, so no frequency is blended.
	if r.LowFreqFactor > r.HighFreqFactor || r.LowFreqFactor <= 0 || r.Factor <= 0 || r.OriginalContext <= 0 {
		return Llama3Rope{}, false, fmt.Errorf("arch: rope_scaling %v: low_freq_factor above high_freq_factor, or a factor is not positive", map[string]any(rs))
	}
	return r, true, nil
}

// baseInvFreq is torch's 1 / base^(arange(0, dim, 2) / dim) in float32.
func baseInvFreq(base float64, dim int) []float32 {
	f := make([]float32, dim/2)
	for i := range f {
		e := float32(2*i) / float32(dim)
		f[i] = 1 / float32(math.Pow(base, float64(e)))
	}
	return f
}

// band classifies each pair's base inverse frequency f as Llama 3 does:
// kept (wavelength under OriginalContext/HighFreqFactor), divided by Factor
// (over OriginalContext/LowFreqFactor), or blended with weight smooth, in
// float32 steps; each caller writes its own form of the result.
func (r Llama3Rope) band(base float64, dim int, each func(i int, f float32, kind int, smooth float32)) {
	lowWave := r.OriginalContext / r.LowFreqFactor
	highWave := r.OriginalContext / r.HighFreqFactor
	for i, f := range baseInvFreq(base, dim) {
		wave := float32(2*math.Pi) / f
		switch {
		case float64(wave) < highWave:
			each(i, f, bandKeep, 0)
		case float64(wave) > lowWave:
			each(i, f, bandDivide, 0)
		default:
			smooth := (float32(r.OriginalContext)/wave - float32(r.LowFreqFactor)) / float32(r.HighFreqFactor-r.LowFreqFactor)
			each(i, f, bandBlend, smooth)
		}
	}
}

const (
	bandKeep = iota
	bandDivide
	bandBlend
)

// Factors are the rope_freqs tensor convert_hf_to_gguf.py writes for a
// head of dim rotated elements: 1 for high frequencies, Factor for low ones,
// 1/((1-smooth)/Factor + smooth) between; ggml divides each pair's
// frequency by its factor.
func (r Llama3Rope) Factors(base float64, dim int) []float32 {
	out := make([]float32, dim/2)
	r.band(base, dim, func(i int, _ float32, kind int, smooth float32) {
		switch kind {
		case bandKeep:
			out[i] = 1
		case bandDivide:
			out[i] = float32(r.Factor)
		default:
			out[i] = 1 / ((1-smooth)/float32(r.Factor) + smooth)
		}
	})
	return out
}

// InvFreq is transformers' inv_freq for llama3 rope scaling
// (_compute_llama3_parameters).
func (r Llama3Rope) InvFreq(base float64, dim int) []float32 {
	out := make([]float32, dim/2)
	r.band(base, dim, func(i int, f float32, kind int, smooth float32) {
		switch kind {
		case bandKeep:
			out[i] = f
		case bandDivide:
			out[i] = f / float32(r.Factor)
		default:
			out[i] = (1-smooth)*f/float32(r.Factor) + smooth*f
		}
	})
	return out
}
