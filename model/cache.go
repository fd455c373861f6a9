package model

import "fmt"

// Cache is the key/value cache of a decoder's self-attention: for every
// layer, the keys and values of every position run so far, each row
// KVHeads·HeadDim wide (DeepSeek-2's latent attention keeps its
// kv_lora_rank latent in K and its rotated key, qk_rope_head_dim wide, in
// V instead). Len positions are complete; a step appends to every layer and
// then advances Len.
//
// State holds the recurrent layers' state instead (arch.Mixer.Recurrent):
// a fixed number of floats per layer, laid out by the layer's mixer, zero
// before the first step.
type Cache struct {
	Len   int
	Width int         // KVHeads·HeadDim
	K, V  [][]float32 // [layer][Len·Width]
	State [][]float32 // [layer][the mixer's stateSize]; nil for attention layers
}

func newCache(layers, width int) *Cache {
	return &Cache{Width: width, K: make([][]float32, layers), V: make([][]float32, layers),
		State: make([][]float32, layers)}
}

// state returns layer l's recurrent state of n floats, zero the first time.
func (c *Cache) state(l, n int) []float32 {
	if len(c.State[l]) != n {
		c.State[l] = make([]float32, n)
	}
	return c.State[l]
}

// add appends T rows of keys and values to layer l and returns that layer's
// whole keys and values (the earlier positions followed by the new ones).
func (c *Cache) add(l int, k, v []float32) (K, V []float32) {
	c.K[l] = append(c.K[l], k...)
	c.V[l] = append(c.V[l], v...)
	return c.K[l], c.V[l]
}

// Clone returns an independent copy (beam search forks sequences).
func (c *Cache) Clone() *Cache {
	n := &Cache{Len: c.Len, Width: c.Width, K: make([][]float32, len(c.K)), V: make([][]float32, len(c.V)),
		State: make([][]float32, len(c.State))}
	for i := range c.K {
		n.K[i] = append(make([]float32, 0, cap(c.K[i])), c.K[i]...)
		n.V[i] = append(make([]float32, 0, cap(c.V[i])), c.V[i]...)
	}
	for i, st := range c.State {
		n.State[i] = append([]float32(nil), st...)
	}
	return n
}

// Session is one sequence being decoded incrementally: the KV cache and, for
// encoder-decoder models, the encoder's output projected to each decoder
// layer's cross-attention keys and values.
type Session struct {
	m     *Model
	cache *Cache

	// mask is the key mask of every position in the cache (false:
	// padding), kept as kernels.AttentionParams.KeyMask wants it; nil while
	// every position is real, so the common case costs nothing.
	mask []bool
	// types are the token types of the step about to run (BERT); nil = 0.
	types []int
	// embeds replace the input embeddings of the step about to run
	// (Input.Embeds; nil: none). groups are the attention groups of every
	// position in the cache (Input.Groups; nil: none).
	embeds [][]float32
	groups []int
	// positions are the M-RoPE positions of the step about to run
	// (Input.Positions; nil: cache.Len + t).
	positions [][4]int
	// deepstack are the rows added after each layer in the step about to
	// run (Input.Deepstack; nil: none).
	deepstack [][][]float32
	// obs sees every weight matrix multiply (SetObserver); nil: none.
	obs Observer

	// Encoder-decoder state, set by Encode and shared (read-only) by clones.
	encLen         int
	crossK, crossV [][]float32 // [decoder layer][encLen·d_attn]
	encMask        []bool      // [encLen] encoder key mask; nil = all real
	encoded        bool
}

// NewSession starts an empty sequence.
func (m *Model) NewSession() *Session {
	return &Session{m: m, cache: newCache(m.cfg.Layers, m.cfg.KVHeads*m.cfg.HeadDim)}
}

// Len is the number of (decoder) positions run so far.
func (s *Session) Len() int { return s.cache.Len }

// Encode runs the encoder of an encoder-decoder model over tokens; the
// decoder steps that follow attend to its output.
func (s *Session) Encode(tokens []int) error { return s.encode(tokens, nil) }

