package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

var threads atomic.Int32

func init() { threads.Store(int32(runtime.GOMAXPROCS(0))) }

// SetThreads sets how many goroutines the kernels split their work over; n < 1
// means runtime.GOMAXPROCS(0).
func SetThreads(n int) {
	if n < 1 {
		n = runtime.GOMAXPROCS(0)
	}
	threads.Store(int32(n))
}

// Threads reports the thread count set by SetThreads.
func Threads() int { return int(threads.Load()) }

// chunksPerThread is how many pieces parallelFor cuts the work into per
// thread. The pieces are handed out on demand, so a thread that the OS
// deschedules (the machines this runs on are shared) delays only the piece
// it holds instead of a fixed 1/Threads() share that the others then wait
// for; more pieces balance better but cost an atomic add and a call each.
const chunksPerThread = 8

// spinFor is how long a pool worker keeps polling for the next job after
// finishing one before it parks. Decoding one token calls parallelFor a few
// hundred times, each for a fraction of a millisecond, with a few
// microseconds of single-threaded work (norms, RoPE) in between: a parked
// goroutine takes tens of microseconds to wake on a virtual machine, long
// enough that the caller had done most of a small product alone by then
// (BenchmarkParallelForLatency measures it). Spinning through the gaps
// keeps the helpers on the job; past spinFor they park and cost nothing.
const spinFor = 200 * time.Microsecond

// job is one parallelFor call: chunks of per indices of [0,n), claimed in
// turn by the caller and by the pool workers that join.
type job struct {
	fn      func(lo, hi int)
	n, per  int
	next    atomic.Int64 // start of the next unclaimed chunk
	done    atomic.Int64 // indices whose chunk has returned
	helpers atomic.Int32 // workers that may still join (Threads()-1 at start)
}

// run claims and runs chunks until none are left.
func (j *job) run() {
	for {
		lo := int(j.next.Add(int64(j.per))) - j.per
		if lo >= j.n {
			return
		}
		hi := min(lo+j.per, j.n)
		j.fn(lo, hi)
		j.done.Add(int64(hi - lo))
	}
}

// pool holds the persistent workers parallelFor hands chunks to. A job is
// published by storing it in cur and then advancing gen; workers poll gen,
// spinning for spinFor and then parking on their wake channel. Every
// poster runs its own job to completion (claiming chunks itself and then
// waiting for the claimed ones to finish), so jobs posted at the same time
// from several goroutines, or from inside a chunk, all finish: a worker
// that picks up a superseded job finds its chunks taken and moves on.
type pool struct {
	mu       sync.Mutex // serializes growth of workers
	workers  atomic.Pointer[[]*worker]
	cur      atomic.Pointer[job]
	gen      atomic.Uint64
	sleepers atomic.Int32
}

type worker struct {
	sleeping atomic.Bool
	wake     chan struct{}
}

var workPool pool

// ensure starts workers until there are at least n.
func (p *pool) ensure(n int) []*worker {
	if ws := p.workers.Load(); ws != nil && len(*ws) >= n {
		return *ws
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var ws []*worker
	if cur := p.workers.Load(); cur != nil {
		ws = append(ws, *cur...)
	}
	for len(ws) < n {
		w := &worker{wake: make(chan struct{}, 1)}
		ws = append(ws, w)
		go p.loop(w, p.gen.Load())
	}
	p.workers.Store(&ws)
	return ws
}

// loop is a worker: wait for a generation newer than seen, join its job if
// a helper slot is left, repeat.
func (p *pool) loop(w *worker, seen uint64) {
	for {
		seen = p.await(w, seen)
		if j := p.cur.Load(); j != nil && j.helpers.Add(-1) >= 0 {
			j.run()
		}
	}
}

// await returns the first generation different from seen: polled for
// spinFor, then parked until post wakes the worker.
func (p *pool) await(w *worker, seen uint64) uint64 {
	deadline := time.Now().Add(spinFor)
	for i := 1; ; i++ {
		if g := p.gen.Load(); g != seen {
			return g
		}
		if i%256 == 0 {
			if time.Now().After(deadline) {
				break
			}
			runtime.Gosched()
		}
	}
	for {
		// Announce the sleep before the last look at gen: post advances
		// gen before it looks for sleepers, so one of the two sees the
		// other (sequentially consistent atomics) and no wake-up is lost.
		w.sleeping.Store(true)
		p.sleepers.Add(1)
		g := p.gen.Load()
		if g == seen {
			<-w.wake
			g = p.gen.Load()
		}
		w.sleeping.Store(false)
		p.sleepers.Add(-1)
		if g != seen {
			return g
		}
	}
}

// post publishes j to the first helpers workers and wakes the parked ones.
func (p *pool) post(j *job, helpers int) {
	ws := p.ensure(helpers)
	p.cur.Store(j)
	p.gen.Add(1)
	if p.sleepers.Load() == 0 {
		return
	}
	for _, w := range ws[:helpers] {
		if w.sleeping.Load() {
			select {
			case w.wake <- struct{}{}:
			default: // a wake-up is already pending
			}
		}
	}
}

// parallelFor calls fn over [0,n) in contiguous chunks whose boundaries are
// multiples of grain (except the last), on up to Threads() goroutines (the
// caller's and pool workers) that take the chunks in turn, and waits for all
// of them. Every index is in exactly one chunk; which goroutine runs a chunk
// does not affect what fn computes.
func parallelFor(n, grain int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	if grain < 1 {
		grain = 1
	}
	t := Threads()
	grains := (n + grain - 1) / grain
	if t > grains {
		t = grains
	}
	if t <= 1 {
		fn(0, n)
		return
	}
	j := &job{fn: fn, n: n, per: max(1, grains/(t*chunksPerThread)) * grain}
	j.helpers.Store(int32(t - 1))
	workPool.post(j, t-1)
	j.run()
	// Wait for the chunks the workers claimed: they are in flight, each
	// a fraction of the job, so poll, yielding now and then in case a
	// worker waits for this P.
	for i := 1; j.done.Load() < int64(n); i++ {
		if i%256 == 0 {
			runtime.Gosched()
		}
	}
}
