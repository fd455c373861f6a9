package quantize

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// Target is what --type names: the base dtype quantizable tensors get and
// the llama.cpp ftype written as general.file_type.
type Target struct {
	Name     string        // as the user spells it: "q4_k_m"
	Type     tensor.DType  // base type of quantizable tensors (tensor.I8 for int8)
	FileType gguf.FileType // llama.cpp llama_ftype; meaningful for GGUF output only
	// Copy is llama-quantize's COPY: every tensor is written as it is, in
	// its current type (Type is Invalid), and general.file_type is the
	// input's.
	Copy bool
}

// targetRecord is one --type: the Target and a few words on its quality, for
// quantize --help (the ppl figures are the perplexity increases
// llama-quantize's usage list gives for Llama-3-8B).
type targetRecord struct {
	Target
	hint string
}

// The targets are llama-quantize's ftypes, most of them mixtures (a file
// type of their own, a base type and rules for the rest). A target of one
// type with a file type of its own (single) takes both from quant's record
// of the type. Q3_K, Q4_K and Q5_K are llama-quantize aliases of the _M
// mixtures, so they carry those file types.
var targets = []targetRecord{
	{single(tensor.Q8_0), "+0.0026 ppl: practically lossless"},
	{single(tensor.Q4_0), "+0.47 ppl: legacy 4-bit; q4_k_s loses less at about its size"},
	{single(tensor.Q4_1), "+0.45 ppl: legacy 4-bit with offsets"},
	{single(tensor.Q5_0), "+0.13 ppl: legacy 5-bit"},
	{single(tensor.Q5_1), "+0.11 ppl: legacy 5-bit with offsets"},
	{single(tensor.Q2_K), "+3.52 ppl: very lossy, the smallest k-quant mixture"},
	{Target{Name: "q2_k_s", Type: tensor.Q2_K, FileType: gguf.FileTypeQ2_KS}, "+3.18 ppl: very lossy; needs --imatrix"},
	{Target{Name: "q3_k", Type: tensor.Q3_K, FileType: gguf.FileTypeQ3_KM}, "alias of q3_k_m"},
	{Target{Name: "q3_k_s", Type: tensor.Q3_K, FileType: gguf.FileTypeQ3_KS}, "+1.63 ppl: large loss"},
	{Target{Name: "q3_k_m", Type: tensor.Q3_K, FileType: gguf.FileTypeQ3_KM}, "+0.66 ppl: noticeable loss"},
	{Target{Name: "q3_k_l", Type: tensor.Q3_K, FileType: gguf.FileTypeQ3_KL}, "+0.56 ppl: noticeable loss"},
	{Target{Name: "q4_k", Type: tensor.Q4_K, FileType: gguf.FileTypeQ4_KM}, "alias of q4_k_m"},
	{Target{Name: "q4_k_s", Type: tensor.Q4_K, FileType: gguf.FileTypeQ4_KS}, "+0.27 ppl: moderate loss"},
	{Target{Name: "q4_k_m", Type: tensor.Q4_K, FileType: gguf.FileTypeQ4_KM}, "+0.18 ppl: the usual balance of size and quality"},
	{Target{Name: "q5_k", Type: tensor.Q5_K, FileType: gguf.FileTypeQ5_KM}, "alias of q5_k_m"},
	{Target{Name: "q5_k_s", Type: tensor.Q5_K, FileType: gguf.FileTypeQ5_KS}, "+0.10 ppl: small loss"},
	{Target{Name: "q5_k_m", Type: tensor.Q5_K, FileType: gguf.FileTypeQ5_KM}, "+0.06 ppl: small loss"},
	{single(tensor.Q6_K), "+0.02 ppl: nearly lossless"},
	{Target{Name: "iq4_nl", Type: tensor.IQ4_NL, FileType: gguf.FileTypeIQ4NL}, "non-linear 4-bit in 32-weight blocks; --imatrix helps"},
	{Target{Name: "iq4_xs", Type: tensor.IQ4_XS, FileType: gguf.FileTypeIQ4XS}, "non-linear 4-bit in 256-weight blocks; --imatrix helps"},
	{Target{Name: "iq3_xxs", Type: tensor.IQ3_XXS, FileType: gguf.FileTypeIQ3XXS}, "3-bit lattice; --imatrix helps"},
	{Target{Name: "iq3_xs", Type: tensor.IQ3_S, FileType: gguf.FileTypeIQ3XS}, "3-bit lattice mixture"},
	{Target{Name: "iq3_s", Type: tensor.IQ3_S, FileType: gguf.FileTypeIQ3S}, "3-bit lattice mixture"},
	{Target{Name: "iq3_m", Type: tensor.IQ3_S, FileType: gguf.FileTypeIQ3M}, "3-bit lattice mixture, larger tensors where it matters"},
	{Target{Name: "iq2_xxs", Type: tensor.IQ2_XXS, FileType: gguf.FileTypeIQ2XXS}, "2-bit lattice: large loss; needs --imatrix"},
	{Target{Name: "iq2_xs", Type: tensor.IQ2_XS, FileType: gguf.FileTypeIQ2XS}, "2-bit lattice: large loss; needs --imatrix"},
	{Target{Name: "iq2_s", Type: tensor.IQ2_XS, FileType: gguf.FileTypeIQ2S}, "2-bit lattice mixture: large loss; needs --imatrix"},
	{Target{Name: "iq2_m", Type: tensor.IQ2_S, FileType: gguf.FileTypeIQ2M}, "2-bit lattice mixture: large loss; its IQ2_S tensors need --imatrix"},
	{Target{Name: "iq1_s", Type: tensor.IQ1_S, FileType: gguf.FileTypeIQ1S}, "1-bit lattice: very large loss; needs --imatrix"},
	{Target{Name: "iq1_m", Type: tensor.IQ1_M, FileType: gguf.FileTypeIQ1M}, "1-bit lattice: very large loss; needs --imatrix"},
	{Target{Name: "tq1_0", Type: tensor.TQ1_0, FileType: gguf.FileTypeTQ1_0}, "ternary: only for models trained ternary (BitNet)"},
	{Target{Name: "tq2_0", Type: tensor.TQ2_0, FileType: gguf.FileTypeTQ2_0}, "ternary: only for models trained ternary (BitNet)"},
	{single(tensor.Q1_0), "1-bit signs with one scale per 128 weights: for models trained for it (llama.cpp 2026)"},
	{Target{Name: "mxfp4_moe", Type: tensor.MXFP4, FileType: gguf.FileTypeMXFP4MoE}, "MXFP4 experts, Q8_0 elsewhere (gpt-oss)"},
	{Target{Name: "int8", Type: tensor.I8, FileType: 0}, "int8 per row with an f32 scale; safetensors and native only"},
	{single(tensor.F16), "dequantizes; 16-bit float, values beyond ±65504 do not fit"},
	{single(tensor.BF16), "dequantizes; 16-bit float with f32's range"},
	{single(tensor.F32), "dequantizes exactly; 32-bit float"},
	{Target{Name: "copy", Copy: true}, "llama-quantize's COPY: every tensor as it is, no quantizing"},
}

