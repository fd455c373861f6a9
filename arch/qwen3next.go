package arch

import (
	"strconv"
	"strings"

	"github.com/tfconv/tfconv/tensor"
)

// Qwen3Next is Qwen3-Next (Qwen3NextForCausalLM; llama.cpp's "qwen3next"),
// a hybrid of two token mixers, both with a mixture of experts behind them
// in every layer (num_experts of width moe_intermediate_size,
// num_experts_per_tok used and renormalised, beside a shared expert of
// width shared_expert_intermediate_size scaled by a sigmoid gate), except
// the layers of mlp_only_layers or off decoder_sparse_step, which are dense:
//
//   - linear_attention layers run the gated DeltaNet (GatedDeltaNet):
//     in_proj_qkvz gives q, k (linear_num_key_heads heads of
//     linear_key_head_dim), v and the output gate z
//     (linear_num_value_heads heads of linear_value_head_dim), interleaved
//     per key head, which the converter regroups into attn_qkv and
//     attn_gate; in_proj_ba gives β and the decay's input a per value head
//     (interleaved per key head as well, kept so in GGUF ssm_ba); q, k, v
//     pass a causal depthwise convolution (kernel linear_conv_kernel_dim)
//     and SiLU, q and k are L2-normalised, the decay is g = A·softplus(a +
//     dt_bias) with A = −exp(A_log) (GGUF ssm_a, ssm_dt.bias), and the
//     gated delta rule's output passes an RMSNorm gated by SiLU(z)
//     (linear_attn.norm, GGUF ssm_norm) and out_proj (ssm_out);
//   - full_attention layers (every full_attention_interval-th, or as
//     layer_types says) run gated attention (Graph.QueryGate): q_proj gives
//     each head its query and an output gate, per-head Q/K RMSNorms, RoPE
//     on partial_rotary_factor of each head (0.25 when unstated).
//
// Its RMSNorms multiply by 1 + w (the converter stores w + 1), except the
// gated norm of the linear attention. The published checkpoints end with
// multi-token-prediction layers under mtp.*, which transformers does not
// build: the converter renames them to layers num_hidden_layers… (mtp.fc
// → eh_proj, pre_fc_norm_embedding → enorm, pre_fc_norm_hidden → hnorm,
// mtp.norm → shared_head.norm), counts them in block_count and writes
// nextn_predict_layers; llama.cpp loads them without running them, as
// tfconv does.
var Qwen3Next = register(&Family{
	Name:       "qwen3next",
	HFClasses:  []string{"Qwen3NextForCausalLM"},
	ModelTypes: []string{"qwen3_next"},
	HFClass:    "Qwen3NextForCausalLM", ModelType: "qwen3_next",
	Params: withParams(
		withAfter(append([]Param{mtpBlockCount(qwen3NextMTPKey)}, without(without(baseParams(), "expert_count"), "block_count")...),
			"attention.layer_norm_epsilon", u32("expert_count", Optional, "num_experts")),
		u32("expert_feed_forward_length", Optional, "moe_intermediate_size"),
		u32("expert_shared_feed_forward_length", Optional, "shared_expert_intermediate_size"),
		u32("nextn_predict_layers", Optional, qwen3NextMTPKey),
		u32("ssm.conv_kernel", Required, "linear_conv_kernel_dim"),
		u32("ssm.state_size", Required, "linear_key_head_dim"),
		u32("ssm.group_count", Required, "linear_num_key_heads"),
		u32("ssm.time_step_rank", Required, "linear_num_value_heads"),
		qwen3NextInnerSize(),
		qwen3NextInterval(),
		qwen3NextAllMoE(),
		qwen3NextNormTopK(),
		headRotary(qwen3NextPartialRotary),
		noRopeScaling()),
	Tensors: qwen3NextTensors(),
	Splits: []RowSplit{{HF: hfLayer + "linear_attn.in_proj_qkvz", GGUF: []Role{"blk.{bid}.attn_qkv", "blk.{bid}.attn_gate"},
		Rows: qwen3NextQKVZ}},
	F32:               []Role{"blk.{bid}.ffn_gate_inp_shexp"},
	MTPNames:          qwen3NextMTPNames,
	ConfigFromTensors: qwen3NextMTPCount,
	SuffixAliases:     map[string]string{"dt_bias": "dt.bias"},
	Drops:             []Drop{rotaryBuffer},
	HFConst:           map[string]any{"hidden_act": "silu", "norm_topk_prob": true},
	BiasFlag:          "attention_bias",
	Graph: Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu", QKNormPerHead: true, NeoxRopeGGUF: true,
		MoENormTopK: true, QueryGate: true, PreFFNNormPostAttention: true},
	Pattern: qwen3NextPattern,
})

