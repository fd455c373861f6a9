package arch

import (
	"github.com/tfconv/tfconv/tensor"
)

// Jamba is AI21's hybrid (JambaForCausalLM): attention layers without
// positional encoding every attn_layer_period layers from
// attn_layer_offset, Mamba-1 mixers (with RMSNorms of Δ, B and C) in the
// others, and a mixture of experts in place of the MLP every
// expert_layer_period layers from expert_layer_offset. The GGUF states the
// attention layers by a per-layer head_count_kv (0: a Mamba layer), the
// mixture layers by their routers; keys and tensors follow the newer
// converter's JambaModel (conversion/jamba.py).
var Jamba = register(&Family{
	Name:       "jamba",
	HFClasses:  []string{"JambaForCausalLM"},
	ModelTypes: []string{"jamba"},
	HFClass:    "JambaForCausalLM", ModelType: "jamba",
	Params: []Param{
		{Key: "block_count", HF: []string{"n_layers", "num_hidden_layers", "n_layer", "num_layers"}, Out: "num_hidden_layers",
			Kind: tensor.KindUint32, Need: Required},
		u32("context_length", Required, "max_position_embeddings", "n_ctx"),
		u32("embedding_length", Required, "hidden_size", "mamba_d_model"),
		u32("feed_forward_length", Required, "intermediate_size"),
		u32("attention.head_count", Required, "num_attention_heads"),
		jambaKVHeads(),
		{Key: "ssm.conv_kernel", HF: []string{"mamba_d_conv"}, Kind: tensor.KindUint32, Need: Default, Default: 4},
		{Key: "ssm.inner_size", Kind: tensor.KindUint32,
			Derive: func(c Config) (tensor.Value, bool, error) {
				e, ok := c.Int("mamba_expand")
				if !ok {
					return tensor.Value{}, false, errUnsupported("config.json: no mamba_expand")
				}
				d, _ := c.Int("hidden_size", "mamba_d_model")
				return tensor.Uint32(uint32(e * d)), true, nil
			},
			Inverse: func(c Config, v tensor.Value, m Meta) {
				n, _ := v.Int()
				if d, _ := m.Int("embedding_length"); d > 0 {
					c["mamba_expand"] = n / d
				}
			}},
		{Key: "ssm.state_size", HF: []string{"mamba_d_state"}, Kind: tensor.KindUint32, Need: Default, Default: 16},
		{Key: "ssm.time_step_rank", HF: []string{"mamba_dt_rank"}, Kind: tensor.KindUint32, Need: Required,
			Derive: func(c Config) (tensor.Value, bool, error) {
				if r, ok := c.Int("mamba_dt_rank"); ok && r > 0 {
					return tensor.Uint32(uint32(r)), true, nil
				}
				d, _ := c.Int("hidden_size", "mamba_d_model")
				return tensor.Uint32(uint32((d + 15) / 16)), true, nil
			}},
		{Key: "attention.layer_norm_rms_epsilon", HF: []string{"layer_norm_epsilon", "rms_norm_eps"}, Out: "rms_norm_eps",
			Kind: tensor.KindFloat32, Need: Default, Default: 1e-6},
		u32("expert_count", Required, "num_local_experts", "num_experts"),
		u32("expert_used_count", Required, "num_experts_per_tok", "num_experts_per_token"),
		{Key: FileType},
	},
	Tensors: moeTensors(append(optional(renameHF(decoderTensors(false, LayoutSame), map[string]string{
		"model.norm": "model.final_layernorm", hfLayer + "post_attention_layernorm": hfLayer + "pre_ff_layernorm",
		hfLayer + "mlp.gate_proj": hfLayer + "feed_forward.gate_proj", hfLayer + "mlp.up_proj": hfLayer + "feed_forward.up_proj",
		hfLayer + "mlp.down_proj": hfLayer + "feed_forward.down_proj"}),
		"blk.{bid}.attn_q", "blk.{bid}.attn_k", "blk.{bid}.attn_v", "blk.{bid}.attn_output"),
		Tensor{GGUF: "blk.{bid}.ssm_in", HF: []string{hfLayer + "mamba.in_proj"}, Shape: []Dim{DimInner2, DimHidden}, Optional: true},
		Tensor{GGUF: "blk.{bid}.ssm_conv1d", HF: []string{hfLayer + "mamba.conv1d"}, Shape: []Dim{DimInner, DimOne, DimConvKernel}, Layout: LayoutSqueeze, Optional: true},
		Tensor{GGUF: "blk.{bid}.ssm_x", HF: []string{hfLayer + "mamba.x_proj"}, Shape: []Dim{DimXProj, DimInner}, Optional: true},
		Tensor{GGUF: "blk.{bid}.ssm_dt", HF: []string{hfLayer + "mamba.dt_proj"}, Shape: []Dim{DimInner, DimDTRank}, Optional: true},
		Tensor{GGUF: "blk.{bid}.ssm_a", HF: []string{hfLayer + "mamba.A_log"}, Shape: []Dim{DimInner, DimState}, Layout: LayoutNegExp, NoSuffix: true, Optional: true},
		Tensor{GGUF: "blk.{bid}.ssm_d", HF: []string{hfLayer + "mamba.D"}, Shape: []Dim{DimInner}, NoSuffix: true, Optional: true},
		Tensor{GGUF: "blk.{bid}.ssm_out", HF: []string{hfLayer + "mamba.out_proj"}, Shape: []Dim{DimHidden, DimInner}, Optional: true},
		Tensor{GGUF: "blk.{bid}.ssm_dt_norm", HF: []string{hfLayer + "mamba.dt_layernorm"}, Shape: []Dim{DimDTRank}, Optional: true},
		Tensor{GGUF: "blk.{bid}.ssm_b_norm", HF: []string{hfLayer + "mamba.b_layernorm"}, Shape: []Dim{DimState}, Optional: true},
		Tensor{GGUF: "blk.{bid}.ssm_c_norm", HF: []string{hfLayer + "mamba.c_layernorm"}, Shape: []Dim{DimState}, Optional: true},
	), moeLayout{router: "feed_forward.router", experts: "feed_forward.experts.{xid}.", gate: "gate_proj", down: "down_proj",
		up: "up_proj", ffn: DimFFN}),
	HFConst: map[string]any{"hidden_act": "silu", "use_mamba_kernels": false, "mamba_conv_bias": true, "mamba_proj_bias": false},
	Vocab:   VocabRules{NoAddSpacePrefix: true},
	// The mixture layers, on GGUF → HF, from the routers present.
	HFRename: func(c Config, has func(string) bool) map[string]string {
		if c == nil {
			return nil
		}
		n, _ := c.Int("num_hidden_layers")
		var at []int64
		for i := int64(0); i < n; i++ {
			if has(expand("blk.{bid}.ffn_gate_inp", int(i)) + ".weight") {
				at = append(at, i)
			}
		}
		if len(at) > 0 {
			c["expert_layer_offset"], c["expert_layer_period"] = at[0], n
			if len(at) > 1 {
				c["expert_layer_period"] = at[1] - at[0]
			}
		}
		return nil
	},
	SSM: jambaSizes,
	Pattern: func(c Config, n int) ([]Layer, error) {
		get := func(k string) (int64, error) {
			v, ok := c.Int(k)
			if !ok || v < 0 || v > 1<<16 {
				return 0, errUnsupported("config.json: %s missing or out of range", k)
			}
			return v, nil
		}
		var p [4]int64
		for i, k := range []string{"attn_layer_offset", "attn_layer_period", "expert_layer_offset", "expert_layer_period"} {
			v, err := get(k)
			if err != nil {
				return nil, err
			}
			p[i] = v
		}
		if p[1] == 0 || p[3] == 0 {
			return nil, errUnsupported("config.json: attn_layer_period and expert_layer_period must be positive")
		}
		out := make([]Layer, n)
		for i := range out {
			j := int64(i)
			out[i].Mixer = Mamba
			if j >= p[0] && (j-p[0])%p[1] == 0 {
				out[i].Mixer = FullAttention // no positional encoding: Rope false
			}
			out[i].MoE = j >= p[2] && (j-p[2])%p[3] == 0
		}
		return out, nil
	},
	Graph: Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu"},
})

