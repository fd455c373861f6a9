package checkpoint

import (
	"fmt"
	"strings"

	"github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/tensor"
)

// Memory is what llama.cpp allocates to run a model at a context length on
// the CPU: the weights, the KV cache, the output buffer and the compute
// buffer. Weights and KV cache are sized exactly as llama.cpp sizes them;
// the compute buffer is an estimate (see EstimateMemory).
type Memory struct {
	Context     int64  `json:"ctx"`          // positions asked for
	KVSize      int64  `json:"kv_size"`      // positions the cache holds: Context padded as llama.cpp pads it
	KVType      string `json:"kv_type"`      // f32, f16, q8_0, q4_0
	KBytes      int64  `json:"k_bytes"`      // every layer's K cache
	VBytes      int64  `json:"v_bytes"`      // every layer's V cache
	KVBytes     int64  `json:"kv_bytes"`     // KBytes + VBytes
	RSBytes     int64  `json:"rs_bytes"`     // the recurrent layers' state (llama.cpp's RS buffer), every sequence's
	WeightBytes int64  `json:"weight_bytes"` // the tensors' bytes
	TotalBytes  int64  `json:"total_bytes"`  // WeightBytes + KVBytes + RSBytes

	Batch          int64 `json:"batch"`           // logical batch (llama.cpp -b), after llama.cpp's limits
	UBatch         int64 `json:"ubatch"`          // physical batch (-ub): the tokens the compute graph is reserved for
	Parallel       int64 `json:"parallel"`        // sequences (-np) the output buffer is reserved for
	FlashAttention bool  `json:"flash_attention"` // implied by a quantized cache (llama.cpp needs it for a quantized V)
	OutputBytes    int64 `json:"output_bytes"`    // logits of one position per sequence
	ComputeBytes   int64 `json:"compute_bytes"`   // estimated compute buffer
	RunBytes       int64 `json:"run_total_bytes"` // TotalBytes + OutputBytes + ComputeBytes
}

// MemoryOptions are llama.cpp's context parameters that decide its
// allocations; zero values take llama.cpp's defaults.
type MemoryOptions struct {
	Context  int64        // positions (-c); required
	KVType   tensor.DType // cache type (-ctk/-ctv); F16 by default
	Batch    int64        // logical batch (-b); 2048 by default
	UBatch   int64        // physical batch (-ub); 512 by default
	Parallel int64        // sequences (-np); 1 by default
}

// llama.cpp's (c392e509) constants that size a context.
const (
	kvPad      = 32  // llama_kv_cache_get_padding: the cache is a multiple of 32 positions,
	kvPadFlash = 256 // or of 256 with flash attention, which a quantized V cache requires
	kqMaskPad  = 64  // GGML_KQ_MASK_PAD: the mask's rows, and the least logical batch

	defaultBatch  = 2048
	defaultUBatch = 512
)

