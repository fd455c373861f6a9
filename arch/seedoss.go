package arch

import "github.com/tfconv/tfconv/tensor"

// SeedOss is ByteDance's Seed-OSS (SeedOssForCausalLM, the newer llama.cpp's
// "seed_oss"): Qwen2's block (Q/K/V biases, no Q/K permutation, ggml's NEOX
// rope) with its own head_dim, an optional output-projection bias
// (config.json attention_out_bias) and the pre-FFN norm named
// post_attention_norm in GGUF (the converter's tensor map for seed_oss has
// no ffn_norm). It follows the newer converter (testdata/arch/README.md).
var SeedOss = register(&Family{
	Name:       "seed_oss",
	HFClasses:  []string{"SeedOssForCausalLM"},
	ModelTypes: []string{"seed_oss"},
	HFClass:    "SeedOssForCausalLM", ModelType: "seed_oss",
	Params:   withParams(baseParams(), seedOssRopeScaling()...),
	Tensors:  seedOssTensors(),
	Drops:    []Drop{rotaryBuffer},
	HFConst:  map[string]any{"hidden_act": "silu", "mlp_bias": false},
	BiasFlag: "attention_bias",
	HFRename: func(c Config, has func(string) bool) map[string]string {
		c["attention_out_bias"] = has("blk.0.attn_output.bias")
		return nil
	},
	Graph: Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu", NeoxRopeGGUF: true, PreFFNNormPostAttention: true},
})

// seedOssRopeScaling is LLaMA's linear rope_scaling keys, refusing
// llama3's: the converter's SeedOssModel writes no rope_freqs tensor for it
// (only LlamaModel does), so its GGUF would rotate without the scaling.
func seedOssRopeScaling() []Param {
	ps := ropeScalingLinear()
	derive := ps[0].Derive
	ps[0].Derive = func(c Config) (tensor.Value, bool, error) {
		if _, llama3, err := Llama3RopeOf(c); err != nil || llama3 {
			if err == nil {
				rs, _ := c.Map("rope_scaling")
				err = errUnsupported("config.json: rope_scaling %v: seed_oss GGUF has no llama3 frequency factors", map[string]any(rs))
			}
			return tensor.Value{}, false, err
		}
		return derive(c)
	}
	return ps
}

func seedOssTensors() []Tensor {
	out := decoderTensors(false, LayoutSame)
	for i := range out {
		if out[i].GGUF == "blk.{bid}.ffn_norm" {
			out[i].GGUF = "blk.{bid}.post_attention_norm"
		}
	}
	return out
}
