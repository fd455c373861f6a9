package arch

import "github.com/tfconv/tfconv/tensor"

// Mamba1 is the family of Mamba-1 (transformers' MambaForCausalLM, the state-spaces
// checkpoints): every layer is an RMS pre-norm and a selective-scan mixer
// (arch.Mamba), with no attention and no feed-forward. The GGUF keys and
// tensors follow the newer converter's MambaModel (conversion/mamba.py,
// testdata/arch/README.md): a fixed context of 2^20, feed_forward_length
// and head_count 0, the ssm.* sizes, A stored as −exp(A_log) (ssm_a) and
// the convolution's weight squeezed to [d_inner][d_conv]; A and D carry no
// ".weight" suffix in either form.
var Mamba1 = register(&Family{
	Name:       "mamba",
	HFClasses:  []string{"MambaForCausalLM"},
	ModelTypes: []string{"mamba"},
	HFClass:    "MambaForCausalLM", ModelType: "mamba",
	Params: []Param{
		constU32("context_length", 1<<20),
		u32("embedding_length", Required, "hidden_size", "d_model"),
		constU32("feed_forward_length", 0),
		constU32("attention.head_count", 0),
		{Key: "block_count", HF: []string{"n_layers", "num_hidden_layers", "n_layer", "num_layers"}, Out: "num_hidden_layers",
			Kind: tensor.KindUint32, Need: Required},
		{Key: "ssm.conv_kernel", HF: []string{"conv_kernel", "d_conv"}, Kind: tensor.KindUint32, Need: Default, Default: 4},
		mambaInner(),
		{Key: "ssm.state_size", HF: []string{"state_size", "d_state"}, Kind: tensor.KindUint32, Need: Default, Default: 16},
		mambaDTRank(),
		{Key: "attention.layer_norm_rms_epsilon", HF: []string{"layer_norm_epsilon", "rms_norm_eps"}, Kind: tensor.KindFloat32,
			Need: Default, Default: 1e-5},
		// Falcon-Mamba's weightless RMSNorms of Δ, B and C: never for
		// MambaForCausalLM (the converter sets it for falcon_mamba only).
		{Key: "ssm.dt_b_c_rms", Kind: tensor.KindBool,
			Derive:  func(Config) (tensor.Value, bool, error) { return tensor.Bool(false), true, nil },
			Inverse: func(Config, tensor.Value, Meta) {}},
		{Key: FileType},
	},
	Tensors: []Tensor{
		{GGUF: "token_embd", HF: []string{"backbone.embeddings", "backbone.embedding"}, Shape: []Dim{DimVocab, DimHidden}},
		{GGUF: "output_norm", HF: []string{"backbone.norm_f"}, Shape: []Dim{DimHidden}},
		{GGUF: "output", HF: []string{"lm_head"}, Shape: []Dim{DimVocab, DimHidden}, Optional: true},
		{GGUF: "blk.{bid}.attn_norm", HF: []string{mambaLayer + "norm"}, Shape: []Dim{DimHidden}},
		{GGUF: "blk.{bid}.ssm_in", HF: []string{mambaLayer + "mixer.in_proj"}, Shape: []Dim{DimInner2, DimHidden}},
		{GGUF: "blk.{bid}.ssm_conv1d", HF: []string{mambaLayer + "mixer.conv1d"}, Shape: []Dim{DimInner, DimOne, DimConvKernel}, Layout: LayoutSqueeze},
		{GGUF: "blk.{bid}.ssm_x", HF: []string{mambaLayer + "mixer.x_proj"}, Shape: []Dim{DimXProj, DimInner}},
		{GGUF: "blk.{bid}.ssm_dt", HF: []string{mambaLayer + "mixer.dt_proj"}, Shape: []Dim{DimInner, DimDTRank}},
		{GGUF: "blk.{bid}.ssm_a", HF: []string{mambaLayer + "mixer.A_log"}, Shape: []Dim{DimInner, DimState}, Layout: LayoutNegExp, NoSuffix: true},
		{GGUF: "blk.{bid}.ssm_d", HF: []string{mambaLayer + "mixer.D"}, Shape: []Dim{DimInner}, NoSuffix: true},
		{GGUF: "blk.{bid}.ssm_out", HF: []string{mambaLayer + "mixer.out_proj"}, Shape: []Dim{DimHidden, DimInner}},
	},
	HFConst: map[string]any{"hidden_act": "silu", "expand": 2, "use_conv_bias": true, "use_bias": false,
		"residual_in_fp32": true},
	Graph: Graph{Norm: RMSNorm},
	SSM:   MambaSizes,
	Pattern: func(c Config, n int) ([]Layer, error) {
		out := make([]Layer, n)
		for i := range out {
			out[i] = Layer{Mixer: Mamba, NoFFN: true}
		}
		return out, nil
	},
})

// mambaLayer is the Hugging Face prefix of a Mamba block.
const mambaLayer = "backbone.layers.{bid}."

// MambaSizes are a Mamba config's d_inner, d_state, dt_rank and d_conv as
// the converter reads them (with its defaults: 2·d_model, 16,
// ⌈d_model/16⌉, 4; time_step_rank "auto" is the default too).
func MambaSizes(c Config) (inner, state, dtRank, conv int64) {
	d, _ := c.Int("hidden_size", "d_model")
	inner, ok := c.Int("intermediate_size", "d_inner")
	if !ok || inner == 0 {
		inner = 2 * d
	}
	if state, ok = c.Int("state_size", "d_state"); !ok || state == 0 {
		state = 16
	}
	if dtRank, ok = c.Int("time_step_rank", "dt_rank"); !ok || dtRank == 0 {
		dtRank = (d + 15) / 16
	}
	if conv, ok = c.Int("conv_kernel", "d_conv"); !ok || conv == 0 {
		conv = 4
	}
	return inner, state, dtRank, conv
}

// mambaInner is ssm.inner_size: d_inner, which must be 2·d_model (the
// converter asserts it; llama.cpp's Mamba loads no other expansion).
func mambaInner() Param {
	return Param{Key: "ssm.inner_size", HF: []string{"intermediate_size"}, Kind: tensor.KindUint32, Need: Required,
		Derive: func(c Config) (tensor.Value, bool, error) {
			d, _ := c.Int("hidden_size", "d_model")
			inner, _, _, _ := MambaSizes(c)
			if inner != 2*d {
				return tensor.Value{}, false, errUnsupported("config.json: intermediate_size %d: llama.cpp's Mamba takes only an expansion of 2 (2·hidden_size = %d)", inner, 2*d)
			}
			return tensor.Uint32(uint32(inner)), true, nil
		}}
}

// mambaDTRank is ssm.time_step_rank: time_step_rank, or ⌈d_model/16⌉ when
// config.json says "auto" or nothing.
func mambaDTRank() Param {
	return Param{Key: "ssm.time_step_rank", HF: []string{"time_step_rank"}, Kind: tensor.KindUint32, Need: Required,
		Derive: func(c Config) (tensor.Value, bool, error) {
			if s, ok := c.Str("time_step_rank", "dt_rank"); ok && s != "auto" {
				return tensor.Value{}, false, errUnsupported("config.json: time_step_rank %q", s)
			}
			_, _, r, _ := MambaSizes(c)
			return tensor.Uint32(uint32(r)), true, nil
		}}
}
