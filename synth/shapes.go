package synth

import (
	"fmt"
	"slices"

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
// RopeBase outside llama, TypeVocab outside BERT) are ignored.
type Shape struct {
	Name      string  // short name used on the command line, e.g. "tinyllama-1.1b"
	Arch      string  // Llama, GPT2 or BERT
	Layers    int     // transformer blocks
	Hidden    int     // embedding width
	Heads     int     // attention heads
	KVHeads   int     // key/value heads (grouped-query attention); llama only
	FFN       int     // feed-forward inner width
	Vocab     int     // vocabulary size; must equal the embedded vocabulary's
	Context   int     // trained context length (position embeddings for GPT-2/BERT)
	RopeBase  float32 // RoPE frequency base; llama only
	NormEps   float32 // RMSNorm (llama) or LayerNorm epsilon
	TypeVocab int     // token-type embeddings; BERT only
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
	if s.Arch != Llama && s.Arch != GPT2 && s.Arch != BERT {
		return fmt.Errorf("synth: shape %q: unknown architecture %q (want llama, gpt2 or bert)", s.Name, s.Arch)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"layers", s.Layers}, {"hidden", s.Hidden}, {"heads", s.Heads}, {"ffn", s.FFN}, {"vocab", s.Vocab}, {"context", s.Context}} {
		if f.v <= 0 || f.v > 1<<24 {
			return fmt.Errorf("synth: shape %q: %s = %d out of range", s.Name, f.name, f.v)
		}
	}
	if s.Hidden%s.Heads != 0 {
		return fmt.Errorf("synth: shape %q: hidden %d is not a multiple of heads %d", s.Name, s.Hidden, s.Heads)
	}
	if s.Arch == Llama && (s.KVHeads <= 0 || s.Heads%s.KVHeads != 0) {
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
	switch s.Arch {
	case Llama:
		ts = s.familyTensors(arch.Llama, false)
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

// familyTensors lists the weights of a family's schema at this shape,
// with the untied head (the published checkpoints the shapes copy have
// one).
func (s Shape) familyTensors(f *arch.Family, hf bool) []spec {
	d := arch.Dims{Vocab: int64(s.Vocab), Hidden: int64(s.Hidden), Heads: int64(s.Heads), KVHeads: int64(s.KVHeads),
		HeadDim: int64(s.Hidden / s.Heads), FFN: int64(s.FFN)}
	var ts []spec
	for _, w := range f.Weights(d, s.Layers, hf, func(t *arch.Tensor) bool { return !t.Optional || t.GGUF == "output" }) {
		k := weight
		if w.Norm {
			k = norm
		}
		ts = append(ts, spec{w.Name, w.Shape, k})
	}
	return ts
}

// hfTensors lists the tensors as transformers' save_pretrained names and
// shapes them (LlamaForCausalLM, GPT2LMHeadModel with its tied head omitted,
// BertModel with the pooler). GPT-2's Conv1D weights are [in, out].
func (s Shape) hfTensors() []spec {
	n, f, v := int64(s.Hidden), int64(s.FFN), int64(s.Vocab)
	var ts []spec
	add := func(name string, k kind, shape ...int64) { ts = append(ts, spec{name, tensor.Shape(shape), k}) }
	switch s.Arch {
	case Llama:
		ts = s.familyTensors(arch.Llama, true)
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
	var p int64
	for _, t := range s.hfTensors() {
		e, _ := t.shape.NumElements()
		p += e
	}
	return p
}
