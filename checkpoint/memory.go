package checkpoint

import (
	"fmt"
	"strings"

	"github.com/tfconv/tfconv/tensor"
)

// Memory is what llama.cpp allocates to run a model at a context length:
// the weights and the KV cache (its compute buffers, which depend on the
// batch and the backend, are not estimated).
type Memory struct {
	Context     int64  `json:"ctx"`          // positions asked for
	KVSize      int64  `json:"kv_size"`      // positions the cache holds: Context padded as llama.cpp pads it
	KVType      string `json:"kv_type"`      // f32, f16, q8_0, q4_0
	KBytes      int64  `json:"k_bytes"`      // every layer's K cache
	VBytes      int64  `json:"v_bytes"`      // every layer's V cache
	KVBytes     int64  `json:"kv_bytes"`     // KBytes + VBytes
	WeightBytes int64  `json:"weight_bytes"` // the tensors' bytes
	TotalBytes  int64  `json:"total_bytes"`  // WeightBytes + KVBytes
}

// KV cache padding of llama.cpp (c392e509, llama_kv_cache_get_padding): the
// context is rounded up to 32 positions, or to 256 with flash attention,
// which a quantized V cache requires.
const (
	kvPad      = 32
	kvPadFlash = 256
)

// EstimateMemory sizes what llama.cpp allocates for s at ctx positions with
// a KV cache of type kv: every layer keeps K and V rows of kv_heads ×
// key_length (value_length) elements for each position of the padded
// context, in kv's row size (blocks for q8_0 and q4_0), as
// llama_kv_cache_init allocates them (llama.cpp c392e509: sliding-window
// layers get the full context too; DeepSeek-2's latent attention caches the
// keys and values expanded per head, (qk_nope + qk_rope) and v_head_dim
// elements a head, not the latent that tfconv run keeps).
func (s *Summary) EstimateMemory(ctx int64, kv tensor.DType) (*Memory, error) {
	switch kv {
	case tensor.F32, tensor.F16, tensor.Q8_0, tensor.Q4_0:
	default:
		return nil, tensor.Unsupported("checkpoint: KV cache type %v: want f32, f16, q8_0 or q4_0", kv)
	}
	if ctx <= 0 || ctx > 1<<24 {
		return nil, fmt.Errorf("checkpoint: context %d out of range (1 to %d)", ctx, 1<<24)
	}
	layers := int64(s.Layers)
	if s.DecoderLayers > 0 {
		layers = int64(s.DecoderLayers) // the encoder keeps no cache
	}
	if layers <= 0 || s.Heads <= 0 || s.Hidden <= 0 {
		return nil, fmt.Errorf("checkpoint: %s: the layer count, head count and width are not all stated", s.Architecture)
	}
	kvHeads := s.KVHeads
	if kvHeads <= 0 {
		kvHeads = s.Heads
	}
	kLen, vLen := s.KeyLength, s.ValueLength
	if kLen <= 0 {
		kLen = s.Hidden / s.Heads
	}
	if vLen <= 0 {
		vLen = kLen
	}
	pad := int64(kvPad)
	if kv.Quantized() {
		pad = kvPadFlash
	}
	size := (ctx + pad - 1) / pad * pad
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
	m.TotalBytes = m.WeightBytes + m.KVBytes
	return m, nil
}
