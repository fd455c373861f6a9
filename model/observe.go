package model

import (
	"errors"
	"fmt"
)

// MatMul is one weight matrix multiply as an Observer sees it: the input
// rows X [Rows][Cols] about to be multiplied by the weight Weight.
type MatMul struct {
	// Weight is the weight's GGUF name (blk.N.attn_q.weight, …,
	// output.weight, or token_embd.weight for a tied head), whatever naming
	// the checkpoint uses.
	Weight string
	// Experts is the number of experts of a stacked mixture weight
	// (blk.N.ffn_{gate,up,down}_exps.weight) and Expert the one this
	// multiply uses; Experts is 0 for a plain matrix.
	Expert, Experts int
	X               []float32
	Rows, Cols      int
}

// Observer sees the input of every weight matrix multiply of a forward pass,
// in the order they run; it must not keep or change X.
type Observer func(MatMul)

// ErrNoObserver is returned by SetObserver for architectures whose forward
// pass does not report its matrix multiplies.
var ErrNoObserver = errors.New("model: this architecture does not report its matrix multiplies")

// SetObserver makes every following step of the session report its weight
// matrix multiplies to o (nil stops it). Only the decoder-only families of
// package arch report them; others return ErrNoObserver. A session without
// an observer pays one nil check per multiply.
func (s *Session) SetObserver(o Observer) error {
	if _, ok := s.m.impl.(*decoder); !ok {
		return fmt.Errorf("%w (%s)", ErrNoObserver, s.m.cfg.Arch)
	}
	s.obs = o
	return nil
}

// observe reports x [T][l.W.Cols] as the input of l (expert e of n when
// n > 0) to o, when there is an observer.
func (o Observer) observe(l *linear, x []float32, T, e, n int) {
	if o == nil || l.W == nil {
		return
	}
	o(MatMul{Weight: l.Name, Expert: e, Experts: n, X: x[:T*l.W.Cols], Rows: T, Cols: l.W.Cols})
}

// apply is l.apply after reporting its input to o.
func (o Observer) apply(l *linear, dst, x []float32, T int) {
	o.observe(l, x, T, 0, 0)
	l.apply(dst, x, T)
}
