package arch

import (
	"fmt"
	"slices"

	"github.com/tfconv/tfconv/tensor"
)

// Llama4 is the text model of Llama 4 (Scout, Maverick) as the newer
// llama.cpp converts it (Llama4Model, GGUF "llama4"; testdata/arch/README.md):
// LLaMA's block without the Q/K row permutation (transformers rotates
// adjacent pairs, as ggml does), a mixture in every interleave_moe_layer_step-th
// layer (num_local_experts experts of width intermediate_size, the dense
// layers intermediate_size_mlp wide) with a shared expert of the experts'
// width; the router's top-k scores pass a sigmoid and scale each chosen
// expert's input. Three of every four layers rotate and attend within
// chunks of attention_chunk_size tokens, with weightless L2 norms of Q and
// K (use_qk_norm); every fourth attends globally without RoPE, its queries
// scaled by log(floor((pos+1)/floor_scale)+1)·attn_scale+1. The experts are
// one [expert][in][out] tensor each in Hugging Face (gate and up side by
// side in gate_up_proj), one [expert][out][in] per role in GGUF.
//
// llama.cpp's graph fixes what the GGUF does not say: chunks of 8192,
// floor_scale 8192, attn_scale 0.1, no RoPE in every fourth layer, QK norms
// unless there are 128 experts (Maverick). A config.json stating otherwise
// would convert to a GGUF computing something else, so it is refused naming
// the key (llama4Fixed).
var Llama4 = register(&Family{
	Name:       "llama4",
	HFClasses:  []string{"Llama4ForCausalLM", "Llama4ForConditionalGeneration"},
	ModelTypes: []string{"llama4_text", "llama4"},
	HFClass:    "Llama4ForCausalLM", ModelType: "llama4_text",
	Params: withParams(withAfter(withAfter(without(without(baseParams(), "feed_forward_length"), "expert_count"),
		"embedding_length", u32("feed_forward_length", Optional, "intermediate_size_mlp")),
		"attention.layer_norm_epsilon", llama4Experts()),
		u32("vocab_size", Required, "vocab_size"), ropeDimension(),
		u32("interleave_moe_layer_step", Required, "interleave_moe_layer_step"),
		u32("expert_feed_forward_length", Optional, "intermediate_size"),
		llama4Fixed()),
	Tensors:   llama4Tensors(),
	Drops:     append([]Drop{rotaryBuffer}, llama4VisionDrops...),
	Generated: []Generated{ropeFreqsNewer},
	// The stacked experts are parameters without a ".weight" suffix.
	SuffixAliases: map[string]string{"experts.gate_up_proj": "experts.gate_up.weight", "experts.down_proj": "experts.down.weight"},
	HFConst: map[string]any{"hidden_act": "silu", "attention_bias": false,
		"attention_chunk_size": int64(llama4Chunk), "floor_scale": int64(llama4Chunk), "attn_scale": 0.1,
		"attn_temperature_tuning": true, "no_rope_layer_interval": int64(4)},
	Graph:   llama4Graph,
	Pattern: llama4Pattern,
})

var llama4Graph = Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu", NoRopeStep: 4, AdjacentRopeHF: true,
	QKL2Norm: true, AttnTempNoRope: true, MoESigmoid: true, MoEScaleInput: true}