// single is the target of one type d: its lower-case name and the file
// type quant's record gives d.
func single(d tensor.DType) Target {
	ft, ok := quant.FileTypeOf(d)
	if !ok {
		panic(fmt.Sprintf("quantize: %v has no file type of its own", d))
	}
	return Target{Name: strings.ToLower(d.String()), Type: d, FileType: gguf.FileType(ft)}
}

// TargetNames lists the names ParseTarget accepts, in help order.
func TargetNames() []string {
	var s []string
	for _, t := range targets {
		s = append(s, t.Name)
	}
	return s
}

// ParseTarget looks up a --type name (case-insensitive) or, as
// llama-quantize takes it too, a llama_ftype number ("15" is q4_k_m's).
func ParseTarget(name string) (Target, error) {
	for _, t := range targets {
		if strings.EqualFold(t.Name, name) {
			return t.Target, nil
		}
	}
	if n, err := strconv.ParseUint(name, 10, 32); err == nil {
		for _, t := range targets {
			// int8 has no ftype (its 0 is not llama.cpp's ALL_F32), copy none.
			if !t.Copy && t.Type != tensor.I8 && uint64(t.FileType) == n {
				return t.Target, nil
			}
		}
	}
	return Target{}, fmt.Errorf("quantize: unknown type %q (one of %s)", name, strings.Join(TargetNames(), ", "))
}

// TargetInfo describes one --type for quantize --help.
type TargetInfo struct {
	Target
	// BitsPerWeight is the storage cost of Target.Type (tensor's block
	// layout); a mixture gives some tensors more. 0 for copy.
	BitsPerWeight float64
	// Hint is a few words on the quality (ppl figures: the perplexity
	// increase on Llama-3-8B that llama-quantize lists).
	Hint string
}

// Targets lists every --type in help order.
func Targets() []TargetInfo {
	out := make([]TargetInfo, len(targets))
	for i, t := range targets {
		out[i] = TargetInfo{Target: t.Target, BitsPerWeight: t.Type.BitsPerElement(), Hint: t.hint}
	}
	return out
}

// ParseTensorType parses a single tensor type for --embedding-type,
// --output-tensor-type and overrides: any type Quantize can write to GGUF
// (q8_0 ... q6_k, iq4_nl, iq4_xs, iq3_xxs, iq3_s, mxfp4, f16, bf16, f32),
// case-insensitive.
func ParseTensorType(name string) (tensor.DType, error) {
	d, ok := tensor.Parse(name)
	if !ok || !writableType(d) {
		return tensor.Invalid, fmt.Errorf("quantize: unknown or unsupported tensor type %q", name)
	}
	return d, nil
}

// writableType: quant's record of d lets quantize's per-tensor options
// name it (quant.TensorType).
func writableType(d tensor.DType) bool {
	r, ok := quant.Lookup(d)
	return ok && r.Write&quant.TensorType != 0
}

// Override is one --tensor-type rule. As in llama-quantize, Pattern is a
// regular expression searched for (not anchored) in the tensor name, so a
// plain substring such as "attn_v" works too; the first rule that matches
// wins.
type Override struct {
	Pattern *regexp.Regexp
	Type    tensor.DType
}

// ParseOverride parses "PATTERN=TYPE".
func ParseOverride(s string) (Override, error) {
	i := strings.LastIndexByte(s, '=')
	if i <= 0 || i == len(s)-1 {
		return Override{}, fmt.Errorf("quantize: tensor type %q: want PATTERN=TYPE", s)
	}
	re, err := regexp.Compile(s[:i])
	if err != nil {
		return Override{}, fmt.Errorf("quantize: tensor type %q: %w", s, err)
	}
	d, err := ParseTensorType(s[i+1:])
	if err != nil {
		return Override{}, err
	}
	return Override{re, d}, nil
}

