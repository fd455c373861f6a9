package synth

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/tensor"
)

// Architecture names, as GGUF's general.architecture spells them.
const (
	Llama = "llama"
	GPT2  = "gpt2"
	BERT  = "bert"
)

// Shape is the architecture and hyper-parameters of a model. The zero values
// of the fields an architecture does not use (KVHeads for GPT-2 and BERT,
// RopeBase outside the rotary families, TypeVocab outside BERT) are ignored.
//
// Arch is GPT2, BERT, or any decoder family of package arch (llama, qwen2,
// gemma, phi3, …): for those the tensors, their names and shapes and the
// GGUF metadata all come from the family's spec, fed the config.json the
// shape stands for.
type Shape struct {
	Name      string  // short name used on the command line, e.g. "tinyllama-1.1b"
	Arch      string  // GGUF architecture name
	Layers    int     // transformer blocks
	Hidden    int     // embedding width
	Heads     int     // attention heads
	KVHeads   int     // key/value heads (grouped-query attention); rotary families only
	FFN       int     // feed-forward inner width
	Vocab     int     // vocabulary size: the embedded vocabulary's, or more (padded as the converter pads)
	Context   int     // trained context length (position embeddings for GPT-2/BERT)
	RopeBase  float32 // RoPE frequency base; rotary families only
	NormEps   float32 // RMSNorm or LayerNorm epsilon
	TypeVocab int     // token-type embeddings; BERT only
	// HeadDim is the width of a head when it is not Hidden/Heads (Gemma's
	// 256); 0: Hidden/Heads.
	HeadDim int
	// Tied: the language-model head is the token embedding (no output
	// tensor).
	Tied bool
	// Biases are the roles (GGUF patterns) that have a bias (Qwen2's Q, K
	// and V projections).
	Biases []string
	// Tokenizer names the embedded vocabulary: VocabSPM, VocabGPT2 or
	// VocabBERT ("": the architecture's own: SPM for rotary families).
	Tokenizer string
	// Experts and ExpertsUsed make a mixture of experts (Mixtral): every
	// layer's feed-forward is Experts experts of width FFN and a router,
	// ExpertsUsed of them used per token.
	Experts, ExpertsUsed int
	// ExpertFFN is an expert's width when not FFN (Llama 4: its experts
	// and shared expert are 8192 wide, its dense layers FFN 16384); which
	// layers hold experts is the family's pattern (every layer when the
	// family states none).
	ExpertFFN int
	// SharedFFN is a shared expert's width when not an expert's (Granite
	// 4.0-H's shared_intermediate_size, twice its experts').
	SharedFFN int
	// Added are the checkpoint's added special tokens, which follow the
	// embedded vocabulary (control tokens, as the converter types them)
	// before the padding: Phi-3's <|endoftext|> … <|user|>.
	Added []string
	// Config holds the other config.json entries of the checkpoint the
	// shape copies (they override the ones synth derives: a MistralForCausalLM
	// class on the llama family, Phi-3's original context; a nil value
	// removes a derived key: Mamba's intermediate_size, its inner width
	// then expand · hidden as its converter reads it).
	Config map[string]any
}

// The embedded vocabularies.
const (
	VocabSPM  = "llama-spm"
	VocabGPT2 = "gpt-2"
	VocabBERT = "bert-bge"
)

// vocab names the shape's embedded vocabulary.
func (s Shape) vocab() string {
	switch {
	case s.Tokenizer != "":
		return s.Tokenizer
	case s.Arch == GPT2:
		return VocabGPT2
	case s.Arch == BERT:
		return VocabBERT
	}
	return VocabSPM
}

// headDim is the width of one head.
func (s Shape) headDim() int {
	if s.HeadDim > 0 {
		return s.HeadDim
	}
	return s.Hidden / s.Heads
}

// family returns the arch family of a rotary-family shape (ok false for
// GPT-2, BERT and the rest).
func (s Shape) family() (*arch.Family, bool) {
	if s.Arch == GPT2 || s.Arch == BERT {
		return nil, false
	}
	f, ok := arch.ByName(s.Arch)
	if !ok || f.Name != s.Arch || f.NoGGUF != "" || f.Graph.EncoderOnly || f.Graph.EncoderDecoder || f.Graph.LearnedPositions {
		return nil, false
	}
	return f, true
}

