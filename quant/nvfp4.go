package quant

import (
	"fmt"
	"math"
)

// NVFP4 and Q1_0 are the ggml types 40 and 41 (llama.cpp 2026; the tree
// d32676d7 tfconv checks against). Their layouts:
//
//	NVFP4 (64, 36): four sub-blocks of 16; x = u(d[s])·v[q], u the UE4M3
//	scale halved, v the doubled E2M1 values (kvalues_fp4, as MXFP4)
//	  0        4                                    36
//	  | d[4]   | qs[32]: 8 bytes per sub-block       |
//	  byte j of sub-block s: value j in the low nibble, j+8 in the high one
//
//	Q1_0 (128, 18): x = +d where bit j is set, -d where it is not
//	  0    2                 18
//	  | d  | qs[16]: bit j%8 of byte j/8 is value j |
//
// Both encoders ignore importance weights (ggml's quantize_nvfp4 drops
// them; quantize_q1_0 only walks the rows one by one with them).

const (
	qkNVFP4    = 64
	qkNVFP4Sub = 16
	qk1_0      = 128
)

// ue4m3Half is ggml_ue4m3_to_fp32: the unsigned E4M3 scale byte (bias 7,
// 3 mantissa bits, subnormals below exponent 1) times one half, because
// the FP4 table holds doubled values. 0 and 0x7F (E4M3's NaN) are 0; the
// top bit is not looked at.
func ue4m3Half(x uint8) float32 {
	if x == 0 || x == 0x7F {
		return 0
	}
	exp, man := int(x>>3&0xF), float32(x&7)
	var raw float32
	if exp == 0 {
		raw = man * (1.0 / 512)
	} else {
		raw = float32(math.Ldexp(float64(1+man/8), exp-7))
	}
	return raw * 0.5
}

// f32ToUE4M3 is ggml_fp32_to_ue4m3: non-positive and NaN input is 0, input
// above 448 is 448; the mantissa is cut to 3 bits and rounded up when the
// next bit is set (not to even); subnormal results round x·2⁹ half up and
// stay within 1..7 (0 below); an exponent past 14 saturates to 0x7E.
func f32ToUE4M3(x float32) uint8 {
	if !(x > 0) {
		return 0
	}
	if x > 448 {
		x = 448
	}
	bits := math.Float32bits(x)
	e := int(bits>>23&0xFF) - 127 + 7
	if e <= 0 {
		// float32(x·512) is exact, so a fused multiply-add there gives the
		// same sum.
		man := int32(float32(x*512) + 0.5)
		if man > 7 {
			man = 7
		}
		if man < 1 {
			return 0
		}
		return uint8(man)
	}
	if e >= 15 {
		return 0x7E
	}
	man := int(bits>>20&7) + int(bits>>19&1)
	if man > 7 {
		man = 0
		if e++; e >= 15 {
			return 0x7E
		}
	}
	return uint8(e<<3 | man)
}

// quantNVFP4 is quantize_row_nvfp4_ref: per sub-block of 16 the scale is
// the UE4M3 byte of max|x|/6 (6 being E2M1's largest value), and each
// value the nearest FP4 level at that scale (first on ties).
func quantNVFP4(b []byte, x []float32) {
	b, x = b[:36], x[:qkNVFP4]
	for s := range 4 {
		xb := x[s*qkNVFP4Sub : (s+1)*qkNVFP4Sub]
		var amax float32
		for _, v := range xb {
			if amax < abs32(v) {
				amax = abs32(v)
			}
		}
		ue := f32ToUE4M3(amax / 6)
		b[s] = ue
		d := ue4m3Half(ue)
		for j := range 8 {
			b[4+8*s+j] = bestFP4(xb[j], d) | bestFP4(xb[j+8], d)<<4
		}
	}
}

// dequantNVFP4 is dequantize_row_nvfp4.
func dequantNVFP4(y []float32, b []byte) {
	b, y = b[:36], y[:qkNVFP4]
	for s := range 4 {
		d := ue4m3Half(b[s])
		for j := range 8 {
			q := b[4+8*s+j]
			y[16*s+j] = float32(kvaluesFP4[q&0xf]) * d
			y[16*s+j+8] = float32(kvaluesFP4[q>>4]) * d
		}
	}
}

