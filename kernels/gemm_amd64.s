//go:build !noasm

#include "textflag.h"

// The GEMM microkernels compute a tile of Cᵀ = W·Xᵀ: mr rows of the weight
// matrix (row-major f32, any stride) times one packed panel of activations
// (for each k, nr consecutive activation rows; see packX in gemm.go). Each
// weight element is broadcast once and multiplies a whole vector of
// activation rows, so the weights never need repacking and a block of
// dequantized weights works the same way as an f32 matrix.

// ---------------------------------------------------------------- AVX-512

// KSTEP512 does one k: two vectors of the panel (32 activation rows) times
// the 12 weights w[i][k], i < 12, at byte offset wo in each weight row.
#define KSTEP512(wo, xo) \
	VMOVUPS      xo(SI), Z24            \
	VMOVUPS      xo+64(SI), Z25         \
	VBROADCASTSS wo(R8), Z26            \
	VBROADCASTSS wo(R8)(R9*1), Z27      \
	VBROADCASTSS wo(R8)(R9*2), Z28      \
	VFMADD231PS  Z24, Z26, Z0           \
	VFMADD231PS  Z25, Z26, Z1           \
	VFMADD231PS  Z24, Z27, Z2           \
	VFMADD231PS  Z25, Z27, Z3           \
	VFMADD231PS  Z24, Z28, Z4           \
	VFMADD231PS  Z25, Z28, Z5           \
	VBROADCASTSS wo(R10), Z29           \
	VBROADCASTSS wo(R10)(R9*1), Z30     \
	VBROADCASTSS wo(R10)(R9*2), Z31     \
	VFMADD231PS  Z24, Z29, Z6           \
	VFMADD231PS  Z25, Z29, Z7           \
	VFMADD231PS  Z24, Z30, Z8           \
	VFMADD231PS  Z25, Z30, Z9           \
	VFMADD231PS  Z24, Z31, Z10          \
	VFMADD231PS  Z25, Z31, Z11          \
	VBROADCASTSS wo(R11), Z26           \
	VBROADCASTSS wo(R11)(R9*1), Z27     \
	VBROADCASTSS wo(R11)(R9*2), Z28     \
	VFMADD231PS  Z24, Z26, Z12          \
	VFMADD231PS  Z25, Z26, Z13          \
	VFMADD231PS  Z24, Z27, Z14          \
	VFMADD231PS  Z25, Z27, Z15          \
	VFMADD231PS  Z24, Z28, Z16          \
	VFMADD231PS  Z25, Z28, Z17          \
	VBROADCASTSS wo(R12), Z29           \
	VBROADCASTSS wo(R12)(R9*1), Z30     \
	VBROADCASTSS wo(R12)(R9*2), Z31     \
	VFMADD231PS  Z24, Z29, Z18          \
	VFMADD231PS  Z25, Z29, Z19          \
	VFMADD231PS  Z24, Z30, Z20          \
	VFMADD231PS  Z25, Z30, Z21          \
	VFMADD231PS  Z24, Z31, Z22          \
	VFMADD231PS  Z25, Z31, Z23

// func gemm12x32AVX512(w *byte, ldw int, xt *float32, kc int, c *float32, acc bool)
//
// c[i*32+j] (+)= Σ_{k<kc} w[i*ldw+k]·xt[k*32+j] for i < 12, j < 32; ldw
// counts float32s; acc selects whether c is read first.
TEXT ·gemm12x32AVX512(SB), NOSPLIT, $0-41
	MOVQ    w+0(FP), R8
	MOVQ    ldw+8(FP), R9
	SHLQ    $2, R9
	MOVQ    xt+16(FP), SI
	MOVQ    kc+24(FP), CX
	MOVQ    c+32(FP), DI
	MOVBQZX acc+40(FP), AX
	LEAQ    (R9)(R9*2), BX
	LEAQ    (R8)(BX*1), R10
	LEAQ    (R10)(BX*1), R11
	LEAQ    (R11)(BX*1), R12

	TESTQ AX, AX
	JNZ   load
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
	JMP    loop4

load:
	VMOVUPS 0(DI), Z0
	VMOVUPS 64(DI), Z1
	VMOVUPS 128(DI), Z2
	VMOVUPS 192(DI), Z3
	VMOVUPS 256(DI), Z4
	VMOVUPS 320(DI), Z5
	VMOVUPS 384(DI), Z6
	VMOVUPS 448(DI), Z7
	VMOVUPS 512(DI), Z8
	VMOVUPS 576(DI), Z9
	VMOVUPS 640(DI), Z10
	VMOVUPS 704(DI), Z11
	VMOVUPS 768(DI), Z12
	VMOVUPS 832(DI), Z13
	VMOVUPS 896(DI), Z14
	VMOVUPS 960(DI), Z15
	VMOVUPS 1024(DI), Z16
	VMOVUPS 1088(DI), Z17
	VMOVUPS 1152(DI), Z18
	VMOVUPS 1216(DI), Z19
	VMOVUPS 1280(DI), Z20
	VMOVUPS 1344(DI), Z21
	VMOVUPS 1408(DI), Z22
	VMOVUPS 1472(DI), Z23

loop4:
	CMPQ CX, $4
	JLT  tail
	KSTEP512(0, 0)
	KSTEP512(4, 128)
	KSTEP512(8, 256)
	KSTEP512(12, 384)
	ADDQ $16, R8
	ADDQ $16, R10
	ADDQ $16, R11
	ADDQ $16, R12
	ADDQ $512, SI
	SUBQ $4, CX
	JMP  loop4