// shapes are the built-in shapes, with the hyper-parameters of the published
// checkpoints' config.json files.
var shapes = []Shape{
	// TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T and its chat model.
	{Name: "tinyllama-1.1b", Arch: Llama, Layers: 22, Hidden: 2048, Heads: 32, KVHeads: 4, FFN: 5632,
		Vocab: 32000, Context: 2048, RopeBase: 10000, NormEps: 1e-5},
	// meta-llama/Llama-2-7b-hf.
	{Name: "llama-7b", Arch: Llama, Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 32, FFN: 11008,
		Vocab: 32000, Context: 4096, RopeBase: 10000, NormEps: 1e-5},
	// openai-community/gpt2.
	{Name: "gpt2-124m", Arch: GPT2, Layers: 12, Hidden: 768, Heads: 12, FFN: 3072,
		Vocab: 50257, Context: 1024, NormEps: 1e-5},
	// google-bert/bert-base-uncased.
	{Name: "bert-base", Arch: BERT, Layers: 12, Hidden: 768, Heads: 12, FFN: 3072,
		Vocab: 30522, Context: 512, NormEps: 1e-12, TypeVocab: 2},
	// mistralai/Mistral-7B-v0.1 (the llama family in GGUF, as the converter
	// maps MistralForCausalLM).
	{Name: "mistral-7b", Arch: "llama", Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, FFN: 14336,
		Vocab: 32000, Context: 32768, RopeBase: 10000, NormEps: 1e-5,
		Config: map[string]any{"architectures": []string{"MistralForCausalLM"}, "model_type": "mistral", "sliding_window": 4096}},
	// Qwen/Qwen2.5-0.5B: Q/K/V biases, tied head, 151,936 embedding rows
	// (the GPT-2 vocabulary padded to them here).
	{Name: "qwen2.5-0.5b", Arch: "qwen2", Layers: 24, Hidden: 896, Heads: 14, KVHeads: 2, FFN: 4864,
		Vocab: 151936, Context: 32768, RopeBase: 1000000, NormEps: 1e-6, Tied: true, Tokenizer: VocabGPT2,
		Biases: []string{"blk.{bid}.attn_q", "blk.{bid}.attn_k", "blk.{bid}.attn_v"},
		Config: map[string]any{"max_window_layers": 21, "sliding_window": 32768}},
	// google/gemma-2b: multi-query attention, 256-wide heads, tied head.
	{Name: "gemma-2b", Arch: "gemma", Layers: 18, Hidden: 2048, Heads: 8, KVHeads: 1, HeadDim: 256, FFN: 16384,
		Vocab: 256000, Context: 8192, RopeBase: 10000, NormEps: 1e-6, Tied: true,
		Config: map[string]any{"hidden_act": "gelu", "hidden_activation": "gelu_pytorch_tanh"}},
	// mistralai/Mixtral-8x7B-v0.1: 8 experts, 2 per token.
	{Name: "mixtral-8x7b", Arch: "llama", Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, FFN: 14336,
		Vocab: 32000, Context: 32768, RopeBase: 1000000, NormEps: 1e-5, Experts: 8, ExpertsUsed: 2,
		Config: map[string]any{"architectures": []string{"MixtralForCausalLM"}, "model_type": "mixtral",
			"num_local_experts": 8, "num_experts_per_tok": 2, "sliding_window": nil, "router_aux_loss_coef": 0.02}},
	// meta-llama/Llama-4-Scout-17B-16E's text model (text_config): a mixture
	// in every layer of 16 experts of width 8192, 1 used, beside a shared
	// expert; three of four layers chunked with RoPE, the fourth global
	// without; 202,048 embedding rows (the GPT-2 vocabulary padded to
	// them). Its llama3 rope_scaling is left out (synth writes no
	// generated rope_freqs tensor).
	{Name: "llama4-scout-17b-16e", Arch: "llama4", Layers: 48, Hidden: 5120, Heads: 40, KVHeads: 8, HeadDim: 128,
		FFN: 16384, ExpertFFN: 8192, Vocab: 202048, Context: 10485760, RopeBase: 500000, NormEps: 1e-5,
		Experts: 16, ExpertsUsed: 1, Tokenizer: VocabGPT2,
		Config: map[string]any{"num_local_experts": 16, "num_experts_per_tok": 1, "interleave_moe_layer_step": 1,
			"router_aux_loss_coef": 0.001, "output_router_logits": false, "router_jitter_noise": 0.0}},
	// meta-llama/Llama-4-Maverick-17B-128E's text model: 128 experts in
	// every second layer (interleave_moe_layer_step 2), dense layers of
	// 16384 between, no QK norms (128 experts), no rope scaling.
	{Name: "llama4-maverick-17b-128e", Arch: "llama4", Layers: 48, Hidden: 5120, Heads: 40, KVHeads: 8, HeadDim: 128,
		FFN: 16384, ExpertFFN: 8192, Vocab: 202048, Context: 1048576, RopeBase: 500000, NormEps: 1e-5,
		Experts: 128, ExpertsUsed: 1, Tokenizer: VocabGPT2,
		Config: map[string]any{"num_local_experts": 128, "num_experts_per_tok": 1, "interleave_moe_layer_step": 2,
			"use_qk_norm": false, "router_aux_loss_coef": 0.001, "output_router_logits": false,
			"router_jitter_noise": 0.0}},
	// LiquidAI/LFM2-1.2B: short convolutions (3 taps) in 10 of its 16
	// layers, attention (per-head Q/K norms) in layers 2, 5, 8, 10, 12 and
	// 14; its block_ff_dim 12288 adjusted as LFM2 does to 8192 (stated
	// here as intermediate_size with the adjusting off), tied head, 65,536
	// rows (the GPT-2 vocabulary padded to them).
	{Name: "lfm2-1.2b", Arch: "lfm2", Layers: 16, Hidden: 2048, Heads: 32, KVHeads: 8, FFN: 8192,
		Vocab: 65536, Context: 128000, RopeBase: 1000000, NormEps: 1e-5, Tied: true, Tokenizer: VocabGPT2,
		Config: map[string]any{"conv_L_cache": 3, "layer_types": lfm2Layers(16, 2, 5, 8, 10, 12, 14)}},
	// state-spaces/mamba-130m-hf (transformers' form of state-spaces/mamba-130m):
	// 24 selective-scan layers of inner width 1536 (expand 2 · hidden; FFN
	// states it but the checkpoint has no feed-forward), state 16, Δ rank
	// 48, 4 taps, biases on the convolution and the Δ projection, tied
	// head, the GPT-NeoX vocabulary's 50,277 rows padded to 50,280. Mamba
	// has no attention heads: Heads and KVHeads 1 only satisfy Check.
	{Name: "mamba-130m", Arch: "mamba", Layers: 24, Hidden: 768, Heads: 1, KVHeads: 1, FFN: 1536,
		Vocab: 50280, Context: 1 << 20, NormEps: 1e-5, Tied: true, Tokenizer: VocabGPT2,
		Biases: []string{"blk.{bid}.ssm_conv1d", "blk.{bid}.ssm_dt"},
		Config: map[string]any{"state_size": 16, "time_step_rank": 48, "conv_kernel": 4, "expand": 2,
			"intermediate_size": nil}},
	// state-spaces/mamba2-130m and state-spaces/mamba2-2.7b (mamba_ssm's
	// config.json: d_model, n_layer, vocab 50,277 padded to a multiple of
	// 16, ssm_cfg {"layer": "Mamba2"} with Mamba2's defaults d_state 128,
	// d_conv 4, expand 2, headdim 64, ngroups 1; tied), in
	// Mamba2ForCausalLM's keys.
	mamba2("mamba2-130m", 24, 768),
	mamba2("mamba2-2.7b", 64, 2560),
	// ibm-granite/granite-4.0-h-tiny and granite-4.0-h-micro: 40 layers,
	// attention (no position embedding) in layers 5, 15, 25 and 35, Mamba-2
	// in the others (head width 64, state 128, one group, 4 taps, expand
	// 2), tied head, 100,352 rows. Tiny routes each layer to 6 of 64
	// experts of width 512 beside a shared expert of 1024; micro is dense
	// (shared_intermediate_size 8192, no experts). The multipliers
	// (embedding, attention, residual, logits) change values, not shapes,
	// and are left at the family's defaults.
	granite4H("granite-4.0-h-tiny", 1536, 12, 4, 48, 512, 1024, 64, 6),
	granite4H("granite-4.0-h-micro", 2048, 32, 8, 64, 8192, 8192, 0, 0),
	// microsoft/Phi-3-mini-4k-instruct: fused QKV and gate/up, 32,064 rows.
	{Name: "phi3-mini-4k", Arch: "phi3", Layers: 32, Hidden: 3072, Heads: 32, KVHeads: 32, FFN: 8192,
		Vocab: 32064, Context: 4096, RopeBase: 10000, NormEps: 1e-5,
		Added: []string{"<|endoftext|>", "<|assistant|>", "<|placeholder1|>", "<|placeholder2|>", "<|placeholder3|>",
			"<|placeholder4|>", "<|system|>", "<|end|>", "<|placeholder5|>", "<|placeholder6|>", "<|user|>"},
		Config: map[string]any{"original_max_position_embeddings": 4096, "sliding_window": 2047}},
	// zai-org/GLM-4-9B-0414: Q/K/V biases, fused gate/up, norms after
	// attention and after the MLP, half of each head rotated, 151,552 rows
	// (GPT-2's vocabulary holds <|endoftext|>; the converter reads eot
	// from the added <|user|>).
	{Name: "glm4-9b", Arch: "glm4", Layers: 40, Hidden: 4096, Heads: 32, KVHeads: 2, HeadDim: 128, FFN: 13696,
		Vocab: 151552, Context: 32768, RopeBase: 10000, NormEps: 1e-5, Tokenizer: VocabGPT2,
		Biases: []string{"blk.{bid}.attn_q", "blk.{bid}.attn_k", "blk.{bid}.attn_v"},
		Added:  []string{"<|user|>"},
		Config: map[string]any{"partial_rotary_factor": 0.5, "attention_bias": true}},
	// openai/gpt-oss-20b and openai/gpt-oss-120b: 32 and 128 experts of width
	// 2880, 4 per token, biases on attention, router and experts, attention
	// sinks, sliding window 128 in every other layer, YaRN (the experts MXFP4
	// in the published checkpoints; synth writes the dtype asked for).
	gptOss("gpt-oss-20b", 24, 32),
	gptOss("gpt-oss-120b", 36, 128),
	// tencent/Hunyuan-A13B-Instruct: every layer a mixture of 64 experts of
	// width 3072, 8 used, beside one shared MLP as wide (moe_topk,
	// moe_intermediate_size and num_shared_expert one per layer, as its
	// config.json states them); per-head Q/K norms; its alpha scaling
	// (alpha 1000: the converter's rope.freq_base 10000 · 1000^(128/126)
	// and context 262144); a tied head of 128,167 rows (the GPT-2
	// vocabulary padded to them: Hunyuan's hy.tiktoken is not embedded).
	{Name: "hunyuan-a13b", Arch: "hunyuan-moe", Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, FFN: 3072,
		Vocab: 128167, Context: 32768, RopeBase: 10000, NormEps: 1e-5, Tied: true, Experts: 64, ExpertsUsed: 8,
		Tokenizer: VocabGPT2,
		Config: map[string]any{"num_experts": 64, "moe_topk": perLayer(32, 8), "moe_intermediate_size": perLayer(32, 3072),
			"num_shared_expert": perLayer(32, 1),
			"rope_scaling":      map[string]any{"type": "dynamic", "alpha": 1000.0, "factor": 1.0}}},
}

