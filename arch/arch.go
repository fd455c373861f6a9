package arch

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/tfconv/tfconv/tensor"
)

// Family is one architecture, stated once.
type Family struct {
	// Name is the GGUF general.architecture value ("llama").
	Name string
	// HFClasses are the config.json "architectures" entries that convert to
	// this family, as convert_hf_to_gguf.py registers them
	// ("MistralForCausalLM" converts to llama).
	HFClasses []string
	// ModelTypes are the config.json model_type values of this family.
	ModelTypes []string
	// HFClass and ModelType are written to config.json on GGUF → HF.
	HFClass, ModelType string
	// Params are the hyper-parameters in the order llama.cpp's converter
	// writes their GGUF keys; a Param with Key FileType marks where
	// general.file_type goes.
	Params []Param
	// Tensors is the tensor schema.
	Tensors []Tensor
	// Drops are Hugging Face tensors left out on purpose.
	Drops []Drop
	// Packed are Hugging Face tensors that hold several GGUF tensors or a
	// block type's data (gpt-oss's experts), read before Tensors.
	Packed []Packed
	// F32 are roles the family's converter keeps in float32 beyond
	// GGUFTensorType's rule (Qwen3-Next's shared-expert gate
	// ffn_gate_inp_shexp, which the newer converter keeps F32 and
	// c392e509's, which the older families follow, did not).
	F32 []Role
	// F16 are roles whose weight matrices the converter writes as F16 at
	// every outtype (Gemma 3's mm.input_projection in its mmproj; the LLaVA
	// projector's and patch embedding in the legacy writer's; Whisper's
	// convolution kernels a.conv1d.{bid}, whose biases stay F32).
	F16 []Role
	// Unquantized are roles the converter never quantizes nor writes as
	// BF16: F16 when the output is F16, F32 at every other outtype
	// (MmprojModel.tensor_force_quant's patch embedding and patch merger,
	// for the projectors that keep its rule: Pixtral's).
	Unquantized []Role
	// Splits are Hugging Face weights whose rows the converter regroups
	// into several GGUF roles by config.json (RowSplit), read before
	// Tensors.
	Splits []RowSplit
	// MTPNames, when set, renames the Hugging Face tensors of the
	// multi-token-prediction layers kept apart from the decoder's
	// (Qwen3-Next's mtp.*) to the layer names the schema states (layers
	// from n, the decoder's layer count) and back (inverse); other names
	// are returned as they are.
	MTPNames func(name string, n int, inverse bool) string
	// ConfigFromTensors, when set, states in c what config.json leaves to
	// the tensors present (Qwen3-Next's MTP layer count, which its
	// converter counts from the mtp.layers.N names), before the Params
	// read c on HF → GGUF.
	ConfigFromTensors func(c Config, names []string)
	// HFWarning is said on every GGUF → HF conversion (what the GGUF
	// cannot give back).
	HFWarning string
	// SuffixAliases rename old checkpoints' suffixes (".gamma" → ".weight").
	SuffixAliases map[string]string
	// SpecialConfig are config.json keys GGUF → HF fills from tokenizer
	// ids besides bos/eos/pad (BERT's).
	SpecialConfig []SpecialKey
	// ShapeKeys are config.json entries that GGUF → HF reads off a tensor's
	// shape (GPT-2's n_positions: the rows of its position table).
	ShapeKeys []ShapeKey
	// Copies are GGUF tensors the converter writes as copies of another
	// (GPT-2's output.weight); GGUF → HF drops them.
	Copies []Copy
	// Generated are GGUF tensors the converter computes from config.json
	// (written first, as generate_extra_tensors comes first).
	Generated []Generated
	// NoGGUF, when set, says why the family has no GGUF form (llama.cpp has
	// no such architecture): conversion to GGUF is refused with it.
	NoGGUF string
	// HFConst are constant config.json entries written on GGUF → HF
	// (hidden_act, the flags transformers needs that GGUF does not keep).
	HFConst map[string]any
	// HeadKeys and LayerKeys are the config.json keys of the head count
	// and the (first stack's) layer count, when not the usual
	// num_attention_heads/n_head and num_hidden_layers/n_layer.
	HeadKeys, LayerKeys []string
	// KVHeads are the config.json keys of the key/value head count
	// (default num_key_value_heads); absent, it is KVHeadsDefault, or the
	// query head count when that is 0.
	KVHeads        []string
	KVHeadsDefault int64
	// HFKVHeads, when set, is transformers' own key/value head count where
	// it differs from what the converter reads (ok false: the same).
	HFKVHeads func(c Config) (int64, bool)
	// HFFFN, when set, is the dense feed-forward width transformers builds
	// from config c where it is not intermediate_size as stated (LFM2
	// adjusts it); ok false when c does not give one.
	HFFFN func(c Config) (int64, bool)
	// HFRename, when set, adjusts a GGUF → HF conversion by the tensors
	// present: it may set config.json entries and returns HF patterns to
	// use instead of the first (GGUF pattern → HF pattern).
	HFRename func(c Config, has func(gguf string) bool) map[string]string
	// BiasFlag is the config.json key that says whether the attention
	// projections have biases ("attention_bias", "use_qkv_bias"), set from
	// the tensors on GGUF → HF; "" when the family has none.
	BiasFlag string
	// Vocab is what the family's converter changes in the tokenizer's GGUF
	// keys, whatever the tokenizer files say.
	Vocab VocabRules
	// Graph says how the forward pass is wired (model reads it).
	Graph Graph
	// SSM, for a family with Mamba layers, reads their sizes from config c
	// (its own keys, the converter's defaults): the inner width, the state
	// per channel, the Δ rank and the convolution's kernel width.
	SSM func(c Config) (inner, state, dtRank, conv int64)
	// Pattern, when set, states the family's layers from its config (in
	// Hugging Face's terms; a GGUF's is rebuilt by the Params' Inverse, so
	// every key it reads must have one): which attend fully, within a
	// window or a chunk, which rotate, which route to experts. Nil is
	// DefaultPattern of Graph. Read it through LayerPattern.
	Pattern func(c Config, n int) ([]Layer, error)
	// Mixers are the token mixers other than attention that the family's
	// layers may use (Mamba2, NoMixer, …): a runtime that lacks one does
	// not run the family.
	Mixers []Mixer
}