// qwen3NextMTPKey counts the MTP layers in config.json (Qwen3.5's;
// Qwen3-Next's config.json has none, and the converter counts the mtp.layers
// present).
const qwen3NextMTPKey = "mtp_num_hidden_layers"

// qwen3NextPartialRotary is the rotated share of a head when config.json
// states none (transformers' and the converter's default).
const qwen3NextPartialRotary = 0.25

// qwen3NextInterval is full_attention_interval, 4 when unstated: every
// interval-th layer attends, the others run the gated DeltaNet (llama.cpp
// reads the layers' kinds from it alone, so a layer_types that says
// otherwise is refused).
func qwen3NextInterval() Param {
	return Param{Key: "full_attention_interval", Kind: tensor.KindUint32, Need: Required,
		Derive: func(c Config) (tensor.Value, bool, error) {
			n, err := qwen3NextIntervalOf(c)
			if err != nil {
				return tensor.Value{}, false, err
			}
			ls, err := qwen3NextPattern(c, int(Qwen3NextLayers(c)))
			if err != nil {
				return tensor.Value{}, false, err
			}
			for i, l := range ls {
				if (l.Mixer == FullAttention) != ((i+1)%int(n) == 0) {
					return tensor.Value{}, false, errUnsupported("config.json: layer_types[%d] %s: GGUF keeps only full_attention_interval %d, which makes it another kind", i, l.Mixer, n)
				}
			}
			return tensor.Uint32(uint32(n)), true, nil
		},
		Inverse: func(c Config, v tensor.Value, _ Meta) {
			n, _ := v.Int()
			c["full_attention_interval"] = n
		}}
}

// qwen3NextAllMoE writes no key: it refuses a config.json whose layers are
// not all mixtures (mlp_only_layers, decoder_sparse_step, num_experts),
// which GGUF has no key for and llama.cpp's qwen3next does not run (it
// loads a router in every layer).
func qwen3NextAllMoE() Param {
	return Param{Key: "expert_count.all_layers", Kind: tensor.KindUint32,
		Derive: func(c Config) (tensor.Value, bool, error) {
			ls, err := qwen3NextPattern(c, int(Qwen3NextLayers(c)))
			if err != nil {
				return tensor.Value{}, false, err
			}
			for i, l := range ls {
				if !l.MoE {
					return tensor.Value{}, false, errUnsupported("config.json: layer %d is dense (mlp_only_layers, decoder_sparse_step, num_experts): GGUF cannot say so, and llama.cpp's qwen3next runs a mixture in every layer", i)
				}
			}
			return tensor.Value{}, false, nil
		},
		Inverse: func(Config, tensor.Value, Meta) {}}
}

// qwen3NextNormTopK writes no key: it refuses norm_topk_prob false, which
// GGUF has no key for in this family (llama.cpp's qwen3next always
// renormalises the chosen experts' weights).
func qwen3NextNormTopK() Param {
	return Param{Key: "expert_weights_norm.always", Kind: tensor.KindBool,
		Derive: func(c Config) (tensor.Value, bool, error) {
			if on, ok := c.Bool("norm_topk_prob"); ok && !on {
				return tensor.Value{}, false, errUnsupported("config.json: norm_topk_prob false: GGUF cannot say so, and llama.cpp's qwen3next renormalises the chosen experts' weights")
			}
			return tensor.Value{}, false, nil
		},
		Inverse: func(Config, tensor.Value, Meta) {}}
}

