//go:build !noasm

package kernels

import (
	"unsafe"

	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// The Go side of kquant_arm64.s: each super-block's sub-block scales,
// computed as quant's Q4_K and Q6_K decoders compute them, kChunk super-blocks at a
// time into a stack buffer, then one assembly call for those blocks.

//go:noescape
func dotQ4_KNEON(x *float32, w *byte, dm *float32, nsb int) float32

//go:noescape
func decQ4_KNEON(dst *float32, w *byte, dm *float32, nsb int)

//go:noescape
func dotQ6_KNEON(x *float32, w *byte, sc *float32, nsb int) float32

//go:noescape
func decQ6_KNEON(dst *float32, w *byte, sc *float32, nsb int)

// kChunk is how many super-blocks one assembly call takes: 4096 weights,
// 1 KB of scales on the stack.
const kChunk = 16

// q4KScales writes d·sc[j] (j < 8) then dmin·m[j] for each of the nsb
// Q4_K super-blocks at b into dm.
func q4KScales(dm *[16 * kChunk]float32, b []byte, nsb int) {
	for i := 0; i < nsb; i++ {
		blk := b[i*144 : i*144+144]
		d, dmin := fp16(blk), fp16(blk[2:])
		sc, mn := quant.K4ScalesMins(blk[4:16])
		o := dm[16*i : 16*i+16]
		for j := range 8 {
			o[j] = d * float32(sc[j])
			o[8+j] = dmin * float32(mn[j])
		}
	}
}

// q6KScales writes d·scales[i] for each of the nsb Q6_K super-blocks at b.
func q6KScales(s *[16 * kChunk]float32, b []byte, nsb int) {
	for i := 0; i < nsb; i++ {
		blk := b[i*210 : i*210+210]
		d := fp16(blk[208:])
		o := s[16*i : 16*i+16]
		for j := range o {
			o[j] = float32(d * float32(int8(blk[192+j])))
		}
	}
}

// kRows runs kernel over the n/256 super-blocks (bb bytes each) at w in
// chunks, with scales filling each chunk's scale buffer; f is x or dst,
// advanced by 256 floats per super-block. It returns the sum of the
// kernel's results.
func kRows(f *float32, w *byte, n, bb int, scales func(*[16 * kChunk]float32, []byte, int),
	kernel func(f *float32, w *byte, s *float32, nsb int) float32) float32 {
	var buf [16 * kChunk]float32
	nsb := n / 256
	b := unsafe.Slice(w, nsb*bb)
	var sum float32
	for i := 0; i < nsb; i += kChunk {
		c := min(kChunk, nsb-i)
		scales(&buf, b[i*bb:], c)
		sum += kernel((*float32)(unsafe.Add(unsafe.Pointer(f), i*256*4)), &b[i*bb], &buf[0], c)
	}
	return sum
}

func dotQ4_KRowNEON(x *float32, w *byte, n int) float32 {
	return kRows(x, w, n, 144, q4KScales, dotQ4_KNEON)
}

func dotQ6_KRowNEON(x *float32, w *byte, n int) float32 {
	return kRows(x, w, n, 210, q6KScales, dotQ6_KNEON)
}

func decQ4_KRowNEON(dst *float32, w *byte, n int) {
	kRows(dst, w, n, 144, q4KScales, func(f *float32, w *byte, s *float32, nsb int) float32 {
		decQ4_KNEON(f, w, s, nsb)
		return 0
	})
}

func decQ6_KRowNEON(dst *float32, w *byte, n int) {
	kRows(dst, w, n, 210, q6KScales, func(f *float32, w *byte, s *float32, nsb int) float32 {
		decQ6_KNEON(f, w, s, nsb)
		return 0
	})
}

// lanesKNEON is lanesK in assembly (lanesk_arm64.s).
//
//go:noescape
func lanesKNEON(W *int16, a *byte, s *int32)

func lanesKArm64(W *[256]int16, a []byte) (s [8]int32) {
	lanesKNEON(&W[0], &a[:256][0], &s[0])
	return s
}

// qdotK returns simdSet.qdot for the k-quant t: dotKGeneric with the lane
// sums in NEON (the unpacking and the float32 steps stay in Go).
func qdotK(t tensor.DType) func(w, a *byte, nb int) float32 {
	wb := int(t.BlockBytes())
	return func(w, a *byte, nb int) float32 {
		return dotK(t, unsafe.Slice(w, nb*wb), unsafe.Slice(a, nb*q8_KBytes), nb, lanesKArm64)
	}
}
