package hubtest

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/tfconv/tfconv/tensor"
)

// MoE is the shape of a DeepSeek-V3-architecture checkpoint stored as
// DeepSeek and Moonshot publish theirs: FP8 (E4M3) matrices, each with a
// weight_scale_inv of one F32 per 128×128 block, BF16 norms, router and
// embeddings, split into Shards files model-NNNNN-of-MMMMMM.safetensors.
type MoE struct {
	Config                                          map[string]any // config.json
	Layers, Dense, MTP                              int            // decoder layers, of which the first Dense have no experts; extra (multi-token prediction) layers after them
	Hidden, Inter, MoEInter, Experts, Shared, Vocab int
	Heads, QLoRA, KVLoRA, Nope, Rope, V             int
	Shards                                          int
	// PerLayer puts layer L in shard L+1 (Kimi K2's layout); otherwise the
	// tensors are cut into Shards files of about equal size (DeepSeek-V3's).
	PerLayer bool
}

// KimiK2 is moonshotai/Kimi-K2-Instruct's shape: 61 layers (the first
// dense), 384 routed experts and one shared, 64 heads, 1.03 T parameters in
// 61 shards of one layer each. Its config.json is the published one.
func KimiK2() MoE {
	m := MoE{Layers: 61, Dense: 1, Hidden: 7168, Inter: 18432, MoEInter: 2048, Experts: 384, Shared: 1, Vocab: 163840,
		Heads: 64, QLoRA: 1536, KVLoRA: 512, Nope: 128, Rope: 64, V: 128, Shards: 61, PerLayer: true}
	m.Config = m.config(map[string]any{
		"model_type": "kimi_k2", "bos_token_id": 163584, "eos_token_id": 163585, "max_position_embeddings": 131072,
		"n_group": 1, "topk_group": 1, "num_experts_per_tok": 8, "routed_scaling_factor": 2.827, "rope_theta": 50000.0,
		"num_nextn_predict_layers": 0,
		"rope_scaling": map[string]any{"beta_fast": 1.0, "beta_slow": 1.0, "factor": 32.0, "mscale": 1.0, "mscale_all_dim": 1.0,
			"original_max_position_embeddings": 4096, "type": "yarn"},
	})
	return m
}

// DeepSeekV3 is deepseek-ai/DeepSeek-V3's shape: 61 layers (the first 3
// dense) and one multi-token-prediction layer, 256 routed experts, 128
// heads, 671 B parameters (+14 B of MTP) in 163 shards.
func DeepSeekV3() MoE {
	m := MoE{Layers: 61, Dense: 3, MTP: 1, Hidden: 7168, Inter: 18432, MoEInter: 2048, Experts: 256, Shared: 1, Vocab: 129280,
		Heads: 128, QLoRA: 1536, KVLoRA: 512, Nope: 128, Rope: 64, V: 128, Shards: 163}
	m.Config = m.config(map[string]any{
		"model_type": "deepseek_v3", "bos_token_id": 0, "eos_token_id": 1, "max_position_embeddings": 163840,
		"n_group": 8, "topk_group": 4, "num_experts_per_tok": 8, "routed_scaling_factor": 2.5, "rope_theta": 10000.0,
		"num_nextn_predict_layers": 1,
		"rope_scaling": map[string]any{"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
			"original_max_position_embeddings": 4096, "type": "yarn"},
	})
	return m
}

