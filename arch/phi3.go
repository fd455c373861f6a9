package arch

import "github.com/tfconv/tfconv/tensor"

// Phi3 is Phi-3 (mini, medium): the llama shape with Q, K and V fused in
// one projection (attn_qkv: rows Q, then K, then V) and the gate and up
// projections fused (ffn_up: rows gate, then up), a sliding-window size
// stated (0 when none), and no Q/K permutation; Phi-4-mini rotates part
// of each head (partial_rotary_factor). LongRoPE (the 128k and
// 3.5 models) becomes the rope_factors_long/short tensors and an
// attention factor.
var Phi3 = register(&Family{
	Name:       "phi3",
	HFClasses:  []string{"Phi3ForCausalLM"},
	ModelTypes: []string{"phi3"},
	HFClass:    "Phi3ForCausalLM", ModelType: "phi3",
	Params: []Param{
		{Key: "context_length", HF: []string{"n_positions", "max_position_embeddings"}, Out: "max_position_embeddings",
			Kind: tensor.KindUint32, Need: Required},
		{Key: "rope.scaling.original_context_length", HF: []string{"original_max_position_embeddings"}, Kind: tensor.KindUint32, Need: Required},
		u32("embedding_length", Required, "hidden_size", "n_embd"),
		u32("feed_forward_length", Required, "intermediate_size"),
		{Key: "block_count", HF: []string{"num_hidden_layers", "n_layer"}, Kind: tensor.KindUint32, Need: Required},
		u32("attention.head_count", Required, "num_attention_heads", "n_head"),
		u32("attention.head_count_kv", Required, "num_key_value_heads", "n_head_kv"),
		f32p("attention.layer_norm_rms_epsilon", Required, "rms_norm_eps"),
		// Phi-4-mini turns 3/4 of each head (partial_rotary_factor 0.75).
		partialRotary(Optional, "partial_rotary_factor"),
		f32p("rope.freq_base", Required, "rope_theta"),
		{Key: FileType},
		{Key: "attention.sliding_window", HF: []string{"sliding_window"}, Kind: tensor.KindUint32,
			Derive: func(c Config) (tensor.Value, bool, error) {
				w, _ := c.Int("sliding_window")
				return tensor.Uint32(uint32(w)), true, nil
			},
			// The converter writes 0 for null (no window); transformers
			// 4.57 reads a sliding_window of 0 as a window of nothing.
			Inverse: func(c Config, v tensor.Value, _ Meta) {
				if w, _ := v.Int(); w > 0 {
					c["sliding_window"] = w
				} else {
					c["sliding_window"] = nil
				}
			}},
		{Key: "rope.scaling.attn_factor", Kind: tensor.KindFloat32, Early: true,
			Derive: func(c Config) (tensor.Value, bool, error) {
				d, err := rotaryDims(c)
				if err != nil {
					return tensor.Value{}, false, err
				}
				r, ok, err := LongRopeOf(c, d)
				if err != nil || !ok {
					return tensor.Value{}, false, err
				}
				return tensor.Float32(float32(r.AttnFactor)), true, nil
			}, Inverse: func(Config, tensor.Value, Meta) {}},
	},
	// convert_hf_to_gguf.py writes long, then short.
	Generated: []Generated{
		longRopeTensor("rope_factors_long", "long_factor", func(r LongRope) []float32 { return r.Long }),
		longRopeTensor("rope_factors_short", "short_factor", func(r LongRope) []float32 { return r.Short }),
	},
	Tensors: phi3Tensors(),
	Vocab:   VocabRules{NoAddSpacePrefix: true},
	Drops:   []Drop{rotaryBuffer},
	HFConst: map[string]any{"hidden_act": "silu"},
	Graph:   Graph{Norm: RMSNorm, FFN: Gated, FusedGateUp: true, Activation: "silu", NeoxRopeGGUF: true},
})

func phi3Tensors() []Tensor {
	var out []Tensor
	for _, t := range decoderTensors(false, LayoutSame) {
		switch t.GGUF {
		case "blk.{bid}.attn_q":
			out = append(out, Tensor{GGUF: "blk.{bid}.attn_qkv", HF: []string{hfLayer + "self_attn.qkv_proj"}, Shape: []Dim{DimQKV, DimHidden}})
			continue
		case "blk.{bid}.attn_k", "blk.{bid}.attn_v", "blk.{bid}.ffn_gate":
			continue
		case "blk.{bid}.ffn_up":
			t.HF = []string{hfLayer + "mlp.gate_up_proj"}
			t.Shape = []Dim{DimFFN2, DimHidden}
		}
		out = append(out, t)
	}
	return out
}