// NVFP4Ints decodes one NVFP4 block b into its integer levels (the
// doubled E2M1 values) in element order, and returns its four sub-block
// scales (UE4M3, halved): value j is d[j/16]·q[j]. kernels' dot products
// with Q8_0 activations (ggml_vec_dot_nvfp4_q8_0) read it.
func NVFP4Ints(q *[64]int8, b []byte) (d [4]float32) {
	b = b[:36]
	for s := range 4 {
		d[s] = ue4m3Half(b[s])
		for j := range 8 {
			v := b[4+8*s+j]
			q[16*s+j] = kvaluesFP4[v&0xf]
			q[16*s+j+8] = kvaluesFP4[v>>4]
		}
	}
	return d
}

// quantQ1_0 is quantize_row_q1_0_ref: d is the mean of |x| (summed in
// order in float32, then divided by 128), rounded to f16; bit j is set
// when x[j] ≥ 0 (so -0 sets it and NaN does not).
func quantQ1_0(b []byte, x []float32) {
	b, x = b[:18], x[:qk1_0]
	var sum float32
	for _, v := range x {
		sum += abs32(v)
	}
	putHalf(b, sum/qk1_0)
	clear(b[2:])
	for j, v := range x {
		if v >= 0 {
			b[2+j/8] |= 1 << (j % 8)
		}
	}
}

// dequantQ1_0 is dequantize_row_q1_0.
func dequantQ1_0(y []float32, b []byte) {
	b, y = b[:18], y[:qk1_0]
	d := half(b)
	for j := range y {
		if b[2+j/8]>>(j%8)&1 != 0 {
			y[j] = d
		} else {
			y[j] = -d
		}
	}
}

// Q1_0Signs decodes one Q1_0 block b into its signs (+1 where the bit is
// set, -1 where not) in element order and returns its scale d: value j is
// d·q[j]. kernels' dot products with Q8_0 activations
// (ggml_vec_dot_q1_0_q8_0) read it.
func Q1_0Signs(q *[128]int8, b []byte) (d float32) {
	b = b[:18]
	for j := range q {
		q[j] = int8(b[2+j/8]>>(j%8)&1)*2 - 1
	}
	return half(b)
}

// NVFP4FromOCP writes ggml NVFP4 blocks to dst (36 bytes per 64 values)
// from an NVFP4 row as Hugging Face checkpoints store it (ModelOpt,
// compressed-tensors): values holds the E2M1 codes two a byte (value 2j of
// the row in the low nibble of byte j), scales one float8 E4M3 byte per 16
// values. The E2M1 codes mean the same in both; the scale byte keeps its
// bits with the sign cleared (UE4M3: ggml halves it and doubles the codes).
// So a row moves by moving nibbles, as llama.cpp's converter does
// (_nvfp4_pack): nothing is dequantized. The per-tensor factor (ModelOpt's
// scale_2, compressed-tensors' 1/global_scale) is not in the blocks.
//
//	HF, per 16 values:  | 8 bytes: values 2j, 2j+1 in byte j |  + scale byte s
//	ggml, per 64:       | s0 s1 s2 s3 | 4 × 8 bytes: value j, j+8 in byte j |
func NVFP4FromOCP(dst, values, scales []byte) error {
	n := len(scales) // sub-blocks of 16
	if n%4 != 0 || len(values) != 8*n || len(dst) != 9*n {
		return fmt.Errorf("quant: NVFP4 from OCP: %d value bytes, %d scales and %d output bytes do not make whole blocks of 64",
			len(values), n, len(dst))
	}
	for s := range n {
		out, in := dst[36*(s/4):], values[8*s:8*s+8]
		out[s%4] = scales[s] & 0x7f
		qs := out[4+8*(s%4) : 4+8*(s%4)+8]
		for j := range 8 {
			qs[j] = nibble(in, j) | nibble(in, j+8)<<4
		}
	}
	return nil
}
