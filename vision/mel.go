package vision

import (
	"fmt"
	"math"
)

// MelConfig is a Whisper-style log-mel spectrogram's settings, as llama.cpp
// d32676d7's mtmd sets them for its Whisper encoders (clip.cpp: qwen2a,
// voxtral, ultravox, …): 16 kHz, a 400-point FFT over a periodic Hann
// window of 400, hop 160; NMel from the mmproj's clip.audio.num_mel_bins
// (the feature extractor's feature_size).
type MelConfig struct {
	NMel, NFFT, Window, Hop, Rate int
}

// WhisperMelConfig is mtmd's setting for a Whisper encoder of nMel bins.
func WhisperMelConfig(nMel int) MelConfig {
	return MelConfig{NMel: nMel, NFFT: 400, Window: 400, Hop: 160, Rate: 16000}
}

// WhisperFrames is the frames one Whisper window holds (30 s at hop 160):
// the encoder takes exactly this many.
const WhisperFrames = 3000

// Mel is a log-mel spectrogram, mel-major: Data[m*Frames + t] is bin m of
// frame t.
type Mel struct {
	NMel, Frames int
	Data         []float32
}

// melFloor is the least mel energy mtmd takes the log of (2⁻²⁴).
const melFloor = 5.960464477539063e-08

// WhisperMel is mtmd's log-mel spectrogram of Whisper encoders
// (mtmd_audio_preprocessor_whisper): the samples with 30 s of zeros after
// them and their first NFFT/2 samples reflected before them, framed every
// Hop samples through the Hann window, each frame's power spectrum (the
// float32 FFT mtmd computes, with its sin/cos table) through the Slaney mel
// filters, floored at 2⁻²⁴, log10; frames past the audio (all zeros) take
// log10(1e-10); then every value clamped to the whole spectrogram's
// maximum − 8 and mapped to (x + 4) / 4. It returns the whole windows of
// WhisperFrames (the last, partial, window is padding only and dropped, as
// mtmd drops it). Audio shorter than NFFT/2 + 1 samples is zero-padded to
// that, as mtmd does.
func WhisperMel(a *Audio, cfg MelConfig) ([]Mel, error) {
	if a.Rate != cfg.Rate {
		return nil, fmt.Errorf("vision: audio at %d Hz: the encoder wants %d Hz (resampling is not supported yet)", a.Rate, cfg.Rate)
	}
	if cfg.NMel <= 0 || cfg.NMel > 1024 || cfg.NFFT < 2 || cfg.NFFT > 1<<16 || cfg.Hop <= 0 || cfg.Window <= 0 || cfg.Window > cfg.NFFT {
		return nil, fmt.Errorf("vision: mel settings %+v out of range", cfg)
	}
	if len(a.Samples) == 0 {
		return nil, fmt.Errorf("vision: empty audio")
	}
	if len(a.Samples) > 3600*cfg.Rate {
		return nil, fmt.Errorf("vision: audio of %d samples is longer than an hour", len(a.Samples))
	}
	s := a.Samples
	if min := cfg.NFFT/2 + 1; len(s) < min {
		s = append(append([]float32(nil), s...), make([]float32, min-len(s))...)
	}
	full := logMel(s, cfg)
	var out []Mel
	for off := 0; off+WhisperFrames <= full.Frames; off += WhisperFrames {
		m := Mel{NMel: full.NMel, Frames: WhisperFrames, Data: make([]float32, full.NMel*WhisperFrames)}
		for b := range full.NMel {
			copy(m.Data[b*WhisperFrames:(b+1)*WhisperFrames], full.Data[b*full.Frames+off:])
		}
		out = append(out, m)
	}
	return out, nil
}

// logMel is mtmd's log_mel_spectrogram with Whisper's padding and
// normalisation, over all frames.
func logMel(samples []float32, cfg MelConfig) Mel {
	frame := cfg.NFFT
	pad := frame / 2
	n := len(samples)
	padded := make([]float32, n+30*cfg.Rate+2*pad)
	copy(padded[pad:], samples)
	for i := range pad { // reflect: padded[pad-1-i] = samples[1+i]
		padded[pad-1-i] = samples[1+i]
	}
	hann := hannWindow(cfg.Window)
	if cfg.Window < frame {
		h := make([]float32, frame)
		copy(h[(frame-cfg.Window)/2:], hann)
		hann = h
	}
	sin, cos := sinCosTable(cfg.NFFT)
	filters := melFilters(cfg.NMel, cfg.NFFT, cfg.Rate)
	bins := frame/2 + 1
	total := len(padded)
	frames := (total-frame)/cfg.Hop + 1
	m := Mel{NMel: cfg.NMel, Frames: frames, Data: make([]float32, cfg.NMel*frames)}
	in := make([]float32, frame*2)
	fftOut := make([]float32, frame*8)
	computed := min(total/cfg.Hop+1, frames)
	for t := range computed {
		off := t * cfg.Hop
		valid := min(frame, max(0, total-off))
		for j := range valid {
			in[j] = hann[j] * padded[off+j]
		}
		clear(in[valid:])
		fftReal(sin, cos, in, frame, fftOut)
		for j := range bins {
			re, im := fftOut[2*j], fftOut[2*j+1]
			fftOut[j] = float32(re*re) + float32(im*im)
		}
		for b := range cfg.NMel {
			row := filters[b*bins:]
			var sum float64
			k := 0
			// mtmd sums four products in float32, then adds them to the
			// float64 total.
			for ; k < bins-3; k += 4 {
				sum += float64(float32(fftOut[k]*row[k]) + float32(fftOut[k+1]*row[k+1]) + float32(fftOut[k+2]*row[k+2]) + float32(fftOut[k+3]*row[k+3]))
			}
			for ; k < bins; k++ {
				sum += float64(fftOut[k] * row[k])
			}
			m.Data[b*frames+t] = float32(math.Log10(max(sum, melFloor)))
		}
	}
	silent := float32(math.Log10(1e-10))
	for t := computed; t < frames; t++ {
		for b := range cfg.NMel {
			m.Data[b*frames+t] = silent
		}
	}
	mx := -1e20
	for _, v := range m.Data {
		mx = max(mx, float64(v))
	}
	mx -= 8
	for i, v := range m.Data {
		x := float64(v)
		if x < mx {
			x = float64(float32(mx)) // mtmd stores the floor in the float32 spectrogram first
		}
		m.Data[i] = float32((x + 4) / 4)
	}
	return m
}

