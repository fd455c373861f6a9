package kernels

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/tfconv/tfconv/internal/hugepages"
)

// streamed counts the bytes of the weight matrices MatMul and MatMulQ
// have multiplied by: each call with M > 0 counts its matrix once,
// whatever M, since that is what it reads from memory.
var streamed atomic.Int64

func countStreamed(M int, w *Matrix) {
	if M > 0 {
		streamed.Add(int64(w.Rows) * int64(w.RowBytes()))
	}
}

// WeightBytesStreamed returns the bytes of weight matrices MatMul and
// MatMulQ have multiplied by since the program started (each call counts
// its matrix once, whatever M). The difference over a decode step is the
// weight traffic of one token: the figure decode speed is bound by.
func WeightBytesStreamed() int64 { return streamed.Load() }

// ReadBandwidth measures the machine's read bandwidth as the decode
// kernels see it: the bytes per second at which MatMul streams an F32
// matrix of about size bytes (rounded down to whole 4096-column rows, at
// least one) with M = 1 on the current threads, the median of rounds
// passes after one that faults the pages in. size should be well above
// the last-level cache. It allocates the matrix for the measurement and
// does not count it in WeightBytesStreamed.
func ReadBandwidth(size int64, rounds int) float64 {
	const cols = 4096
	rows := max(1, int(size/(4*cols)))
	w := make([]float32, rows*cols)
	// Backed as the model's weights are (model.Load advises huge pages),
	// so that TLB misses do not make the machine look slower than its
	// weights stream.
	hugepages.Advise(unsafeBytes(w))
	for i := range w {
		w[i] = float32(i & 7)
	}
	m := F32Matrix(rows, cols, w)
	x := make([]float32, cols)
	dst := make([]float32, rows)
	rounds = max(1, rounds)
	secs := make([]float64, 0, rounds)
	matMulF32(dst, x, 1, m)
	for range rounds {
		t0 := time.Now()
		matMulF32(dst, x, 1, m)
		secs = append(secs, time.Since(t0).Seconds())
	}
	slices.Sort(secs)
	return float64(len(w)*4) / secs[len(secs)/2]
}