// jambaKVHeads is attention.head_count_kv, one entry per layer:
// num_key_value_heads in the attention layers (attn_layer_period from
// attn_layer_offset), 0 in the Mamba ones; GGUF → HF reads the period and
// offset back from where the entries are not 0.
func jambaKVHeads() Param {
	return Param{Key: "attention.head_count_kv", HF: []string{"num_key_value_heads"}, Kind: tensor.KindArray,
		Derive: func(c Config) (tensor.Value, bool, error) {
			n, _ := c.Int("num_hidden_layers")
			kv, ok := c.Int("num_key_value_heads")
			off, ok2 := c.Int("attn_layer_offset")
			per, ok3 := c.Int("attn_layer_period")
			if !ok || !ok2 || !ok3 || per <= 0 || n < 0 || n > 1<<16 {
				return tensor.Value{}, false, errUnsupported("config.json: num_key_value_heads, attn_layer_offset and attn_layer_period are required")
			}
			out := make([]int32, n)
			for i := int64(0); i < n; i++ {
				if i >= off && (i-off)%per == 0 {
					out[i] = int32(kv)
				}
			}
			return tensor.ArrayOf(out), true, nil
		},
		Inverse: func(c Config, v tensor.Value, _ Meta) {
			a, ok := v.Array()
			if !ok {
				return
			}
			var at []int
			for i := 0; i < a.Len(); i++ {
				if n, _ := a.Index(i).Int(); n > 0 {
					at = append(at, i)
					c["num_key_value_heads"] = n
				}
			}
			if len(at) > 0 {
				c["attn_layer_offset"] = at[0]
				c["attn_layer_period"] = a.Len()
				if len(at) > 1 {
					c["attn_layer_period"] = at[1] - at[0]
				}
			}
		}}
}

