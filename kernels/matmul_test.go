package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// implementations returns every kernel set this build and CPU can run; nil
// is the plain-Go reference.
func implementations() []*simdSet {
	return append([]*simdSet{nil}, simdSets...)
}

func implName(s *simdSet) string {
	if s == nil {
		return "generic"
	}
	return s.name
}

// withImpl runs fn with s as the active implementation.
func withImpl(s *simdSet, fn func()) {
	saved := active
	active = s
	defer func() { active = saved }()
	fn()
}

// sumRoundingBound is the relative error allowed on a float32 dot product of
// K terms against its float64 value, as a fraction of Σ|x·w|: any summation
// order (index order, several partial sums, blocks over k) of K float32
// products, each rounded once, stays within (K+1)·2⁻²⁴ of it (Higham,
// Accuracy and Stability, §3.1); the extra 2 allow for the rounding of a
// scaled int8 weight and of the final result.
func sumRoundingBound(K int) float64 { return float64(K+3) * 0x1p-24 }

// guardVal fills the slices around every destination; a changed guard
// means a kernel wrote outside its output.
const guardVal = float32(-12345.5)

// guarded returns a slice of n elements with guardCount guard values on
// either side, and a check for them.
const guardCount = 17

func guarded(n int) ([]float32, func(t *testing.T)) {
	buf := make([]float32, n+2*guardCount)
	for i := range buf {
		buf[i] = guardVal
	}
	return buf[guardCount : guardCount+n : guardCount+n], func(t *testing.T) {
		t.Helper()
		for i := 0; i < guardCount; i++ {
			if buf[i] != guardVal || buf[len(buf)-1-i] != guardVal {
				t.Fatalf("write outside the destination (guard %d)", i)
			}
		}
	}
}

// randMatrix builds an N×K matrix of dtype t from random values, and
// returns it with its exact dequantized values (what quant.Dequantize gives,
// times the row scale for I8). Data starts one byte past an aligned
// address so that no kernel can rely on alignment.
func randMatrix(r *rand.Rand, t tensor.DType, N, K int) (*Matrix, []float32) {
	src := make([]float32, N*K)
	for i := range src {
		src[i] = float32(r.NormFloat64())
	}
	var scales []float32
	var raw []byte
	switch t {
	case tensor.I8:
		q := make([]int8, N*K)
		scales = make([]float32, N)
		if N*K > 0 {
			if err := quant.QuantizeInt8Rows(q, scales, src, N, K); err != nil {
				panic(err)
			}
		}
		raw = make([]byte, N*K)
		for i, v := range q {
			raw[i] = byte(v)
		}
	default:
		rb, err := t.ByteSize(int64(K))
		if err != nil {
			panic(err)
		}
		raw = make([]byte, int(rb)*N)
		if N*K > 0 {
			if err := quant.Quantize(raw, src, t); err != nil {
				panic(err)
			}
		}
	}
	buf := make([]byte, len(raw)+1)
	copy(buf[1:], raw)
	m, err := NewMatrix(t, N, K, buf[1:], scales)
	if err != nil {
		panic(err)
	}
	deq := make([]float32, N*K)
	if N*K > 0 {
		if err := quant.Dequantize(deq, raw, t); err != nil {
			panic(err)
		}
	}
	if t == tensor.I8 {
		for n := 0; n < N; n++ {
			for k := 0; k < K; k++ {
				deq[n*K+k] *= scales[n]
			}
		}
	}
	return m, deq
}