// config is the config.json both publish, with the keys that differ.
func (m MoE) config(own map[string]any) map[string]any {
	c := map[string]any{
		"architectures": []string{"DeepseekV3ForCausalLM"}, "attention_bias": false, "attention_dropout": 0.0,
		"aux_loss_alpha": 0.001, "ep_size": 1, "first_k_dense_replace": m.Dense, "hidden_act": "silu",
		"hidden_size": m.Hidden, "initializer_range": 0.02, "intermediate_size": m.Inter, "kv_lora_rank": m.KVLoRA,
		"moe_intermediate_size": m.MoEInter, "moe_layer_freq": 1, "n_routed_experts": m.Experts,
		"n_shared_experts": m.Shared, "norm_topk_prob": true, "num_attention_heads": m.Heads,
		"num_hidden_layers": m.Layers, "num_key_value_heads": m.Heads, "pretraining_tp": 1, "q_lora_rank": m.QLoRA,
		"qk_nope_head_dim": m.Nope, "qk_rope_head_dim": m.Rope, "rms_norm_eps": 1e-06, "scoring_func": "sigmoid",
		"seq_aux": true, "tie_word_embeddings": false, "topk_method": "noaux_tc", "torch_dtype": "bfloat16",
		"transformers_version": "4.48.3", "use_cache": true, "v_head_dim": m.V, "vocab_size": m.Vocab,
		"quantization_config": map[string]any{"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
			"weight_block_size": []int{128, 128}},
	}
	maps.Copy(c, own)
	return c
}

// fp8 is a matrix [rows, cols] in FP8 and its block scales.
func fp8(name string, rows, cols int) []Tensor {
	return []Tensor{
		{Name: name + ".weight", DType: tensor.F8_E4M3, Shape: tensor.Shape{int64(rows), int64(cols)}},
		{Name: name + ".weight_scale_inv", DType: tensor.F32, Shape: tensor.Shape{int64((rows + 127) / 128), int64((cols + 127) / 128)}},
	}
}

func bf16(name string, shape ...int) Tensor {
	s := make(tensor.Shape, len(shape))
	for i, d := range shape {
		s[i] = int64(d)
	}
	return Tensor{Name: name, DType: tensor.BF16, Shape: s}
}

// layer lists decoder layer l's tensors.
func (m MoE) layer(l int) []Tensor {
	p := fmt.Sprintf("model.layers.%d.", l)
	ts := []Tensor{bf16(p+"input_layernorm.weight", m.Hidden), bf16(p+"post_attention_layernorm.weight", m.Hidden)}
	ts = append(ts, fp8(p+"self_attn.q_a_proj", m.QLoRA, m.Hidden)...)
	ts = append(ts, bf16(p+"self_attn.q_a_layernorm.weight", m.QLoRA))
	ts = append(ts, fp8(p+"self_attn.q_b_proj", m.Heads*(m.Nope+m.Rope), m.QLoRA)...)
	ts = append(ts, fp8(p+"self_attn.kv_a_proj_with_mqa", m.KVLoRA+m.Rope, m.Hidden)...)
	ts = append(ts, bf16(p+"self_attn.kv_a_layernorm.weight", m.KVLoRA))
	ts = append(ts, fp8(p+"self_attn.kv_b_proj", m.Heads*(m.Nope+m.V), m.KVLoRA)...)
	ts = append(ts, fp8(p+"self_attn.o_proj", m.Hidden, m.Heads*m.V)...)
	mlp := func(q string, inter int) {
		ts = append(ts, fp8(q+"gate_proj", inter, m.Hidden)...)
		ts = append(ts, fp8(q+"up_proj", inter, m.Hidden)...)
		ts = append(ts, fp8(q+"down_proj", m.Hidden, inter)...)
	}
	if l < m.Dense {
		mlp(p+"mlp.", m.Inter)
		return ts
	}
	ts = append(ts, bf16(p+"mlp.gate.weight", m.Experts, m.Hidden),
		Tensor{Name: p + "mlp.gate.e_score_correction_bias", DType: tensor.F32, Shape: tensor.Shape{int64(m.Experts)}})
	for e := 0; e < m.Experts; e++ {
		mlp(fmt.Sprintf("%smlp.experts.%d.", p, e), m.MoEInter)
	}
	mlp(p+"mlp.shared_experts.", m.MoEInter*m.Shared)
	if l >= m.Layers {
		// A multi-token-prediction layer's own tensors.
		ts = append(ts, bf16(p+"enorm.weight", m.Hidden), bf16(p+"hnorm.weight", m.Hidden))
		ts = append(ts, fp8(p+"eh_proj", m.Hidden, 2*m.Hidden)...)
		ts = append(ts, bf16(p+"embed_tokens.weight", m.Vocab, m.Hidden), bf16(p+"shared_head.norm.weight", m.Hidden),
			bf16(p+"shared_head.head.weight", m.Vocab, m.Hidden))
	}
	return ts
}