// optional returns ts with the roles of roles optional (a hybrid's
// attention projections, absent from its recurrent layers).
func optional(ts []Tensor, roles ...Role) []Tensor {
	for i := range ts {
		for _, r := range roles {
			if ts[i].GGUF == r {
				ts[i].Optional = true
			}
		}
	}
	return ts
}

// renameHF returns ts with the Hugging Face patterns in names replaced.
func renameHF(ts []Tensor, names map[string]string) []Tensor {
	for i := range ts {
		hf := append([]string(nil), ts[i].HF...)
		for j, p := range hf {
			if n, ok := names[p]; ok {
				hf[j] = n
			}
		}
		ts[i].HF = hf
	}
	return ts
}

// jambaSizes are Jamba's Mamba sizes: d_inner = mamba_expand·hidden_size,
// mamba_d_state (16), mamba_dt_rank (⌈hidden/16⌉), mamba_d_conv (4).
func jambaSizes(c Config) (inner, state, dtRank, conv int64) {
	d, _ := c.Int("hidden_size", "mamba_d_model")
	e, _ := c.Int("mamba_expand")
	inner = e * d
	var ok bool
	if state, ok = c.Int("mamba_d_state"); !ok || state == 0 {
		state = 16
	}
	if dtRank, ok = c.Int("mamba_dt_rank"); !ok || dtRank == 0 {
		dtRank = (d + 15) / 16
	}
	if conv, ok = c.Int("mamba_d_conv"); !ok || conv == 0 {
		conv = 4
	}
	return inner, state, dtRank, conv
}