// perLayer is a config.json list of v for each of n layers (Hunyuan's
// moe_topk).
func perLayer(n, v int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// gptOss is the shape of openai/gpt-oss with layers layers of experts
// experts (the two published sizes share everything else).
func gptOss(name string, layers, experts int) Shape {
	return Shape{Name: name, Arch: "gpt-oss", Layers: layers, Hidden: 2880, Heads: 64, KVHeads: 8, HeadDim: 64, FFN: 2880,
		Vocab: 201088, Context: 131072, RopeBase: 150000, NormEps: 1e-5, Experts: experts, ExpertsUsed: 4, Tokenizer: VocabGPT2,
		Biases: []string{"blk.{bid}.attn_q", "blk.{bid}.attn_k", "blk.{bid}.attn_v", "blk.{bid}.attn_output",
			"blk.{bid}.ffn_gate_inp", "blk.{bid}.ffn_gate_exps", "blk.{bid}.ffn_up_exps", "blk.{bid}.ffn_down_exps"},
		Config: map[string]any{"sliding_window": 128, "num_local_experts": experts, "num_experts_per_tok": 4,
			"rope_scaling": map[string]any{"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
				"truncate": false, "original_max_position_embeddings": 4096}}}
}

// mamba2 is the shape of state-spaces' Mamba-2 of layers layers of width
// hidden (the published sizes share everything else).
func mamba2(name string, layers, hidden int) Shape {
	return Shape{Name: name, Arch: "mamba2", Layers: layers, Hidden: hidden, Heads: 1, KVHeads: 1, FFN: 2 * hidden,
		Vocab: 50288, Context: 1 << 20, NormEps: 1e-5, Tied: true, Tokenizer: VocabGPT2,
		Biases: []string{"blk.{bid}.ssm_conv1d"},
		Config: map[string]any{"state_size": 128, "head_dim": 64, "n_groups": 1,
			"conv_kernel": 4, "expand": 2, "chunk_size": 256, "intermediate_size": nil}}
}

// granite4H is the shape of IBM's Granite 4.0-H of width hidden with heads
// attention heads (kv key/value heads), ssmHeads Mamba-2 heads, a
// feed-forward of width ffn (an expert's when experts > 0) and a shared
// one of width shared.
func granite4H(name string, hidden, heads, kv, ssmHeads, ffn, shared, experts, used int) Shape {
	types := make([]any, 40)
	for i := range types {
		types[i] = "mamba"
		if i%10 == 5 {
			types[i] = "attention"
		}
	}
	return Shape{Name: name, Arch: "granitehybrid", Layers: 40, Hidden: hidden, Heads: heads, KVHeads: kv, FFN: ffn,
		SharedFFN: shared, Experts: experts, ExpertsUsed: used, Vocab: 100352, Context: 131072, RopeBase: 10000,
		NormEps: 1e-5, Tied: true, Tokenizer: VocabGPT2,
		Biases: []string{"blk.{bid}.ssm_conv1d"},
		Config: map[string]any{"layer_types": types, "position_embedding_type": "nope",
			"num_local_experts": experts, "num_experts_per_tok": used,
			"mamba_n_heads": ssmHeads, "mamba_d_head": 64, "mamba_d_state": 128, "mamba_n_groups": 1,
			"mamba_d_conv": 4, "mamba_expand": 2, "mamba_chunk_size": 256}}
}

// Shapes returns the built-in shapes.
func Shapes() []Shape { return slices.Clone(shapes) }

// Lookup returns the built-in shape called name.
func Lookup(name string) (Shape, bool) {
	for _, s := range shapes {
		if s.Name == name {
			return s, true
		}
	}
	return Shape{}, false
}

// kind says how a tensor's values are drawn.
type kind uint8

const (
	weight kind = iota // N(0, σ)
	norm               // 1 + N(0, σ)
	bias               // N(0, σ), kept f32 like every 1-D tensor
)

// spec is one tensor to generate.
type spec struct {
	name  string
	shape tensor.Shape // row-major, outermost first
	kind  kind
}

// Check reports whether s is a shape this package can write.
func (s Shape) Check() error {
	if _, ok := s.family(); !ok && s.Arch != GPT2 && s.Arch != BERT {
		return fmt.Errorf("synth: shape %q: unknown architecture %q (want gpt2, bert or a decoder family: %s)",
			s.Name, s.Arch, strings.Join(Architectures(), ", "))
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"layers", s.Layers}, {"hidden", s.Hidden}, {"heads", s.Heads}, {"ffn", s.FFN}, {"vocab", s.Vocab}, {"context", s.Context}} {
		if f.v <= 0 || f.v > 1<<24 {
			return fmt.Errorf("synth: shape %q: %s = %d out of range", s.Name, f.name, f.v)
		}
	}
	if s.Experts < 0 || s.ExpertsUsed < 0 || s.ExpertsUsed > s.Experts || (s.Experts > 0) != (s.ExpertsUsed > 0) {
		return fmt.Errorf("synth: shape %q: %d experts, %d used", s.Name, s.Experts, s.ExpertsUsed)
	}
	if f, ok := s.family(); s.Experts > 0 && (!ok || !hasRouter(f)) {
		return fmt.Errorf("synth: shape %q: architecture %s has no mixture of experts", s.Name, s.Arch)
	}
	if s.Hidden%s.Heads != 0 {
		return fmt.Errorf("synth: shape %q: hidden %d is not a multiple of heads %d", s.Name, s.Hidden, s.Heads)
	}
	if _, ok := s.family(); ok && (s.KVHeads <= 0 || s.Heads%s.KVHeads != 0) {
		return fmt.Errorf("synth: shape %q: heads %d is not a multiple of kv heads %d", s.Name, s.Heads, s.KVHeads)
	}
	if s.Arch == BERT && s.TypeVocab <= 0 {
		return fmt.Errorf("synth: shape %q: BERT needs a token-type vocabulary", s.Name)
	}
	return nil
}