// Graph is what the forward pass of a decoder-only family needs beyond its
// hyper-parameters and the tensors present (biases, QK norms and post-norms
// are used when the checkpoint has them).
type Graph struct {
	// Norm is the normalisation of every norm tensor: RMSNorm or LayerNorm.
	Norm NormKind
	// FFN is gated (act(gate)·up) or plain (act(up)).
	FFN FFNKind
	// Activation is the activation when config.json names none
	// (hidden_act / hidden_activation are read first).
	Activation string
	// EmbedScale multiplies the token embeddings by √d_model (Gemma).
	EmbedScale bool
	// QKNormPerHead: the Q/K norms (when present) normalise each head
	// separately (Qwen3, Gemma 3) rather than the whole projection (OLMo 2).
	QKNormPerHead bool
	// NoPreNorm: the blocks normalise only after attention and after the
	// feed-forward (OLMo 2); the pre-norm roles are absent, not weightless.
	NoPreNorm bool
	// EncoderOnly: bidirectional attention, no language-model head (BERT).
	EncoderOnly bool
	// EncoderDecoder: an encoder and a decoder with cross-attention (T5).
	EncoderDecoder bool
	// LearnedPositions: a position table instead of rotary positions
	// (GPT-2).
	LearnedPositions bool
	// Sliding says which layers attend within config.json's
	// sliding_window (GGUF attention.sliding_window).
	Sliding Sliding
	// LocalRopeBase: the sliding layers rotate with their own base
	// (config.json rope_local_base_freq, GGUF rope.freq_base_swa; 10000).
	LocalRopeBase bool
	// Parallel: attention and feed-forward read the same input and their
	// outputs are added together (config.json's use_parallel_residual or
	// parallel_attn, when present, decides).
	Parallel bool
	// FusedGateUp: ffn_up holds the gate rows, then the up rows (Phi-3).
	FusedGateUp bool
	// MoENormTopK: a mixture renormalises its top-k routing weights to sum
	// 1 (Mixtral); config.json's norm_topk_prob, when present, decides for
	// Hugging Face input.
	MoENormTopK bool
	// MoESigmoid: a mixture's router scores are sigmoids, not a softmax
	// (GLM-4.5, dots.llm1, MiniMax-M2: their config.json states none);
	// config.json's scoring_func, when present, decides (GGUF
	// expert_gating_func). The choice bias (exp_probs_b), expert groups
	// (n_group, topk_group) and routed_scaling_factor apply wherever the
	// checkpoint states them.
	MoESigmoid bool
	// NeoxRopeGGUF: the GGUF form rotates halves (ggml's NEOX rope), as
	// Hugging Face does; false when the converter permuted Q/K rows
	// (LayoutPermuteQ) and ggml rotates adjacent pairs.
	NeoxRopeGGUF bool
	// NoRopeStep: every NoRopeStep-th layer (i+1 a multiple of it) applies
	// no rotary position at all (SmolLM3: 4, which llama.cpp fixes in its
	// graph); 0 when every layer rotates. On Hugging Face input
	// config.json's no_rope_layers (1 rotates, 0 does not) decides.
	NoRopeStep int
	// AdjacentRopeHF: the Hugging Face form rotates adjacent pairs of each
	// head's rotated part (GLM-4's and ERNIE 4.5's interleaved rotary,
	// Llama 4's complex-number rotary), as the GGUF form does; the converter
	// does not permute Q/K (NeoxRopeGGUF false).
	AdjacentRopeHF bool
	// QKL2Norm: the rotating layers scale each head of Q and K to unit
	// root mean square after RoPE, without weights (Llama 4's L2 norm, eps
	// rms_norm_eps); config.json's use_qk_norm, when stated, decides.
	QKL2Norm bool
	// AttnTempNoRope: the layers without RoPE multiply each query at
	// position p by log(⌊(p+1)/floor_scale⌋+1)·attn_scale+1 (Llama 4's
	// attention temperature tuning; config.json's floor_scale, attn_scale
	// and attn_temperature_tuning).
	AttnTempNoRope bool
	// MoEScaleInput: each chosen expert's routing weight scales the
	// expert's input rather than its output (Llama 4, whose weights are the
	// sigmoids of the top-k router logits: MoESigmoid, not renormalised);
	// a shared expert without a gate of its own is added as it is.
	MoEScaleInput bool
	// PreFFNNormPostAttention: the norm before the feed-forward is named
	// blk.N.post_attention_norm in GGUF (Seed-OSS: the newer converter's
	// tensor map has no ffn_norm for it), not a post-norm of attention.
	PreFFNNormPostAttention bool
	// QKNormAfterRope: the per-head Q/K norms apply to the rotated queries
	// and keys (Hunyuan), not before the rotation (Qwen3).
	QKNormAfterRope bool
	// QueryGate: the query projection gives each head its query and then
	// as many gate values (Qwen3-Next's q_proj, twice heads · head_dim
	// rows), and the attention's output is multiplied by their sigmoids
	// before the output projection.
	QueryGate bool
	// ClampedGLU, when set, is the experts' gated unit in place of
	// act(gate)·up (gpt-oss).
	ClampedGLU *ClampedGLU
	// FinalNorm, when set, is the role of the norm after the last block in
	// place of output_norm (LFM2's model.embedding_norm, which llama.cpp
	// names token_embd_norm though it is applied last).
	FinalNorm Role
	// EmbedNorm: the token embeddings pass through the norm
	// token_embd_norm before the first block (RWKV-7's ln0).
	EmbedNorm bool
	// FFNNorm, when set, is the role of the norm before the feed-forward
	// in place of ffn_norm (RWKV-7's attn_norm_2, llama.cpp's name for its
	// ln2).
	FFNNorm Role
}

// ClampedGLU is gpt-oss's gated unit: with the gate g clamped above at
// Limit and up u clamped to [-Limit, Limit], (u + 1)·g·σ(Alpha·g).
type ClampedGLU struct{ Alpha, Limit float32 }

// RopeLayer reports whether layer i of n rotates its queries and keys:
// no_rope_layers[i] != 0 when the list (config.json) has n entries, else
// the family's NoRopeStep.
func (g Graph) RopeLayer(i int, noRopeLayers []int64) bool {
	if noRopeLayers != nil {
		return i < len(noRopeLayers) && noRopeLayers[i] != 0
	}
	return g.NoRopeStep <= 0 || (i+1)%g.NoRopeStep != 0
}

// VocabRules are a family's own tokenizer.ggml.* settings.
type VocabRules struct {
	// AddSpacePrefix, when set, is written as add_space_prefix (Gemma:
	// false); NoAddSpacePrefix leaves the key out (Phi-3).
	AddSpacePrefix   *bool
	NoAddSpacePrefix bool
	// SpacePrefixFromConfig: tokenizer_config.json's add_prefix_space, when
	// stated, is written as add_space_prefix (the newer converter's
	// LlamaModel.set_vocab does so; c392e509's did not).
	SpacePrefixFromConfig bool
	// SpacePrefixFromConfigFor: SpacePrefixFromConfig for a checkpoint of
	// one of these config.json classes only. A family that follows
	// c392e509's converter keeps that converter's rule for its own classes;
	// the text halves of multimodal classes (LLaVA, SmolVLM), which only the
	// newer converter converts, follow the newer one's.
	SpacePrefixFromConfigFor []string
	// SpecialIDs are token ids the converter sets by family ("eot" → 107
	// for Gemma), written after the tokenizer's own.
	SpecialIDs []SpecialID
	// IDsFromConfig are special ids the converter takes from config.json
	// keys over the tokenizer's own (Hunyuan: eod_token_id as EOS).
	IDsFromConfig []ConfigID
	// AddBOS, when set, is written as add_bos_token whatever the tokenizer
	// files say (Nemotron-H: true; its tokenizer adds BOS by its
	// post-processor and tokenizer_config.json does not say so).
	AddBOS *bool
	// SpecialTokens are special token kinds the converter takes from an
	// added token found by its text (GLM-4's eot is "<|user|>"), each set
	// only when the tokenizer files state none of that kind, after the
	// tokenizer's own ids in this order; a tokenizer without the token is
	// refused, as the converter fails on it.
	SpecialTokens []SpecialToken
}

// SpecialToken is a special token kind set from the token of that text
// ("eot", "<|user|>" → tokenizer.ggml.eot_token_id).
type SpecialToken struct {
	Kind, Text string
}

// ConfigID is a special token id read from a config.json key ("eos" ←
// eod_token_id).
type ConfigID struct{ Kind, Key string }

// SpecialID is one fixed special token id ("eot" → tokenizer.ggml.eot_token_id).
type SpecialID struct {
	Kind string
	ID   uint32
}

// Sliding is which layers of a family use a sliding attention window.
type Sliding uint8

// The sliding-window layouts.
const (
	NoSliding      Sliding = iota
	SlidingEven            // layers 0, 2, 4, … (Gemma 2)
	SlidingPattern         // all but every sliding_window_pattern-th (default 6; Gemma 3)
)

// SlidingLayer reports whether layer i of a model with pattern p (Gemma 3's
// sliding_window_pattern) uses the window.
func (s Sliding) SlidingLayer(i, p int) bool {
	switch s {
	case SlidingEven:
		return i%2 == 0
	case SlidingPattern:
		if p <= 0 {
			p = 6
		}
		return (i+1)%p != 0
	}
	return false
}

// NormKind is RMSNorm or LayerNorm.
type NormKind uint8

// The norms.
const (
	RMSNorm NormKind = iota
	LayerNorm
)

// FFNKind is the feed-forward wiring.
type FFNKind uint8