func qwen3NextIntervalOf(c Config) (int64, error) {
	n, ok := c.Int("full_attention_interval")
	if !ok {
		n = 4
	}
	if n <= 0 || n > 1<<16 {
		return 0, errUnsupported("config.json: full_attention_interval %d", n)
	}
	return n, nil
}

// Qwen3NextLayers is num_hidden_layers (the decoder's, without the MTP
// layers).
func Qwen3NextLayers(c Config) int64 {
	n, _ := c.Int("num_hidden_layers")
	return n
}

// qwen3NextInnerSize is ssm.inner_size: linear_value_head_dim ·
// linear_num_value_heads.
func qwen3NextInnerSize() Param {
	return Param{Key: "ssm.inner_size", Kind: tensor.KindUint32, Need: Required,
		Derive: func(c Config) (tensor.Value, bool, error) {
			d, ok1 := c.Int("linear_value_head_dim")
			n, ok2 := c.Int("linear_num_value_heads")
			if !ok1 || !ok2 || d <= 0 || n <= 0 || d*n >= 1<<32 {
				return tensor.Value{}, false, errUnsupported("config.json: linear_value_head_dim %d, linear_num_value_heads %d", d, n)
			}
			return tensor.Uint32(uint32(d * n)), true, nil
		},
		Inverse: func(c Config, v tensor.Value, m Meta) {
			d, _ := v.Int()
			if n, _ := m.Int("ssm.time_step_rank"); n > 0 {
				c["linear_value_head_dim"] = d / n
			}
		}}
}

// qwen3NextPattern: layer_types (linear_attention: the gated DeltaNet), or
// else every full_attention_interval-th layer attends; the attention layers
// rotate; a layer routes to experts when num_experts > 0, it is not in
// mlp_only_layers and its number + 1 is a multiple of decoder_sparse_step.
func qwen3NextPattern(c Config, n int) ([]Layer, error) {
	types, hasTypes, err := LayerTypes(c, n)
	if err != nil {
		return nil, err
	}
	interval, err := qwen3NextIntervalOf(c)
	if err != nil {
		return nil, err
	}
	dense, _, err := c.Ints("mlp_only_layers")
	if err != nil {
		return nil, err
	}
	step, ok := c.Int("decoder_sparse_step")
	if !ok {
		step = 1
	}
	experts, _ := c.Int("num_experts")
	state := qwen3NextState(c)
	out := make([]Layer, n)
	for i := range out {
		m := GatedDeltaNet
		if hasTypes {
			m = types[i]
		} else if (i+1)%int(interval) == 0 {
			m = FullAttention
		}
		if m != FullAttention && m != GatedDeltaNet {
			return nil, errUnsupported("config.json: layer_types[%d] %q: Qwen3-Next has full_attention and linear_attention layers", i, m)
		}
		moe := experts > 0 && step > 0 && (i+1)%int(step) == 0
		for _, x := range dense {
			if x == int64(i) {
				moe = false
			}
		}
		out[i] = Layer{Mixer: m, Rope: m == FullAttention, MoE: moe}
		if m == GatedDeltaNet {
			out[i].StateFloats = state
		}
	}
	return out, nil
}

// qwen3NextState is the floats of state one gated DeltaNet layer keeps per
// sequence: the convolution's last linear_conv_kernel_dim − 1 inputs of q,
// k and v, and the delta rule's linear_key_head_dim × linear_value_head_dim
// matrix per value head (0 when config.json does not say).
func qwen3NextState(c Config) int64 {
	var s [5]int64
	for i, k := range []string{"linear_num_key_heads", "linear_key_head_dim", "linear_num_value_heads", "linear_value_head_dim", "linear_conv_kernel_dim"} {
		v, ok := c.Int(k)
		if !ok || v <= 0 || v > 1<<16 {
			return 0
		}
		s[i] = v
	}
	nk, hk, nv, hv, k := s[0], s[1], s[2], s[3], s[4]
	return (k-1)*(2*nk*hk+nv*hv) + nv*hk*hv
}