// ggufTensors lists the tensors as llama.cpp's converter names and shapes
// them (GGUF's ne reversed: [rows, columns]).
func (s Shape) ggufTensors() []spec {
	n, f, v := int64(s.Hidden), int64(s.FFN), int64(s.Vocab)
	var ts []spec
	add := func(name string, k kind, shape ...int64) { ts = append(ts, spec{name, tensor.Shape(shape), k}) }
	if f, ok := s.family(); ok {
		return s.familyTensors(f, false)
	}
	switch s.Arch {
	case GPT2:
		add("token_embd.weight", weight, v, n)
		add("position_embd.weight", weight, int64(s.Context), n)
		for i := range s.Layers {
			p := fmt.Sprintf("blk.%d.", i)
			add(p+"attn_norm.weight", norm, n)
			add(p+"attn_norm.bias", bias, n)
			add(p+"attn_qkv.weight", weight, 3*n, n)
			add(p+"attn_qkv.bias", bias, 3*n)
			add(p+"attn_output.weight", weight, n, n)
			add(p+"attn_output.bias", bias, n)
			add(p+"ffn_norm.weight", norm, n)
			add(p+"ffn_norm.bias", bias, n)
			add(p+"ffn_up.weight", weight, f, n)
			add(p+"ffn_up.bias", bias, f)
			add(p+"ffn_down.weight", weight, n, f)
			add(p+"ffn_down.bias", bias, n)
		}
		add("output_norm.weight", norm, n)
		add("output_norm.bias", bias, n)
		// The converter writes GPT-2's tied head as its own tensor.
		add("output.weight", weight, v, n)
	case BERT:
		add("token_embd.weight", weight, v, n)
		add("token_types.weight", weight, int64(s.TypeVocab), n)
		add("position_embd.weight", weight, int64(s.Context), n)
		add("token_embd_norm.weight", norm, n)
		add("token_embd_norm.bias", bias, n)
		for i := range s.Layers {
			p := fmt.Sprintf("blk.%d.", i)
			for _, m := range []string{"attn_q", "attn_k", "attn_v", "attn_output"} {
				add(p+m+".weight", weight, n, n)
				add(p+m+".bias", bias, n)
			}
			add(p+"attn_output_norm.weight", norm, n)
			add(p+"attn_output_norm.bias", bias, n)
			add(p+"ffn_up.weight", weight, f, n)
			add(p+"ffn_up.bias", bias, f)
			add(p+"ffn_down.weight", weight, n, f)
			add(p+"ffn_down.bias", bias, n)
			add(p+"layer_output_norm.weight", norm, n)
			add(p+"layer_output_norm.bias", bias, n)
		}
	}
	return ts
}