// Options selects the policy.
type Options struct {
	Target Target
	// Pure gives every quantizable tensor Target.Type (llama-quantize
	// --pure); otherwise llama.cpp's per-tensor mixture rules apply.
	Pure      bool
	Overrides []Override
	// KeepOutput leaves output.weight as it is in the input
	// (llama-quantize --leave-output-tensor).
	KeepOutput bool
	// EmbeddingType and OutputType, when not tensor.Invalid, force the type
	// of token_embd.weight and output.weight (--token-embedding-type,
	// --output-tensor-type).
	EmbeddingType tensor.DType
	OutputType    tensor.DType
	// GGUFName, when set, gives the GGUF name of a tensor of a checkpoint
	// with other names (a Hugging Face one), so that llama.cpp's rules,
	// which read GGUF names, apply to it; a tensor it has no name for is
	// judged by its own name.
	GGUFName func(name string) (string, bool)
	// PruneLayers lists blocks to drop (llama-quantize --prune-layers;
	// ParsePruneLayers): their tensors are left out and the blocks after
	// them renumbered down to close the gaps; PruneMetadata gives the
	// metadata to match.
	PruneLayers []int
	// KeepSplit processes the tensors in their file order, shard by shard
	// (llama-quantize --keep-split sorts by shard, then offset), and records
	// each one's shard in Choice.Shard for WriteSplit; otherwise they go in
	// llama.cpp's weights_map order. The order matters beyond the layout:
	// the mixture rules count layers as they go.
	KeepSplit bool
	// Imatrix, when not nil, is the importance of each weight's columns by
	// GGUF name ([experts][cols] for a stacked weight), as llama-quantize
	// --imatrix loads it (imatrix.Matrix.Importance): the quantizers that
	// take it weigh their error with it, and the rules that depend on
	// having one apply.
	Imatrix map[string][]float32
	// Requantize turns the exact Q4_0/Q4_1 pass-through off (convert's and
	// quantize's --requantize): a 4-bit layer with groups of 32 chosen as
	// its checkpoint.Tensor.ExactQ4 goes through ggml's encoder like any
	// other.
	Requantize bool
}

// Choice is the decision for one tensor.
type Choice struct {
	Tensor *checkpoint.Tensor
	// Scales, for an int8 input tensor that is requantized, reads its
	// per-row scales (checkpoint.ReadInt8Scales); Run decodes with them.
	Scales func() ([]float32, error)
	// Type is the output dtype. Copy means the input bytes are written
	// unchanged (a tensor llama-quantize does not quantize, or one already in
	// the chosen type).
	Type   tensor.DType
	Copy   bool
	Reason string // why this type: "1-D", "norm", "q4_k_m: use_more_bits", "fallback: ...", ...
	// Shard is the index in the checkpoint's Files of the file holding the
	// tensor (with Options.KeepSplit).
	Shard int
	// Importance is the tensor's importance matrix entry, [mats][row
	// length] for its mats = outer dimensions beyond the rows (experts);
	// nil: none.
	Importance []float32
	// Exact: the tensor's values are Q4_0 or Q4_1 blocks as they are (a
	// 4-bit layer with groups of 32 chosen as its Tensor.ExactQ4); Run
	// writes each row's exact blocks (quant.EncodeExact), ggml's encoder
	// only for a row that has none (a scale, or a zero point's −z·s, no
	// f16 value holds).
	Exact bool
}

// qkK is the k-quant super-block size; llama.cpp's output.weight rule tests
// the row length against it.
const qkK = 256

// hparams are the few model facts llama.cpp's rules read.
type hparams struct {
	arch      string
	nLayer    int
	nGQA      int
	nExpert   int
	hasOutput bool
	nAttnV    int
	// is70B: llama.cpp takes the model for a 70B (its model-size guess,
	// llama_model::load_hparams): an 80-layer llama with grouped-query
	// attention and not 8 experts, or an 80-layer deci, qwen2 or olmo.
	is70B bool
}

// readHparams reads the model facts from c's metadata and from tensors
// (c's, or what is left of them after --prune-layers: llama.cpp counts the
// attn_v tensors it quantizes, but takes the layer count of the rules from
// the input's block_count).
func readHparams(c *checkpoint.Checkpoint, tensors []*checkpoint.Tensor, nameOf func(*checkpoint.Tensor) string) hparams {
	var h hparams
	h.arch, _ = c.Metadata.Str("general.architecture")
	get := func(k string) int {
		v, _ := c.Metadata.Int(h.arch + "." + k)
		return int(v)
	}
	h.nLayer = get("block_count")
	if heads, kv := get("attention.head_count"), get("attention.head_count_kv"); heads > 0 && kv > 0 {
		h.nGQA = heads / kv
	} else {
		h.nGQA = 1
	}
	h.nExpert = get("expert_count")
	switch h.arch {
	case "llama":
		h.is70B = h.nLayer == 80 && h.nExpert != 8 && h.nGQA != 1
	case "deci", "qwen2", "olmo":
		h.is70B = h.nLayer == 80
	}
	maxLayer := -1
	for _, t := range tensors {
		name := nameOf(t)
		if name == "output.weight" {
			h.hasOutput = true
		}
		if strings.Contains(name, "attn_v.weight") || strings.Contains(name, "attn_qkv.weight") ||
			strings.Contains(name, "attn_kv_b.weight") {
			h.nAttnV++
		}
		if l := layerOf(name); l > maxLayer {
			maxLayer = l
		}
	}
	if h.nLayer <= 0 {
		// No block_count (a safetensors input): count the blocks.
		h.nLayer = maxLayer + 1
	}
	return h
}