// llama4Pattern: the layers rotate as no_rope_layers says (every fourth
// without RoPE by default); layer_types, or else rotation, says which
// attend within chunks of attention_chunk_size (8192 when unstated, as
// llama.cpp fixes it) and which fully; the layers of moe_layers, or every
// interleave_moe_layer_step-th, route to experts.
func llama4Pattern(c Config, n int) ([]Layer, error) {
	ls, err := DefaultPattern(llama4Graph, c, n)
	if err != nil {
		return nil, err
	}
	types, hasTypes, err := LayerTypes(c, n)
	if err != nil {
		return nil, err
	}
	moe, hasMoE, err := c.Ints("moe_layers")
	if err != nil {
		return nil, err
	}
	chunk, ok := c.Int("attention_chunk_size")
	if !ok {
		chunk = llama4Chunk
	}
	if chunk <= 0 || chunk >= 1<<31 {
		return nil, errUnsupported("config.json: attention_chunk_size %d", chunk)
	}
	step, _ := c.Int("interleave_moe_layer_step")
	for i := range ls {
		mixer := FullAttention
		if ls[i].Rope {
			mixer = ChunkedAttention
		}
		if hasTypes {
			mixer = types[i]
		}
		switch mixer {
		case ChunkedAttention:
			ls[i].Mixer, ls[i].Window = ChunkedAttention, int(chunk)
		case FullAttention:
		default:
			return nil, errUnsupported("config.json: layer_types[%d] %s: Llama 4 has chunked and full attention only", i, mixer)
		}
		if hasMoE {
			ls[i].MoE = slices.Contains(moe, int64(i))
		} else {
			ls[i].MoE = step > 0 && (i+1)%int(step) == 0
		}
	}
	return ls, nil
}

// llama4Chunk is the chunk of local attention and the temperature floor
// that llama.cpp's llama4 graph fixes.
const llama4Chunk = 8192

// llama4Tensors: LLaMA's schema under feed_forward. names, unpermuted Q/K,
// and the mixture's router, stacked experts and shared expert; each also
// under the language_model. prefix of Llama4ForConditionalGeneration.
func llama4Tensors() []Tensor { return withTextPrefix(llama4TextTensors()) }

func llama4TextTensors() []Tensor {
	out := []Tensor{}
	for _, t := range decoderTensors(false, LayoutSame) {
		switch t.GGUF {
		case "blk.{bid}.ffn_gate", "blk.{bid}.ffn_up", "blk.{bid}.ffn_down":
			t.HF = []string{hfLayer + "feed_forward." + t.HF[0][len(hfLayer+"mlp."):]}
			t.Unless = "blk.{bid}.ffn_gate_inp"
		}
		out = append(out, t)
	}
	ff, sh := hfLayer+"feed_forward.", hfLayer+"feed_forward.shared_expert."
	return append(out,
		Tensor{GGUF: "blk.{bid}.ffn_gate_inp", HF: []string{ff + "router"}, Shape: []Dim{DimExperts, DimHidden}, Optional: true},
		Tensor{GGUF: "blk.{bid}.ffn_gate_exps", HF: []string{ff + "experts.gate_up"}, HFSuffix: "_proj",
			Shape: []Dim{DimExperts, DimHidden, DimExpertFFN}, Layout: LayoutTranspose, Split: &Split{Part: 1, Last: true}, Optional: true},
		Tensor{GGUF: "blk.{bid}.ffn_up_exps", HF: []string{ff + "experts.gate_up"}, HFSuffix: "_proj",
			Shape: []Dim{DimExperts, DimHidden, DimExpertFFN}, Layout: LayoutTranspose, Split: &Split{Part: 2, Last: true}, Optional: true},
		Tensor{GGUF: "blk.{bid}.ffn_down_exps", HF: []string{ff + "experts.down"}, HFSuffix: "_proj",
			Shape: []Dim{DimExperts, DimExpertFFN, DimHidden}, Layout: LayoutTranspose, Optional: true},
		Tensor{GGUF: "blk.{bid}.ffn_gate_shexp", HF: []string{sh + "gate_proj"}, Shape: []Dim{DimExpertFFN, DimHidden}, Optional: true},
		Tensor{GGUF: "blk.{bid}.ffn_down_shexp", HF: []string{sh + "down_proj"}, Shape: []Dim{DimHidden, DimExpertFFN}, Optional: true},
		Tensor{GGUF: "blk.{bid}.ffn_up_shexp", HF: []string{sh + "up_proj"}, Shape: []Dim{DimExpertFFN, DimHidden}, Optional: true})
}

