package quant

import "fmt"

// The OCP microscaling (MX) layout is how Hugging Face checkpoints store
// MXFP4 (gpt-oss's "_blocks" and "_scales" tensors): the 4-bit values of a
// 32-value block packed two per byte, value 2j in the low nibble of byte j
// and 2j+1 in the high one, and one E8M0 scale byte per block kept apart.
// ggml's MXFP4 block is the scale byte, then 16 bytes whose byte j holds
// value j in the low nibble and value j+16 in the high one. The scale
// bytes mean the same in both (2^(e-127) times the E2M1 value; ggml
// doubles the values and halves the scale), so a block moves from one
// form to the other by moving nibbles: nothing is dequantized.

// MXFP4FromOCP writes ggml MXFP4 blocks to dst (17 bytes each) from
// values (16 bytes a block, OCP order) and scales (one byte a block).
func MXFP4FromOCP(dst, values, scales []byte) error {
	n := len(scales)
	if len(values) != 16*n || len(dst) != 17*n {
		return fmt.Errorf("quant: MXFP4 from OCP: %d value bytes, %d scales and %d output bytes do not make whole blocks",
			len(values), n, len(dst))
	}
	for b := range n {
		out, in := dst[17*b:17*b+17], values[16*b:16*b+16]
		out[0] = scales[b]
		for j := range 16 {
			lo := nibble(in, j)    // value j
			hi := nibble(in, j+16) // value j+16
			out[1+j] = lo | hi<<4
		}
	}
	return nil
}

// OCPFromMXFP4 is MXFP4FromOCP's inverse: ggml blocks src to OCP values
// and scales.
func OCPFromMXFP4(values, scales, src []byte) error {
	n := len(scales)
	if len(values) != 16*n || len(src) != 17*n {
		return fmt.Errorf("quant: MXFP4 to OCP: %d value bytes, %d scales and %d block bytes do not make whole blocks",
			len(values), n, len(src))
	}
	for b := range n {
		in, out := src[17*b:17*b+17], values[16*b:16*b+16]
		scales[b] = in[0]
		clear(out)
		for j := range 16 {
			setNibble(out, j, in[1+j]&0xf)
			setNibble(out, j+16, in[1+j]>>4)
		}
	}
	return nil
}

// nibble is value i of an OCP-packed block (two a byte, low first).
func nibble(b []byte, i int) byte { return b[i/2] >> (4 * (i % 2)) & 0xf }

// setNibble ORs value v in as value i of an OCP-packed block.
func setNibble(b []byte, i int, v byte) { b[i/2] |= v << (4 * (i % 2)) }

// MXFP4Ints decodes one ggml MXFP4 block b into its integer levels (ggml's
// doubled E2M1 values, kvalues_mxfp4) and returns the block's half scale
// 2^(e-128): value j is d·q[j]. kernels' dot products with Q8_0
// activations (ggml_vec_dot_mxfp4_q8_0) read it.
func MXFP4Ints(q *[32]int8, b []byte) (d float32) {
	b = b[:17]
	for j := range 16 {
		q[j] = kvaluesFP4[b[1+j]&0xf]
		q[j+16] = kvaluesFP4[b[1+j]>>4]
	}
	return e8m0Half(b[0])
}

// DequantizeFP4Packed writes the [rows, cols] float32 weight of an NVFP4
// layer as Hugging Face checkpoints store it (compressed-tensors'
// "nvfp4-pack-quantized", ModelOpt's NVFP4) to dst: packed holds the E2M1
// values two a byte (value 2j of a row in the low nibble of byte j, as
// nibble reads them) and mults one float32 multiplier per 16 values of a
// row, which the caller has computed as its format does (compressed-tensors:
// scale / global_scale; ModelOpt: scale · scale_2). Each value is e2m1 ·
// mult, one float32 product. negZero: code 8 is −0 (compressed-tensors'
// E2M1 table) rather than +0 (ModelOpt's).
func DequantizeFP4Packed(dst []float32, packed []byte, mults []float32, rows, cols int, negZero bool) error {
	const group = 16
	switch {
	case rows <= 0 || cols <= 0 || cols%group != 0:
		return fmt.Errorf("quant: FP4 packed layer of %d×%d: columns must be a positive multiple of %d", rows, cols, group)
	case len(dst) != rows*cols || len(packed) != rows*cols/2 || len(mults) != rows*cols/group:
		return fmt.Errorf("quant: FP4 packed layer of %d×%d: %d values, %d packed bytes and %d scales, want %d, %d and %d",
			rows, cols, len(dst), len(packed), len(mults), rows*cols, rows*cols/2, rows*cols/group)
	}
	for r := range rows {
		row := packed[r*cols/2 : (r+1)*cols/2]
		for g := range cols / group {
			s := mults[r*cols/group+g]
			for j := g * group; j < (g+1)*group; j++ {
				q := nibble(row, j)
				v := float32(kvaluesFP4[q&7]) * 0.5
				if q&8 != 0 && (v != 0 || negZero) {
					v = -v
				}
				dst[r*cols+j] = v * s
			}
		}
	}
	return nil
}
