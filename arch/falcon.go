package arch

import "github.com/tfconv/tfconv/tensor"

// Falcon is Falcon (7B's multi-query form, and the "new decoder
// architecture" of 40B/180B with grouped key/value heads and two norms per
// block): a fused QKV projection in groups ([kv group][queries, k, v],
// regrouped by the converter), LayerNorms with biases, a GELU MLP of
// 4·d_model, and attention and MLP added in parallel. The converter writes a
// fixed context of 2048 and the "jploski" layout name.
var Falcon = register(&Family{
	Name:       "falcon",
	HFClasses:  []string{"FalconForCausalLM", "RWForCausalLM"},
	ModelTypes: []string{"falcon", "RefinedWeb", "RefinedWebModel"},
	HFClass:    "FalconForCausalLM", ModelType: "falcon",
	Params: []Param{
		{Key: "context_length", Kind: tensor.KindUint32,
			Derive:  func(Config) (tensor.Value, bool, error) { return tensor.Uint32(2048), true, nil },
			Inverse: func(c Config, v tensor.Value, _ Meta) { c["max_position_embeddings"] = jsonValue(v) }},
		{Key: "tensor_data_layout", Kind: tensor.KindString,
			Derive:  func(Config) (tensor.Value, bool, error) { return tensor.String("jploski"), true, nil },
			Inverse: func(Config, tensor.Value, Meta) {}},
		u32("embedding_length", Required, "hidden_size"),
		{Key: "feed_forward_length", Kind: tensor.KindUint32,
			Derive: func(c Config) (tensor.Value, bool, error) {
				h, ok := c.Int("hidden_size")
				if !ok {
					return tensor.Value{}, false, errUnsupported("config.json: no hidden_size")
				}
				return tensor.Uint32(uint32(4 * h)), true, nil
			},
			Inverse: func(c Config, v tensor.Value, _ Meta) { c["ffn_hidden_size"] = jsonValue(v) }},
		{Key: "block_count", HF: []string{"num_hidden_layers", "n_layer"}, Kind: tensor.KindUint32, Need: Required},
		u32("attention.head_count", Required, "num_attention_heads", "n_head"),
		{Key: "attention.head_count_kv", HF: []string{"num_kv_heads", "n_head_kv"}, Kind: tensor.KindUint32, Need: Default, Default: 1},
		f32p("attention.layer_norm_epsilon", Required, "layer_norm_epsilon"),
		{Key: FileType},
		noRopeScaling(),
		{Key: "alibi", Kind: tensor.KindBool, Derive: func(c Config) (tensor.Value, bool, error) {
			if b, _ := c.Bool("alibi"); b {
				return tensor.Value{}, false, errUnsupported("Falcon with alibi (llama.cpp's falcon graph uses rotary positions)")
			}
			return tensor.Value{}, false, nil
		}},
	},
	KVHeads:        []string{"num_kv_heads", "n_head_kv"},
	KVHeadsDefault: 1,
	HFKVHeads: func(c Config) (int64, bool) {
		// transformers: one key/value head for the old multi-query form,
		// whatever num_kv_heads says.
		newArch, _ := c.Bool("new_decoder_architecture")
		mq, ok := c.Bool("multi_query")
		if !newArch && (mq || !ok) {
			return 1, true
		}
		return 0, false
	},
	Tensors: []Tensor{
		{GGUF: "token_embd", HF: []string{"transformer.word_embeddings"}, Shape: []Dim{DimVocab, DimHidden}},
		{GGUF: "output_norm", HF: []string{"transformer.ln_f"}, Shape: []Dim{DimHidden}},
		{GGUF: "output", HF: []string{"lm_head"}, Shape: []Dim{DimVocab, DimHidden}, Optional: true},
		// llama.cpp's names for the new architecture's two norms are the
		// other way round: attn_norm is ln_mlp (the feed-forward's) and
		// attn_norm_2 is ln_attn (attention's).
		{GGUF: "blk.{bid}.attn_norm", HF: []string{"transformer.h.{bid}.input_layernorm", "transformer.h.{bid}.ln_mlp"}, Shape: []Dim{DimHidden}},
		{GGUF: "blk.{bid}.attn_norm_2", HF: []string{"transformer.h.{bid}.ln_attn"}, Shape: []Dim{DimHidden}, Optional: true},
		{GGUF: "blk.{bid}.attn_qkv", HF: []string{"transformer.h.{bid}.self_attention.query_key_value"}, Shape: []Dim{DimQKV, DimHidden}, Layout: LayoutQKVGroups},
		{GGUF: "blk.{bid}.attn_output", HF: []string{"transformer.h.{bid}.self_attention.dense"}, Shape: []Dim{DimHidden, DimQ}},
		{GGUF: "blk.{bid}.ffn_up", HF: []string{"transformer.h.{bid}.mlp.dense_h_to_4h"}, Shape: []Dim{DimFFN, DimHidden}},
		{GGUF: "blk.{bid}.ffn_down", HF: []string{"transformer.h.{bid}.mlp.dense_4h_to_h"}, Shape: []Dim{DimHidden, DimFFN}},
	},
	Drops:    []Drop{rotaryBuffer},
	HFConst:  map[string]any{"activation": "gelu", "parallel_attn": true, "alibi": false},
	BiasFlag: "bias",
	HFRename: falconHFNames,
	Graph:    Graph{Norm: LayerNorm, FFN: Plain, Activation: "gelu", Parallel: true, NeoxRopeGGUF: true},
})

// falconHFNames names a GGUF Falcon in transformers' terms: with a second
// norm it is the new decoder architecture (ln_attn, ln_mlp), else the
// multi-query one (input_layernorm).
func falconHFNames(c Config, gguf func(name string) bool) map[string]string {
	if !gguf("blk.0.attn_norm_2.weight") {
		c["multi_query"] = true
		c["new_decoder_architecture"] = false
		return nil
	}
	c["multi_query"] = false
	c["new_decoder_architecture"] = true
	c["num_ln_in_parallel_attn"] = 2
	return map[string]string{"blk.{bid}.attn_norm": "transformer.h.{bid}.ln_mlp"}
}
