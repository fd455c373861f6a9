package quant

import (
	"encoding/binary"
	"fmt"
)

// PackedMethod names a packing of low-bit integer weights into int32 words
// with per-group scales and zero points, as GPTQ and AWQ checkpoints store
// a linear layer.
type PackedMethod int

const (
	// GPTQ is AutoGPTQ's layout (checkpoint_format "gptq"): qweight
	// [in·bits/32, out] packs 32/bits input rows per word, low bits first;
	// qzeros [groups, out·bits/32] packs output columns the same way and
	// stores each zero point minus one; scales [groups, out]; g_idx [in]
	// gives each input row's group (act-order permutes it).
	//
	//	w[n][k] = scales[g][n] · (q[k][n] − ((z[g][n] + 1) mod 2^bits)),  g = g_idx[k]
	GPTQ PackedMethod = iota
	// GPTQv2 is GPTQModel's "gptq_v2" layout: GPTQ's with the zero points
	// stored as they are (no minus one).
	GPTQv2
	// AWQ is AutoAWQ's GEMM layout (version "gemm", 4 bits): qweight
	// [in, out·bits/32] and qzeros [groups, out·bits/32] pack 8 output
	// columns per word in the order 0 2 4 6 1 3 5 7; scales [groups, out];
	// no g_idx (group = k / group_size).
	AWQ
	// CompressedTensors is compressed-tensors' "pack-quantized" layout:
	// weight_packed [out, ⌈in·bits/32⌉] packs 32/bits input columns per
	// word, low bits first, each value stored plus 2^(bits−1) (the last
	// word of a row padded with zeros); weight_scale [out, groups];
	// weight_zero_point (asymmetric only) [⌈out·bits/32⌉, groups] packs
	// output rows the same way, offset alike; without zero points the
	// offset 2^(bits−1) is the zero; g_idx [in] as GPTQ's.
	//
	//	w[n][k] = scale[n][g] · (q[n][k] − z[n][g]),  g = g_idx[k]
	CompressedTensors
)

func (m PackedMethod) String() string {
	switch m {
	case GPTQ:
		return "gptq"
	case GPTQv2:
		return "gptq_v2"
	case AWQ:
		return "awq"
	case CompressedTensors:
		return "compressed-tensors"
	}
	return fmt.Sprintf("PackedMethod(%d)", int(m))
}

// awqSlot is the nibble that holds column j%8 of an AWQ word: AutoAWQ packs
// column order[i] into nibble i with order = 0 2 4 6 1 3 5 7.
var awqSlot = [8]uint{0, 4, 1, 5, 2, 6, 3, 7}

// PackedLinear describes one packed linear layer: an [Out, In] weight (the
// layout of torch's nn.Linear) in Bits-bit integers, GroupSize input rows
// per scale group.
type PackedLinear struct {
	Method    PackedMethod
	Bits      int
	GroupSize int
	In, Out   int
	// Symmetric (CompressedTensors only): no zero points are stored; the
	// zero is the storage offset 2^(Bits−1).
	Symmetric bool
}

// Groups is the number of scale groups along the input dimension.
func (p PackedLinear) Groups() int { return (p.In + p.GroupSize - 1) / p.GroupSize }

// Validate checks that the layout is one Dequantize handles.
func (p PackedLinear) Validate() error {
	switch {
	case p.Method == AWQ && p.Bits != 4:
		return fmt.Errorf("AWQ with %d bits: AutoAWQ's GEMM layout is 4-bit only", p.Bits)
	case p.Method != AWQ && p.Bits != 2 && p.Bits != 4 && p.Bits != 8:
		return fmt.Errorf("GPTQ with %d bits is not supported (2, 4 and 8 are)", p.Bits)
	case p.In <= 0 || p.Out <= 0 || p.GroupSize <= 0:
		return fmt.Errorf("packed layer of %d×%d, group size %d", p.Out, p.In, p.GroupSize)
	case p.Method == AWQ && (p.Out%8 != 0 || p.In%p.GroupSize != 0):
		return fmt.Errorf("AWQ layer of %d×%d with group size %d: out must be a multiple of 8 and in of the group size", p.Out, p.In, p.GroupSize)
	case p.Method == CompressedTensors:
	case p.Method != AWQ && (p.In*p.Bits%32 != 0 || p.Out*p.Bits%32 != 0):
		return fmt.Errorf("GPTQ layer of %d×%d at %d bits: both dimensions must fill whole 32-bit words", p.Out, p.In, p.Bits)
	}
	return nil
}

// QWeightShape, QZerosShape and ScalesShape are the stored shapes of the
// three tensors, as [rows, cols] of int32 words (scales: of scale values).
func (p PackedLinear) QWeightShape() [2]int {
	switch p.Method {
	case AWQ:
		return [2]int{p.In, p.Out * p.Bits / 32}
	case CompressedTensors:
		return [2]int{p.Out, words(p.In, p.Bits)}
	}
	return [2]int{p.In * p.Bits / 32, p.Out}
}

