package convert

import (
	"fmt"
	"strings"

	"github.com/tfconv/tfconv/tensor"
)

// gpt2 is OpenAI's GPT-2 as transformers stores it (GPT2LMHeadModel, or
// GPT2Model without the "transformer." prefix).
//
// Transposes: GPT-2's attention and MLP projections are Conv1D modules whose
// weight is [in, out], the transpose of a Linear; llama.cpp's GPT2Model
// transposes c_attn, attn.c_proj, mlp.c_fc and mlp.c_proj weights to
// [out, in]. The fused c_attn (Q, K, V stacked) stays fused as attn_qkv.
//
// Dropped: attn.bias and attn.masked_bias (causal-mask buffers of old
// checkpoints) and lm_head.weight when present (GPT-2 ties it to wte).
// Tied: llama.cpp writes output.weight as a copy of the token embedding, so
// the GGUF holds the embedding twice; ToHF drops that copy.
type gpt2 struct{}

func init() { register(gpt2{}) }

func (gpt2) Name() string         { return "gpt2" }
func (gpt2) ModelTypes() []string { return []string{"gpt2"} }

var gpt2Names = nameTable{
	{"transformer.wte", "token_embd"},
	{"transformer.wpe", "position_embd"},
	{"transformer.ln_f", "output_norm"},
	{"transformer.h.{bid}.ln_1", "blk.{bid}.attn_norm"},
	{"transformer.h.{bid}.attn.c_attn", "blk.{bid}.attn_qkv"},
	{"transformer.h.{bid}.attn.c_proj", "blk.{bid}.attn_output"},
	{"transformer.h.{bid}.ln_2", "blk.{bid}.ffn_norm"},
	{"transformer.h.{bid}.mlp.c_fc", "blk.{bid}.ffn_up"},
	{"transformer.h.{bid}.mlp.c_proj", "blk.{bid}.ffn_down"},
}

// gpt2Names without the prefix covers GPT2Model checkpoints.
func (gpt2) names() nameTable {
	t := append(nameTable(nil), gpt2Names...)
	for _, e := range gpt2Names {
		t = append(t, struct{ hf, gguf string }{strings.TrimPrefix(e.hf, "transformer."), e.gguf})
	}
	return t
}

// gpt2Conv1D reports whether the GGUF tensor name is a transposed Conv1D
// weight.
func gpt2Conv1D(gguf string) bool {
	for _, s := range []string{".attn_qkv.weight", ".attn_output.weight", ".ffn_up.weight", ".ffn_down.weight"} {
		if strings.HasSuffix(gguf, s) {
			return true
		}
	}
	return false
}

// transpose returns the transform of a [rows, cols] matrix into [cols, rows].
func transpose(rows, cols int) func(dst, src []float32) {
	return func(dst, src []float32) {
		// Blocked so both sides stay in cache for large matrices.
		const blk = 64
		for r0 := 0; r0 < rows; r0 += blk {
			r1 := min(r0+blk, rows)
			for c0 := 0; c0 < cols; c0 += blk {
				c1 := min(c0+blk, cols)
				for r := r0; r < r1; r++ {
					for c := c0; c < c1; c++ {
						dst[c*rows+r] = src[r*cols+c]
					}
				}
			}
		}
	}
}

func setTranspose(m *Mapping, in tensor.Shape) error {
	if len(in) != 2 {
		return fmt.Errorf("convert: tensor %q: shape %v: want a matrix", m.Source, in)
	}
	m.Shape = tensor.Shape{in[1], in[0]}
	m.Transform = transpose(int(in[0]), int(in[1]))
	return nil
}

func (a gpt2) ToGGUF(cfg Config, in []tensor.Info) ([]Mapping, []Dropped, error) {
	mapped, dropped, err := mapTable(a.names(), in, true, func(name string) string {
		switch {
		case strings.HasSuffix(name, ".attn.bias"), strings.HasSuffix(name, ".attn.masked_bias"):
			return "causal-mask buffer, not a weight"
		case name == "lm_head.weight":
			return "GPT-2 ties lm_head to wte; output.weight is written from the embedding, as llama.cpp does"
		}
		return ""
	})
	if err != nil {
		return nil, nil, err
	}
	var out []Mapping
	for _, m := range mapped {
		if gpt2Conv1D(m.Name) {
			if err := setTranspose(&m, m.Shape); err != nil {
				return nil, nil, err
			}
		}
		out = append(out, m)
		if m.Name == "token_embd.weight" {
			out = append(out, Mapping{Name: "output.weight", Source: m.Source, Shape: m.Shape.Clone(), Copy: true})
		}
	}
	n, _ := cfg.Int("n_layer")
	if err := requireTensors(out, append([]string{"token_embd.weight", "position_embd.weight", "output_norm.weight", "output_norm.bias"},
		layerTensors(int(n), "blk.{bid}.attn_qkv.weight", "blk.{bid}.attn_output.weight", "blk.{bid}.ffn_up.weight",
			"blk.{bid}.ffn_down.weight", "blk.{bid}.attn_norm.weight", "blk.{bid}.ffn_norm.weight")...)...); err != nil {
		return nil, nil, err
	}
	return out, dropped, nil
}