func randVec(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// checkMatMul runs MatMul on an unaligned x and a guarded dst and compares
// with the float64 product of the dequantized weights.
func checkMatMul(t *testing.T, r *rand.Rand, w *Matrix, deq []float32, M int) {
	t.Helper()
	K, N := w.Cols, w.Rows
	xb := randVec(r, M*K+1)
	x := xb[1:]
	dst, check := guarded(M * N)
	for i := range dst {
		dst[i] = float32(math.NaN()) // every element must be written
	}
	MatMul(dst, x, M, w)
	check(t)
	bound := sumRoundingBound(K)
	for m := 0; m < M; m++ {
		for n := 0; n < N; n++ {
			var want, mag float64
			for k := 0; k < K; k++ {
				p := float64(x[m*K+k]) * float64(deq[n*K+k])
				want += p
				mag += math.Abs(p)
			}
			got := float64(dst[m*N+n])
			if !(math.Abs(got-want) <= bound*mag+1e-30) {
				t.Fatalf("%v M=%d N=%d K=%d: dst[%d][%d] = %g, want %g (±%g)", w.DType, M, N, K, m, n, got, want, bound*mag)
			}
		}
	}
}

var weightTypes = []tensor.DType{tensor.F32, tensor.F16, tensor.BF16, tensor.I8, tensor.Q8_0, tensor.Q4_0,
	tensor.Q4_1, tensor.Q5_0, tensor.Q5_1, tensor.Q2_K, tensor.Q3_K, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K,
	tensor.NVFP4, tensor.Q1_0}

// awkward straddle the vector widths (8, 16), the register tiles (6, 12 weight
// rows; 16, 32 activation rows) and the unroll factors.
var awkward = []int{0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 128}

func TestMatMul(t *testing.T) {
	defer SetThreads(Threads())
	r := rand.New(rand.NewPCG(5, 1))
	ns, ms := []int{0, 1, 7, 12, 13, 31, 33, 65}, []int{0, 1, 2, 7, 16, 17, 33}
	if testing.Short() { // under an emulator: the tails of every tile size
		ns, ms = []int{0, 1, 7, 13, 33}, []int{0, 1, 2, 17, 33}
	}
	for _, impl := range implementations() {
		t.Run(implName(impl), func(t *testing.T) {
			withImpl(impl, func() {
				for _, dt := range weightTypes {
					bs := int(dt.BlockSize())
					var ks []int
					for _, k := range awkward {
						if k%bs == 0 {
							ks = append(ks, k)
						}
					}
					ks = append(ks, 2*bs, 3*bs)
					if bs == 1 {
						ks = append(ks, kcBlock+1, 2*kcBlock+37) // several k chunks, a ragged last one
					} else {
						ks = append(ks, (kcBlock/bs+1)*bs)
					}
					for _, K := range ks {
						for _, N := range ns {
							w, deq := randMatrix(r, dt, N, K)
							for _, M := range ms {
								SetThreads(1 + (M+N)%3)
								checkMatMul(t, r, w, deq, M)
							}
						}
					}
					// Many activation rows: several panel groups.
					K := (40 + bs - 1) / bs * bs
					w, deq := randMatrix(r, dt, 13, K)
					checkMatMul(t, r, w, deq, pcBlock*32+45)
					// Several k ranges (kcOuter), a ragged last row block:
					// prefetchNext's every branch.
					w, deq = randMatrix(r, dt, 29, (kcOuter/bs+2)*bs)
					SetThreads(2)
					checkMatMul(t, r, w, deq, 40)
				}
			})
		})
	}
}

var benchTypes = []tensor.DType{tensor.F32, tensor.Q8_0, tensor.Q4_0, tensor.Q4_K, tensor.Q6_K, tensor.F16, tensor.BF16, tensor.I8,
	tensor.Q4_1, tensor.Q5_0, tensor.Q5_1, tensor.Q2_K, tensor.Q3_K, tensor.Q5_K}

// BenchmarkMatMul reports GFLOP/s (2·M·N·K per op) and, for M=1, the rate
// the weights stream at (GB/s of weight bytes), at K=N=2048. The kernels
// use GOMAXPROCS threads: compare with -cpu 1,2.
func BenchmarkMatMul(b *testing.B) {
	const K, N = 2048, 2048
	r := rand.New(rand.NewPCG(1, 1))
	mats := map[tensor.DType]*Matrix{}
	for _, impl := range implementations() {
		for _, dt := range benchTypes {
			for _, M := range []int{1, 128} {
				name := fmt.Sprintf("%s/%s/M=%d", implName(impl), strings.ToLower(dt.String()), M)
				b.Run(name, func(b *testing.B) {
					w := mats[dt]
					if w == nil {
						w, _ = randMatrix(r, dt, N, K)
						mats[dt] = w
					}
					x := randVec(r, M*K)
					dst := make([]float32, M*N)
					defer SetThreads(Threads())
					SetThreads(runtime.GOMAXPROCS(0))
					withImpl(impl, func() {
						for b.Loop() {
							MatMul(dst, x, M, w)
						}
					})
					sec := b.Elapsed().Seconds() / float64(b.N)
					b.ReportMetric(2*float64(M*N*K)/sec/1e9, "GFLOP/s")
					if M == 1 {
						b.ReportMetric(float64(len(w.Data))/sec/1e9, "GB/s")
					}
				})
			}
		}
	}
}

// BenchmarkDecode streams the weights of TinyLlama-1.1B-shaped layers
// (hidden 2048, 4 KV heads of 64, FFN 5632) through M=1 products, with
// enough layers that the weights (≥ 160 MB) overflow the last-level cache
// (105 MB on the reference machine), so GB/s is the rate weights come from
// memory during decoding. Quants are random bytes with every f16 scale set
// to a small normal value: the speed does not depend on the values, and no
// denormal or NaN reaches the FMA units.
func BenchmarkDecode(b *testing.B) {
	benchDecode(b, MatMul, []tensor.DType{tensor.F32, tensor.F16, tensor.BF16, tensor.Q8_0, tensor.Q4_0, tensor.Q4_1,
		tensor.Q5_0, tensor.Q5_1, tensor.Q2_K, tensor.Q3_K, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K})
}

// BenchmarkDecodeQ is BenchmarkDecode for MatMulQ (--match-llamacpp).
func BenchmarkDecodeQ(b *testing.B) {
	benchDecode(b, MatMulQ, []tensor.DType{tensor.Q8_0, tensor.Q4_0, tensor.Q4_K, tensor.Q6_K})
}

func benchDecode(b *testing.B, mul func(dst, x []float32, M int, w *Matrix), types []tensor.DType) {
	shapes := [][2]int{{2048, 2048}, {256, 2048}, {256, 2048}, {2048, 2048}, {5632, 2048}, {5632, 2048}, {2048, 5632}}
	const minBytes = 160 << 20
	for _, dt := range types {
		for _, impl := range simdSets {
			b.Run(fmt.Sprintf("%s/%s", impl.name, strings.ToLower(dt.String())), func(b *testing.B) {
				r := rand.New(rand.NewPCG(9, 9))
				var ws []*Matrix
				var total int
				for total < minBytes {
					for _, s := range shapes {
						w := randomBytesMatrix(r, dt, s[0], s[1])
						ws = append(ws, w)
						total += len(w.Data)
					}
				}
				x := randVec(r, 5632)
				dst := make([]float32, 5632)
				defer SetThreads(Threads())
				SetThreads(runtime.GOMAXPROCS(0))
				withImpl(impl, func() {
					for b.Loop() {
						for _, w := range ws {
							mul(dst, x, 1, w)
						}
					}
				})
				b.ReportMetric(float64(total)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
	}
}

// randomBytesMatrix is an N×K matrix of random bytes whose f16 scale
// fields (halfFields) hold random values in [2⁻⁸, 2⁻⁶) and whose f32, f16 or
// bf16 elements are in [-0.5, 0.5).
func randomBytesMatrix(r *rand.Rand, dt tensor.DType, N, K int) *Matrix {
	rb, _ := dt.ByteSize(int64(K))
	data := make([]byte, int(rb)*N)
	for i := 0; i+8 <= len(data); i += 8 {
		binary.LittleEndian.PutUint64(data[i:], r.Uint64())
	}
	switch dt {
	case tensor.F32:
		for i := 0; i < len(data); i += 4 {
			binary.LittleEndian.PutUint32(data[i:], math.Float32bits(float32(data[i])/256-0.5))
		}
	case tensor.F16, tensor.BF16:
		for i := 0; i < len(data); i += 2 {
			v := float32(data[i])/256 - 0.5
			if dt == tensor.F16 {
				binary.LittleEndian.PutUint16(data[i:], quant.F32ToF16(v))
			} else {
				binary.LittleEndian.PutUint16(data[i:], quant.F32ToBF16(v))
			}
		}
	default:
		bb := int(dt.BlockBytes())
		for o := 0; o < len(data); o += bb {
			for _, f := range halfFields[dt] {
				// A scale in [2⁻⁸, 2⁻⁶) with a random mantissa: some two
				// thousand distinct values, as in a real checkpoint's blocks
				// (one value for all of them flattered every kernel that
				// converts the scale through a table).
				h := uint16(7+r.IntN(2))<<10 | uint16(r.IntN(1024))
				binary.LittleEndian.PutUint16(data[o+f:], h)
			}
		}
	}
	w, err := NewMatrix(dt, N, K, data, nil)
	if err != nil {
		panic(err)
	}
	return w
}