// Params is the number of parameters of the whole checkpoint (scales
// included, as the published counts include them).
func (m MoE) Params() int64 {
	var n int64
	for _, sh := range m.shards(m.Layers + m.MTP) {
		for _, t := range sh {
			k, _ := t.Shape.NumElements()
			n += k
		}
	}
	return n
}

// shards lays out the first layers decoder layers (and, when that is all
// of them, the MTP layers): embeddings first, final norm and head last.
func (m MoE) shards(layers int) [][]Tensor {
	out := make([][]Tensor, m.Shards)
	head := []Tensor{bf16("model.norm.weight", m.Hidden), bf16("lm_head.weight", m.Vocab, m.Hidden)}
	if m.PerLayer {
		out[0] = append(out[0], bf16("model.embed_tokens.weight", m.Vocab, m.Hidden))
		for l := 0; l < layers; l++ {
			out[min(l, m.Shards-1)] = append(out[min(l, m.Shards-1)], m.layer(l)...)
		}
		out[m.Shards-1] = append(out[m.Shards-1], head...)
		return out
	}
	all := []Tensor{bf16("model.embed_tokens.weight", m.Vocab, m.Hidden)}
	total := int64(0)
	n := m.Layers
	if layers >= m.Layers {
		n += m.MTP
	}
	for l := 0; l < n; l++ {
		if l < layers || l >= m.Layers {
			all = append(all, m.layer(l)...)
		}
	}
	all = append(all, head...)
	size := func(t Tensor) int64 { b, _ := t.DType.ShapeBytes(t.Shape); return b }
	for _, t := range all {
		total += size(t)
	}
	// The full model's shard size, so that a truncated one keeps it.
	per := m.fullBytes() / int64(m.Shards)
	var acc int64
	for _, t := range all {
		i := min(int(acc/per), m.Shards-1)
		out[i] = append(out[i], t)
		acc += size(t)
	}
	return out
}

func (m MoE) fullBytes() int64 {
	var n int64
	for l := 0; l < m.Layers+m.MTP; l++ {
		for _, t := range m.layer(l) {
			b, _ := t.DType.ShapeBytes(t.Shape)
			n += b
		}
	}
	return n + 3*int64(m.Vocab)*int64(m.Hidden)
}

// Repo makes the repository id of the first layers decoder layers (all:
// m.Layers), its config.json saying that many, with the side files given
// (a tokenizer), and model.safetensors.index.json over the shards that
// hold tensors (their names those of the whole set).
func (m MoE) Repo(id string, layers int, sides map[string][]byte) (*Repo, error) {
	cfg := maps.Clone(m.Config)
	cfg["num_hidden_layers"] = min(layers, m.Layers)
	if layers < m.Layers {
		cfg["num_nextn_predict_layers"] = 0
	}
	return shardedRepo(id, cfg, m.shards(layers), sides)
}

// Tiny is DeepSeek-V3's layout at a test's size: 3 layers (the first
// dense), 4 experts, hidden 128 (one FP8 block), vocab 1000
// (testdata/arch/deepseek3's tokenizer), in 3 shards; no MTP layer (which
// tfconv's deepseek2 mapping does not skip yet).
func Tiny() MoE {
	m := MoE{Layers: 3, Dense: 1, Hidden: 128, Inter: 256, MoEInter: 128, Experts: 4, Shared: 1, Vocab: 1000,
		Heads: 2, QLoRA: 128, KVLoRA: 128, Nope: 32, Rope: 32, V: 32, Shards: 3}
	m.Config = m.config(map[string]any{
		"model_type": "deepseek_v3", "bos_token_id": 999, "eos_token_id": 999, "max_position_embeddings": 64,
		"n_group": 2, "topk_group": 1, "num_experts_per_tok": 2, "routed_scaling_factor": 2.5, "rope_theta": 10000.0,
		"num_nextn_predict_layers": 0,
		"rope_scaling": map[string]any{"beta_fast": 32, "beta_slow": 1, "factor": 4, "mscale": 1.0, "mscale_all_dim": 1.0,
			"original_max_position_embeddings": 16, "type": "yarn"},
	})
	return m
}