func (gpt2) GGUFMetadata(cfg Config, fileType uint32) (tensor.Metadata, error) {
	var md tensor.Metadata
	set := func(k string, v tensor.Value) { md = append(md, tensor.KV{Key: "gpt2." + k, Value: v}) }
	layers, err := cfg.requireInt("n_layer")
	if err != nil {
		return nil, err
	}
	ctx, err := cfg.requireInt("n_ctx", "n_positions")
	if err != nil {
		return nil, err
	}
	embd, err := cfg.requireInt("n_embd")
	if err != nil {
		return nil, err
	}
	heads, err := cfg.requireInt("n_head")
	if err != nil {
		return nil, err
	}
	eps, err := cfg.requireFloat("layer_norm_epsilon")
	if err != nil {
		return nil, err
	}
	set("block_count", tensor.Uint32(layers))
	set("context_length", tensor.Uint32(ctx))
	set("embedding_length", tensor.Uint32(embd))
	// llama.cpp writes 4·n_embd whatever n_inner says; so do we, and
	// refuse a model where that would be wrong.
	if inner, ok := cfg.Int("n_inner"); ok && inner != 4*int64(embd) {
		return nil, tensor.Unsupported("convert: gpt2: n_inner %d is not 4·n_embd, which llama.cpp's GPT-2 assumes", inner)
	}
	set("feed_forward_length", tensor.Uint32(4*embd))
	set("attention.head_count", tensor.Uint32(heads))
	set("attention.layer_norm_epsilon", tensor.Float32(eps))
	md = append(md, tensor.KV{Key: keyFileType, Value: tensor.Uint32(fileType)})
	return md, nil
}

func (gpt2) ToHF(md tensor.Metadata, in []tensor.Info) ([]Mapping, []Dropped, error) {
	out, dropped, err := mapTable(gpt2Names, in, false, func(name string) string {
		if name == "output.weight" {
			return "copy of token_embd.weight that llama.cpp writes; transformers ties lm_head to wte"
		}
		return ""
	})
	if err != nil {
		return nil, nil, err
	}
	for i := range out {
		if gpt2Conv1D(out[i].Source) {
			if err := setTranspose(&out[i], out[i].Shape); err != nil {
				return nil, nil, err
			}
		}
	}
	return out, dropped, nil
}

func (gpt2) HFConfig(md tensor.Metadata, in []tensor.Info) (Config, error) {
	c := Config{"architectures": []string{"GPT2LMHeadModel"}, "model_type": "gpt2", "activation_function": "gelu_new",
		"tie_word_embeddings": true}
	for _, k := range []struct{ gguf, key string }{
		{"block_count", "n_layer"},
		{"context_length", "n_ctx"},
		{"embedding_length", "n_embd"},
		{"attention.head_count", "n_head"},
	} {
		v, err := mdUint(md, "gpt2."+k.gguf)
		if err != nil {
			return nil, err
		}
		c[k.key] = v
	}
	eps, ok := mdFloat(md, "gpt2.attention.layer_norm_epsilon")
	if !ok {
		return nil, fmt.Errorf("convert: GGUF metadata has no gpt2.attention.layer_norm_epsilon")
	}
	c["layer_norm_epsilon"] = f32(eps)
	byName := infoByName(in)
	emb, ok := byName["token_embd.weight"]
	if !ok || len(emb.Shape) != 2 {
		return nil, fmt.Errorf("convert: missing tensor %q", "token_embd.weight")
	}
	c["vocab_size"] = emb.Shape[0]
	pos, ok := byName["position_embd.weight"]
	if !ok || len(pos.Shape) != 2 {
		return nil, fmt.Errorf("convert: missing tensor %q", "position_embd.weight")
	}
	c["n_positions"] = pos.Shape[0]
	c["n_inner"] = nil
	if ff, err := mdUint(md, "gpt2.feed_forward_length"); err == nil && ff != 4*c["n_embd"].(int64) {
		c["n_inner"] = ff
	}
	addSpecialIDs(c, md)
	return c, nil
}