// EstimateMemory sizes what llama.cpp allocates for s with the context
// parameters o.
//
// The KV cache: every layer keeps K and V rows of kv_heads × key_length
// (value_length) elements for each position of the padded context, in the
// cache type's row size (blocks for q8_0 and q4_0), as llama_kv_cache_init
// allocates them (llama.cpp c392e509: sliding-window layers get the full
// context too; DeepSeek-2's latent attention caches the keys and values
// expanded per head, (qk_nope + qk_rope) and v_head_dim elements a head, not
// the latent that tfconv run keeps). Sequences share the one cache, so
// Parallel does not change it. A model with recurrent layers (hybrid
// memory) keeps the cache for its decoder's attention layers only, and
// each recurrent layer a state of LayerKind.StateFloats f32 per sequence
// instead, whatever the context (llama.cpp d32676d7's
// llama_memory_recurrent, its "RS buffer": RSBytes).
//
// The output buffer holds one position's logits (vocabulary floats) for
// each sequence, as llama.cpp reserves it when the context is made.
//
// The compute buffer is what ggml's graph allocator needs for the
// worst-case graph llama.cpp reserves: a physical batch of T = min(context,
// ubatch) tokens attending to the whole cache. Its exact size depends on
// how the allocator packs each architecture's graph; the estimate is the
// largest of three moments of a layer's pass, each counting what is alive
// then (E = one hidden-state row of the batch, n_embd × T floats; the
// family's graph facts come from package arch):
//
//   - attention: the mask (cache × T rounded up to 64, f32, and its f16 copy
//     under flash attention; a second one for the sliding-window layers of
//     families that alternate them), the scores (cache × T × heads floats,
//     not materialised with flash attention) and four hidden-state rows;
//   - the output head: logits (vocabulary × T floats) and two rows;
//   - the feed-forward: its intermediate rows (F = feed_forward_length × T,
//     or the used experts' widths together): F for a plain one, 2F for a
//     gated one, 4F and three rows for Phi-3's fused gate and up, else two
//     rows.
//
// Against llama.cpp c392e509's own report on the CPU it is within 8 % for
// the real-width shapes measured (TinyLlama, Qwen2.5-0.5B, Gemma-2B, GPT-2,
// Phi-3-mini at 512 and 4096 positions, physical batches 128 and 512, f16
// and q8_0 caches) and within 1.1 MiB for the tiny fixtures, where the small
// terms it leaves out weigh more (testdata/arch/memory.json,
// TestComputeBufferAgainstLlamaCpp).
func (s *Summary) EstimateMemory(o MemoryOptions) (*Memory, error) {
	kv := o.KVType
	if kv == 0 {
		kv = tensor.F16
	}
	switch kv {
	case tensor.F32, tensor.F16, tensor.Q8_0, tensor.Q4_0:
	default:
		return nil, tensor.Unsupported("checkpoint: KV cache type %v: want f32, f16, q8_0 or q4_0", kv)
	}
	const maxCtx = 1 << 24
	ctx := o.Context
	if ctx <= 0 || ctx > maxCtx {
		return nil, fmt.Errorf("checkpoint: context %d out of range (1 to %d)", ctx, maxCtx)
	}
	batch, ubatch, par := o.Batch, o.UBatch, o.Parallel
	if batch == 0 {
		batch = defaultBatch
	}
	if ubatch == 0 {
		ubatch = defaultUBatch
	}
	if par == 0 {
		par = 1
	}
	for _, x := range []struct {
		name string
		v    int64
	}{{"batch", batch}, {"ubatch", ubatch}, {"parallel", par}} {
		if x.v <= 0 || x.v > maxCtx {
			return nil, fmt.Errorf("checkpoint: %s %d out of range (1 to %d)", x.name, x.v, maxCtx)
		}
	}
	layers := int64(s.Layers)
	if s.DecoderLayers > 0 {
		layers = int64(s.DecoderLayers) // the encoder keeps no cache
	}
	// A model with recurrent layers (llama.cpp's hybrid memory) keeps a KV
	// cache for its decoder's attention layers only (not the recurrent
	// ones, unless an attention runs beside the recurrent mixer, as in
	// Falcon-H1; nor feed-forward-only layers, nor the MTP layers past the
	// decoder's, which its main context never runs), and the RS buffer:
	// max(1, n_seq_max) cells of n_embd_r + n_embd_s floats a recurrent
	// layer (LayerKind.StateFloats).
	var rs, attn int64
	recurrent := false
	for _, l := range s.LayerPattern {
		if l.Recurrent {
			recurrent = true
			rs += l.StateFloats * 4
		}
		switch {
		case l.KVFrom != nil:
			layers-- // it reads another layer's cache
		case attends(l) && l.Layer < int(layers):
			attn++
		}
	}
	rs *= max(par, 1)
	if recurrent {
		layers = attn
		if layers == 0 && s.Hidden > 0 {
			// Nothing attends: no KV cache at all.
			m := &Memory{Context: ctx, KVType: strings.ToLower(kv.String()), WeightBytes: s.TensorBytes, RSBytes: rs}
			m.TotalBytes = m.WeightBytes + m.RSBytes
			m.Batch, m.Parallel = max(min(batch, ctx), kqMaskPad), par
			m.UBatch = min(ubatch, m.Batch)
			m.OutputBytes = s.Vocab * par * 4
			m.ComputeBytes = s.computeEstimate(0, m.UBatch, false, false)
			m.RunBytes = m.TotalBytes + m.OutputBytes + m.ComputeBytes
			return m, nil
		}
	}
	if layers < 0 || layers == 0 && rs == 0 || layers > 0 && s.Heads <= 0 || s.Hidden <= 0 {
		return nil, fmt.Errorf("checkpoint: %s: the layer count, head count and width are not all stated", s.Architecture)
	}
	kvHeads := s.KVHeads
	if kvHeads <= 0 {
		kvHeads = s.Heads
	}
	kLen, vLen := s.KeyLength, s.ValueLength
	if kLen <= 0 && s.Heads > 0 {
		kLen = s.Hidden / s.Heads
	}
	if vLen <= 0 {
		vLen = kLen
	}
	flash := kv.Quantized()
	pad := int64(kvPad)
	if flash {
		pad = kvPadFlash
	}
	size := roundUp(ctx, pad)
	kb, err := kv.ByteSize(kvHeads * kLen * size)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: K cache: %w", err)
	}
	vb, err := kv.ByteSize(kvHeads * vLen * size)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: V cache: %w", err)
	}
	m := &Memory{Context: ctx, KVSize: size, KVType: strings.ToLower(kv.String()), KBytes: layers * kb, VBytes: layers * vb, WeightBytes: s.TensorBytes}
	m.KVBytes = m.KBytes + m.VBytes
	m.RSBytes = rs
	m.TotalBytes = m.WeightBytes + m.KVBytes + m.RSBytes

	// llama_init_from_model's batch limits: a causal model's logical batch
	// is at most the (padded) context and at least the mask padding; the
	// physical batch at most the logical one.
	batch = max(min(batch, size), kqMaskPad)
	ubatch = min(ubatch, batch)
	m.Batch, m.UBatch, m.Parallel, m.FlashAttention = batch, ubatch, par, flash
	m.OutputBytes = s.Vocab * par * 4
	m.ComputeBytes = s.computeEstimate(size, min(size, ubatch), flash, layers > 0)
	m.RunBytes = m.TotalBytes + m.OutputBytes + m.ComputeBytes
	return m, nil
}