// QZerosShape is the stored shape of qzeros ([0 0] for a symmetric
// compressed-tensors layer, which stores none).
func (p PackedLinear) QZerosShape() [2]int {
	if p.Method == CompressedTensors {
		if p.Symmetric {
			return [2]int{0, 0}
		}
		return [2]int{words(p.Out, p.Bits), p.Groups()}
	}
	return [2]int{p.Groups(), p.Out * p.Bits / 32}
}

// ScalesShape is the stored shape of scales.
func (p PackedLinear) ScalesShape() [2]int {
	if p.Method == CompressedTensors {
		return [2]int{p.Out, p.Groups()}
	}
	return [2]int{p.Groups(), p.Out}
}

// words is the number of 32-bit words n values of bits bits take.
func words(n, bits int) int { return (n*bits + 31) / 32 }

// DequantizePacked writes the [Out, In] weight of a packed layer to dst as
// float32 values. qweight and qzeros are little-endian int32 words,
// scales the group scales already decoded to float32, gIdx (GPTQ only; nil
// means k / GroupSize) each input row's group. The products are exact in
// float32 (a half or bfloat16 scale times an integer below 2^9), so
// rounding dst to the scales' own type gives what the projects' torch code
// computes in that type. An out-of-range g_idx entry is an error naming it.
func DequantizePacked(dst []float32, p PackedLinear, qweight, qzeros []byte, scales []float32, gIdx []int32) error {
	if err := p.Validate(); err != nil {
		return err
	}
	qw, qz, sc := p.QWeightShape(), p.QZerosShape(), p.ScalesShape()
	switch {
	case len(dst) != p.In*p.Out:
		return fmt.Errorf("destination holds %d values, want %d", len(dst), p.In*p.Out)
	case len(qweight) != 4*qw[0]*qw[1]:
		return fmt.Errorf("qweight is %d bytes, want %d (%d×%d int32)", len(qweight), 4*qw[0]*qw[1], qw[0], qw[1])
	case len(qzeros) != 4*qz[0]*qz[1]:
		return fmt.Errorf("qzeros is %d bytes, want %d (%d×%d int32)", len(qzeros), 4*qz[0]*qz[1], qz[0], qz[1])
	case len(scales) != sc[0]*sc[1]:
		return fmt.Errorf("scales hold %d values, want %d (%d×%d)", len(scales), sc[0]*sc[1], sc[0], sc[1])
	case gIdx != nil && len(gIdx) != p.In:
		return fmt.Errorf("g_idx holds %d entries, want %d", len(gIdx), p.In)
	}
	groups := p.Groups()
	for k, g := range gIdx {
		if g < 0 || int(g) >= groups {
			return fmt.Errorf("g_idx[%d] = %d, outside the %d groups", k, g, groups)
		}
	}
	bits := uint(p.Bits)
	mask := uint32(1)<<bits - 1
	per := 32 / p.Bits // values per word
	word := func(b []byte, i int) uint32 { return binary.LittleEndian.Uint32(b[4*i:]) }

	// zero returns the zero point of group g, output column n.
	zero := func(g, n int) float32 {
		var z uint32
		switch {
		case p.Method == CompressedTensors && p.Symmetric:
			return float32(uint32(1) << (bits - 1))
		case p.Method == CompressedTensors:
			return float32(word(qzeros, (n/per)*qz[1]+g) >> (bits * uint(n%per)) & mask)
		case p.Method == AWQ:
			z = word(qzeros, g*qz[1]+n/8) >> (4 * awqSlot[n%8]) & mask
		default:
			z = word(qzeros, g*qz[1]+n/per) >> (bits * uint(n%per)) & mask
			if p.Method == GPTQ {
				z = (z + 1) & mask
			}
		}
		return float32(z)
	}
	for k := 0; k < p.In; k++ {
		g := k / p.GroupSize
		if gIdx != nil {
			g = int(gIdx[k])
		}
		for n := 0; n < p.Out; n++ {
			var q uint32
			var scale float32
			switch p.Method {
			case AWQ:
				q = word(qweight, k*qw[1]+n/8) >> (4 * awqSlot[n%8]) & mask
			case CompressedTensors:
				q = word(qweight, n*qw[1]+k/per) >> (bits * uint(k%per)) & mask
			default:
				q = word(qweight, (k/per)*qw[1]+n) >> (bits * uint(k%per)) & mask
			}
			if p.Method == CompressedTensors {
				scale = scales[n*sc[1]+g]
			} else {
				scale = scales[g*sc[1]+n]
			}
			dst[n*p.In+k] = scale * (float32(q) - zero(g, n))
		}
	}
	return nil
}