// qwen3NextTensors: the decoder's roles with the query doubled by its gate,
// (1 + w) norms, the pre-FFN norm named post_attention_norm, per-head Q/K
// norms, the gated DeltaNet's roles, the mixture with its gated shared
// expert, and the MTP layers' own roles.
func qwen3NextTensors() []Tensor {
	var out []Tensor
	for _, t := range decoderTensors(false, LayoutNormPlusOne) {
		switch t.GGUF {
		case "blk.{bid}.ffn_norm":
			t.GGUF = "blk.{bid}.post_attention_norm"
		case "blk.{bid}.attn_q":
			t.Shape = []Dim{DimQGate, DimHidden}
		case "blk.{bid}.attn_k", "blk.{bid}.attn_v", "blk.{bid}.attn_output":
			t.Optional = true // the linear-attention layers have none
		}
		if t.GGUF == "blk.{bid}.attn_q" {
			t.Optional = true
		}
		out = append(out, t)
	}
	out = moeTensors(out, moeLayout{router: "mlp.gate", experts: "mlp.experts.{xid}.", gate: "gate_proj", down: "down_proj",
		up: "up_proj", ffn: DimExpertFFN, shared: "mlp.shared_expert.", sharedGate: "mlp.shared_expert_gate", sharedFFN: DimSharedFFN})
	d := []Dim{DimHidden}
	la := hfLayer + "linear_attn."
	return append(out,
		Tensor{GGUF: "blk.{bid}.attn_q_norm", HF: []string{hfLayer + "self_attn.q_norm"}, Shape: []Dim{DimHeadDim}, Layout: LayoutNormPlusOne, Optional: true},
		Tensor{GGUF: "blk.{bid}.attn_k_norm", HF: []string{hfLayer + "self_attn.k_norm"}, Shape: []Dim{DimHeadDim}, Layout: LayoutNormPlusOne, Optional: true},
		Tensor{GGUF: "blk.{bid}.ssm_a", HF: []string{la + "A_log"}, Shape: []Dim{DimLinVHeads}, Layout: LayoutNegExp, NoSuffix: true, Optional: true},
		Tensor{GGUF: "blk.{bid}.ssm_conv1d", HF: []string{la + "conv1d"}, Shape: []Dim{DimLinConv, DimOne, DimConvKernel}, Layout: LayoutSqueeze, Optional: true},
		Tensor{GGUF: "blk.{bid}.ssm_dt", HF: []string{la + "dt"}, HFSuffix: "_bias", Shape: []Dim{DimLinVHeads}, Optional: true},
		Tensor{GGUF: "blk.{bid}.ssm_ba", HF: []string{la + "in_proj_ba"}, Shape: []Dim{DimLinBA, DimHidden}, Optional: true},
		Tensor{GGUF: "blk.{bid}.attn_qkv", Shape: []Dim{DimLinConv, DimHidden}, Optional: true},
		Tensor{GGUF: "blk.{bid}.attn_gate", Shape: []Dim{DimLinValue, DimHidden}, Optional: true},
		Tensor{GGUF: "blk.{bid}.ssm_norm", HF: []string{la + "norm"}, Shape: []Dim{DimLinVHead}, Optional: true},
		Tensor{GGUF: "blk.{bid}.ssm_out", HF: []string{la + "out_proj"}, Shape: []Dim{DimHidden, DimLinValue}, Optional: true},
		Tensor{GGUF: "blk.{bid}.nextn.eh_proj", HF: []string{hfLayer + "eh_proj"}, Shape: []Dim{DimHidden, DimHidden2}, Optional: true},
		Tensor{GGUF: "blk.{bid}.nextn.enorm", HF: []string{hfLayer + "enorm"}, Shape: d, Layout: LayoutNormPlusOne, Optional: true},
		Tensor{GGUF: "blk.{bid}.nextn.hnorm", HF: []string{hfLayer + "hnorm"}, Shape: d, Layout: LayoutNormPlusOne, Optional: true},
		Tensor{GGUF: "blk.{bid}.nextn.shared_head_norm", HF: []string{hfLayer + "shared_head.norm"}, Shape: d, Layout: LayoutNormPlusOne, Optional: true},
	)
}