// layerOf parses "blk.N." as llama.cpp's sscanf does, or returns -1.
func layerOf(name string) int {
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return -1
	}
	i := strings.IndexByte(rest, '.')
	if i <= 0 {
		return -1
	}
	n, err := strconv.Atoi(rest[:i])
	if err != nil {
		return -1
	}
	return n
}

// llamaOrder sorts as llama.cpp's weight_name_comparer orders weights_map,
// which is the order llama-quantize processes and writes tensors in: by
// block number (tensors outside blocks first), then by name.
func llamaOrder(ts []*checkpoint.Tensor) []*checkpoint.Tensor {
	s := append([]*checkpoint.Tensor(nil), ts...)
	sort.SliceStable(s, func(i, j int) bool {
		a, b := layerOf(s[i].Name), layerOf(s[j].Name)
		if a != b {
			return a < b
		}
		return s[i].Name < s[j].Name
	})
	return s
}

// nDims is ggml_n_dims: dimensions up to the last one above 1, counted in
// ggml's order (row-major shapes are reversed, so leading 1s do not count).
func nDims(s tensor.Shape) int {
	for i, d := range s {
		if d > 1 {
			return len(s) - i
		}
	}
	return 1
}

// tokenEmbd reports whether name is a token embedding table as llama-quantize
// (d32676d7) categorises it: token_embd.weight, and Gemma 3n's per-layer
// table per_layer_token_embd.weight.
func tokenEmbd(name string) bool {
	return name == "token_embd.weight" || name == "per_layer_token_embd.weight"
}

// rwkvKept are RWKV's small 2-D weights llama-quantize leaves alone: the
// decay, in-context learning rate, value-residual and gate low-rank
// projections and biases and the token-shift mixes (d32676d7; its key,
// value, receptance and output projections are quantized).
func rwkvKept(name string) bool {
	for _, r := range []string{"time_mix_first", "time_mix_w0", "time_mix_w1", "time_mix_w2", "time_mix_v0", "time_mix_v1",
		"time_mix_v2", "time_mix_a0", "time_mix_a1", "time_mix_a2", "time_mix_g1", "time_mix_g2", "time_mix_decay_w1",
		"time_mix_decay_w2", "time_mix_lerp_fused"} {
		if strings.Contains(name, r+".weight") {
			return true
		}
	}
	return false
}

// skipReason reports why llama-quantize would leave the tensor alone, or "".
func skipReason(name string, shape tensor.Shape, keepOutput bool) string {
	switch {
	case nDims(shape) < 2:
		return "1-D"
	case !strings.HasSuffix(name, "weight"):
		return "not a weight"
	case strings.Contains(name, "_norm.weight"):
		return "norm"
	case keepOutput && name == "output.weight":
		return "--keep-output"
	case strings.Contains(name, "ffn_gate_inp.weight"):
		return "expert gate"
	case name == "position_embd.weight":
		return "position embedding"
	case name == "token_types.weight":
		return "token-type embedding"
	case strings.Contains(name, "ssm_conv1d.weight"), strings.Contains(name, "shortconv.conv.weight"),
		strings.Contains(name, "attn_rel_b.weight"), rwkvKept(name):
		return "small tensor llama.cpp keeps"
	case strings.Contains(name, "altup"), strings.Contains(name, "laurel"), strings.Contains(name, "per_layer_model_proj"):
		// Gemma 3n's, as llama.cpp d32676d7 keeps them
		return "small tensor llama.cpp keeps"
	}
	return ""
}