// llama4Fixed refuses the config.json values llama.cpp's llama4 graph does
// not follow (it fixes them; the GGUF has no key for them) and writes no
// key: rope_scaling other than llama3, attention_chunk_size, floor_scale,
// attn_scale, attn_temperature_tuning, a no_rope_layers / layer_types
// pattern other than every fourth layer global without RoPE, moe_layers
// other than every interleave_moe_layer_step-th, and use_qk_norm other
// than "unless 128 experts".
func llama4Fixed() Param {
	return Param{Key: "llama4.fixed", Kind: tensor.KindUint32,
		Derive: func(c Config) (tensor.Value, bool, error) {
			refuse := func(key string, v any, want string) (tensor.Value, bool, error) {
				return tensor.Value{}, false, errUnsupported("config.json: %s %v: llama.cpp's llama4 graph computes with %s and the GGUF cannot state otherwise", key, v, want)
			}
			if rs, ok := c.Map("rope_scaling"); ok {
				if _, llama3, err := Llama3RopeOf(c); err != nil {
					return tensor.Value{}, false, err
				} else if !llama3 {
					return refuse("rope_scaling", map[string]any(rs), "llama3 rope scaling or none")
				}
			}
			for _, k := range []struct {
				key  string
				want float64
			}{{"attention_chunk_size", llama4Chunk}, {"floor_scale", llama4Chunk}, {"attn_scale", 0.1}} {
				if v, ok := c.Float(k.key); ok && float32(v) != float32(k.want) {
					return refuse(k.key, v, fmt.Sprint(k.want))
				}
			}
			if v, ok := c["attn_temperature_tuning"].(bool); ok && !v {
				return refuse("attn_temperature_tuning", v, "temperature tuning on the layers without RoPE")
			}
			n, _ := c.Int("num_hidden_layers")
			if list, ok, err := c.Ints("no_rope_layers"); err != nil {
				return tensor.Value{}, false, err
			} else if ok {
				g := Graph{NoRopeStep: 4}
				if int64(len(list)) != n {
					return refuse("no_rope_layers", list, fmt.Sprintf("%d entries", n))
				}
				for i, v := range list {
					if (v != 0) != g.RopeLayer(i, nil) {
						return refuse("no_rope_layers", list, "no RoPE in every fourth layer only")
					}
				}
			}
			if types, ok := c["layer_types"].([]any); ok {
				for i, t := range types {
					want := "chunked_attention"
					if (i+1)%4 == 0 {
						want = "full_attention"
					}
					if t != want {
						return refuse("layer_types", types, "chunked attention in three of every four layers, the fourth full")
					}
				}
			}
			step, _ := c.Int("interleave_moe_layer_step")
			if list, ok, err := c.Ints("moe_layers"); err != nil {
				return tensor.Value{}, false, err
			} else if ok && step > 0 {
				var want []int64
				for i := step - 1; i < n; i += step {
					want = append(want, i)
				}
				if fmt.Sprint(list) != fmt.Sprint(want) {
					return refuse("moe_layers", list, fmt.Sprintf("%v (every interleave_moe_layer_step-th layer)", want))
				}
			}
			experts, _ := c.Int("num_local_experts")
			if v, ok := c["use_qk_norm"].(bool); ok && v != (experts != 128) {
				return refuse("use_qk_norm", v, "QK norms exactly when there are not 128 experts")
			}
			return tensor.Value{}, false, nil
		},
		Inverse: func(Config, tensor.Value, Meta) {}}
}

// llama4Experts is expert_count, which on GGUF → HF also sets use_qk_norm
// as llama.cpp decides it: QK norms unless there are 128 experts.
func llama4Experts() Param {
	p := u32("expert_count", Optional, "num_local_experts")
	p.Inverse = func(c Config, v tensor.Value, _ Meta) {
		n, _ := v.Int()
		c["num_local_experts"], c["use_qk_norm"] = n, n != 128
	}
	return p
}