// The feed-forward kinds.
const (
	Gated FFNKind = iota // down(act(gate(x)) ⊙ up(x))
	Plain                // down(act(up(x)))
)

// Layout is how a tensor's values change between the HF and GGUF forms.
type Layout uint8

// The layout changes, HF → GGUF (GGUF → HF applies the inverse).
const (
	LayoutSame Layout = iota
	// LayoutPermuteQ permutes rows per head (num_attention_heads heads):
	// within a head of d rows, row j·d/2+i goes to row 2i+j, so ggml's
	// adjacent-pair rope reproduces HF's rotate-half (weights and biases).
	LayoutPermuteQ
	// LayoutPermuteK is LayoutPermuteQ with num_key_value_heads heads.
	LayoutPermuteK
	// LayoutNormPlusOne adds 1 to a norm weight: Gemma multiplies by
	// (1 + w), llama.cpp by the stored w (".weight" only).
	LayoutNormPlusOne
	// LayoutTranspose swaps the last two dimensions (GPT-2's Conv1D; each
	// expert's matrix of Llama 4's stacked [expert][in][out] experts).
	LayoutTranspose
	// LayoutNegExp stores −exp(w) (Mamba's and Qwen3-Next's A_log as
	// llama.cpp's ssm_a); the inverse is log(−w).
	LayoutNegExp
	// LayoutSqueeze drops the unit middle dimension of a depthwise
	// convolution's [channels][1][kernel] weight (GGUF [channels][kernel];
	// weights only, its bias is 1-D); the values do not move.
	LayoutSqueeze
	// LayoutQKVGroups regroups a fused QKV projection's rows from Hugging
	// Face's per-group interleave [kv group][heads/groups queries, k, v]
	// [head_dim] to [all q heads, all k heads, all v heads][head_dim]
	// (Falcon; GPT-NeoX is the case of one group per head: [head][q,k,v];
	// weights and biases).
	LayoutQKVGroups
	// LayoutFlatten makes a [heads][head_dim] tensor one row of
	// heads·head_dim (RWKV-7's r_k); the values do not move, and GGUF → HF
	// cuts the row by the query head count.
	LayoutFlatten
)

// Tensor is one weight role.
type Tensor struct {
	// GGUF is the llama.cpp name without suffix ("blk.{bid}.attn_q").
	GGUF string
	// HF are the Hugging Face name patterns without suffix; the first is
	// written on GGUF → HF.
	HF []string
	// Shape is the weight's shape in the HF form, outermost first, in
	// named sizes (Dim*); a bias has the first dimension only.
	Shape []Dim
	// Layout is the change between the forms.
	Layout Layout
	// Optional tensors may be missing (biases are always optional; a
	// non-optional ".weight" must be present).
	Optional bool
	// Aliases: the HF patterns name copies of one tensor (T5's shared and
	// embed_tokens); the first met is converted, the others dropped as tied.
	Aliases bool
	// Unless, on a non-optional role, names the role that replaces it in a
	// layer that has it (a mixture's router in place of the dense
	// feed-forward): then this one is not required.
	Unless Role
	// Mixers, when set, are the layer mixers whose layers hold this role
	// (by the family's Pattern): LFM2's short-convolution roles are only
	// in its conv layers, its attention roles only in the others. Nil:
	// every layer.
	Mixers []Mixer
	// Stack, when set, is how many tensors Hugging Face keeps for this
	// role, one per index ({xid} in its patterns: StableLM's per-head
	// norms, and experts): GGUF holds them stacked along a new outermost
	// dimension, index order. Shape is one part's.
	Stack Dim
	// Split, when set, says Hugging Face keeps this role and others of
	// the family in one tensor, cut along one axis: HF → GGUF writes each
	// role's part of it, GGUF → HF joins them back. Every role of the
	// tensor names the same HF pattern and states its part's Shape (in
	// Hugging Face's orientation, before the role's Layout).
	Split *Split
	// With, when set, is the role this one needs beside it in its layer to
	// be what the Hugging Face tensor holds; without it the next role of
	// the same Hugging Face pattern is (GraniteMoE's shared_mlp: the shared
	// expert beside a router, the dense feed-forward otherwise). Resolving
	// a name without the checkpoint's other names (FromHF) takes the first.
	With Role
	// HFSuffix, when set, is what Hugging Face ends the name with instead
	// of the ".weight"/".bias" suffix (DeepSeek-V3's
	// "mlp.gate.e_score_correction_bias"); the family's SuffixAliases read
	// it as the GGUF suffix.
	HFSuffix string
	// PadTo, when set, is the config.json key of the row count the
	// converter pads this table to with zero rows when Hugging Face's has
	// fewer (Gemma 3n's embeddings: vocab_size, past the 262144 rows of the
	// per-layer table). GGUF → HF keeps the padded rows.
	PadTo string
	// NoSuffix: the tensor's names end without ".weight" or ".bias" in
	// both forms (Mamba's A_log and D; llama.cpp's blk.N.ssm_a and
	// blk.N.ssm_d).
	NoSuffix bool
	// Reshape, when set, is how the GGUF form reshapes this 1-D Hugging
	// Face tensor (Mamba-2's A and D, its gated norm); GGUF → HF flattens
	// it back.
	Reshape Reshape
	// NoSuffixGGUF: the GGUF name alone ends without ".weight", though the
	// Hugging Face one has it (Falcon-H1's blk.N.ffn_norm, which its
	// converter maps from the full pre_ff_layernorm.weight).
	NoSuffixGGUF bool
	// NoSuffixHF: the Hugging Face name alone ends without ".weight"
	// (fla's RWKV-7 parameters x_r, k_k, r_k, ffn.x_k, which the converter
	// writes with ".weight").
	NoSuffixHF bool
	// Parts, when set, name the parts of a stacked role (Stack): {xid} in
	// the Hugging Face patterns is a part's name rather than its index,
	// and GGUF stacks them in this order (RWKV-7's x_r, x_w, x_k, x_v, x_a
	// and x_g, fused into time_mix_lerp_fused).
	Parts []string
	// Blocks, when set, is the config.json list that numbers this role's
	// GGUF blocks: Hugging Face's block {bid} is the GGUF's block
	// list[{bid}] (Qwen3-VL's deepstack mergers: deepstack_merger_list.J
	// is v.deepstack.<deepstack_visual_indexes[J]>). Such a role is
	// Optional (not every block has one); HF → GGUF only.
	Blocks string
	// MLX, on a Stack role, is the name pattern (no suffix, {bid} the
	// layer) under which mlx-lm keeps the parts stacked along a new
	// outermost dimension, index order (its sanitize: qwen3_moe's
	// mlp.switch_mlp.gate_proj).
	MLX string
	// MLXBits and MLXGroup, when set, are the bits and group size
	// mlx-lm's quant_predicate gives this role's layer in place of the
	// checkpoint's (qwen3_moe's router: 8 bits, group 64), written as a
	// per-layer entry of config.json's quantization.
	MLXBits, MLXGroup int
	// Scales, when set, are the factors the converter multiplies rows of
	// this weight by, in order (Falcon-H1 folds its μP multipliers into
	// the weights), read from config.json. GGUF → HF keeps the products in
	// the weights; the family writes the multipliers as 1 (HFConst).
	Scales func(c Config) ([]RowScale, error)
}

// RowScale multiplies rows [From, To) of a weight (To 0: to the last row)
// by Factor, in float32 as the converter's torch does.
type RowScale struct {
	From, To int64
	Factor   float32
}

// Reshape is a change of shape alone between a 1-D Hugging Face tensor of
// n elements and its GGUF form (the values keep their order).
type Reshape uint8