// Plan chooses the output dtype of every tensor of c with llama-quantize's
// rules (llama.cpp commit c392e509, src/llama-quant.cpp: the checks in
// llama_model_quantize_impl and llama_tensor_get_type), plus per-tensor
// overrides as later llama.cpp versions apply them, and the MXFP4_MOE rule
// and --prune-layers of a later llama.cpp (d32676d7). Choices come in
// llama-quantize's tensor order (by block, then by name). One difference
// from llama.cpp: the row-length fallback is applied under Pure too, where
// llama.cpp c392e509 would abort.
func Plan(c *checkpoint.Checkpoint, opts Options) ([]Choice, error) {
	if !opts.Target.Type.Valid() && !opts.Target.Copy {
		return nil, fmt.Errorf("quantize: no target type")
	}
	if opts.Target.Copy && (len(opts.Overrides) > 0 || opts.EmbeddingType != tensor.Invalid || opts.OutputType != tensor.Invalid) {
		return nil, fmt.Errorf("quantize: --type copy writes every tensor as it is; --tensor-type, --embedding-type and " +
			"--output-tensor-type would change some: pick a type instead")
	}
	if opts.Target.FileType == gguf.FileTypeQ2_KS && opts.Imatrix == nil {
		return nil, tensor.Unsupported("quantize: %s needs an importance matrix (--imatrix FILE, made by tfconv imatrix), as llama-quantize requires", opts.Target.Name)
	}
	switch opts.Target.FileType {
	case gguf.FileTypeIQ2XXS, gguf.FileTypeIQ2XS, gguf.FileTypeIQ2S, gguf.FileTypeIQ1S, gguf.FileTypeIQ1M:
		// llama-quantize refuses these up front, IQ2_M only at its first
		// IQ2_S tensor (below).
		if opts.Imatrix == nil {
			return nil, tensor.Unsupported("quantize: %s needs an importance matrix (--imatrix FILE, made by tfconv imatrix), as llama-quantize requires", opts.Target.Name)
		}
	}
	// The rules read GGUF names.
	nameOf := func(t *checkpoint.Tensor) string {
		if opts.GGUFName != nil {
			if n, ok := opts.GGUFName(t.Name); ok {
				return n
			}
		}
		return t.Name
	}
	for name, imp := range opts.Imatrix {
		for _, v := range imp {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return nil, fmt.Errorf("quantize: the importance matrix entry %q holds the non-finite value %v", name, v)
			}
		}
	}
	// An int8 weight's scales go with it: they are decoded with it when it
	// is requantized, and copied right after it when it is copied.
	isScale := map[string]bool{}
	for _, t := range c.Tensors {
		if s, ok := c.Int8Scale(t); ok && t.DType == tensor.I8 {
			isScale[s.Name] = true
		}
	}
	order := llamaOrder(c.Tensors)
	shardOf := map[string]int{}
	if opts.KeepSplit {
		for i, f := range c.Files {
			shardOf[f.Path] = i
		}
		order = append([]*checkpoint.Tensor(nil), c.Tensors...)
		sort.SliceStable(order, func(i, j int) bool {
			a, b := shardOf[order[i].File], shardOf[order[j].File]
			if a != b {
				return a < b
			}
			return order[i].Offset < order[j].Offset
		})
	}
	// origName is the input name of a tensor --prune-layers renamed: its
	// importance matrix entry is found by it.
	var origName map[*checkpoint.Tensor]string
	if len(opts.PruneLayers) > 0 {
		if opts.GGUFName != nil {
			return nil, fmt.Errorf("quantize: --prune-layers works on GGUF names (blk.N.), not on a Hugging Face checkpoint's")
		}
		if len(isScale) > 0 {
			return nil, tensor.Unsupported("quantize: --prune-layers of an int8 checkpoint (per-row scale tensors) is not supported")
		}
		n := readHparams(c, c.Tensors, nameOf).nLayer
		if err := CheckPrune(opts.PruneLayers, n); err != nil {
			return nil, err
		}
		order, origName = pruneLayers(order, opts.PruneLayers)
	}
	h := readHparams(c, order, nameOf)
	st := &state{h: h, ftype: opts.Target.FileType, hasImatrix: opts.Imatrix != nil}
	var out []Choice
	for _, t := range order {
		ch := Choice{Tensor: t, Shard: shardOf[t.File]}
		name := nameOf(t)
		if isScale[t.Name] {
			continue
		}
		if opts.Target.Copy {
			ch.Type, ch.Copy, ch.Reason = t.DType, true, "copy"
			out = append(out, ch)
			continue
		}
		var scales func() ([]float32, error)
		if _, ok := c.Int8Scale(t); ok && t.DType == tensor.I8 {
			scales = func() ([]float32, error) { return c.ReadInt8Scales(t) }
		}
		if r := skipReason(name, t.Shape, opts.KeepOutput); r != "" {
			ch.Type, ch.Copy, ch.Reason = t.DType, true, r
			out = append(out, ch)
			continue
		}
		if t.NumElements() == 0 {
			ch.Type, ch.Copy, ch.Reason = t.DType, true, "empty"
			out = append(out, ch)
			continue
		}
		if !t.DType.Float() && scales == nil {
			ch.Type, ch.Copy, ch.Reason = t.DType, true, "not a float tensor"
			out = append(out, ch)
			continue
		}
		typ, reason := opts.Target.Type, opts.Target.Name
		if opts.Pure {
			reason = "--pure"
		}
		rowLen := t.Shape.RowLen()
		if typ.Quantized() {
			manual := false
			for _, o := range opts.Overrides {
				if o.Pattern.MatchString(name) {
					typ, reason, manual = o.Type, "--tensor-type "+o.Pattern.String(), true
					break
				}
			}
			if !manual && !opts.Pure {
				if nt, why := st.getType(name, typ, t.Shape); nt != typ || why != "" {
					typ = nt
					if why != "" {
						reason = opts.Target.Name + ": " + why
					}
				}
			}
			if typ.Quantized() && rowLen%typ.BlockSize() != 0 {
				nt := fallback(typ)
				if nt == tensor.Invalid || rowLen%nt.BlockSize() != 0 {
					nt = tensor.F16
				}
				reason = fmt.Sprintf("fallback: row length %d not a multiple of %d (%v) -> %v", rowLen, typ.BlockSize(), typ, nt)
				typ = nt
			}
		}
		if opts.EmbeddingType != tensor.Invalid && tokenEmbd(name) {
			typ, reason = opts.EmbeddingType, "--embedding-type"
		}
		if opts.OutputType != tensor.Invalid && name == "output.weight" {
			typ, reason = opts.OutputType, "--output-tensor-type"
		}
		if typ.Quantized() && rowLen%typ.BlockSize() != 0 {
			return nil, fmt.Errorf("quantize: tensor %q: row length %d is not a multiple of %v's block size %d",
				t.Name, rowLen, typ, typ.BlockSize())
		}
		ch.Type, ch.Reason = typ, reason
		if typ == t.ExactQ4 && typ != tensor.Invalid && !opts.Requantize {
			ch.Exact, ch.Reason = true, reason+"; exact: symmetric 4-bit groups of 32"
			if typ == tensor.Q4_1 {
				ch.Reason = reason + "; exact: 4-bit groups of 32 with zero points"
			}
		}
		impName := name
		if o, ok := origName[t]; ok {
			impName = o
		}
		if imp, ok := opts.Imatrix[impName]; ok && typ.Quantized() {
			// llama-quantize: an entry must cover the columns of every
			// matrix (ne[0]·ne[2]); only token_embd.weight may differ
			// (it is then quantized without one).
			mats := int64(1)
			if len(t.Shape) >= 3 {
				mats = t.Shape[len(t.Shape)-3]
			}
			switch {
			case int64(len(imp)) == rowLen*mats:
				ch.Importance = imp
			case !tokenEmbd(name):
				return nil, fmt.Errorf("quantize: tensor %q: imatrix size %d is different from tensor size %d",
					t.Name, len(imp), rowLen*mats)
			}
		}
		if ch.Importance == nil && needsImatrix(name, typ) {
			return nil, tensor.Unsupported("quantize: tensor %q: %v (%s) needs an importance matrix (--imatrix FILE, made by tfconv imatrix), as llama-quantize requires",
				t.Name, typ, reason)
		}
		if typ == t.DType {
			ch.Copy = true
			ch.Reason += " (already " + typ.String() + ")"
		}
		if !ch.Copy {
			ch.Scales = scales
		}
		out = append(out, ch)
	}
	if len(isScale) == 0 {
		return out, nil
	}
	var withScales []Choice
	for _, ch := range out {
		withScales = append(withScales, ch)
		if s, ok := c.Int8Scale(ch.Tensor); ok && ch.Copy && ch.Tensor.DType == tensor.I8 {
			withScales = append(withScales, Choice{Tensor: s, Type: s.DType, Copy: true, Reason: "scales of " + ch.Tensor.Name, Shard: ch.Shard})
		}
	}
	return withScales, nil
}