// hannWindow is mtmd's periodic Hann window: 0.5·(1 − cos(2πi/n)), the
// cosine in float32.
func hannWindow(n int) []float32 {
	w := make([]float32, n)
	for i := range w {
		w[i] = float32(0.5 * (1 - float64(cosf(2*math.Pi*float64(i)/float64(n)))))
	}
	return w
}

// sinCosTable is mtmd's table of sin and cos of 2πi/n in float32.
func sinCosTable(n int) (sin, cos []float32) {
	sin, cos = make([]float32, n), make([]float32, n)
	for i := range n {
		theta := 2 * math.Pi * float64(i) / float64(n)
		sin[i], cos[i] = sinf(theta), cosf(theta)
	}
	return sin, cos
}

// sinf and cosf are C's float functions of a double argument: the
// argument rounded to float32, the result of float32 precision.
func sinf(x float64) float32 { return float32(math.Sin(float64(float32(x)))) }
func cosf(x float64) float32 { return float32(math.Cos(float64(float32(x)))) }

// melFilters is mtmd's Slaney-scale, area-normalised mel filter bank over
// 0 … rate/2: nMel rows of nFFT/2 + 1 weights (librosa's and Whisper's
// filters), computed in float64 and stored in float32.
func melFilters(nMel, nFFT, rate int) []float32 {
	const (
		minLogHz  = 1000.0
		linSlope  = 3 / 200.0
		minLogMel = minLogHz * linSlope
	)
	logStep := math.Log(6.4) / 27
	hzToMel := func(f float64) float64 {
		if f < minLogHz {
			return f * linSlope
		}
		return minLogMel + math.Log(f/minLogHz)/logStep
	}
	melToHz := func(m float64) float64 {
		if m < minLogMel {
			return m / linSlope
		}
		return minLogHz * math.Exp((m-minLogMel)*logStep)
	}
	fmax := float64(float32(0.5 * float32(rate)))
	step := float64(rate) / float64(nFFT)
	lo, hi := hzToMel(0), hzToMel(fmax)
	hz := make([]float64, nMel+2)
	for i := range hz {
		hz[i] = melToHz(lo + (hi-lo)*(float64(i)/float64(nMel+1)))
	}
	bins := nFFT/2 + 1
	out := make([]float32, nMel*bins)
	for m := range nMel {
		l, c, r := hz[m], hz[m+1], hz[m+2]
		dl, dr := max(1e-30, c-l), max(1e-30, r-c)
		norm := 2 / max(1e-30, r-l)
		for k := range bins {
			f := float64(k) * step
			w := 0.0
			if f >= l && f <= c {
				w = (f - l) / dl
			} else if f > c && f <= r {
				w = (r - f) / dr
			}
			out[m*bins+k] = float32(w * norm)
		}
	}
	return out
}

// fftReal is mtmd's recursive radix-2 FFT of the n real values in in
// (which it also uses as scratch: in holds 2n floats), odd lengths by a
// direct DFT, every product in float32 with the sin/cos table of the top
// length; out (8n floats) gets n complex values, interleaved.
func fftReal(sin, cos []float32, in []float32, n int, out []float32) {
	if n == 1 {
		out[0], out[1] = in[0], 0
		return
	}
	half := n / 2
	if n-half*2 == 1 {
		step := len(sin) / n
		for k := range n {
			var re, im float32
			for j := range n {
				idx := (k * j * step) % len(sin)
				re += float32(in[j] * cos[idx])
				im += float32(-1 * in[j] * sin[idx])
			}
			out[2*k], out[2*k+1] = re, im
		}
		return
	}
	even := in[n:]
	for i := range half {
		even[i] = in[2*i]
	}
	evenFFT := out[2*n:]
	fftReal(sin, cos, even, half, evenFFT)
	odd := even
	for i := range half {
		odd[i] = in[2*i+1]
	}
	oddFFT := evenFFT[n:]
	fftReal(sin, cos, odd, half, oddFFT)
	step := len(sin) / n
	for k := range half {
		re, im := cos[k*step], -sin[k*step]
		ro, io := oddFFT[2*k], oddFFT[2*k+1]
		er, ei := evenFFT[2*k], evenFFT[2*k+1]
		// Each product rounded (float32(…)) before it is summed: Go fuses
		// them into FMAs on arm64 otherwise, and mtmd's x86 build does not.
		rr, ii, ri, ir := float32(re*ro), float32(im*io), float32(re*io), float32(im*ro)
		out[2*k] = er + rr - ii
		out[2*k+1] = ei + ri + ir
		out[2*(k+half)] = er - rr + ii
		out[2*(k+half)+1] = ei - ri - ir
	}
}
