package convert

import (
	"fmt"
	"strings"

	"github.com/tfconv/tfconv/tensor"
)

// llama is LLaMA and the llama-shaped family llama.cpp's LlamaModel
// converts: RMSNorm, rotary positions, SwiGLU MLP, grouped-query attention
// (num_key_value_heads), optional attention biases, tied or untied
// embeddings.
//
// The Q/K repack: Hugging Face's LLaMA applies rotary embeddings in the
// "rotate half" layout (each head's first half of dimensions pairs with the
// second half); GGML rotates adjacent pairs. convert_hf_to_gguf.py therefore
// permutes the rows of q_proj (by num_attention_heads) and k_proj (by
// num_key_value_heads) and their biases: within a head, row j·d/2+i moves to
// row 2i+j. ToHF applies the inverse.
//
// Dropped: rotary_emb.inv_freq (a buffer recomputed from rope_theta).
// Tied: with tie_word_embeddings and no lm_head.weight there is no
// output.weight; llama.cpp then uses token_embd.weight, and ToHF sets
// tie_word_embeddings.
type llama struct{}

func init() { register(llama{}) }

func (llama) Name() string         { return "llama" }
func (llama) ModelTypes() []string { return []string{"llama"} }

var llamaNames = nameTable{
	{"model.embed_tokens", "token_embd"},
	{"model.norm", "output_norm"},
	{"lm_head", "output"},
	{"model.layers.{bid}.input_layernorm", "blk.{bid}.attn_norm"},
	{"model.layers.{bid}.self_attn.q_proj", "blk.{bid}.attn_q"},
	{"model.layers.{bid}.self_attn.k_proj", "blk.{bid}.attn_k"},
	{"model.layers.{bid}.self_attn.v_proj", "blk.{bid}.attn_v"},
	{"model.layers.{bid}.self_attn.o_proj", "blk.{bid}.attn_output"},
	{"model.layers.{bid}.post_attention_layernorm", "blk.{bid}.ffn_norm"},
	{"model.layers.{bid}.mlp.gate_proj", "blk.{bid}.ffn_gate"},
	{"model.layers.{bid}.mlp.up_proj", "blk.{bid}.ffn_up"},
	{"model.layers.{bid}.mlp.down_proj", "blk.{bid}.ffn_down"},
}

func (llama) names() nameTable { return llamaNames }

func llamaDrop(name string) string {
	if strings.HasSuffix(name, ".rotary_emb.inv_freq") {
		return "rotary inverse frequencies: a buffer recomputed from rope_theta"
	}
	return ""
}

// llamaHeads returns the head counts for the Q/K permutation.
func llamaHeads(nHead, nKV int64) (q, k int64) {
	if nKV <= 0 {
		nKV = nHead
	}
	return nHead, nKV
}

func (a llama) ToGGUF(cfg Config, in []tensor.Info) ([]Mapping, []Dropped, error) {
	out, dropped, err := mapTable(llamaNames, in, true, llamaDrop)
	if err != nil {
		return nil, nil, err
	}
	nHead, ok := cfg.Int("num_attention_heads")
	if !ok || nHead <= 0 {
		return nil, nil, fmt.Errorf("convert: llama: config.json has no num_attention_heads")
	}
	nKV, _ := cfg.Int("num_key_value_heads")
	qh, kh := llamaHeads(nHead, nKV)
	if err := addQKPermutation(out, qh, kh, false); err != nil {
		return nil, nil, err
	}
	nLayer, _ := cfg.Int("num_hidden_layers")
	if err := requireTensors(out, append([]string{"token_embd.weight", "output_norm.weight"},
		layerTensors(int(nLayer), "blk.{bid}.attn_q.weight", "blk.{bid}.attn_k.weight", "blk.{bid}.attn_v.weight",
			"blk.{bid}.attn_output.weight", "blk.{bid}.attn_norm.weight", "blk.{bid}.ffn_norm.weight",
			"blk.{bid}.ffn_gate.weight", "blk.{bid}.ffn_up.weight", "blk.{bid}.ffn_down.weight")...)...); err != nil {
		return nil, nil, err
	}
	return out, dropped, nil
}