// fallback is llama.cpp c392e509's type for a row length the block size
// of t does not divide: t's record's (quant.Type.Fallback). Q2_K, Q3_K and
// IQ4_XS go to IQ4_NL there, encoded as ggml's quantize_iq4_nl
// (quant.QuantizeRows, with the tensor's importance matrix entry when there
// is one).
func fallback(t tensor.DType) tensor.DType {
	r, _ := quant.Lookup(t) // Invalid for a type without a record
	return r.Fallback
}

// needsImatrix is llama-quantize's refusal of the very-low-bit types for a
// tensor that has no importance matrix entry ("the result will be
// garbage"): the types whose record says NeedsImatrix (IQ2_XXS, IQ2_XS,
// IQ2_S, IQ1_S, IQ1_M), IQ1_M except for token_embd.weight and
// output.weight.
func needsImatrix(name string, t tensor.DType) bool {
	if r, _ := quant.Lookup(t); !r.NeedsImatrix {
		return false
	}
	return t != tensor.IQ1_M || !tokenEmbd(name) && name != "output.weight"
}

// state carries llama.cpp's running counters (quantize_state_impl).
type state struct {
	h                          hparams
	ftype                      gguf.FileType
	hasImatrix                 bool
	iAttnV, iFFNDown, iFFNGate int
	iFFNUp                     int
}

// useMoreBits is llama.cpp's choice of the layers that get more bits: the
// first and last eighth and every third layer in between.
func useMoreBits(i, n int) bool {
	return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2
}

// layer is llama.cpp's layer_info: the running counter, except in MoE
// models where the layer is parsed from the name.
func (s *state) layer(counter int, name string) int {
	if s.h.nExpert > 1 {
		if l := layerOf(name); l >= 0 {
			return l
		}
	}
	return counter
}