// encode runs the encoder with a key mask over tokens (nil: all real), which
// the encoder's self-attention and every later cross-attention apply.
func (s *Session) encode(tokens []int, mask []bool) error {
	e, ok := s.m.impl.(encoderArch)
	if !ok || !s.m.cfg.EncoderDecoder {
		return fmt.Errorf("model: %s has no separate encoder", s.m.cfg.Arch)
	}
	if err := s.m.checkTokens(tokens, "encoder"); err != nil {
		return err
	}
	if err := checkMask(mask, len(tokens), "mask", "tokens"); err != nil {
		return err
	}
	s.encMask = nil
	if !allTrue(mask) {
		s.encMask = append([]bool(nil), mask...)
	}
	return e.encode(s, tokens)
}

// Step appends tokens to the sequence and returns the logits [vocab] of the
// last one.
func (s *Session) Step(tokens []int) ([]float32, error) {
	out, err := s.forward(tokens, nil, nil, true)
	if err != nil {
		return nil, err
	}
	return out.Logits[len(out.Logits)-1], nil
}

// StepAll appends tokens and returns the logits of each of them.
func (s *Session) StepAll(tokens []int, tr *Trace) (*Output, error) {
	return s.forward(tokens, nil, tr, false)
}

// Clone returns an independent copy of the session.
func (s *Session) Clone() *Session {
	n := *s
	n.cache = s.cache.Clone()
	if s.mask != nil {
		n.mask = append([]bool(nil), s.mask...)
	}
	if s.groups != nil {
		n.groups = append([]int(nil), s.groups...)
	}
	return &n
}

// allTrue reports whether mask hides nothing (nil hides nothing).
func allTrue(mask []bool) bool {
	for _, v := range mask {
		if !v {
			return false
		}
	}
	return true
}

// extendMask appends the key mask of n new positions (nil: all real) to
// s.mask, materializing it only once some position is padding.
func (s *Session) extendMask(n int, mask []bool) {
	if s.mask == nil {
		if allTrue(mask) {
			return
		}
		s.mask = make([]bool, s.cache.Len, s.cache.Len+n)
		for i := range s.mask {
			s.mask[i] = true
		}
	}
	if mask != nil {
		s.mask = append(s.mask, mask...)
		return
	}
	for range n {
		s.mask = append(s.mask, true)
	}
}

// forward runs tokens (with their key mask, nil: all real) as the next
// positions of the sequence.
func (s *Session) forward(tokens []int, mask []bool, tr *Trace, lastOnly bool) (*Output, error) {
	cfg := &s.m.cfg
	if err := s.m.checkTokens(tokens, "input"); err != nil {
		return nil, err
	}
	if cfg.EncoderDecoder && !s.encoded {
		return nil, errNoEncoder
	}
	if cfg.EncoderOnly && s.cache.Len > 0 {
		return nil, fmt.Errorf("model: %s is encoder-only: run the whole sequence at once", cfg.Arch)
	}
	if cfg.MaxPositions > 0 && s.cache.Len+len(tokens) > cfg.MaxPositions {
		return nil, fmt.Errorf("model: %d positions exceed the model's %d", s.cache.Len+len(tokens), cfg.MaxPositions)
	}
	if tr != nil {
		tr.Layers = nil
		tr.Kinds = nil
		tr.Attention = nil
	}
	s.extendMask(len(tokens), mask)
	for s.groups != nil && len(s.groups) < s.cache.Len+len(tokens) {
		s.groups = append(s.groups, -1) // later steps attend causally
	}
	if s.embeds != nil || s.positions != nil || s.deepstack != nil {
		if _, ok := s.m.impl.(*decoder); !ok {
			return nil, fmt.Errorf("model: %s: input embeddings are not supported by this architecture", cfg.Arch)
		}
	}
	hidden, logits, err := s.m.impl.step(s, tokens, tr, lastOnly)
	s.types, s.embeds, s.positions, s.deepstack = nil, nil, nil, nil
	if err != nil {
		if s.mask != nil {
			s.mask = s.mask[:s.cache.Len]
		}
		return nil, err
	}
	s.cache.Len += len(tokens)
	out := &Output{Hidden: rows(hidden, cfg.DModel)}
	if !cfg.EncoderOnly {
		out.Logits = rows(logits, cfg.Vocab)
	}
	if b, ok := s.m.impl.(*bert); ok {
		out.Pooled = b.pooled(hidden)
	}
	return out, nil
}