// The reshapes.
const (
	ReshapeNone Reshape = iota
	// ReshapeColumn makes [n] a column [n][1] (Mamba-2's A and D, which the
	// converter unsqueezes "to use similar shape semantics as Mamba-1").
	ReshapeColumn
	// ReshapeGroups makes [n] into [g][n/g] for the config's g state-space
	// groups (SSMGroups): Mamba-2's gated norm, which normalises each group.
	ReshapeGroups
	// ReshapeBiasColumn makes the role's bias [n] a column [n][1] and
	// leaves its weight as it is (Whisper's conv1/conv2, whose biases the
	// converter unsqueezes to add them to the convolution's [n][t] output).
	ReshapeBiasColumn
)

// Drop is a Hugging Face tensor left out of the GGUF on purpose.
type Drop struct {
	// Suffix, Prefix or Name selects the tensor (Name: the whole name).
	Suffix, Prefix, Name string
	Reason               string
	// Warn: the conversion also says it in a warning (a part of the model
	// left out, such as a vision tower), not only among the dropped.
	Warn bool
	// PastLayers selects the tensors of the layers numbered
	// num_hidden_layers and on (DeepSeek-V3's and Kimi K2's
	// multi-token-prediction layer, which the converter skips).
	PastLayers bool
}

// ShapeKey is a config.json entry equal to one dimension (outermost first)
// of a GGUF tensor; Default when the tensor is absent (0: the tensor is
// required).
type ShapeKey struct {
	Key, Tensor string
	Axis        int
	Default     int64
}

// SpecialKey copies a GGUF tokenizer id into config.json.
type SpecialKey struct{ GGUF, Key string }

// Copy is a GGUF tensor written as a copy of another, right after it
// (right before it: Before).
type Copy struct {
	GGUF, Of string // full names
	// Before: the converter writes the copy first (RWKV-7's layer-0
	// time_mix_v0/v1/v2, copies of time_mix_a0/a1/a2 llama.cpp loads and
	// never uses).
	Before   bool
	UnlessHF string // no copy when the checkpoint has this HF tensor (an untied head)
	Reason   string // why GGUF → HF drops it
	// HF is the Hugging Face tensor GGUF → HF writes the copy as when its
	// bytes are not Of's (an untied head, or a head quantized to another
	// type), with tie_word_embeddings false; a copy equal to Of byte for
	// byte is dropped and the head tied.
	HF string
}

// Generated is a GGUF tensor computed from the config (Llama 3's
// rope_freqs). Make returns nil when the config calls for none.
type Generated struct {
	GGUF   string // full name ("rope_freqs.weight")
	Make   func(c Config) ([]float32, error)
	Reason string // why it exists, for GGUF → HF (where it is dropped)
	// Invert states the values in config.json on GGUF → HF (c holds the
	// rest of the config already), or fails when they cannot be.
	Invert func(values []float32, c Config) error
}

// Role names the GGUF form of a tensor: "blk.{bid}.attn_q".
type Role = string

// families are the registered families, in registration order.
var families []*Family

// register adds f; called from the families' files. A second family with
// the same GGUF name, config.json model_type (the two share ByName's one
// namespace, case aside) or "architectures" class panics, as
// archive/zip.RegisterDecompressor does on a second method: which of the
// two a lookup returned would depend on the order of the files.
func register(f *Family) *Family {
	names := map[string]string{}   // lower-cased GGUF name or model_type → the family that has it
	classes := map[string]string{} // HF class → the family that has it
	for _, g := range families {
		names[strings.ToLower(g.Name)] = g.Name
		for _, t := range g.ModelTypes {
			names[strings.ToLower(t)] = g.Name
		}
		for _, c := range g.HFClasses {
			classes[c] = g.Name
		}
	}
	for _, n := range append([]string{f.Name}, f.ModelTypes...) {
		if g, ok := names[strings.ToLower(n)]; ok {
			panic(fmt.Sprintf("arch: family %q registered twice: %q is already the name or a model_type of %s", f.Name, n, g))
		}
	}
	seen := map[string]bool{}
	for _, n := range f.HFClasses {
		if g, ok := classes[n]; ok {
			panic(fmt.Sprintf("arch: family %q registered twice: config.json class %q already converts to %s", f.Name, n, g))
		}
		if seen[n] {
			panic(fmt.Sprintf("arch: family %q lists config.json class %q twice", f.Name, n))
		}
		seen[n] = true
	}
	families = append(families, f)
	return f
}

