package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSelectiveScan checks the scan against its recurrence written out in
// float64 from a zero state, and that any split of the sequence into steps
// gives the same output and final state.
func TestSelectiveScan(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	const T, C, N = 7, 5, 3
	fill := func(n int, lo, hi float32) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = lo + r.Float32()*(hi-lo)
		}
		return s
	}
	x, dt := fill(T*C, -1, 1), fill(T*C, 0.01, 1.5)
	A, B, Cm, D := fill(C*N, -3, -0.1), fill(T*N, -1, 1), fill(T*N, -1, 1), fill(C, -1, 1)
	want := make([]float64, T*C)
	h := make([]float64, C*N)
	for tt := 0; tt < T; tt++ {
		for c := 0; c < C; c++ {
			d := float64(dt[tt*C+c])
			var sum float64
			for n := 0; n < N; n++ {
				h[c*N+n] = math.Exp(d*float64(A[c*N+n]))*h[c*N+n] + d*float64(B[tt*N+n])*float64(x[tt*C+c])
				sum += h[c*N+n] * float64(Cm[tt*N+n])
			}
			want[tt*C+c] = sum + float64(D[c])*float64(x[tt*C+c])
		}
	}
	for _, split := range [][]int{{T}, {1, 1, 1, 1, 1, 1, 1}, {3, 4}, {1, 6}} {
		state := make([]float32, C*N)
		got := make([]float32, T*C)
		pos := 0
		for _, n := range split {
			SelectiveScan(got[pos*C:(pos+n)*C], state, x[pos*C:(pos+n)*C], dt[pos*C:(pos+n)*C], A,
				B[pos*N:(pos+n)*N], Cm[pos*N:(pos+n)*N], D, n, C, N)
			pos += n
		}
		for i := range want {
			if d := float64(got[i]) - want[i]; math.Abs(d) > 1e-5 {
				t.Fatalf("split %v: y[%d] = %v, want %v", split, i, got[i], want[i])
			}
		}
		for i := range h {
			if d := float64(state[i]) - h[i]; math.Abs(d) > 1e-5 {
				t.Fatalf("split %v: state[%d] = %v, want %v", split, i, state[i], h[i])
			}
		}
	}
}

// TestSoftplus checks log(1+eˣ) on both sides of the threshold.
func TestSoftplus(t *testing.T) {
	t.Parallel()
	x := []float32{-30, -1, 0, 1, 19.5, 20, 21, 80}
	got := append([]float32(nil), x...)
	Softplus(got)
	for i, v := range x {
		want := math.Log1p(math.Exp(float64(v)))
		if v > 20 {
			want = float64(v)
		}
		if math.Abs(float64(got[i])-want) > 1e-6*math.Max(1, math.Abs(want)) {
			t.Errorf("Softplus(%v) = %v, want %v", v, got[i], want)
		}
	}
}

// TestScansSplitByThreads holds the recurrent scans, at sizes that split
// their heads or channels among threads, to the single-threaded result bit
// for bit: each head's or channel's arithmetic is the same whichever
// thread runs it. (Not parallel: it sets the thread count.)
func TestScansSplitByThreads(t *testing.T) {
	saved := Threads()
	defer SetThreads(saved)
	r := rand.New(rand.NewPCG(5, 6))
	fill := func(n int, lo, hi float32) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = lo + r.Float32()*(hi-lo)
		}
		return s
	}
	// SSDScan: 2 positions of 24 heads of 64 channels, state 128, 3 groups.
	const sT, sH, sP, sN, sG = 2, 24, 64, 128, 3
	stride := sH*sP + 2*sG*sN
	sRow, sDt, sA, sD := fill(sT*stride, -1, 1), fill(sT*sH, 0.01, 1), fill(sH, -3, -0.1), fill(sH, -1, 1)
	// SelectiveScan: 3 positions of 3000 channels, state 16.
	const mT, mC, mN = 3, 3000, 16
	mX, mDt, mA := fill(mT*mC, -1, 1), fill(mT*mC, 0.01, 1.5), fill(mC*mN, -3, -0.1)
	mB, mCm, mD := fill(mT*mN, -1, 1), fill(mT*mN, -1, 1), fill(mC, -1, 1)
	// GatedDeltaRule: 2 positions of 12 heads of 64×64.
	const gT, gH, gK, gV = 2, 12, 64, 64
	gq, gk, gv := fill(gT*gH*gK, -1, 1), fill(gT*gH*gK, -0.2, 0.2), fill(gT*gH*gV, -1, 1)
	gg, gb := fill(gT*gH, -1, 0), fill(gT*gH, 0, 1)
	run := func(threads int) [][]float32 {
		SetThreads(threads)
		sy, ss := make([]float32, sT*sH*sP), make([]float32, sH*sP*sN)
		SSDScan(sy, ss, sRow, sRow[sH*sP:], sRow[sH*sP+sG*sN:], stride, sDt, sA, sD, sT, sH, sP, sN, sG)
		my, ms := make([]float32, mT*mC), make([]float32, mC*mN)
		SelectiveScan(my, ms, mX, mDt, mA, mB, mCm, mD, mT, mC, mN)
		gy, gs := make([]float32, gT*gH*gV), make([]float32, gH*gK*gV)
		GatedDeltaRule(gy, gq, gk, gv, gg, gb, gs, gT, gH, gK, gV, 0.125)
		return [][]float32{sy, ss, my, ms, gy, gs}
	}
	names := []string{"SSDScan y", "SSDScan state", "SelectiveScan y", "SelectiveScan state", "GatedDeltaRule out", "GatedDeltaRule state"}
	want := run(1)
	for _, threads := range []int{2, 3, 8} {
		for i, got := range run(threads) {
			for j := range got {
				if math.Float32bits(got[j]) != math.Float32bits(want[i][j]) {
					t.Fatalf("%d threads: %s[%d] = %v, one thread gives %v", threads, names[i], j, got[j], want[i][j])
				}
			}
		}
	}
}