// familyTensors lists the weights of a family's schema at this shape (the
// head unless tied), each followed by its bias where s.Biases names its
// role.
func (s Shape) familyTensors(f *arch.Family, hf bool) []spec {
	d := arch.Dims{Vocab: int64(s.Vocab), Hidden: int64(s.Hidden), Heads: int64(s.Heads), KVHeads: int64(s.KVHeads),
		HeadDim: int64(s.headDim()), FFN: int64(s.FFN), Experts: int64(s.Experts), ExpertFFN: int64(s.expertFFN()),
		SharedFFN: int64(s.sharedFFN())}
	hc := arch.Config(hfConfigMap(s))
	if k, ok := hc.Int("conv_L_cache"); ok {
		d.ConvKernel = k
	}
	if md, err := f.GGUFMetadata(hc, 0); err == nil {
		// A state-space mixer's sizes as the family's converter derives
		// them (ssm.time_step_rank is Mamba's Δ rank and Mamba-2's head
		// count: each family's tensors use the one they have).
		m := arch.Meta{MD: md, Arch: f.Name}
		for _, k := range []struct {
			key string
			p   []*int64
		}{{"ssm.conv_kernel", []*int64{&d.ConvKernel}}, {"ssm.inner_size", []*int64{&d.Inner}},
			{"ssm.state_size", []*int64{&d.State}}, {"ssm.time_step_rank", []*int64{&d.DTRank, &d.SSMHeads}},
			{"ssm.group_count", []*int64{&d.Groups}}} {
			if v, ok := m.Int(k.key); ok {
				for _, p := range k.p {
					*p = v
				}
			}
		}
	}
	var ts []spec
	moe := s.moeLayers(f)
	pattern, _ := f.LayerPattern(hc)
	keep := func(t *arch.Tensor, layer int) bool {
		inMoE := layer >= 0 && moe[layer]
		switch {
		case !t.InLayer(pattern, layer):
			return false // another mixer's (LFM2's convolution or attention)
		case len(t.Mixers) > 0 && layer >= 0:
			return true // its mixer's layer (a hybrid's Mamba-2 or attention; Mamba-2's Δ bias)
		case t.GGUF == "output":
			return !s.Tied
		case inMoE && (t.Stack == arch.DimExperts || t.GGUF == "blk.{bid}.ffn_gate_inp" ||
			strings.Contains(t.GGUF, "_exps") || strings.Contains(t.GGUF, "_shexp")):
			return true // the router, the experts, a shared expert
		case inMoE && t.Unless != "":
			return false // the dense feed-forward the experts replace
		}
		return !t.Optional
	}
	for _, w := range f.Weights(d, s.Layers, hf, keep) {
		k := weight
		if w.Norm {
			k = norm
		}
		if sfx := w.Tensor.HFSuffix; sfx != "" && f.SuffixAliases[sfx] == ".bias" {
			// A bias alone (Mamba-2's dt_bias, the GGUF's ssm_dt.bias).
			k = bias
			if !hf {
				w.Name = strings.TrimSuffix(w.Name, ".weight") + ".bias"
			}
		}
		ts = append(ts, spec{w.Name, w.Shape, k})
		if slices.Contains(s.Biases, w.Tensor.GGUF) {
			// The weight's shape without its input dimensions: [out], or
			// [experts][out] for stacked experts; a depthwise
			// convolution's [channels][1][taps] has [channels].
			b := w.Shape[:len(w.Shape)-1].Clone()
			for len(b) > 1 && b[len(b)-1] == 1 {
				b = b[:len(b)-1]
			}
			ts = append(ts, spec{strings.TrimSuffix(w.Name, ".weight") + ".bias", b, bias})
		}
	}
	return ts
}