// Families lists every family, sorted by name.
func Families() []*Family {
	out := append([]*Family(nil), families...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Names lists the GGUF architecture names of every family, sorted.
func Names() []string {
	var out []string
	for _, f := range Families() {
		out = append(out, f.Name)
	}
	return out
}

// ByName returns the family with GGUF architecture name (or config.json
// model_type) name.
func ByName(name string) (*Family, bool) {
	name = strings.ToLower(name)
	for _, f := range families {
		if f.Name == name {
			return f, true
		}
	}
	for _, f := range families {
		for _, t := range f.ModelTypes {
			if t == name {
				return f, true
			}
		}
	}
	return nil, false
}

// ForConfig returns the family of a config.json: by its first
// "architectures" entry, as convert_hf_to_gguf.py chooses, then by
// model_type.
func ForConfig(c Config) (*Family, bool) {
	if list, ok := c["architectures"].([]any); ok && len(list) > 0 {
		if cls, ok := list[0].(string); ok {
			for _, f := range families {
				for _, h := range f.HFClasses {
					if h == cls {
						return f, true
					}
				}
			}
		}
	}
	if mt, ok := c.Str("model_type"); ok {
		return ByName(mt)
	}
	return nil, false
}

// Supported lists the GGUF architecture names of the families that have a
// GGUF form (NoGGUF unset), sorted: what convert writes as GGUF.
func Supported() []string {
	var out []string
	for _, f := range Families() {
		if f.NoGGUF == "" {
			out = append(out, f.Name)
		}
	}
	return out
}

// Lookup returns the family with a GGUF form for a GGUF
// general.architecture value or a config.json model_type. An unknown name
// is an error listing the supported ones, a family without a GGUF form one
// saying why; both wrap tensor.ErrUnsupported.
func Lookup(name string) (*Family, error) {
	f, ok := ByName(name)
	switch {
	case ok && f.NoGGUF == "":
		return f, nil
	case ok:
		// A family tfconv reads and repacks (native, safetensors) but that
		// llama.cpp has no GGUF architecture for: inventing names and keys
		// would make files nothing loads.
		return nil, tensor.Unsupported("arch: %s: %s; convert it to native (--to native) or safetensors instead (GGUF architectures: %s)",
			name, f.NoGGUF, strings.Join(Supported(), ", "))
	}
	return nil, tensor.Unsupported("arch: unknown architecture %q (supported: %s)", name, strings.Join(Supported(), ", "))
}

// LookupConfig is Lookup for a config.json: its "architectures" class
// first, as convert_hf_to_gguf.py chooses (MistralForCausalLM converts as
// llama), then its model_type.
func LookupConfig(c Config) (*Family, error) {
	if f, ok := ForConfig(c); ok {
		return Lookup(f.Name)
	}
	mt, _ := c.Str("model_type")
	return Lookup(mt)
}

// GGUFName returns the GGUF name of the Hugging Face tensor hfName in
// architecture arch (a GGUF architecture name or HF model_type), as
// llama.cpp's converter names it: "model.layers.3.self_attn.q_proj.weight"
// → "blk.3.attn_q.weight". ok is false for tensors that have no GGUF
// counterpart (dropped buffers, unknown names). It is the matching other
// tools (tfconv diff, quantize's rules on Hugging Face output) use to pair
// HF and GGUF tensors; note that some pairs also differ in layout (LLaMA's
// Q/K rows are permuted, GPT-2's Conv1D weights are transposed), which the
// name alone does not say.
func GGUFName(arch, hfName string) (string, bool) {
	f, err := Lookup(arch)
	if err != nil {
		return "", false
	}
	m, ok := f.FromHF(hfName)
	if !ok {
		return "", false
	}
	return m.Name(true), true
}

// HFName is the inverse of GGUFName: "blk.3.attn_q.weight" →
// "model.layers.3.self_attn.q_proj.weight".
func HFName(arch, ggufName string) (string, bool) {
	f, err := Lookup(arch)
	if err != nil {
		return "", false
	}
	m, ok := f.FromGGUF(ggufName)
	if !ok {
		return "", false
	}
	return m.Name(false), true
}

// SplitName cuts name into its pattern ("{bid}" for the first all-digit
// part, as llama.cpp's converter takes the block id), the layer number (-1
// when none) and the ".weight"/".bias" suffix.
func SplitName(name string) (pattern string, bid int, suffix string) {
	bid = -1
	for _, s := range []string{".weight", ".bias"} {
		if strings.HasSuffix(name, s) {
			name, suffix = strings.TrimSuffix(name, s), s
			break
		}
	}
	parts := strings.Split(name, ".")
	for i, p := range parts {
		if n, err := strconv.Atoi(p); err == nil && n >= 0 && p == strconv.Itoa(n) {
			parts[i] = "{bid}"
			bid = n
			break
		}
	}
	return strings.Join(parts, "."), bid, suffix
}

// expand puts the layer number into a pattern (and index 0 for {xid}:
// the first part of a stacked role).
func expand(pattern string, bid int) string { return expandAt(pattern, bid, 0) }

// ExpandPart is pattern with layer bid and part xid put in (a stacked
// role's name of one part).
func ExpandPart(pattern string, bid, xid int) string { return expandAt(pattern, bid, xid) }

// expandAt puts the layer number and the part index into a pattern.
func expandAt(pattern string, bid, xid int) string {
	pattern = strings.Replace(pattern, "{bid}", strconv.Itoa(bid), 1)
	return strings.Replace(pattern, "{xid}", strconv.Itoa(xid), 1)
}

// splitIndex turns the first all-digit part of a pattern left by
// SplitName into {xid}, returning its value (-1, pattern unchanged: none).
func splitIndex(pattern string) (string, int) {
	parts := strings.Split(pattern, ".")
	for i, p := range parts {
		if n, err := strconv.Atoi(p); err == nil && n >= 0 && p == strconv.Itoa(n) {
			parts[i] = "{xid}"
			return strings.Join(parts, "."), n
		}
	}
	return pattern, -1
}

// Match is one tensor name resolved against the schema.
type Match struct {
	Tensor *Tensor
	Layer  int    // -1 outside the layers
	Index  int    // the part of a stacked role ({xid}); -1 otherwise
	Suffix string // ".weight" or ".bias"
}

// Name is the tensor's name in the other form.
func (m Match) Name(toGGUF bool) string {
	p, suffix := m.Tensor.GGUF, m.Suffix
	if !toGGUF && len(m.Tensor.HF) > 0 {
		p = m.Tensor.HF[0]
		if m.Tensor.HFSuffix != "" {
			suffix = m.Tensor.HFSuffix
		}
	}
	if suffix == ".weight" && m.Tensor.noSuffix(!toGGUF) {
		suffix = ""
	}
	return m.Tensor.partName(p, m.Layer, max(m.Index, 0)) + suffix
}

// FromHF resolves a Hugging Face tensor name (old suffixes such as .gamma
// read as their aliases).
func (f *Family) FromHF(name string) (Match, bool) { return f.FromHFIn(name, nil) }

// FromHFIn is FromHF in a checkpoint whose tensor names has tells (nil:
// unknown), which decides between roles of one pattern (Tensor.With).
func (f *Family) FromHFIn(name string, has func(string) bool) (Match, bool) {
	for old, alias := range f.SuffixAliases {
		if s, ok := strings.CutSuffix(name, old); ok {
			name = s + alias
		}
	}
	return f.resolve(name, true, has)
}

// FromGGUF resolves a GGUF tensor name.
func (f *Family) FromGGUF(name string) (Match, bool) { return f.resolve(name, false, nil) }

// withMet reports whether t's With role is in layer bid of a checkpoint
// whose names has tells (true when t needs none, or nothing is known).
func (f *Family) withMet(t *Tensor, bid int, has func(string) bool) bool {
	if t.With == "" || has == nil {
		return true
	}
	for _, n := range f.TensorName(t.With, bid, true, ".weight") {
		if has(n) {
			return true
		}
	}
	return false
}

func (f *Family) resolve(name string, hf bool, has func(string) bool) (Match, bool) {
	pat, bid, suffix := SplitName(name)
	if m, ok := f.resolveLiteral(name, bid, suffix, hf); ok {
		return m, true
	}
	if suffix == "" {
		for i := range f.Tensors {
			t := &f.Tensors[i]
			if !t.NoSuffix && (hf && !t.NoSuffixHF || !hf && !t.NoSuffixGGUF) {
				continue
			}
			pats := t.HF
			if !hf {
				pats = []string{t.GGUF}
			}
			if slices.Contains(pats, pat) {
				m := Match{Tensor: t, Layer: bid, Index: -1}
				if !t.NoSuffix {
					m.Suffix = ".weight" // the role's weight, named so in the other form
				}
				return m, true
			}
		}
		return Match{}, false
	}
	find := func(pat string, stacked bool) (*Tensor, bool) {
		for i := range f.Tensors {
			t := &f.Tensors[i]
			if (t.Stack != 0) != stacked || hf && !f.withMet(t, bid, has) {
				continue
			}
			pats := t.HF
			if !hf {
				pats = []string{t.GGUF}
			}
			for _, p := range pats {
				if p == pat {
					return t, true
				}
			}
		}
		return nil, false
	}
	if t, ok := find(pat, false); ok {
		return Match{Tensor: t, Layer: bid, Index: -1, Suffix: suffix}, true
	}
	if hf {
		if xpat, xid := splitIndex(pat); xid >= 0 {
			if t, ok := find(xpat, true); ok {
				return Match{Tensor: t, Layer: bid, Index: xid, Suffix: suffix}, true
			}
		}
		// a stack outside the layers: its index is the name's first number
		if xpat := strings.Replace(pat, "{bid}", "{xid}", 1); bid >= 0 && xpat != pat {
			if t, ok := find(xpat, true); ok {
				return Match{Tensor: t, Layer: -1, Index: bid, Suffix: suffix}, true
			}
		}
	} else if t, ok := find(pat, true); ok {
		return Match{Tensor: t, Layer: bid, Index: -1, Suffix: suffix}, true
	}
	return Match{}, false
}

// resolveLiteral resolves the names the patterns state with a fixed
// number (RWKV-7's model.layers.0.pre_norm, the embedding's norm: no layer
// of its own; a projector's mm.0 and mm.2, v.patch_embd.weight.1) or, in
// Hugging Face's form, a part's name (Tensor.Parts), which SplitName's
// digits do not find.
func (f *Family) resolveLiteral(name string, bid int, suffix string, hf bool) (Match, bool) {
	base := strings.TrimSuffix(name, suffix)
	for i := range f.Tensors {
		t := &f.Tensors[i]
		pats := t.HF
		if !hf {
			pats = []string{t.GGUF}
		}
		for _, p := range pats {
			switch {
			case len(t.Parts) > 0 && hf:
				for x := range t.Parts {
					if t.partName(p, bid, x) == base && (suffix == "") == t.noSuffix(true) {
						return Match{Tensor: t, Layer: bid, Index: x, Suffix: cmp.Or(suffix, ".weight")}, true
					}
				}
			case !strings.Contains(p, "{") && p == base && strings.ContainsAny(p, "0123456789"):
				m := Match{Tensor: t, Layer: -1, Index: -1, Suffix: suffix}
				if suffix == "" && !t.NoSuffix {
					m.Suffix = ".weight"
				}
				return m, true
			}
		}
	}
	return Match{}, false
}

// DropReason says why the HF tensor name is left out of the GGUF, or ""
// (a Drop.PastLayers one is not known without the config).
func (f *Family) DropReason(name string) string {
	d, _ := f.dropOf(name, -1)
	return d.Reason
}

// dropOf is the Drop that selects the HF tensor name of a model of
// layers decoder layers (< 0: not known).
func (f *Family) dropOf(name string, layers int) (Drop, bool) {
	for _, d := range f.Drops {
		if d.PastLayers {
			if _, bid, _ := SplitName(name); layers >= 0 && bid >= layers {
				return d, true
			}
			continue
		}
		if (d.Name != "" && d.Name == name) || (d.Suffix != "" && strings.HasSuffix(name, d.Suffix)) ||
			(d.Prefix != "" && strings.HasPrefix(name, d.Prefix)) {
			return d, true
		}
	}
	return Drop{}, false
}

// Tensor returns the schema entry whose GGUF pattern is gguf.
func (f *Family) Tensor(gguf string) (*Tensor, bool) {
	for i := range f.Tensors {
		if f.Tensors[i].GGUF == gguf {
			return &f.Tensors[i], true
		}
	}
	return nil, false
}

// TensorName is the name of role (a GGUF pattern) at layer in the given
// naming ("hf" or "gguf"), with suffix; "" when the family has no such
// role. A stacked role's HF names are those of part 0 (TensorPartName).
func (f *Family) TensorName(role Role, layer int, hf bool, suffix string) []string {
	t, ok := f.Tensor(role)
	if !ok {
		return nil
	}
	if suffix == ".weight" && t.noSuffix(hf) {
		suffix = ""
	}
	if !hf {
		return []string{expand(t.GGUF, layer) + suffix}
	}
	if t.HFSuffix != "" {
		suffix = t.HFSuffix
	}
	var out []string
	for _, p := range t.HF {
		out = append(out, expand(p, layer)+suffix)
	}
	return out
}

// TensorPartName is the HF name of part xid of a stacked role at layer,
// by its first pattern.
func (f *Family) TensorPartName(role Role, layer, xid int, suffix string) string {
	t, ok := f.Tensor(role)
	if !ok || len(t.HF) == 0 {
		return ""
	}
	if suffix == ".weight" && t.noSuffix(true) {
		suffix = ""
	}
	return t.partName(t.HF[0], layer, xid) + suffix
}

// Layout returns the layout change of m for its suffix: the permutations
// apply to weights and biases, the norm +1 to weights only.
func (m Match) Layout() Layout {
	l := m.Tensor.Layout
	if (l == LayoutNormPlusOne || l == LayoutTranspose || l == LayoutSqueeze || l == LayoutFlatten) && m.Suffix != ".weight" {
		return LayoutSame // biases are 1-D
	}
	return l
}

// suffix is what the tensor's weight name ends with in the Hugging Face
// (hf) or the GGUF form: ".weight", or nothing (NoSuffix, NoSuffixGGUF).
func (t *Tensor) suffix(hf bool) string {
	if t.noSuffix(hf) {
		return ""
	}
	return ".weight"
}

// noSuffix reports whether the weight's name has no suffix in that form.
func (t *Tensor) noSuffix(hf bool) bool {
	return t.NoSuffix || !hf && t.NoSuffixGGUF || hf && t.NoSuffixHF
}

// partName is pattern with layer bid and part xid put in: the part's name
// when the role names its parts (Parts), its index otherwise.
func (t *Tensor) partName(pattern string, bid, xid int) string {
	if xid >= 0 && xid < len(t.Parts) {
		pattern = strings.Replace(pattern, "{bid}", strconv.Itoa(bid), 1)
		return strings.Replace(pattern, "{xid}", t.Parts[xid], 1)
	}
	return expandAt(pattern, bid, xid)
}

// Required lists the GGUF names of the non-optional weights for a model of
// n layers of pattern (nil when not known: every role in every layer); has
// says which GGUF names are present, for the roles another one replaces
// (Tensor.Unless).
func (f *Family) Required(n int, pattern []Layer, has func(string) bool) []string {
	var out []string
	for _, t := range f.Tensors {
		if t.Optional {
			continue
		}
		if strings.Contains(t.GGUF, "{bid}") {
			for b := 0; b < n; b++ {
				if t.Unless != "" && has(expand(t.Unless, b)+".weight") {
					continue
				}
				if !t.InLayer(pattern, b) {
					continue
				}
				out = append(out, expand(t.GGUF, b)+t.suffix(false))
			}
		} else {
			out = append(out, t.GGUF+t.suffix(false))
		}
	}
	return out
}

// InLayer reports whether layer b of a model of pattern holds role t
// (Tensor.Mixers; true when the pattern does not say).
func (t *Tensor) InLayer(pattern []Layer, b int) bool {
	return len(t.Mixers) == 0 || b < 0 || b >= len(pattern) || slices.Contains(t.Mixers, pattern[b].Mixer)
}

// NestedTextConfig refuses a config.json that keeps the text model's keys
// under text_config (a multimodal class's, as google's Gemma 3n checkpoints
// do) where nothing has lifted them to the top level as llama.cpp's
// converter does (checkpoint.Config does, for every reader through it), so
// the error says that rather than naming a missing key.
func NestedTextConfig(c Config) error {
	if _, nested := c.Map("text_config"); nested && !c.Has("num_hidden_layers") {
		return errUnsupported("config.json: the text model's hyper-parameters are under text_config (a multimodal checkpoint): not supported yet; the language model converts from a config.json with them at the top level")
	}
	return nil
}

// errUnsupported is returned for config values the family cannot convert.
func errUnsupported(format string, args ...any) error {
	return tensor.Unsupported("arch: "+format, args...)
}

// Split is how one Hugging Face tensor holds several GGUF roles (Tensor.Split).
type Split struct {
	// Part is the role's place among the tensor's parts, from 1.
	Part int
	// Last: the parts are cut along the tensor's last axis, each row
	// holding every part's columns in turn (Llama 4's
	// experts.gate_up_proj: an expert's gate columns, then its up
	// columns). Otherwise along its first axis, which holds Groups runs of
	// every part's rows in turn, and each part is written with the runs as
	// a new outer axis (DeepSeek's kv_b_proj: per head, the key rows then
	// the value rows; attn_k_b and attn_v_b are [heads][…][…]).
	Last bool
	// Rows: cut along the second-to-last axis instead, each index of the
	// axes before it holding every part's rows in turn (GraniteMoE's
	// stacked input_linear [experts][gate rows, up rows][hidden]).
	Rows bool
	// Groups is the number of runs along the first axis (DimHeads); 0:
	// one, and the part keeps the tensor's rank.
	Groups Dim
	// Width is the config.json key of this part's width within a run
	// (qk_nope_head_dim); "" when the parts are equal.
	Width string
	// Axis, when set, is the axis the parts are cut along, counted from
	// the outermost as 1, each part one index of it, which the part does
	// not keep: Qwen2-VL's Conv3d patch embedding [out][in][2][kh][kw],
	// which llama.cpp keeps as its two temporal slices, two Conv2d kernels
	// [out][in][kh][kw] (v.patch_embd.weight and v.patch_embd.weight.1).
	Axis int
}

// Dim names one of a model's sizes.
type Dim uint8

// The sizes tensor shapes are stated in.
const (
	DimVocab        Dim = iota + 1 // vocabulary
	DimHidden                      // d_model
	DimQ                           // heads · head_dim
	DimKV                          // kv_heads · head_dim
	DimFFN                         // feed-forward width
	DimQKV                         // (heads + 2·kv_heads) · head_dim: a fused QKV projection
	DimFFN2                        // 2 · feed-forward width: fused gate and up
	DimHeadDim                     // one head (per-head Q/K norms)
	DimContext                     // a learned position table's rows
	DimTypes                       // token types (BERT's type_vocab_size)
	DimHeads                       // the query head count (a stack of per-head tensors)
	DimKVHeads                     // the key/value head count
	DimExperts                     // the expert count (a stack of per-expert tensors, a router's rows)
	DimExpertFFN                   // one routed expert's feed-forward width (moe_intermediate_size)
	DimSharedFFN                   // the shared expert's feed-forward width
	DimOne                         // 1 (the shared expert's scalar gate)
	DimQK                          // heads · (qk_nope + qk_rope): MLA's query heads
	DimQLora                       // MLA's query bottleneck (q_lora_rank)
	DimKVLora                      // MLA's key/value latent (kv_lora_rank)
	DimKVA                         // kv_lora_rank + qk_rope: the latent and the shared rotated key
	DimKVB                         // heads · (qk_nope + v_head_dim): keys and values from the latent
	DimVO                          // heads · v_head_dim: the attention output's width
	DimPerLayer                    // one layer's share of the per-layer embeddings (hidden_size_per_layer_input)
	DimPerLayerAll                 // layers · DimPerLayer: the per-layer embedding table's row
	DimAltup                       // AltUp's streams (altup_num_inputs)
	DimAltupSquared                // DimAltup²: AltUp's prediction coefficients
	DimAltupExtra                  // DimAltup − 1: the streams made from the first (a stack of projections)
	DimLaurel                      // LAuReL's rank (laurel_rank)
	DimHidden2                     // 2 · hidden: GLM-4.5's MTP projection of [embedding; hidden state]
	DimNope                        // MLA's position-free key width of a head (qk_nope_head_dim)
	DimVHead                       // MLA's value width of a head (v_head_dim)
	DimHidden3                     // 3 · hidden: LFM2's short-convolution in_proj (B, C and x)
	DimQGate                       // 2 · heads · head_dim: queries with their output gates (Qwen3-Next)
	DimLinVHeads                   // the linear attention's value heads (Qwen3-Next's linear_num_value_heads)
	DimLinBA                       // 2 · DimLinVHeads: the delta rule's β and decay inputs
	DimLinVHead                    // one linear-attention value head (linear_value_head_dim)
	DimLinValue                    // DimLinVHeads · DimLinVHead
	DimLinConv                     // 2 · key heads · key head width + DimLinValue: the convolved q, k, v
	DimConvKernel                  // a causal convolution's taps (LFM2's conv_L_cache, the gated DeltaNet's kernel)
	DimInner                       // a state-space mixer's inner width (Mamba's d_inner)
	DimInner2                      // 2 · DimInner: Mamba's in_proj (x and the gate z)
	DimState                       // the state size per channel (d_state)
	DimDTRank                      // Mamba's Δ projection rank (dt_rank)
	DimXProj                       // dt_rank + 2·d_state: Mamba's x_proj (Δ, B, C)
	DimSSMHeads                    // Mamba-2's heads (a scalar A, D and Δ bias each)
	DimConvChannels                // Mamba-2's convolved channels: inner + 2·groups·d_state (x, B, C)
	DimSSMIn                       // Mamba-2's in_proj: z, x, B, C and Δ (2·inner + 2·groups·d_state + heads)
	DimLerp                        // RWKV-7's token-shift mixes (r, w, k, v, a, g): 6
	DimLoraDecay                   // RWKV-7's decay low rank (decay_low_rank_dim)
	DimLoraICLR                    // RWKV-7's in-context learning rate low rank (a_low_rank_dim)
	DimLoraValue                   // RWKV-7's value-residual low rank (v_low_rank_dim)
	DimLoraGate                    // RWKV-7's gate low rank (gate_low_rank_dim)
)

// Dims are the sizes of one model.
type Dims struct {
	Vocab, Hidden, Heads, KVHeads, HeadDim, FFN, Context, Types int64
	Experts, ExpertFFN, SharedFFN                               int64
	// MLA (DeepSeek-2): the query bottleneck, the key/value latent, and
	// each head's position-free, rotated and value widths.
	QLora, KVLora, Nope, Rope, V int64
	// Gemma 3n: the layer count, one layer's per-layer embedding width,
	// AltUp's streams and LAuReL's rank.
	Layers, PerLayer, Altup, Laurel int64
	// Linear attention (Qwen3-Next's gated DeltaNet): key and value head
	// counts and widths; a causal convolution's taps (LFM2's
	// conv_L_cache, Mamba's d_conv, the DeltaNet's kernel).
	LinKHeads, LinKHead, LinVHeads, LinVHead, ConvKernel int64
	// State-space mixers (Mamba): the inner width, the state size per
	// channel and the Δ rank.
	Inner, State, DTRank int64
	// Mamba-2: its heads and the groups B and C are shared within.
	SSMHeads, Groups int64
	// RWKV-7's low ranks: decay, in-context learning rate, value
	// residual, gate.
	LoraDecay, LoraICLR, LoraValue, LoraGate int64
}

func (d Dims) size(x Dim) int64 {
	switch x {
	case DimVocab:
		return d.Vocab
	case DimHidden:
		return d.Hidden
	case DimQ:
		return d.Heads * d.HeadDim
	case DimKV:
		return d.KVHeads * d.HeadDim
	case DimFFN:
		return d.FFN
	case DimQKV:
		return (d.Heads + 2*d.KVHeads) * d.HeadDim
	case DimFFN2:
		return 2 * d.FFN
	case DimHeadDim:
		return d.HeadDim
	case DimContext:
		return d.Context
	case DimTypes:
		return d.Types
	case DimHeads:
		return d.Heads
	case DimKVHeads:
		return d.KVHeads
	case DimExperts:
		return d.Experts
	case DimExpertFFN:
		return d.ExpertFFN
	case DimSharedFFN:
		return d.SharedFFN
	case DimHidden2:
		return 2 * d.Hidden
	case DimHidden3:
		return 3 * d.Hidden
	case DimQGate:
		return 2 * d.Heads * d.HeadDim
	case DimLinVHeads:
		return d.LinVHeads
	case DimLinBA:
		return 2 * d.LinVHeads
	case DimLinVHead:
		return d.LinVHead
	case DimLinValue:
		return d.LinVHeads * d.LinVHead
	case DimLinConv:
		return 2*d.LinKHeads*d.LinKHead + d.LinVHeads*d.LinVHead
	case DimConvKernel:
		return d.ConvKernel
	case DimOne:
		return 1
	case DimQK:
		return d.Heads * (d.Nope + d.Rope)
	case DimQLora:
		return d.QLora
	case DimKVLora:
		return d.KVLora
	case DimKVA:
		return d.KVLora + d.Rope
	case DimKVB:
		return d.Heads * (d.Nope + d.V)
	case DimVO:
		return d.Heads * d.V
	case DimNope:
		return d.Nope
	case DimVHead:
		return d.V
	case DimPerLayer:
		return d.PerLayer
	case DimPerLayerAll:
		return d.Layers * d.PerLayer
	case DimAltup:
		return d.Altup
	case DimAltupSquared:
		return d.Altup * d.Altup
	case DimAltupExtra:
		return d.Altup - 1
	case DimLaurel:
		return d.Laurel
	case DimInner:
		return d.Inner
	case DimInner2:
		return 2 * d.Inner
	case DimState:
		return d.State
	case DimDTRank:
		return d.DTRank
	case DimXProj:
		return d.DTRank + 2*d.State
	case DimSSMHeads:
		return d.SSMHeads
	case DimConvChannels:
		return d.Inner + 2*d.Groups*d.State
	case DimSSMIn:
		return 2*d.Inner + 2*d.Groups*d.State + d.SSMHeads
	case DimLerp:
		return 6
	case DimLoraDecay:
		return d.LoraDecay
	case DimLoraICLR:
		return d.LoraICLR
	case DimLoraValue:
		return d.LoraValue
	case DimLoraGate:
		return d.LoraGate
	}
	return 0
}

// Weight is one weight tensor of a concrete model.
type Weight struct {
	Name   string
	Shape  tensor.Shape
	Norm   bool // a norm weight (values around 1)
	Tensor *Tensor
}

// Weights lists the ".weight" tensors of a model of the given sizes and
// layers in the order llama.cpp's converter writes a checkpoint saved by
// transformers: token embedding, the blocks (schema order), the rest. The
// names are HF's (hf) or GGUF's; keep says which schema entries to include
// (nil: the non-optional ones).
func (f *Family) Weights(d Dims, layers int, hf bool, keep func(t *Tensor, layer int) bool) []Weight {
	if keep == nil {
		keep = func(t *Tensor, _ int) bool { return !t.Optional }
	}
	var first, blocks, last []Weight
	add := func(dst *[]Weight, t *Tensor, bid int) {
		shape := make(tensor.Shape, len(t.Shape))
		for i, x := range t.Shape {
			shape[i] = d.size(x)
		}
		p, suffix := t.GGUF, t.suffix(hf)
		if hf {
			if len(t.HF) == 0 || (t.Split != nil && t.Split.Part > 1) {
				return // a GGUF-only copy, or a later part of the first part's tensor
			}
			p = t.HF[0]
			if t.HFSuffix != "" {
				suffix = t.HFSuffix
			}
			if t.Split != nil {
				shape = f.joinedShape(t, d.size)
			}
		} else if t.Layout == LayoutTranspose && len(shape) >= 2 {
			n := len(shape)
			shape[n-2], shape[n-1] = shape[n-1], shape[n-2]
		} else if t.Layout == LayoutSqueeze && len(shape) == 3 {
			shape = tensor.Shape{shape[0], shape[2]}
		} else if t.Layout == LayoutFlatten && len(shape) == 2 {
			shape = tensor.Shape{shape[0] * shape[1]}
		}
		if !hf && t.Reshape != ReshapeNone && len(shape) == 1 {
			if s, err := t.Reshape.gguf(t.GGUF, shape, d.Groups); err == nil {
				shape = s
			}
		}
		norm := strings.HasSuffix(t.GGUF, "norm")
		switch {
		case t.Stack != 0 && hf:
			for x := int64(0); x < d.size(t.Stack); x++ {
				*dst = append(*dst, Weight{Name: t.partName(p, bid, int(x)) + suffix, Shape: shape.Clone(), Norm: norm, Tensor: t})
			}
			return
		case t.Stack != 0:
			shape = append(tensor.Shape{d.size(t.Stack)}, shape...)
		}
		*dst = append(*dst, Weight{Name: expand(p, bid) + suffix, Shape: shape, Norm: norm, Tensor: t})
	}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if !keep(t, -1) || strings.Contains(t.GGUF, "{bid}") {
			continue
		}
		if t.GGUF == "token_embd" {
			add(&first, t, -1)
		} else {
			add(&last, t, -1)
		}
	}
	for b := 0; b < layers; b++ {
		for i := range f.Tensors {
			t := &f.Tensors[i]
			if keep(t, b) && strings.Contains(t.GGUF, "{bid}") {
				add(&blocks, t, b)
			}
		}
	}
	return append(append(first, blocks...), last...)
}

// HasParam reports whether the family writes GGUF key key.
func (f *Family) HasParam(key string) bool {
	for _, p := range f.Params {
		if p.Key == key {
			return true
		}
	}
	return false
}

// ParamInt returns config c's value for the family's GGUF key key, read
// from the config.json keys the family's converter reads it from (or, when
// those hold no integer, derived from them as the converter does:
// Hunyuan's moe_topk, one per layer).
func (f *Family) ParamInt(c Config, key string) (int64, bool) {
	for _, p := range f.Params {
		if p.Key != key {
			continue
		}
		if n, ok := c.Int(p.HF...); ok || len(p.HF) == 0 || p.Derive == nil || p.Kind != tensor.KindUint32 {
			return n, ok
		}
		v, ok, err := p.Derive(c)
		if err != nil || !ok {
			return 0, false
		}
		return v.Int()
	}
	return 0, false
}

// ParamFloat is ParamInt for a number that need not be whole.
func (f *Family) ParamFloat(c Config, key string) (float64, bool) {
	for _, p := range f.Params {
		if p.Key == key {
			return c.Float(p.HF...)
		}
	}
	return 0, false
}

// HeadCounts returns the query and key/value head counts of config c as
// the family's converter reads them.
func (f *Family) HeadCounts(c Config) (q, kv int64, err error) {
	hk := f.HeadKeys
	if hk == nil {
		hk = []string{"num_attention_heads", "n_head"}
	}
	q, ok := c.Int(hk...)
	if !ok && f.attentionFree(c) {
		return 0, 0, nil // nothing attends (Mamba): no heads to count
	}
	if !ok || q <= 0 {
		if err := NestedTextConfig(c); err != nil {
			return 0, 0, err
		}
		return 0, 0, fmt.Errorf("arch: %s: config.json has no num_attention_heads", f.Name)
	}
	keys := f.KVHeads
	if keys == nil {
		keys = []string{"num_key_value_heads"}
	}
	kv, ok = c.Int(keys...)
	if !ok || kv <= 0 {
		kv = f.KVHeadsDefault
		if kv <= 0 {
			kv = q
		}
	}
	return q, kv, nil
}

// attentionFree reports whether no layer of config c attends (a family
// whose Pattern makes every layer recurrent).
func (f *Family) attentionFree(c Config) bool {
	if f.Pattern == nil {
		return false
	}
	layers, err := f.LayerPattern(c)
	return err == nil && !slices.ContainsFunc(layers, func(l Layer) bool { return l.Mixer.Attention() })
}

// Experts is the expert count of config c (0: a dense model).
func (f *Family) Experts(c Config) int64 {
	n, ok := f.ParamInt(c, "expert_count")
	if !ok {
		n, _ = c.Int("num_local_experts", "num_experts", "n_routed_experts")
	}
	return max(n, 0)
}

// Layers is the model's (first stack's) layer count from config c.
func (f *Family) Layers(c Config) int64 {
	keys := f.LayerKeys
	if keys == nil {
		keys = []string{"num_hidden_layers", "n_layer"}
	}
	n, _ := c.Int(keys...)
	return n
}

// MLXStack is one stacked tensor of an MLX checkpoint (Tensor.MLX): its
// name and the Hugging Face tensors it stacks, in order.
type MLXStack struct {
	Name  string
	Parts []string
}

// MLXStacks are the stacked tensors mlx-lm's sanitize makes of the
// family's Stack roles that have an MLX name, for every layer and part has
// says is present (parts counted from index 0 up to the first missing,
// layers from 0 up to the first without a part 0), with suffix.
func (f *Family) MLXStacks(suffix string, has func(string) bool) []MLXStack {
	var out []MLXStack
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if t.MLX == "" || t.Stack == 0 || len(t.HF) == 0 {
			continue
		}
		for bid := 0; has(t.partName(t.HF[0], bid, 0) + suffix); bid++ {
			st := MLXStack{Name: expandAt(t.MLX, bid, 0) + suffix}
			for xid := 0; has(t.partName(t.HF[0], bid, xid) + suffix); xid++ {
				st.Parts = append(st.Parts, t.partName(t.HF[0], bid, xid)+suffix)
			}
			out = append(out, st)
		}
	}
	return out
}

// MLXQuant returns the bits and group size mlx-lm's quant_predicate gives
// the Hugging Face layer path (a weight's name without ".weight"), ok
// false when it gives the checkpoint's own (Tensor.MLXBits).
func (f *Family) MLXQuant(path string) (bits, group int, ok bool) {
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if t.MLXBits == 0 {
			continue
		}
		pat, _, _ := SplitName(path)
		if slices.Contains(t.HF, pat) {
			return t.MLXBits, t.MLXGroup, true
		}
	}
	return 0, 0, false
}

// MLXParts returns the Hugging Face names of the n parts an MLX stacked
// tensor name holds (the inverse of MLXStacks: mlx-lm's switch_mlp
// experts), ok false when name is no stacked role's of the family.
func (f *Family) MLXParts(name string, n int) (parts []string, ok bool) {
	pat, bid, suffix := SplitName(name)
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if t.MLX == "" || t.MLX != pat || bid < 0 || len(t.HF) == 0 {
			continue
		}
		for xid := range n {
			parts = append(parts, t.partName(t.HF[0], bid, xid)+suffix)
		}
		return parts, true
	}
	return nil, false
}
