//go:build !noasm

#include "textflag.h"

// The step of Mamba-2's scan over one channel's state (simdSet.ssdStep):
// for i < n, v = a·s[i] + dx·b[i], s[i] = v, and the sum of v·c[i]
// returned; the Go wrapper (ssdStep) finishes the tail.

// func ssdStepAVX512(s, b, c *float32, a, dx float32, n int) float32; n%16 == 0
TEXT ·ssdStepAVX512(SB), NOSPLIT, $0-44
	MOVQ         s+0(FP), DI
	MOVQ         b+8(FP), SI
	MOVQ         c+16(FP), DX
	VBROADCASTSS a+24(FP), Z8
	VBROADCASTSS dx+28(FP), Z9
	MOVQ         n+32(FP), CX
	VPXORD       Z0, Z0, Z0
	VPXORD       Z1, Z1, Z1

loop32:
	CMPQ        CX, $32
	JLT         loop16
	VMULPS      (DI), Z8, Z2
	VMULPS      64(DI), Z8, Z3
	VFMADD231PS (SI), Z9, Z2
	VFMADD231PS 64(SI), Z9, Z3
	VMOVUPS     Z2, (DI)
	VMOVUPS     Z3, 64(DI)
	VFMADD231PS (DX), Z2, Z0
	VFMADD231PS 64(DX), Z3, Z1
	ADDQ        $128, DI
	ADDQ        $128, SI
	ADDQ        $128, DX
	SUBQ        $32, CX
	JMP         loop32

loop16:
	CMPQ        CX, $16
	JLT         reduce
	VMULPS      (DI), Z8, Z2
	VFMADD231PS (SI), Z9, Z2
	VMOVUPS     Z2, (DI)
	VFMADD231PS (DX), Z2, Z0
	ADDQ        $64, DI
	ADDQ        $64, SI
	ADDQ        $64, DX
	SUBQ        $16, CX
	JMP         loop16

reduce:
	VADDPS        Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS        Y1, Y0, Y0
	VEXTRACTF128  $1, Y0, X1
	VADDPS        X1, X0, X0
	VPERMILPS     $0x4e, X0, X1
	VADDPS        X1, X0, X0
	VPERMILPS     $0xb1, X0, X1
	VADDSS        X1, X0, X0
	MOVSS         X0, ret+40(FP)
	VZEROUPPER
	RET

// func ssdStepAVX2(s, b, c *float32, a, dx float32, n int) float32; n%8 == 0
TEXT ·ssdStepAVX2(SB), NOSPLIT, $0-44
	MOVQ         s+0(FP), DI
	MOVQ         b+8(FP), SI
	MOVQ         c+16(FP), DX
	VBROADCASTSS a+24(FP), Y8
	VBROADCASTSS dx+28(FP), Y9
	MOVQ         n+32(FP), CX
	VXORPS       Y0, Y0, Y0
	VXORPS       Y1, Y1, Y1

loop16:
	CMPQ        CX, $16
	JLT         loop8
	VMULPS      (DI), Y8, Y2
	VMULPS      32(DI), Y8, Y3
	VFMADD231PS (SI), Y9, Y2
	VFMADD231PS 32(SI), Y9, Y3
	VMOVUPS     Y2, (DI)
	VMOVUPS     Y3, 32(DI)
	VFMADD231PS (DX), Y2, Y0
	VFMADD231PS 32(DX), Y3, Y1
	ADDQ        $64, DI
	ADDQ        $64, SI
	ADDQ        $64, DX
	SUBQ        $16, CX
	JMP         loop16

loop8:
	CMPQ        CX, $8
	JLT         reduce
	VMULPS      (DI), Y8, Y2
	VFMADD231PS (SI), Y9, Y2
	VMOVUPS     Y2, (DI)
	VFMADD231PS (DX), Y2, Y0
	ADDQ        $32, DI
	ADDQ        $32, SI
	ADDQ        $32, DX
	SUBQ        $8, CX
	JMP         loop8

reduce:
	VADDPS       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VPERMILPS    $0x4e, X0, X1
	VADDPS       X1, X0, X0
	VPERMILPS    $0xb1, X0, X1
	VADDSS       X1, X0, X0
	MOVSS        X0, ret+40(FP)
	VZEROUPPER
	RET

// The steps of all P channels of one head (simdSet.ssdRows): for each
// channel p, with dx = d·x[p], ssdStep over its N state values (s advancing
// N a channel) and y[p] the sum; two partial sums hide the FMA latency.

