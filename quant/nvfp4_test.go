package quant

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// refCases is a file of testdata/quant/ggml in mxfp4.json's layout: rows
// of float32, the bytes ggml's block encoder wrote for them, whether
// ggml_quantize_chunk agreed without and with an importance matrix, and
// ggml's decoding of those bytes.
type refCases struct {
	Commit string `json:"llama_cpp_commit"`
	Cases  []struct {
		Name             string `json:"name"`
		Rows             int    `json:"rows"`
		RowLen           int    `json:"row_len"`
		Input            string `json:"input"`
		Blocks           string `json:"blocks"`
		ChunkSame        bool   `json:"chunk_same"`
		ChunkImatrixSame bool   `json:"chunk_imatrix_same"`
		Decoded          string `json:"decoded"`
	} `json:"cases"`
}

// checkRefCases encodes every row of file as dt, without and with an
// importance matrix, and requires ggml's bytes; then decodes ggml's bytes
// and requires its floats bit for bit (NaN payloads included). It returns
// the number of blocks checked.
func checkRefCases(t *testing.T, file string, dt tensor.DType) int {
	t.Helper()
	b, err := os.ReadFile("../testdata/quant/ggml/" + file)
	if err != nil {
		t.Fatal(err)
	}
	var fx refCases
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	if fx.Commit == "" {
		t.Errorf("%s: no llama.cpp commit recorded", file)
	}
	bs, bb := int(dt.BlockSize()), int(dt.BlockBytes())
	blocks := 0
	for _, c := range fx.Cases {
		x := f32s(unhex(t, c.Input))
		want := unhex(t, c.Blocks)
		wantY := f32s(unhex(t, c.Decoded))
		if len(x) != c.Rows*c.RowLen || len(want) != len(x)/bs*bb || len(wantY) != len(x) {
			t.Fatalf("%s %s: %d values, %d bytes, %d decoded for %d×%d", file, c.Name, len(x), len(want), len(wantY), c.Rows, c.RowLen)
		}
		if !c.ChunkSame || !c.ChunkImatrixSame {
			t.Errorf("%s %s: ggml_quantize_chunk and the block encoder disagree in the fixture", file, c.Name)
		}
		// Rows whose f16 scale overflows (Q1_0's means past 65504) are
		// reported (OverflowError) and written in full all the same.
		var ovf *OverflowError
		got := make([]byte, len(want))
		if err := Quantize(got, x, dt); err != nil && !errors.As(err, &ovf) {
			t.Fatal(err)
		}
		qw := make([]float32, c.RowLen)
		for i := range qw {
			qw[i] = float32(i%7) + 0.5
		}
		gotW := make([]byte, len(want))
		if err := QuantizeRows(gotW, x, dt, c.RowLen, qw); err != nil && !errors.As(err, &ovf) {
			t.Fatal(err)
		}
		bad := 0
		for o := 0; o < len(want); o += bb {
			if string(got[o:o+bb]) != string(want[o:o+bb]) || string(gotW[o:o+bb]) != string(want[o:o+bb]) {
				if bad++; bad <= 3 {
					t.Errorf("%v %s: block %d = %x (with an imatrix %x), ggml %x (input %v)", dt, c.Name, o/bb,
						got[o:o+bb], gotW[o:o+bb], want[o:o+bb], x[o/bb*bs:o/bb*bs+bs])
				}
			}
		}
		blocks += len(want) / bb
		y := make([]float32, len(x))
		if err := Dequantize(y, want, dt); err != nil {
			t.Fatal(err)
		}
		for i := range y {
			if math.Float32bits(y[i]) != math.Float32bits(wantY[i]) {
				t.Errorf("%v %s: decoded[%d] = %v, ggml %v", dt, c.Name, i, y[i], wantY[i])
				break
			}
		}
	}
	return blocks
}

// TestNVFP4CasesMatchGGML: testdata/quant/ggml/nvfp4.json (gen_nvfp4_q1_0.py,
// ggml of llama.cpp d32676d7: normal rows at three scales, outliers, and
// edge rows — sub-block maxima on, just below and just above UE4M3 values,
// the mantissa carry into the exponent, the 448 clamp, UE4M3 subnormals and
// below, values halfway between FP4 levels, NaN and infinities).
func TestNVFP4CasesMatchGGML(t *testing.T) {
	t.Parallel()
	if n := checkRefCases(t, "nvfp4.json", tensor.NVFP4); n != 18*256/64 {
		t.Fatalf("%d blocks, want %d", n, 18*256/64)
	}
}

