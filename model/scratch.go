package model

import "sync"

// scratch is the working memory of one forward call of a recurrent mixer:
// buffers cut in turn from one slice that a pool keeps between calls, so
// a decoded token allocates nothing. Sessions of one model may run at
// once, so the memory is the call's, never the mixer's.
type scratch struct {
	buf []float32
	off int
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// getScratch returns a scratch of at least n floats; putScratch gives it
// back when the call is done with every buffer cut from it.
func getScratch(n int) *scratch {
	s := scratchPool.Get().(*scratch)
	if cap(s.buf) < n {
		s.buf = make([]float32, n)
	}
	s.buf, s.off = s.buf[:n], 0
	return s
}

func putScratch(s *scratch) { scratchPool.Put(s) }

// take cuts the next n floats. They hold what an earlier call left there:
// the caller writes every element before reading it.
func (s *scratch) take(n int) []float32 {
	out := s.buf[s.off : s.off+n : s.off+n]
	s.off += n
	return out
}