// lfm2Layers is LFM2's layer_types for n layers attending at attn, the
// others short convolutions.
func lfm2Layers(n int, attn ...int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = arch.ShortConv.String()
		if slices.Contains(attn, i) {
			out[i] = arch.FullAttention.String()
		}
	}
	return out
}

// expertFFN is an expert's width.
func (s Shape) expertFFN() int {
	if s.ExpertFFN > 0 {
		return s.ExpertFFN
	}
	return s.FFN
}

// sharedFFN is a shared expert's width.
func (s Shape) sharedFFN() int {
	if s.SharedFFN > 0 {
		return s.SharedFFN
	}
	return s.expertFFN()
}

// moeLayers says which layers hold experts: none without experts, those of
// the family's pattern when it names them, else every layer.
func (s Shape) moeLayers(f *arch.Family) []bool {
	out := make([]bool, s.Layers)
	if s.Experts == 0 {
		return out
	}
	// A pattern that names no expert layer is one that leaves MoE to the
	// router's presence (arch.Layer.MoE): every layer then.
	ls, err := f.LayerPattern(arch.Config(hfConfigMap(s)))
	named := err == nil && len(ls) == s.Layers && slices.ContainsFunc(ls, func(l arch.Layer) bool { return l.MoE })
	for i := range out {
		out[i] = !named || ls[i].MoE
	}
	return out
}