// Qwen2BF16 is a Qwen2-architecture checkpoint in BF16 with Qwen2-7B's
// matrices (hidden 3584, 28 heads, 4 KV heads, intermediate 18944) and
// layers layers, vocab vocab (the tokenizer's), about 4 GB a shard as the
// Hub's writers cut them: what an unchanged copy (HF bf16 → GGUF bf16)
// reads.
func Qwen2BF16(id string, layers, vocab int, sides map[string][]byte) (*Repo, error) {
	const hidden, heads, kv, inter, hd = 3584, 28, 4, 18944, 128
	cfg := map[string]any{
		"architectures": []string{"Qwen2ForCausalLM"}, "attention_dropout": 0.0, "bos_token_id": 999, "eos_token_id": 999,
		"hidden_act": "silu", "hidden_size": hidden, "initializer_range": 0.02, "intermediate_size": inter,
		"max_position_embeddings": 32768, "max_window_layers": 28, "model_type": "qwen2", "num_attention_heads": heads,
		"num_hidden_layers": layers, "num_key_value_heads": kv, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
		"sliding_window": nil, "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.43.4",
		"use_cache": true, "use_sliding_window": false, "vocab_size": vocab,
	}
	all := []Tensor{bf16("model.embed_tokens.weight", vocab, hidden)}
	for l := 0; l < layers; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		all = append(all, bf16(p+"input_layernorm.weight", hidden), bf16(p+"post_attention_layernorm.weight", hidden),
			bf16(p+"self_attn.q_proj.weight", heads*hd, hidden), bf16(p+"self_attn.q_proj.bias", heads*hd),
			bf16(p+"self_attn.k_proj.weight", kv*hd, hidden), bf16(p+"self_attn.k_proj.bias", kv*hd),
			bf16(p+"self_attn.v_proj.weight", kv*hd, hidden), bf16(p+"self_attn.v_proj.bias", kv*hd),
			bf16(p+"self_attn.o_proj.weight", hidden, heads*hd),
			bf16(p+"mlp.gate_proj.weight", inter, hidden), bf16(p+"mlp.up_proj.weight", inter, hidden),
			bf16(p+"mlp.down_proj.weight", hidden, inter))
	}
	all = append(all, bf16("model.norm.weight", hidden), bf16("lm_head.weight", vocab, hidden))
	var shards [][]Tensor
	var acc int64
	for _, t := range all {
		b, _ := t.DType.ShapeBytes(t.Shape)
		if len(shards) == 0 || acc+b > 4<<30 {
			shards, acc = append(shards, nil), 0
		}
		shards[len(shards)-1] = append(shards[len(shards)-1], t)
		acc += b
	}
	return shardedRepo(id, cfg, shards, sides)
}

// shardedRepo makes a repository of config.json, the side files and the
// shards with their index.
func shardedRepo(id string, cfg map[string]any, shards [][]Tensor, sides map[string][]byte) (*Repo, error) {
	cj, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, err
	}
	files := []*File{{Name: "config.json", Data: cj}}
	for n, b := range sides {
		files = append(files, &File{Name: n, Data: b})
	}
	weights := map[string]string{}
	var total int64
	for i, ts := range shards {
		if len(ts) == 0 {
			continue
		}
		name := fmt.Sprintf("model-%05d-of-%06d.safetensors", i+1, len(shards))
		files = append(files, &File{Name: name, Tensors: ts})
		for _, t := range ts {
			weights[t.Name] = name
			b, _ := t.DType.ShapeBytes(t.Shape)
			total += b
		}
	}
	idx, err := json.MarshalIndent(map[string]any{"metadata": map[string]any{"total_size": total}, "weight_map": weights}, "", "  ")
	if err != nil {
		return nil, err
	}
	files = append(files, &File{Name: "model.safetensors.index.json", Data: idx})
	return NewRepo(id, files...)
}