// addQKPermutation sets the Q/K row permutation (or its inverse) on the
// attn_q/attn_k weights and biases of out, found by their GGUF names
// (inverse: the mapping's Source is the GGUF name).
func addQKPermutation(out []Mapping, qHeads, kHeads int64, inverse bool) error {
	for i := range out {
		m := &out[i]
		g := m.Name
		if inverse {
			g = m.Source
		}
		var heads int64
		switch {
		case strings.HasSuffix(g, ".attn_q.weight"), strings.HasSuffix(g, ".attn_q.bias"):
			heads = qHeads
		case strings.HasSuffix(g, ".attn_k.weight"), strings.HasSuffix(g, ".attn_k.bias"):
			heads = kHeads
		default:
			continue
		}
		if len(m.Shape) < 1 || len(m.Shape) > 2 {
			return fmt.Errorf("convert: tensor %q: shape %v: want 1 or 2 dimensions", m.Source, m.Shape)
		}
		rows, cols := m.Shape[0], int64(1)
		if len(m.Shape) == 2 {
			cols = m.Shape[1]
		}
		if heads <= 0 || rows%(2*heads) != 0 {
			return fmt.Errorf("convert: tensor %q: %d rows do not split into %d heads of even size", m.Source, rows, heads)
		}
		m.Transform = permuteRows(int(heads), int(rows), int(cols), inverse)
	}
	return nil
}

// permuteRows returns llama.cpp's rotary row permutation for a [rows, cols]
// matrix of heads heads: within each head of d rows, row j·d/2+i (j ∈ {0,1})
// goes to row 2i+j. inverse undoes it.
func permuteRows(heads, rows, cols int, inverse bool) func(dst, src []float32) {
	d := rows / heads
	half := d / 2
	return func(dst, src []float32) {
		for h := 0; h < heads; h++ {
			for i := 0; i < half; i++ {
				for j := 0; j < 2; j++ {
					hfRow := h*d + j*half + i
					ggRow := h*d + 2*i + j
					from, to := hfRow, ggRow
					if inverse {
						from, to = ggRow, hfRow
					}
					copy(dst[to*cols:(to+1)*cols], src[from*cols:(from+1)*cols])
				}
			}
		}
	}
}

func (llama) GGUFMetadata(cfg Config, fileType uint32) (tensor.Metadata, error) {
	var md tensor.Metadata
	set := func(k string, v tensor.Value) { md = append(md, tensor.KV{Key: "llama." + k, Value: v}) }
	for _, k := range []struct{ key, gguf string }{
		{"num_hidden_layers", "block_count"},
		{"max_position_embeddings", "context_length"},
		{"hidden_size", "embedding_length"},
		{"intermediate_size", "feed_forward_length"},
		{"num_attention_heads", "attention.head_count"},
	} {
		v, err := cfg.requireInt(k.key)
		if err != nil {
			return nil, err
		}
		set(k.gguf, tensor.Uint32(v))
	}
	if v, ok := cfg.Int("num_key_value_heads"); ok {
		set("attention.head_count_kv", tensor.Uint32(uint32(v)))
	}
	if v, ok := cfg.Float("rope_theta"); ok {
		set("rope.freq_base", tensor.Float32(float32(v)))
	}
	eps, err := cfg.requireFloat("rms_norm_eps")
	if err != nil {
		return nil, err
	}
	set("attention.layer_norm_rms_epsilon", tensor.Float32(eps))
	md = append(md, tensor.KV{Key: keyFileType, Value: tensor.Uint32(fileType)})
	vocab, err := cfg.requireInt("vocab_size")
	if err != nil {
		return nil, err
	}
	set("vocab_size", tensor.Uint32(vocab))
	hidden, _ := cfg.Int("hidden_size")
	heads, _ := cfg.Int("num_attention_heads")
	rope, ok := cfg.Int("head_dim")
	if !ok {
		rope = hidden / heads
	}
	set("rope.dimension_count", tensor.Uint32(uint32(rope)))
	if rs, ok := cfg["rope_scaling"].(map[string]any); ok && rs != nil {
		typ, _ := Config(rs).Str("type")
		if typ == "" {
			typ, _ = Config(rs).Str("rope_type")
		}
		f, fok := Config(rs).Float("factor")
		if typ != "linear" || !fok {
			return nil, tensor.Unsupported("convert: llama: rope_scaling %v is not supported (only linear)", rs)
		}
		set("rope.scaling.type", tensor.String("linear"))
		set("rope.scaling.factor", tensor.Float32(float32(f)))
	}
	return md, nil
}