// TestQ1_0CasesMatchGGML: testdata/quant/ggml/q1_0.json (the same script:
// normal rows, outliers, zero and signed zeros, means past f16's range and
// below its subnormals, a float32 sum that overflows, NaN).
func TestQ1_0CasesMatchGGML(t *testing.T) {
	t.Parallel()
	if n := checkRefCases(t, "q1_0.json", tensor.Q1_0); n != 17*256/128 {
		t.Fatalf("%d blocks, want %d", n, 17*256/128)
	}
}

// Every UE4M3 byte decodes to what the format means (sign-less E4M3, bias
// 7), halved, with ggml's two quirks: 0x7F (E4M3's NaN) is zero and the
// top bit is not read; the encoder gives each value its byte back, except
// that ggml saturates every value of exponent 15 (256 and up) to 0x7E,
// 448.
func TestUE4M3(t *testing.T) {
	t.Parallel()
	for x := 0; x < 256; x++ {
		e, m := x>>3&15, float64(x&7)
		want := math.Ldexp(m/8, -6) // subnormal
		if e > 0 {
			want = math.Ldexp(1+m/8, e-7)
		}
		if x == 0x7F {
			want = 0
		}
		if got := ue4m3Half(uint8(x)); float64(got) != want/2 {
			t.Errorf("ue4m3Half(%#x) = %g, want %g", x, got, want/2)
		}
		wantByte := uint8(x)
		if e == 15 {
			wantByte = 0x7E
		}
		if x < 0x80 && x != 0x7F {
			if got := f32ToUE4M3(float32(want)); got != wantByte {
				t.Errorf("f32ToUE4M3(%g) = %#x, want %#x", want, got, wantByte)
			}
		}
	}
}

// TestNVFP4FromOCP: ggml's NVFP4 decoding of blocks moved from the
// Hugging Face layout gives each value what the checkpoint's own decoding
// does (DequantizeFP4Packed with each group's E4M3 scale as its
// multiplier), for every code in every position; a scale byte's sign bit is
// dropped; sizes that are not whole blocks are refused.
func TestNVFP4FromOCP(t *testing.T) {
	t.Parallel()
	const rows, cols = 3, 128
	packed := make([]byte, rows*cols/2)
	scales := make([]byte, rows*cols/16)
	for i := range packed {
		packed[i] = byte(i*37 + i/7)
	}
	for i := range scales {
		scales[i] = byte(8 + i*13%0x70) // positive normal and subnormal E4M3, never NaN
	}
	scales[5] |= 0x80 // a negative scale: ggml keeps its magnitude
	mults := make([]float32, len(scales))
	if err := Dequantize(mults, scales, tensor.F8_E4M3); err != nil {
		t.Fatal(err)
	}
	mults[5] = -mults[5]
	want := make([]float32, rows*cols)
	if err := DequantizeFP4Packed(want, packed, mults, rows, cols, false); err != nil {
		t.Fatal(err)
	}
	blocks := make([]byte, rows*cols/64*36)
	if err := NVFP4FromOCP(blocks, packed, scales); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, rows*cols)
	for b := range rows * cols / 64 {
		dequantNVFP4(got[64*b:], blocks[36*b:])
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("value %d: %v, the checkpoint's %v", i, got[i], want[i])
		}
	}
	if err := NVFP4FromOCP(make([]byte, 27), make([]byte, 24), make([]byte, 3)); err == nil {
		t.Error("three sub-blocks of 16 accepted as NVFP4 blocks")
	}
}