// Architectures lists what Shape.Arch may name: gpt2, bert and the decoder
// families of package arch.
func Architectures() []string {
	out := []string{GPT2, BERT}
	for _, f := range arch.Families() {
		if _, ok := (Shape{Arch: f.Name}).family(); ok {
			out = append(out, f.Name)
		}
	}
	sort.Strings(out)
	return out
}

// hfTensors lists the tensors as transformers' save_pretrained names and
// shapes them (LlamaForCausalLM, GPT2LMHeadModel with its tied head omitted,
// BertModel with the pooler). GPT-2's Conv1D weights are [in, out].
func (s Shape) hfTensors() []spec {
	n, f, v := int64(s.Hidden), int64(s.FFN), int64(s.Vocab)
	var ts []spec
	add := func(name string, k kind, shape ...int64) { ts = append(ts, spec{name, tensor.Shape(shape), k}) }
	if f, ok := s.family(); ok {
		return s.familyTensors(f, true)
	}
	switch s.Arch {
	case GPT2:
		add("transformer.wte.weight", weight, v, n)
		add("transformer.wpe.weight", weight, int64(s.Context), n)
		for i := range s.Layers {
			p := fmt.Sprintf("transformer.h.%d.", i)
			add(p+"ln_1.weight", norm, n)
			add(p+"ln_1.bias", bias, n)
			add(p+"attn.c_attn.weight", weight, n, 3*n)
			add(p+"attn.c_attn.bias", bias, 3*n)
			add(p+"attn.c_proj.weight", weight, n, n)
			add(p+"attn.c_proj.bias", bias, n)
			add(p+"ln_2.weight", norm, n)
			add(p+"ln_2.bias", bias, n)
			add(p+"mlp.c_fc.weight", weight, n, f)
			add(p+"mlp.c_fc.bias", bias, f)
			add(p+"mlp.c_proj.weight", weight, f, n)
			add(p+"mlp.c_proj.bias", bias, n)
		}
		add("transformer.ln_f.weight", norm, n)
		add("transformer.ln_f.bias", bias, n)
	case BERT:
		add("embeddings.word_embeddings.weight", weight, v, n)
		add("embeddings.position_embeddings.weight", weight, int64(s.Context), n)
		add("embeddings.token_type_embeddings.weight", weight, int64(s.TypeVocab), n)
		add("embeddings.LayerNorm.weight", norm, n)
		add("embeddings.LayerNorm.bias", bias, n)
		for i := range s.Layers {
			p := fmt.Sprintf("encoder.layer.%d.", i)
			for _, m := range []string{"attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"} {
				add(p+m+".weight", weight, n, n)
				add(p+m+".bias", bias, n)
			}
			add(p+"attention.output.LayerNorm.weight", norm, n)
			add(p+"attention.output.LayerNorm.bias", bias, n)
			add(p+"intermediate.dense.weight", weight, f, n)
			add(p+"intermediate.dense.bias", bias, f)
			add(p+"output.dense.weight", weight, n, f)
			add(p+"output.dense.bias", bias, n)
			add(p+"output.LayerNorm.weight", norm, n)
			add(p+"output.LayerNorm.bias", bias, n)
		}
		add("pooler.dense.weight", weight, n, n)
		add("pooler.dense.bias", bias, n)
	}
	return ts
}

// Params returns the parameter count of the HF checkpoint (what model cards
// quote; GPT-2's tied head counted once).
func (s Shape) Params() int64 {
	ts := s.hfTensors()
	if f, ok := s.family(); ok && len(f.Packed) > 0 {
		// Packed Hugging Face tensors (gpt-oss's MXFP4 experts) hold as
		// many values as the GGUF tensors they make.
		ts = s.familyTensors(f, false)
	}
	var p int64
	for _, t := range ts {
		e, _ := t.shape.NumElements()
		p += e
	}
	return p
}

// hasRouter reports whether family f has a mixture-of-experts layout.
func hasRouter(f *arch.Family) bool {
	_, ok := f.Tensor("blk.{bid}.ffn_gate_inp")
	return ok
}