func (a llama) ToHF(md tensor.Metadata, in []tensor.Info) ([]Mapping, []Dropped, error) {
	out, dropped, err := mapTable(llamaNames, in, false, func(string) string { return "" })
	if err != nil {
		return nil, nil, err
	}
	nHead, err := mdUint(md, "llama.attention.head_count")
	if err != nil {
		return nil, nil, err
	}
	nKV, _ := mdUint(md, "llama.attention.head_count_kv")
	qh, kh := llamaHeads(nHead, nKV)
	if err := addQKPermutation(out, qh, kh, true); err != nil {
		return nil, nil, err
	}
	return out, dropped, nil
}

func (llama) HFConfig(md tensor.Metadata, in []tensor.Info) (Config, error) {
	c := Config{"architectures": []string{"LlamaForCausalLM"}, "model_type": "llama", "hidden_act": "silu"}
	for _, k := range []struct{ gguf, key string }{
		{"block_count", "num_hidden_layers"},
		{"context_length", "max_position_embeddings"},
		{"embedding_length", "hidden_size"},
		{"feed_forward_length", "intermediate_size"},
		{"attention.head_count", "num_attention_heads"},
	} {
		v, err := mdUint(md, "llama."+k.gguf)
		if err != nil {
			return nil, err
		}
		c[k.key] = v
	}
	c["num_key_value_heads"] = c["num_attention_heads"]
	if v, err := mdUint(md, "llama.attention.head_count_kv"); err == nil {
		c["num_key_value_heads"] = v
	}
	eps, ok := mdFloat(md, "llama.attention.layer_norm_rms_epsilon")
	if !ok {
		return nil, fmt.Errorf("convert: GGUF metadata has no llama.attention.layer_norm_rms_epsilon")
	}
	c["rms_norm_eps"] = f32(eps)
	c["rope_theta"] = f32(10000) // llama.cpp's default when the key is absent
	if v, ok := mdFloat(md, "llama.rope.freq_base"); ok {
		c["rope_theta"] = f32(v)
	}
	if typ, ok := md.Str("llama.rope.scaling.type"); ok && typ != "none" {
		f, _ := mdFloat(md, "llama.rope.scaling.factor")
		if typ != "linear" {
			return nil, tensor.Unsupported("convert: llama: rope scaling %q is not supported", typ)
		}
		c["rope_scaling"] = map[string]any{"type": "linear", "factor": f32(f)}
	}
	byName := infoByName(in)
	emb, ok := byName["token_embd.weight"]
	if !ok || len(emb.Shape) != 2 {
		return nil, fmt.Errorf("convert: missing tensor %q", "token_embd.weight")
	}
	c["vocab_size"] = emb.Shape[0]
	_, hasOutput := byName["output.weight"]
	c["tie_word_embeddings"] = !hasOutput
	_, bias := byName["blk.0.attn_q.bias"]
	c["attention_bias"] = bias
	c["mlp_bias"] = false
	hidden, heads := c["hidden_size"].(int64), c["num_attention_heads"].(int64)
	if rd, err := mdUint(md, "llama.rope.dimension_count"); err == nil && heads > 0 && rd != hidden/heads {
		c["head_dim"] = rd
	}
	addSpecialIDs(c, md)
	return c, nil
}

// addSpecialIDs copies the BOS/EOS/PAD ids of the GGUF tokenizer into
// config.json, where transformers' generation defaults read them.
func addSpecialIDs(c Config, md tensor.Metadata) {
	for _, k := range []struct{ gguf, key string }{
		{"tokenizer.ggml.bos_token_id", "bos_token_id"},
		{"tokenizer.ggml.eos_token_id", "eos_token_id"},
		{"tokenizer.ggml.padding_token_id", "pad_token_id"},
	} {
		if v, ok := md.Int(k.gguf); ok {
			c[k.key] = v
		}
	}
}
