package model

import (
	spec "github.com/tfconv/tfconv/arch"
	"math"

	"github.com/tfconv/tfconv/kernels"
)

// Marian (Junczys-Dowmunt et al. 2018), the original Transformer of Vaswani
// et al. as transformers' MarianMTModel runs it: the BART stack (bart.go)
// with fixed sinusoidal positions instead of learned ones, token embeddings
// scaled by √d_model, no embedding LayerNorm and a SiLU ("swish") FFN in
// the Marian configs.
//
//	P[pos][i]       = sin(pos / 10000^(2i/d))   for i < d/2
//	P[pos][d/2 + i] = cos(pos / 10000^(2i/d))
//	x₀ = √d·E[tok] + P[pos]

func loadMarian(fl familyLoader, c spec.Config) (*Model, error) {
	s, err := loadSeq2Seq(fl, c, "marian")
	if err != nil {
		return nil, err
	}
	n := s.cfg.MaxPositions
	table := sinusoids(n, s.cfg.DModel)
	s.w.EncPos = kernels.F32Matrix(n, s.cfg.DModel, table)
	s.w.DecPos = s.w.EncPos
	return newSeq2Seq(s), nil
}

// sinusoids builds MarianSinusoidalPositionalEmbedding's table: computed in
// float64 (numpy) and rounded to float32, sines in the first half of each
// row and cosines in the second (not interleaved).
func sinusoids(n, d int) []float32 {
	out := make([]float32, n*d)
	half := (d + 1) / 2
	for p := 0; p < n; p++ {
		row := out[p*d : (p+1)*d]
		for j := 0; j < d; j++ {
			ang := float64(p) / math.Pow(10000, float64(2*(j/2))/float64(d))
			if j%2 == 0 {
				row[j/2] = float32(math.Sin(ang))
			} else {
				row[half+j/2] = float32(math.Cos(ang))
			}
		}
	}
	return out
}