// computeEstimate is the compute-buffer estimate described at
// EstimateMemory for a cache of nKV positions and a batch of t tokens.
func (s *Summary) computeEstimate(nKV, t int64, flash, attends bool) int64 {
	const f32, f16 = 4, 2
	var g arch.Graph
	if f, ok := arch.ByName(s.Architecture); ok {
		g = f.Graph
	}
	row := s.Hidden * t * f32
	mask := nKV * roundUp(t, kqMaskPad) * f32
	scores := nKV * t * s.Heads * f32
	if flash {
		mask += nKV * roundUp(t, kqMaskPad) * f16
		scores = 0
	}
	if g.Sliding != arch.NoSliding {
		mask *= 2
	}
	attention := mask + scores + 4*row
	if !attends {
		attention = 0 // no layer attends (Mamba)
	}
	head := s.Vocab*t*f32 + 2*row
	ffn := max(s.FFNLength, s.ExpertsUsed*s.ExpertFFNLength) * t * f32
	feedForward := 2*ffn + 2*row
	switch {
	case g.FusedGateUp:
		feedForward = 4*ffn + 3*row
	case g.FFN == arch.Plain:
		feedForward = ffn + 2*row
	}
	return max(attention, head, feedForward)
}

func roundUp(n, to int64) int64 { return (n + to - 1) / to * to }

// attends reports whether the layer's mixers include an attention (its
// Mixer name, the first of "full_attention+mamba2").
func attends(l LayerKind) bool {
	first, _, _ := strings.Cut(l.Mixer, "+")
	m, ok := arch.ParseMixer(first)
	return ok && m.Attention()
}
