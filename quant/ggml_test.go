package quant

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/tensor"
)

// ggmlHash is one line of testdata/quant/ggml/dequant-sha256.tsv: what
// ggml's own to_float produced for a fixture tensor.
type ggmlHash struct {
	file, tensor, typ string
	n                 int64
	sum               string
}

func readGGMLHashes(t *testing.T) map[string]ggmlHash {
	t.Helper()
	f, err := os.Open("../testdata/quant/ggml/dequant-sha256.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]ggmlHash{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p := strings.Split(sc.Text(), "\t")
		if len(p) != 5 {
			t.Fatalf("bad line %q", sc.Text())
		}
		n, err := strconv.ParseInt(p[3], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		out[p[0]+"\x00"+p[1]] = ggmlHash{p[0], p[1], p[2], n, p[4]}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) != 1374 {
		t.Fatalf("%d hashes, want 1374", len(out))
	}
	return out
}

// f32Hash is the SHA-256 of x as little-endian float32, the layout the C
// program hashed.
func f32Hash(x []float32) string {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func checkGGMLHash(t *testing.T, want ggmlHash, raw []byte, dt tensor.DType) {
	t.Helper()
	x := make([]float32, want.n)
	if err := Dequantize(x, raw, dt); err != nil {
		t.Errorf("%s %s: %v", want.file, want.tensor, err)
		return
	}
	if got := f32Hash(x); got != want.sum {
		t.Errorf("%s %s (%s): Dequantize's output hashes to %s, ggml's to %s", want.file, want.tensor, dt, got, want.sum)
	}
}

// TestDequantizeMatchesGGMLShipped decodes the shipped tensors of
// testdata/quant/llama (11 types) and compares with ggml's decoding.
func TestDequantizeMatchesGGMLShipped(t *testing.T) {
	hashes := readGGMLHashes(t)
	bins, _ := filepath.Glob("../testdata/quant/llama/*.bin")
	checked := 0
	for _, p := range bins {
		base := strings.TrimSuffix(filepath.Base(p), ".bin")
		i := strings.LastIndexByte(base, '.')
		name, typ := base[:i], base[i+1:]
		file := "llama-" + typ
		if typ == "F32" {
			file = "llama-f32"
		}
		want, ok := hashes["interop/llama/gguf/"+file+".gguf\x00"+name]
		if !ok {
			t.Errorf("%s: no ggml hash", p)
			continue
		}
		dt, ok := tensor.Parse(typ)
		if !ok {
			t.Fatalf("%s: type %q", p, typ)
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		checkGGMLHash(t, want, raw, dt)
		checked++
	}
	if checked != 22 {
		t.Errorf("checked %d shipped tensors, want 22", checked)
	}
}

// TestDequantizeMatchesGGML decodes every tensor of every fixture GGUF and
// compares with ggml's decoding, when ../shared is there.
func TestDequantizeMatchesGGML(t *testing.T) {
	root := sharedFixtures()
	if root == "" {
		t.Skip("no shared/fixtures")
	}
	hashes := readGGMLHashes(t)
	files := map[string]bool{}
	for _, h := range hashes {
		files[h.file] = true
	}
	seen := 0
	for file := range files {
		f, err := gguf.Open(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		for i := range f.Tensors {
			tt := &f.Tensors[i]
			want, ok := hashes[file+"\x00"+tt.Name]
			if !ok {
				t.Errorf("%s %s: not in ggml's list", file, tt.Name)
				continue
			}
			if n, _ := tt.Shape.NumElements(); n != want.n {
				t.Errorf("%s %s: %d elements, ggml says %d", file, tt.Name, n, want.n)
				continue
			}
			raw := make([]byte, tt.Size)
			if _, err := tt.Open().ReadAt(raw, 0); err != nil {
				t.Fatal(err)
			}
			checkGGMLHash(t, want, raw, tt.DType)
			seen++
		}
		f.Close()
	}
	if seen != len(hashes) {
		t.Errorf("checked %d tensors of %d", seen, len(hashes))
	}
}

// ggmlVector is one entry of testdata/quant/ggml/vectors.json.
type ggmlVector struct {
	Type     string `json:"type"`
	GGMLType uint32 `json:"ggml_type"`
	Rows     int    `json:"rows"`
	RowLen   int    `json:"row_len"`
	Imatrix  string `json:"imatrix"`
	Input    string `json:"input_f32"`
	Blocks   string `json:"blocks"`
	Decoded  string `json:"decoded_f32"`
}

func readGGMLVectors(t *testing.T) []ggmlVector {
	t.Helper()
	b, err := os.ReadFile("../testdata/quant/ggml/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Vectors []ggmlVector `json:"vectors"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v.Vectors
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDecodeGGMLVectors decodes ggml's blocks of the IQ and TQ types and
// compares value for value (bits) with ggml's to_float.
func TestDecodeGGMLVectors(t *testing.T) {
	vs := readGGMLVectors(t)
	if len(vs) != 12 {
		t.Fatalf("%d vectors, want 12", len(vs))
	}
	for _, v := range vs {
		dt, ok := tensor.DTypeFromGGML(v.GGMLType)
		if !ok {
			t.Fatalf("%s: ggml type %d unknown", v.Type, v.GGMLType)
		}
		name := fmt.Sprintf("%s/%dx%d", dt, v.Rows, v.RowLen)
		want := f32s(unhex(t, v.Decoded))
		got := make([]float32, len(want))
		if err := Dequantize(got, unhex(t, v.Blocks), dt); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		bad := 0
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				if bad == 0 {
					t.Errorf("%s: value %d = %v, ggml %v", name, i, got[i], want[i])
				}
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d values differ", name, bad, len(want))
		}
	}
}

// TestQuantizeIQ4_NLMatchesGGML encodes ggml's IQ4_NL inputs (no importance
// matrix, row lengths 96 and 32: the Q2_K/Q3_K fallback case) and compares
// the blocks byte for byte with ggml_quantize_chunk's.
func TestQuantizeIQ4_NLMatchesGGML(t *testing.T) {
	n := 0
	for _, v := range readGGMLVectors(t) {
		if v.Type != "iq4_nl" {
			continue
		}
		if v.Imatrix != "" {
			t.Fatalf("IQ4_NL vector with an importance matrix")
		}
		n++
		x := f32s(unhex(t, v.Input))
		want := unhex(t, v.Blocks)
		got := make([]byte, len(want))
		if err := Quantize(got, x, tensor.IQ4_NL); err != nil {
			t.Fatal(err)
		}
		for b := 0; b < len(want); b += 18 {
			if string(got[b:b+18]) != string(want[b:b+18]) {
				t.Errorf("%dx%d: block %d = %x, ggml %x", v.Rows, v.RowLen, b/18, got[b:b+18], want[b:b+18])
			}
		}
	}
	if n != 2 {
		t.Fatalf("%d IQ4_NL vectors, want 2", n)
	}
}

// TestQuantizeIQ4_XSMatchesGGML encodes ggml's IQ4_XS input (4 rows of 256,
// no importance matrix, values at scales 10⁻³…10¹) and compares the
// super-blocks byte for byte with ggml_quantize_chunk's
// (quantize_iq4_xs: the IQ4_NL search per 32 values, 6-bit block scales).
func TestQuantizeIQ4_XSMatchesGGML(t *testing.T) {
	n := 0
	for _, v := range readGGMLVectors(t) {
		if v.Type != "iq4_xs" {
			continue
		}
		if v.Imatrix != "" {
			t.Fatalf("IQ4_XS vector with an importance matrix")
		}
		n++
		x := f32s(unhex(t, v.Input))
		want := unhex(t, v.Blocks)
		got := make([]byte, len(want))
		if err := Quantize(got, x, tensor.IQ4_XS); err != nil {
			t.Fatal(err)
		}
		sameBlocks(t, fmt.Sprintf("%dx%d", v.Rows, v.RowLen), tensor.IQ4_XS, got, want)
	}
	if n != 1 {
		t.Fatalf("%d IQ4_XS vectors, want 1", n)
	}
}

// TestIQ4_XSRoundTrip quantizes real weights (the shipped llama tensors,
// rows of 256) to IQ4_XS, without and with importance weights, and decodes
// them again: without weights every super-block stays within maxErrIQ4_XS
// of its largest magnitude; with them (a few columns weigh 10⁴ times more
// than others, so the fit gives the light ones up and no max bound holds)
// the error that counts, Σ qw·(x−y)² over the tensor, is smaller than the
// unweighted fit's.
func TestIQ4_XSRoundTrip(t *testing.T) {
	for _, name := range shippedTensors {
		src := f32s(readFile(t, filepath.Join("..", "testdata", "quant", "llama", name+".F32.bin")))
		const rowLen = 256
		qw := make([]float32, rowLen)
		for i := range qw {
			qw[i] = 0.01 + float32(i%16*i%16) // a few columns matter far more than the rest
		}
		var werr [2]float64
		for k, w := range [][]float32{nil, qw} {
			q := make([]byte, len(src)/256*136)
			if err := QuantizeRows(q, src, tensor.IQ4_XS, rowLen, w); err != nil {
				t.Fatal(err)
			}
			y := make([]float32, len(src))
			if err := Dequantize(y, q, tensor.IQ4_XS); err != nil {
				t.Fatal(err)
			}
			if w == nil {
				checkDequantError(t, name, src, y, tensor.IQ4_XS)
			}
			for i := range src {
				e := float64(src[i] - y[i])
				werr[k] += float64(qw[i%rowLen]) * e * e
			}
		}
		if werr[1] >= werr[0] {
			t.Errorf("%s: importance-weighted error %.4g, unweighted fit's %.4g", name, werr[1], werr[0])
		}
		if testing.Verbose() {
			t.Logf("%s: Σqw·err² %.4g unweighted, %.4g weighted", name, werr[0], werr[1])
		}
	}
}

// TestQuantizeIQ4_XSCasesMatchGGML encodes the rows of
// testdata/quant/ggml/iq4xs.json (gen_iq4xs.py: normal rows at three
// scales, outliers, and edge rows — all zero, a zero or sub-GROUP_MAX_EPS
// block inside a super-block, one non-zero value, constant, alternating),
// each without and with an importance matrix, and requires the bytes
// ggml_quantize_chunk wrote for them.
func TestQuantizeIQ4_XSCasesMatchGGML(t *testing.T) {
	cases := readGGMLCases(t, "iq4xs.json")
	weighted := 0
	for _, c := range cases {
		x, qw, want := c.decode(t, tensor.IQ4_XS)
		if qw != nil {
			weighted++
		}
		got := make([]byte, len(want))
		if err := QuantizeRows(got, x, tensor.IQ4_XS, c.RowLen, qw); err != nil {
			t.Fatal(err)
		}
		sameBlocks(t, fmt.Sprintf("%s (imatrix %v)", c.Name, qw != nil), tensor.IQ4_XS, got, want)
	}
	if len(cases) != 10 || weighted != 5 {
		t.Fatalf("%d cases, %d with an importance matrix; want 10 and 5", len(cases), weighted)
	}
}

// TestMXFP4CasesMatchGGML encodes the rows of testdata/quant/ggml/mxfp4.json
// (gen_mxfp4.py, ggml of a llama.cpp newer than c392e509: normal rows at
// three scales, outliers, and edge blocks — zero, a largest magnitude of
// exactly 2^k and one float32 below it, values halfway between FP4 levels,
// values past the largest level, shared exponents below E8M0's range,
// subnormal and huge inputs) and requires the bytes quantize_row_mxfp4_ref
// wrote, also through QuantizeRows with an importance matrix (ggml's
// quantize_mxfp4 ignores it, and so must we); then decodes ggml's blocks
// and requires dequantize_row_mxfp4's floats bit for bit.
func TestMXFP4CasesMatchGGML(t *testing.T) {
	b, err := os.ReadFile("../testdata/quant/ggml/mxfp4.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx struct {
		Cases []struct {
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
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	const bb = 17 // bytes per 32-value block
	blocks := 0
	for _, c := range fx.Cases {
		x := f32s(unhex(t, c.Input))
		want := unhex(t, c.Blocks)
		wantY := f32s(unhex(t, c.Decoded))
		if len(x) != c.Rows*c.RowLen || len(want) != len(x)/32*bb || len(wantY) != len(x) {
			t.Fatalf("%s: %d values, %d bytes, %d decoded for %d×%d", c.Name, len(x), len(want), len(wantY), c.Rows, c.RowLen)
		}
		if !c.ChunkSame || !c.ChunkImatrixSame {
			t.Errorf("%s: ggml_quantize_chunk and quantize_row_mxfp4_ref disagree in the fixture", c.Name)
		}
		got := make([]byte, len(want))
		if err := Quantize(got, x, tensor.MXFP4); err != nil {
			t.Fatal(err)
		}
		qw := make([]float32, c.RowLen)
		for i := range qw {
			qw[i] = float32(i%7) + 0.5
		}
		gotW := make([]byte, len(want))
		if err := QuantizeRows(gotW, x, tensor.MXFP4, c.RowLen, qw); err != nil {
			t.Fatal(err)
		}
		for o := 0; o < len(want); o += bb {
			if string(got[o:o+bb]) != string(want[o:o+bb]) {
				t.Errorf("%s: block %d = %x, ggml %x (input %v)", c.Name, o/bb, got[o:o+bb], want[o:o+bb], x[o/bb*32:o/bb*32+32])
			}
			if string(gotW[o:o+bb]) != string(want[o:o+bb]) {
				t.Errorf("%s: block %d with an importance matrix = %x, ggml %x", c.Name, o/bb, gotW[o:o+bb], want[o:o+bb])
			}
		}
		blocks += len(want) / bb
		y := make([]float32, len(x))
		if err := Dequantize(y, want, tensor.MXFP4); err != nil {
			t.Fatal(err)
		}
		for i := range y {
			if math.Float32bits(y[i]) != math.Float32bits(wantY[i]) {
				t.Errorf("%s: decoded[%d] = %v, ggml %v", c.Name, i, y[i], wantY[i])
				break
			}
		}
	}
	if len(fx.Cases) != 5 || blocks != 23*256/32 {
		t.Fatalf("%d cases, %d blocks; want 5 and %d", len(fx.Cases), blocks, 23*256/32)
	}
}

// ggmlCase is one case of the testdata/quant/ggml/<type>.json files the
// gen_iq*.py scripts write: Rows rows of RowLen values (Input, float32
// hex) that ggml_quantize_chunk encoded as Type, with the importance matrix
// Imatrix when it is not "", into Blocks.
type ggmlCase struct {
	Type    string `json:"type"`
	Name    string `json:"name"`
	Rows    int    `json:"rows"`
	RowLen  int    `json:"row_len"`
	Input   string `json:"input"`
	Imatrix string `json:"imatrix"`
	Blocks  string `json:"blocks"`
}

// readGGMLCases reads a case file of testdata/quant/ggml.
func readGGMLCases(t *testing.T, name string) []ggmlCase {
	t.Helper()
	b, err := os.ReadFile("../testdata/quant/ggml/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var cases []ggmlCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	return cases
}

// decode returns the case's rows, its importance matrix (nil without one)
// and ggml's blocks, checking their sizes against Rows×RowLen of dt.
func (c ggmlCase) decode(t *testing.T, dt tensor.DType) (x, qw []float32, want []byte) {
	t.Helper()
	x = f32s(unhex(t, c.Input))
	want = unhex(t, c.Blocks)
	if c.Imatrix != "" {
		qw = f32s(unhex(t, c.Imatrix))
	}
	if n, err := dt.ByteSize(int64(c.Rows * c.RowLen)); err != nil || len(x) != c.Rows*c.RowLen || int64(len(want)) != n {
		t.Fatalf("%v %s: %d values, %d bytes for %d×%d", dt, c.Name, len(x), len(want), c.Rows, c.RowLen)
	}
	return x, qw, want
}

// sameBlocks reports the super-blocks of got that differ from ggml's want
// (the first three, then how many).
func sameBlocks(t *testing.T, what string, dt tensor.DType, got, want []byte) {
	t.Helper()
	bb := int(dt.BlockBytes())
	bad := 0
	for o := 0; o < len(want); o += bb {
		if string(got[o:o+bb]) != string(want[o:o+bb]) {
			if bad++; bad <= 3 {
				t.Errorf("%s: super-block %d = %x, ggml %x", what, o/bb, got[o:o+bb], want[o:o+bb])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d super-blocks differ", what, bad, len(want)/bb)
	}
}