// TestEncodeQ4_0Exact: values q·s of symmetric 4-bit groups of 32 (q in
// [−8, 7], s an f16 value) are Q4_0 blocks exactly, whichever codes a
// block reaches, where ggml's own encoder (d = max/−8) rounds a block whose
// extreme is +7·s; a scale no f16 value holds, or a value off the grid, is
// refused.
func TestEncodeQ4_0Exact(t *testing.T) {
	t.Parallel()
	x := make([]float32, 4*32)
	scales := []float32{0.0123291015625, -0.5, 3.0517578125e-05, 1}
	for b, s := range scales {
		for i := range 32 {
			q := (i*7+b*3)%16 - 8
			if b == 0 && q == -8 {
				q = 7 // block 0 reaches +7 only
			}
			x[b*32+i] = float32(q) * s
		}
	}
	dst := make([]byte, 4*18)
	if !EncodeQ4_0Exact(dst, x) {
		t.Fatal("q·s with f16 scales refused")
	}
	y := make([]float32, len(x))
	if err := Dequantize(y, dst, tensor.Q4_0); err != nil {
		t.Fatal(err)
	}
	for i := range x {
		if y[i] != x[i] {
			t.Fatalf("value %d: %v, want %v", i, y[i], x[i])
		}
	}
	ggml := make([]byte, 18)
	quantQ4_0(ggml, x[:32])
	dequantQ4_0(y[:32], ggml)
	same := true
	for i := range 32 {
		same = same && y[i] == x[i]
	}
	if same {
		t.Error("ggml's encoder kept a block whose extreme is +7·s exactly: the case proves nothing")
	}
	off := append([]float32(nil), x[:32]...)
	off[3] *= 1.0001
	if EncodeQ4_0Exact(dst[:18], off) {
		t.Error("a value off the grid accepted")
	}
	for i := range off {
		off[i] = x[i] * 1.0001 // scale 0.0123291015625·1.0001: no f16 value
	}
	if EncodeQ4_0Exact(dst[:18], off) {
		t.Error("a scale no f16 value holds accepted")
	}
}

// TestEncodeQ4_1Exact: values (q − z)·s of asymmetric 4-bit groups of 32
// (q, z in [0, 15], s and −z·s f16 values) are Q4_1 blocks exactly, also a
// block whose codes do not span all 16 levels, where ggml's own encoder
// (d = (max − min)/15) rounds; a zero point whose −z·s no f16 value holds
// with codes reaching 0, or a value off the grid, is refused.
func TestEncodeQ4_1Exact(t *testing.T) {
	t.Parallel()
	scales := []float32{0.0123291015625, 0.5, 3.0517578125e-05, 1}
	zeros := []int{7, 0, 15, 9}
	x := make([]float32, 4*32)
	for b, s := range scales {
		for i := range 32 {
			q := (i*7 + b*3) % 16
			if b == 0 {
				q = 2 + q%9 // codes 2 … 10 only
			}
			x[b*32+i] = float32(q-zeros[b]) * s
		}
	}
	dst := make([]byte, 4*20)
	if !EncodeQ4_1Exact(dst, x) || !EncodeExact(dst, x, tensor.Q4_1) {
		t.Fatal("(q − z)·s with f16 s and −z·s refused")
	}
	y := make([]float32, len(x))
	if err := Dequantize(y, dst, tensor.Q4_1); err != nil {
		t.Fatal(err)
	}
	for i := range x {
		if y[i] != x[i] {
			t.Fatalf("value %d: %v, want %v", i, y[i], x[i])
		}
	}
	ggml := make([]byte, 20)
	quantQ4_1(ggml, x[:32])
	dequantQ4_1(y[:32], ggml)
	same := true
	for i := range 32 {
		same = same && y[i] == x[i]
	}
	if same {
		t.Error("ggml's encoder kept a block of codes 2 … 10 exactly: the case proves nothing")
	}
	off := append([]float32(nil), x[:32]...)
	off[4] *= 1.0001 // −2·s
	if EncodeQ4_1Exact(dst[:20], off) {
		t.Error("a value off the grid accepted")
	}
	// s = 1 + 2⁻¹⁰ (an f16 value), z = 3, codes 0 … 15: m = −3·s needs 12
	// significant bits, which no f16 value has.
	s := float32(1 + 1.0/1024)
	for i := range 32 {
		off[i] = float32(i%16-3) * s
	}
	if EncodeQ4_1Exact(dst[:20], off) {
		t.Error("a minimum −z·s no f16 value holds accepted")
	}
}