// getType is llama_tensor_get_type for the ftypes tfconv offers; why is
// non-empty when a rule changed the type. shape is the tensor's, row-major.
func (s *state) getType(name string, t tensor.DType, shape tensor.Shape) (tensor.DType, string) {
	h := s.h
	falcon := h.arch == "falcon"
	rowLen := shape.RowLen()
	switch {
	case name == "output.weight" || (!h.hasOutput && tokenEmbd(name)):
		if s.ftype == gguf.FileTypeMXFP4MoE {
			return tensor.Q8_0, "output tensor"
		}
		if falcon || rowLen%qkK != 0 {
			return tensor.Q8_0, "output tensor, row not a multiple of 256"
		}
		if s.ftype == gguf.FileTypeIQ3XXS || s.iq2() {
			return tensor.Q5_K, "output tensor"
		}
		if t != tensor.Q8_0 {
			return tensor.Q6_K, "output tensor"
		}
	case s.ftype == gguf.FileTypeMXFP4MoE:
		// Newer llama.cpp (src/llama-quant.cpp after c392e509): a tensor of
		// more than one matrix (ggml ne[2] > 1, the stacked experts) is
		// MXFP4, every other one Q8_0, token_embd included.
		if len(shape) >= 3 && shape[len(shape)-3] > 1 {
			return tensor.MXFP4, "stacked experts"
		}
		return tensor.Q8_0, "not stacked experts"
	case tokenEmbd(name):
		if s.ftype == gguf.FileTypeTQ1_0 || s.ftype == gguf.FileTypeTQ2_0 {
			return tensor.Q4_K, "token_embd of a ternary model"
		}
		if s.iq2() {
			return s.iq2Low(), "token_embd"
		}
		if s.ftype == gguf.FileTypeIQ3XXS {
			return tensor.IQ3_S, "token_embd"
		}
	case s.iq2():
		return s.iq2Type(name, t)
	case strings.Contains(name, "attn_v.weight"):
		nt, why := t, ""
		defer func() { s.iAttnV++ }()
		switch {
		case s.ftype == gguf.FileTypeQ2_K:
			nt, why = tensor.Q3_K, "attn_v"
			if h.nGQA >= 4 {
				nt, why = tensor.Q4_K, "attn_v, GQA >= 4"
			}
		case s.ftype == gguf.FileTypeQ2_KS && h.nGQA >= 4:
			nt, why = tensor.Q4_K, "attn_v, GQA >= 4"
		case s.ftype == gguf.FileTypeIQ3XXS:
			switch {
			case h.nGQA >= 4:
				nt, why = tensor.Q4_K, "attn_v, GQA >= 4"
			case !s.hasImatrix:
				nt, why = tensor.IQ3_S, "attn_v, without an imatrix"
			}
		case (s.ftype == gguf.FileTypeIQ3XS || s.ftype == gguf.FileTypeIQ3S) && h.nGQA >= 4:
			nt, why = tensor.Q4_K, "attn_v, GQA >= 4"
		case s.ftype == gguf.FileTypeIQ3M:
			nt, why = tensor.Q4_K, "attn_v"
		case s.ftype == gguf.FileTypeQ3_KM:
			nt, why = tensor.Q4_K, "attn_v"
			if s.iAttnV < 2 {
				nt, why = tensor.Q5_K, "attn_v of the first two layers"
			}
		case s.ftype == gguf.FileTypeQ3_KL:
			nt, why = tensor.Q5_K, "attn_v"
		case (s.ftype == gguf.FileTypeIQ4NL || s.ftype == gguf.FileTypeIQ4XS) && h.nGQA >= 4:
			nt, why = tensor.Q5_K, "attn_v, GQA >= 4"
		case (s.ftype == gguf.FileTypeQ4_KM || s.ftype == gguf.FileTypeQ5_KM) && useMoreBits(s.iAttnV, h.nAttnV):
			nt, why = tensor.Q6_K, "attn_v, use_more_bits"
		case s.ftype == gguf.FileTypeQ4_KS && s.iAttnV < 4:
			nt, why = tensor.Q5_K, "attn_v of the first four layers"
		}
		if h.is70B && (nt == tensor.Q3_K || nt == tensor.Q4_K) {
			nt, why = tensor.Q5_K, "attn_v of a 70B model"
		}
		if h.nExpert == 8 {
			nt, why = tensor.Q8_0, "attn_v of an 8-expert model"
		}
		return nt, why
	case strings.Contains(name, "attn_k.weight"):
		if h.nExpert == 8 {
			return tensor.Q8_0, "attn_k of an 8-expert model"
		}
		return s.iq3QK(t, "attn_k")
	case strings.Contains(name, "attn_q.weight"):
		return s.iq3QK(t, "attn_q")
	case strings.Contains(name, "ffn_down"):
		i, n := s.layer(s.iFFNDown, name), h.nLayer
		s.iFFNDown++
		switch s.ftype {
		case gguf.FileTypeQ2_K:
			return tensor.Q3_K, "ffn_down"
		case gguf.FileTypeQ2_KS:
			if i < n/8 {
				return tensor.Q4_K, "ffn_down of the first eighth"
			}
		case gguf.FileTypeQ3_KL:
			if falcon {
				return tensor.Q4_K, "ffn_down"
			}
			return tensor.Q5_K, "ffn_down"
		case gguf.FileTypeQ4_KS:
			if !falcon && i < n/8 {
				return tensor.Q5_K, "ffn_down of the first eighth"
			}
		case gguf.FileTypeIQ4NL, gguf.FileTypeIQ4XS:
			if i < n/8 && !s.hasImatrix {
				return tensor.Q5_K, "ffn_down of the first eighth, without an imatrix"
			}
		case gguf.FileTypeIQ3XXS:
			if !s.hasImatrix {
				if i < n/8 {
					return tensor.Q4_K, "ffn_down of the first eighth, without an imatrix"
				}
				return tensor.Q3_K, "ffn_down, without an imatrix"
			}
		case gguf.FileTypeIQ3M:
			if i < n/8 || (h.nExpert == 8 && useMoreBits(i, n)) {
				return tensor.Q4_K, "ffn_down of the first eighth (or use_more_bits, 8 experts)"
			}
		case gguf.FileTypeQ3_KM:
			if i < n/16 {
				return tensor.Q5_K, "ffn_down of the first sixteenth"
			}
			if !falcon || useMoreBits(i, n) {
				return tensor.Q4_K, "ffn_down"
			}
			return tensor.Q3_K, ""
		case gguf.FileTypeQ4_KM:
			if falcon {
				if i < n/16 {
					return tensor.Q6_K, "ffn_down of the first sixteenth"
				}
				if useMoreBits(i, n) {
					return tensor.Q5_K, "ffn_down, use_more_bits"
				}
				return t, ""
			}
			if useMoreBits(i, n) {
				return tensor.Q6_K, "ffn_down, use_more_bits"
			}
		case gguf.FileTypeQ5_KM:
			if useMoreBits(i, n) {
				return tensor.Q6_K, "ffn_down, use_more_bits"
			}
		case gguf.FileTypeQ4_0, gguf.FileTypeQ5_0:
			// llama.cpp guards the first eighth of ffn_down against
			// Q4_0/Q5_0, only when an importance matrix is given.
			if s.hasImatrix && i < n/8 {
				if s.ftype == gguf.FileTypeQ4_0 {
					return tensor.Q4_1, "ffn_down of the first eighth, with an imatrix"
				}
				return tensor.Q5_1, "ffn_down of the first eighth, with an imatrix"
			}
		}
	case strings.Contains(name, "attn_output.weight"):
		if falcon {
			if s.ftype == gguf.FileTypeQ3_KL {
				return tensor.Q4_K, "attn_output"
			}
			break
		}
		if h.nExpert == 8 {
			switch s.ftype {
			case gguf.FileTypeQ2_K, gguf.FileTypeQ3_KS, gguf.FileTypeQ3_KM, gguf.FileTypeQ4_KS, gguf.FileTypeQ4_KM, gguf.FileTypeIQ4NL,
				gguf.FileTypeIQ4XS,
				gguf.FileTypeIQ3XS, gguf.FileTypeIQ3XXS, gguf.FileTypeIQ3S, gguf.FileTypeIQ3M:
				return tensor.Q5_K, "attn_output of an 8-expert model"
			}
			break
		}
		switch s.ftype {
		case gguf.FileTypeQ2_K:
			return tensor.Q3_K, "attn_output"
		case gguf.FileTypeQ3_KM:
			return tensor.Q4_K, "attn_output"
		case gguf.FileTypeQ3_KL:
			return tensor.Q5_K, "attn_output"
		case gguf.FileTypeIQ3XXS:
			return tensor.IQ3_S, "attn_output"
		case gguf.FileTypeIQ3M:
			return tensor.Q4_K, "attn_output"
		}
	case strings.Contains(name, "attn_qkv.weight"):
		switch s.ftype {
		case gguf.FileTypeQ3_KM, gguf.FileTypeQ3_KL, gguf.FileTypeIQ3M:
			return tensor.Q4_K, "attn_qkv"
		case gguf.FileTypeQ4_KM:
			return tensor.Q5_K, "attn_qkv"
		case gguf.FileTypeQ5_KM:
			return tensor.Q6_K, "attn_qkv"
		}
	case strings.Contains(name, "ffn_gate"):
		i := s.layer(s.iFFNGate, name)
		s.iFFNGate++
		return s.iq3XSMiddle(t, i, "ffn_gate")
	case strings.Contains(name, "ffn_up"):
		i := s.layer(s.iFFNUp, name)
		s.iFFNUp++
		return s.iq3XSMiddle(t, i, "ffn_up")
	}
	return t, ""
}