tail:
	TESTQ CX, CX
	JZ    store
	KSTEP512(0, 0)
	ADDQ $4, R8
	ADDQ $4, R10
	ADDQ $4, R11
	ADDQ $4, R12
	ADDQ $128, SI
	DECQ CX
	JMP  tail

store:
	VMOVUPS Z0, 0(DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z3, 192(DI)
	VMOVUPS Z4, 256(DI)
	VMOVUPS Z5, 320(DI)
	VMOVUPS Z6, 384(DI)
	VMOVUPS Z7, 448(DI)
	VMOVUPS Z8, 512(DI)
	VMOVUPS Z9, 576(DI)
	VMOVUPS Z10, 640(DI)
	VMOVUPS Z11, 704(DI)
	VMOVUPS Z12, 768(DI)
	VMOVUPS Z13, 832(DI)
	VMOVUPS Z14, 896(DI)
	VMOVUPS Z15, 960(DI)
	VMOVUPS Z16, 1024(DI)
	VMOVUPS Z17, 1088(DI)
	VMOVUPS Z18, 1152(DI)
	VMOVUPS Z19, 1216(DI)
	VMOVUPS Z20, 1280(DI)
	VMOVUPS Z21, 1344(DI)
	VMOVUPS Z22, 1408(DI)
	VMOVUPS Z23, 1472(DI)
	VZEROUPPER
	RET

// ---------------------------------------------------------------- AVX2

// KSTEP256 does one k: two vectors of the panel (16 activation rows) times
// the 6 weights w[i][k], i < 6.
#define KSTEP256(wo, xo) \
	VMOVUPS      xo(SI), Y12            \
	VMOVUPS      xo+32(SI), Y13         \
	VBROADCASTSS wo(R8), Y14            \
	VBROADCASTSS wo(R8)(R9*1), Y15      \
	VFMADD231PS  Y12, Y14, Y0           \
	VFMADD231PS  Y13, Y14, Y1           \
	VFMADD231PS  Y12, Y15, Y2           \
	VFMADD231PS  Y13, Y15, Y3           \
	VBROADCASTSS wo(R8)(R9*2), Y14      \
	VBROADCASTSS wo(R10), Y15           \
	VFMADD231PS  Y12, Y14, Y4           \
	VFMADD231PS  Y13, Y14, Y5           \
	VFMADD231PS  Y12, Y15, Y6           \
	VFMADD231PS  Y13, Y15, Y7           \
	VBROADCASTSS wo(R10)(R9*1), Y14     \
	VBROADCASTSS wo(R10)(R9*2), Y15     \
	VFMADD231PS  Y12, Y14, Y8           \
	VFMADD231PS  Y13, Y14, Y9           \
	VFMADD231PS  Y12, Y15, Y10          \
	VFMADD231PS  Y13, Y15, Y11

// func gemm6x16AVX2(w *byte, ldw int, xt *float32, kc int, c *float32, acc bool)
//
// c[i*16+j] (+)= Σ_{k<kc} w[i*ldw+k]·xt[k*16+j] for i < 6, j < 16.
TEXT ·gemm6x16AVX2(SB), NOSPLIT, $0-41
	MOVQ    w+0(FP), R8
	MOVQ    ldw+8(FP), R9
	SHLQ    $2, R9
	MOVQ    xt+16(FP), SI
	MOVQ    kc+24(FP), CX
	MOVQ    c+32(FP), DI
	MOVBQZX acc+40(FP), AX
	LEAQ    (R9)(R9*2), BX
	LEAQ    (R8)(BX*1), R10

	TESTQ AX, AX
	JNZ   load
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	JMP    loop4

load:
	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7
	VMOVUPS 256(DI), Y8
	VMOVUPS 288(DI), Y9
	VMOVUPS 320(DI), Y10
	VMOVUPS 352(DI), Y11

loop4:
	CMPQ CX, $4
	JLT  tail
	KSTEP256(0, 0)
	KSTEP256(4, 64)
	KSTEP256(8, 128)
	KSTEP256(12, 192)
	ADDQ $16, R8
	ADDQ $16, R10
	ADDQ $256, SI
	SUBQ $4, CX
	JMP  loop4

tail:
	TESTQ CX, CX
	JZ    store
	KSTEP256(0, 0)
	ADDQ $4, R8
	ADDQ $4, R10
	ADDQ $64, SI
	DECQ CX
	JMP  tail

store:
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	VMOVUPS Y8, 256(DI)
	VMOVUPS Y9, 288(DI)
	VMOVUPS Y10, 320(DI)
	VMOVUPS Y11, 352(DI)
	VZEROUPPER
	RET

// ---------------------------------------------------------------- prefetch

// func prefetchRows(p *byte, stride, rows, n int); rows ≥ 1, n ≥ 1
//
// PREFETCHT1 (into L2) every 64-byte line of n bytes at p, p+stride, …,
// p+(rows-1)·stride: gemmSIMD's next weight block, fetched while the
// microkernel works on this one.
TEXT ·prefetchRows(SB), NOSPLIT, $0-32
	MOVQ p+0(FP), SI
	MOVQ stride+8(FP), DX
	MOVQ rows+16(FP), CX
	MOVQ n+24(FP), BX

prow:
	XORQ AX, AX

pline:
	PREFETCHT1 (SI)(AX*1)
	ADDQ       $64, AX
	CMPQ       AX, BX
	JLT        pline
	PREFETCHT1 -1(SI)(BX*1)
	ADDQ       DX, SI
	DECQ       CX
	JNZ        prow
	RET
