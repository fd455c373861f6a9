package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestSSDScan checks the scan against its definition in float64 (the
// state as a sum over earlier positions of decayed inputs, groups shared
// by their heads), and that any split of the sequence gives the same
// output and final state (checkSSDScan).
func TestSSDScan(t *testing.T) {
	t.Parallel()
	checkSSDScan(t, 7, 4, 3, 5, 2, 1e-5)
}

// TestSSDScanEveryImpl runs TestSSDScan's check on every kernel set, with
// state sizes around the vector widths and Mamba-2's 128 (the SIMD step
// over whole vectors, the tail in Go) and more heads than threads.
func TestSSDScanEveryImpl(t *testing.T) {
	for _, impl := range implementations() {
		withImpl(impl, func() {
			for _, n := range []int{1, 7, 8, 9, 16, 17, 33, 128} {
				// The bound is relative to 1 + |y|: sums of up to 128
				// products of values up to 1.
				checkSSDScan(t, 5, 6, 4, n, 3, 2e-6*float64(n+3))
			}
		})
	}
}

// checkSSDScan checks SSDScan with the active kernels against its
// definition in float64 (the state as a sum over earlier positions of
// decayed inputs, groups shared by their heads), and that any split of the
// sequence gives the same output and final state, within tol (relative to
// 1 + |value|).
func checkSSDScan(t *testing.T, T, H, P, N, G int, tol float64) {
	t.Helper()
	r := rand.New(rand.NewPCG(3, 4))
	stride := H*P + 2*G*N + 1 // x, B, C inside a wider row, as in Mamba-2
	row := make([]float32, T*stride)
	dt := make([]float32, T*H)
	A := make([]float32, H)
	D := make([]float32, H)
	for _, s := range [][]float32{row, D} {
		for i := range s {
			s[i] = r.Float32()*2 - 1
		}
	}
	for i := range dt {
		dt[i] = r.Float32()
	}
	for i := range A {
		A[i] = -r.Float32() * 3
	}
	x, B, C := row, row[H*P:], row[H*P+G*N:]
	want := make([]float64, T*H*P)
	final := make([]float64, H*P*N)
	for h := 0; h < H; h++ {
		g := h / (H / G)
		for p := 0; p < P; p++ {
			for n := 0; n < N; n++ {
				var s float64
				for tt := 0; tt < T; tt++ {
					d := float64(dt[tt*H+h])
					s = math.Exp(d*float64(A[h]))*s + d*float64(x[tt*stride+h*P+p])*float64(B[tt*stride+g*N+n])
					want[tt*H*P+h*P+p] += s * float64(C[tt*stride+g*N+n])
				}
				final[(h*P+p)*N+n] = s
			}
			for tt := 0; tt < T; tt++ {
				want[tt*H*P+h*P+p] += float64(D[h]) * float64(x[tt*stride+h*P+p])
			}
		}
	}
	splits := [][]int{{T}, {1, T - 1}, {T - 2, 2}}
	if T == 7 {
		splits = [][]int{{T}, {1, 1, 1, 1, 1, 1, 1}, {3, 4}, {1, 5, 1}}
	}
	for _, split := range splits {
		state, checkState := guarded(H * P * N)
		clear(state)
		y, checkY := guarded(T * H * P)
		pos := 0
		for _, n := range split {
			o := pos * stride
			SSDScan(y[pos*H*P:], state, x[o:], B[o:], C[o:], stride, dt[pos*H:], A, D, n, H, P, N, G)
			pos += n
		}
		checkState(t)
		checkY(t)
		for i, v := range y {
			if math.Abs(float64(v)-want[i]) > tol*(1+math.Abs(want[i])) {
				t.Fatalf("%s N=%d split %v: y[%d] = %v, want %v", implName(active), N, split, i, v, want[i])
			}
		}
		for i, v := range state {
			if math.Abs(float64(v)-final[i]) > tol*(1+math.Abs(final[i])) {
				t.Fatalf("%s N=%d split %v: state[%d] = %v, want %v", implName(active), N, split, i, v, final[i])
			}
		}
	}
}

// BenchmarkSSDScan is the scan of a Mamba-2 2.7B layer (80 heads of 64
// channels, state 128, one group) over one decoded token and over a
// 64-token prompt, on each kernel set.
func BenchmarkSSDScan(b *testing.B) {
	for _, T := range []int{1, 64} {
		b.Run(fmt.Sprintf("T=%d", T), func(b *testing.B) { benchSSDScan(b, T) })
	}
}

func benchSSDScan(b *testing.B, T int) {
	const H, P, N, G = 80, 64, 128, 1
	stride := H*P + 2*G*N
	row := make([]float32, T*stride)
	for i := range row {
		row[i] = float32(i%7) * 0.01
	}
	dt, A, D := make([]float32, T*H), make([]float32, H), make([]float32, H)
	for i := range A {
		dt[i], A[i], D[i] = 0.5, -0.1, 1
	}
	state, y := make([]float32, H*P*N), make([]float32, T*H*P)
	for _, impl := range implementations() {
		b.Run(implName(impl), func(b *testing.B) {
			withImpl(impl, func() {
				b.SetBytes(int64(4 * T * H * P * N))
				for range b.N {
					SSDScan(y, state, row, row[H*P:], row[H*P+G*N:], stride, dt, A, D, T, H, P, N, G)
				}
			})
		})
	}
}