// iq3QK is llama.cpp's rule for attn_q and attn_k in the IQ3_XS and
// IQ3_XXS mixtures.
func (s *state) iq3QK(t tensor.DType, what string) (tensor.DType, string) {
	switch s.ftype {
	case gguf.FileTypeIQ3XS:
		return tensor.IQ3_XXS, what
	case gguf.FileTypeIQ3XXS:
		return tensor.IQ2_S, what
	}
	return t, ""
}

// iq3XSMiddle is llama.cpp's rule for ffn_gate and ffn_up of layer i in
// the IQ3_XS mixture: IQ3_XXS outside the first and last eighth.
func (s *state) iq3XSMiddle(t tensor.DType, i int, what string) (tensor.DType, string) {
	if n := s.h.nLayer; s.ftype == gguf.FileTypeIQ3XS && i >= n/8 && i < 7*n/8 {
		return tensor.IQ3_XXS, what + " of the middle layers"
	}
	return t, ""
}

// iq2 reports whether the mixture is one of the 2-bit grid ones or the
// 1-bit grid ones (IQ1_S, IQ1_M), which llama_tensor_get_type treats apart
// together.
func (s *state) iq2() bool {
	switch s.ftype {
	case gguf.FileTypeIQ2XXS, gguf.FileTypeIQ2XS, gguf.FileTypeIQ2S, gguf.FileTypeIQ2M,
		gguf.FileTypeIQ1S, gguf.FileTypeIQ1M:
		return true
	}
	return false
}

// iq2Low is the type the 1- and 2-bit mixtures give the tensors they
// spare: IQ3_S under IQ2_S and IQ2_M, Q2_K under IQ2_XXS, IQ2_XS, IQ1_S and
// IQ1_M.
func (s *state) iq2Low() tensor.DType {
	if s.ftype == gguf.FileTypeIQ2S || s.ftype == gguf.FileTypeIQ2M {
		return tensor.IQ3_S
	}
	return tensor.Q2_K
}

// iq2Type is llama_tensor_get_type's branch for the 1- and 2-bit
// mixtures, for the tensors other than output and token_embd: attn_v gets
// Q4_K under GQA ≥ 4 or 4+ experts, else iq2Low; ffn_down of the first
// eighth of the layers (by count, not by name) iq2Low; attn_output Q5_K
// with 8 experts, else IQ2_XXS under IQ1_S/IQ1_M and IQ3_S under
// IQ2_S/IQ2_M; attn_k Q4_K with 8 experts.
func (s *state) iq2Type(name string, t tensor.DType) (tensor.DType, string) {
	h := s.h
	switch {
	case strings.Contains(name, "attn_v.weight"):
		s.iAttnV++
		if h.nGQA >= 4 || h.nExpert >= 4 {
			return tensor.Q4_K, "attn_v, GQA >= 4 or 4+ experts"
		}
		return s.iq2Low(), "attn_v"
	case h.nExpert == 8 && strings.Contains(name, "attn_k.weight"):
		return tensor.Q4_K, "attn_k of an 8-expert model"
	case strings.Contains(name, "ffn_down"):
		i := s.iFFNDown
		s.iFFNDown++
		if i < h.nLayer/8 {
			return s.iq2Low(), "ffn_down of the first eighth"
		}
	case strings.Contains(name, "attn_output.weight"):
		if h.nExpert == 8 {
			return tensor.Q5_K, "attn_output of an 8-expert model"
		}
		if s.ftype == gguf.FileTypeIQ1S || s.ftype == gguf.FileTypeIQ1M {
			return tensor.IQ2_XXS, "attn_output"
		}
		if s.iq2Low() == tensor.IQ3_S {
			return tensor.IQ3_S, "attn_output"
		}
	}
	return t, ""
}