// qwen3NextQKVZ is in_proj_qkvz's row order: Hugging Face keeps, per key
// head, its q and k rows (linear_key_head_dim each) and the v and z rows of
// the value heads that share it; the converter writes all q, all k and all
// v rows as attn_qkv, then all z rows as attn_gate.
func qwen3NextQKVZ(c Config) (order, counts []int64, err error) {
	var s [4]int64
	for i, k := range []string{"linear_num_key_heads", "linear_key_head_dim", "linear_num_value_heads", "linear_value_head_dim"} {
		v, ok := c.Int(k)
		if !ok || v <= 0 || v > 1<<16 {
			return nil, nil, errUnsupported("config.json: %s %d", k, v)
		}
		s[i] = v
	}
	nk, hk, nv, hv := s[0], s[1], s[2], s[3]
	if nv%nk != 0 {
		return nil, nil, errUnsupported("config.json: %d linear value heads do not share %d key heads evenly", nv, nk)
	}
	vg := nv / nk * hv // one key head's v (and z) rows
	pieces := []int64{hk, hk, vg, vg}
	group := 2*hk + 2*vg
	for p, w := range pieces {
		var off int64
		for _, x := range pieces[:p] {
			off += x
		}
		for g := int64(0); g < nk; g++ {
			for r := int64(0); r < w; r++ {
				order = append(order, g*group+off+r)
			}
		}
	}
	return order, []int64{2*nk*hk + nv*hv, nv * hv}, nil
}

// qwen3NextMTPRenames are the MTP layer's own tensors outside mtp.layers,
// and the names the converter gives them in its first MTP layer.
var qwen3NextMTPRenames = [][2]string{{"fc", "eh_proj"}, {"pre_fc_norm_embedding", "enorm"},
	{"pre_fc_norm_hidden", "hnorm"}, {"norm", "shared_head.norm"}}

// qwen3NextMTPNames renames mtp.* (or model.mtp.*) to the layers after the
// decoder's n, as the converter does: mtp.layers.i.X is model.layers.(n+i).X,
// mtp.fc, its norms and mtp.norm belong to layer n. inverse undoes it.
func qwen3NextMTPNames(name string, n int, inverse bool) string {
	if !inverse {
		rest, ok := strings.CutPrefix(strings.TrimPrefix(name, "model."), "mtp.")
		if !ok {
			return name
		}
		if l, ok := strings.CutPrefix(rest, "layers."); ok {
			i, tail, found := strings.Cut(l, ".")
			x, err := strconv.Atoi(i)
			if !found || err != nil || x < 0 {
				return name
			}
			return "model.layers." + strconv.Itoa(n+x) + "." + tail
		}
		for _, r := range qwen3NextMTPRenames {
			if tail, ok := strings.CutPrefix(rest, r[0]+"."); ok && !strings.Contains(tail, ".") {
				return "model.layers." + strconv.Itoa(n) + "." + r[1] + "." + tail
			}
		}
		return name
	}
	l, ok := strings.CutPrefix(name, "model.layers.")
	if !ok {
		return name
	}
	i, tail, _ := strings.Cut(l, ".")
	x, err := strconv.Atoi(i)
	if err != nil || x < n {
		return name
	}
	if x == n {
		for _, r := range qwen3NextMTPRenames {
			if suffix, ok := strings.CutPrefix(tail, r[1]+"."); ok && !strings.Contains(suffix, ".") {
				return "mtp." + r[0] + "." + suffix
			}
		}
	}
	return "mtp.layers." + strconv.Itoa(x-n) + "." + tail
}

// qwen3NextMTPCount sets mtp_num_hidden_layers, when config.json lacks it,
// to the MTP layers the tensors hold (mtp.layers.N), as the converter
// counts them.
func qwen3NextMTPCount(c Config, names []string) {
	if n, ok := c.Int(qwen3NextMTPKey); ok && n > 0 {
		return
	}
	count := 0
	for _, name := range names {
		rest, ok := strings.CutPrefix(strings.TrimPrefix(name, "model."), "mtp.layers.")
		if !ok {
			continue
		}
		i, _, _ := strings.Cut(rest, ".")
		if x, err := strconv.Atoi(i); err == nil && x >= 0 && x < 1<<16 {
			count = max(count, x+1)
		}
	}
	if count > 0 {
		c[qwen3NextMTPKey] = int64(count)
	}
}
