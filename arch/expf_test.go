package arch

import (
	"math"
	"testing"
)

// TestExpfMatchesTorch checks expf against torch 2.6's torch.exp on float32
// (bits in, bits out), computed in the Debian trixie chroot of
// testdata/arch/README.md: the inputs are the first where torch's value is
// not the correctly rounded one, and the range limits.
func TestExpfMatchesTorch(t *testing.T) {
	t.Parallel()
	for _, c := range [][2]uint32{
		{0x3ea3e62e, 0x3fb04af0},
		{0x3f7cfead, 0x402bf094},
		{0x3fe9050d, 0x40c59776},
		{0x3fc947ce, 0x409a32c6},
		{0x3ec1be52, 0x3fbadfc8},
		{0x3f0e9e32, 0x3fdf6ffe},
		{0x3f93b336, 0x404aea5e},
		{0x3f165b72, 0x3fe64ba4},
		{0x3fa20751, 0x4062f34c},
		{0x3f881cd7, 0x40395a6c},
		{0x3f90bc25, 0x404644de},
		{0x3fc9c00a, 0x409ac3e2},
		{0x3f845430, 0x4033f446},
		{0x3f8a96cc, 0x403cf960},
		{0x3eb86904, 0x3fb77f9e},
		{0x3f7f705f, 0x402d96d4},
		{0x3e92b286, 0x3faa77da},
		{0x3f737413, 0x4025a63a},
		{0x3fdec88c, 0x40b667c2},
		{0x3f79e502, 0x4029debc},
		{0x3f8415e4, 0x40339cc6},
		{0x3f863b18, 0x4036a5ec},
		{0x3e7cb1a0, 0x3fa3d352},
		{0x3f90fc3c, 0x4046a83e},
		{0x3f94aec3, 0x404c7aae},
		{0x3f88a960, 0x403a265c},
		{0x3f50f90e, 0x4010c67e},
		{0x3e799844, 0x3fa35496},
		{0x3f9350fd, 0x404a4ee4},
		{0x3eb8c394, 0x3fb7a016},
		{0x3fe25430, 0x40bb8742},
		{0x3f895046, 0x403b19b4},
		{0x3eb90a6c, 0x3fb7b980},
		{0x3ecb2966, 0x3fbe57f2},
		{0x3f6028e3, 0x40199fb4},
		{0x3f632c38, 0x401b714e},
		{0x3fd4e8fa, 0x40a8dd46},
		{0x3fdff257, 0x40b8120e},
		{0x3fefa098, 0x40d00f3e},
		{0x3f950a78, 0x404d0d64},
		{0x00000000, 0x3f800000},
		{0xbf000000, 0x3f1b4598},
		{0x3f800000, 0x402df854},
		{0x40317218, 0x41800000},
		{0x42b00000, 0x7ef882b7},
		{0xc2b40000, 0x0008ec28},
		{0xc2cf0000, 0x00000001},
		{0xc2d20000, 0x00000000},
		{0x42ca0000, 0x7f800000},
	} {
		x := math.Float32frombits(c[0])
		if got := math.Float32bits(expf(x)); got != c[1] {
			t.Errorf("expf(%v) = %v (%#08x), torch %v (%#08x)", x, math.Float32frombits(got), got, math.Float32frombits(c[1]), c[1])
		}
	}
}

// TestLogOfExpf: A_log written back from a GGUF's A gives torch the same A
// (exp of it), over the range Mamba's A_log takes (log 1 to log 16) and
// beyond.
func TestLogOfExpf(t *testing.T) {
	t.Parallel()
	for i := 0; i < 20000; i++ {
		a := float32(-3 + 9*float64(i)/20000)
		y := expf(a)
		if got := expf(logOfExpf(y)); got != y {
			t.Fatalf("a = %v: exp(logOfExpf(%v)) = %v", a, y, got)
		}
	}
}