// func ssdRowsAVX512(s, x, b, c, y *float32, a, d float32, P, N int); N%16 == 0, N > 0
TEXT ·ssdRowsAVX512(SB), NOSPLIT, $0-64
	MOVQ         s+0(FP), DI
	MOVQ         x+8(FP), R8
	MOVQ         b+16(FP), R9
	MOVQ         c+24(FP), R10
	MOVQ         y+32(FP), R11
	VBROADCASTSS a+40(FP), Z8
	VMOVSS       d+44(FP), X11
	MOVQ         P+48(FP), BX
	MOVQ         N+56(FP), R12

row:
	TESTQ        BX, BX
	JZ           done
	VMOVSS       (R8), X9
	VMULSS       X11, X9, X9
	VBROADCASTSS X9, Z9
	VPXORD       Z0, Z0, Z0
	VPXORD       Z1, Z1, Z1
	MOVQ         R9, SI
	MOVQ         R10, DX
	MOVQ         R12, CX

inner32:
	CMPQ        CX, $32
	JLT         inner16
	VMULPS      (DI), Z8, Z2
	VMULPS      64(DI), Z8, Z3
	VFMADD231PS (SI), Z9, Z2
	VFMADD231PS 64(SI), Z9, Z3
	VMOVUPS     Z2, (DI)
	VMOVUPS     Z3, 64(DI)
	VFMADD231PS (DX), Z2, Z0
	VFMADD231PS 64(DX), Z3, Z1
	ADDQ        $128, DI
	ADDQ        $128, SI
	ADDQ        $128, DX
	SUBQ        $32, CX
	JMP         inner32

inner16:
	CMPQ        CX, $16
	JLT         reduce
	VMULPS      (DI), Z8, Z2
	VFMADD231PS (SI), Z9, Z2
	VMOVUPS     Z2, (DI)
	VFMADD231PS (DX), Z2, Z0
	ADDQ        $64, DI
	ADDQ        $64, SI
	ADDQ        $64, DX
	SUBQ        $16, CX
	JMP         inner16

reduce:
	VADDPS        Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS        Y1, Y0, Y0
	VEXTRACTF128  $1, Y0, X1
	VADDPS        X1, X0, X0
	VPERMILPS     $0x4e, X0, X1
	VADDPS        X1, X0, X0
	VPERMILPS     $0xb1, X0, X1
	VADDSS        X1, X0, X0
	VMOVSS        X0, (R11)
	ADDQ          $4, R8
	ADDQ          $4, R11
	DECQ          BX
	JMP           row

done:
	VZEROUPPER
	RET

// func ssdRowsAVX2(s, x, b, c, y *float32, a, d float32, P, N int); N%8 == 0, N > 0
TEXT ·ssdRowsAVX2(SB), NOSPLIT, $0-64
	MOVQ         s+0(FP), DI
	MOVQ         x+8(FP), R8
	MOVQ         b+16(FP), R9
	MOVQ         c+24(FP), R10
	MOVQ         y+32(FP), R11
	VBROADCASTSS a+40(FP), Y8
	VMOVSS       d+44(FP), X11
	MOVQ         P+48(FP), BX
	MOVQ         N+56(FP), R12

row:
	TESTQ        BX, BX
	JZ           done
	VMOVSS       (R8), X9
	VMULSS       X11, X9, X9
	VBROADCASTSS X9, Y9
	VXORPS       Y0, Y0, Y0
	VXORPS       Y1, Y1, Y1
	MOVQ         R9, SI
	MOVQ         R10, DX
	MOVQ         R12, CX

inner16:
	CMPQ        CX, $16
	JLT         inner8
	VMULPS      (DI), Y8, Y2
	VMULPS      32(DI), Y8, Y3
	VFMADD231PS (SI), Y9, Y2
	VFMADD231PS 32(SI), Y9, Y3
	VMOVUPS     Y2, (DI)
	VMOVUPS     Y3, 32(DI)
	VFMADD231PS (DX), Y2, Y0
	VFMADD231PS 32(DX), Y3, Y1
	ADDQ        $64, DI
	ADDQ        $64, SI
	ADDQ        $64, DX
	SUBQ        $16, CX
	JMP         inner16

inner8:
	CMPQ        CX, $8
	JLT         reduce
	VMULPS      (DI), Y8, Y2
	VFMADD231PS (SI), Y9, Y2
	VMOVUPS     Y2, (DI)
	VFMADD231PS (DX), Y2, Y0
	ADDQ        $32, DI
	ADDQ        $32, SI
	ADDQ        $32, DX
	SUBQ        $8, CX
	JMP         inner8

reduce:
	VADDPS       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VPERMILPS    $0x4e, X0, X1
	VADDPS       X1, X0, X0
	VPERMILPS    $0xb1, X0, X1
	VADDSS       X1, X0, X0
	VMOVSS       X0, (R11)
	ADDQ         $4, R8
	ADDQ         $4, R11
	DECQ         BX
	JMP          row

done:
	VZEROUPPER
	RET
