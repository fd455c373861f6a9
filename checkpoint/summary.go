package checkpoint

import (
	"encoding/json"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/tensor"
)

// Summary is what `tfconv inspect` reports about a checkpoint. Every field is
// derived from headers and side files; no tensor data is read.
type Summary struct {
	Format       Format `json:"format"`
	Source       Format `json:"source,omitempty"`
	Architecture string `json:"architecture"`
	// Hyperparameters; 0 when the checkpoint does not say.
	Layers        int   `json:"layers"`
	EncoderLayers int   `json:"encoder_layers,omitempty"`
	DecoderLayers int   `json:"decoder_layers,omitempty"`
	Hidden        int64 `json:"hidden_size"`
	Heads         int64 `json:"heads"`
	KVHeads       int64 `json:"kv_heads"`
	Vocab         int64 `json:"vocab_size"`
	Context       int64 `json:"context_length"`
	// KeyLength and ValueLength are one head's key and value widths
	// (GGUF attention.key_length/value_length, config.json head_dim; 0:
	// hidden/heads).
	KeyLength   int64 `json:"key_length,omitempty"`
	ValueLength int64 `json:"value_length,omitempty"`

	// Experts and ExpertsUsed: a mixture of experts' feed-forwards per
	// layer and how many each token uses (0: dense).
	Experts     int64 `json:"experts,omitempty"`
	ExpertsUsed int64 `json:"experts_used,omitempty"`

	// FFNLength is a dense feed-forward's inner width, ExpertFFNLength an
	// expert's (where the config or GGUF states them).
	FFNLength       int64 `json:"ffn_length,omitempty"`
	ExpertFFNLength int64 `json:"expert_ffn_length,omitempty"`

	Tensors int   `json:"tensor_count"`
	Params  int64 `json:"params"`
	// ExpertParams are the parameters of the routed experts (in Params);
	// ActiveParams those one token computes with: Params less the experts
	// it is not routed to. Both 0 for a dense model.
	ExpertParams  int64       `json:"expert_params,omitempty"`
	ExpertBytes   int64       `json:"expert_bytes,omitempty"`
	ActiveParams  int64       `json:"active_params,omitempty"`
	TensorBytes   int64       `json:"tensor_bytes"`
	FileSize      int64       `json:"file_size"`
	Files         int         `json:"files"`
	BitsPerWeight float64     `json:"bits_per_weight"`
	DTypes        []DTypeStat `json:"dtypes"`
	LayerTable    []LayerStat `json:"layer_table"`
	// Quantized describes a GPTQ, AWQ or FP8 checkpoint, whose quantized
	// weights are listed (and counted above) as the float weights they
	// read as.
	Quantized *QuantizedSummary `json:"quantized,omitempty"`
	// Adapter describes a PEFT LoRA adapter (nil for a model), or a GGUF
	// one (general.type "adapter").
	Adapter *AdapterSummary `json:"adapter,omitempty"`
	// Type is what a GGUF holds (general.type): "model", "adapter",
	// "imatrix" or "mmproj" (also said of a file whose architecture is
	// "clip", as older multimodal projectors are); "" when it does not say.
	Type string `json:"type,omitempty"`
	// FileType is a GGUF's general.file_type as llama.h names it
	// ("Q4_K_M"); "" when the file has none.
	FileType string `json:"file_type,omitempty"`
	// Projector describes a multimodal projector (mmproj) GGUF.
	Projector *ProjectorSummary `json:"projector,omitempty"`
	// LayerPattern is what each layer of a decoder computes (the family's
	// arch.Family.LayerPattern, MoE by the experts present); absent when
	// the architecture is not a known decoder family.
	LayerPattern []LayerKind `json:"layer_pattern,omitempty"`
	// RecurrentFloats is the state one sequence keeps per recurrent layer
	// (llama.cpp's n_embd_r + n_embd_s: a convolution's last inputs and the
	// scan's state), read from the family's ssm.* hyper-parameters; 0
	// without recurrent layers.
	RecurrentFloats int64 `json:"recurrent_floats,omitempty"`
}

// LayerKind is one layer of Summary.LayerPattern.
type LayerKind struct {
	Layer int `json:"layer"`
	// Mixer is transformers' layer_types name: "full_attention",
	// "sliding_attention", "chunked_attention".
	Mixer string `json:"mixer"`
	// Window is the sliding window or chunk size (0: none).
	Window int  `json:"window,omitempty"`
	Rope   bool `json:"rope"`
	MoE    bool `json:"moe"`
	// Recurrent: the layer carries a fixed-size state instead of a KV
	// cache (arch.Mixer.Recurrent).
	Recurrent bool `json:"recurrent,omitempty"`
	// KVFrom is the earlier layer whose cache the layer attends over, when
	// it shares one; it keeps none of its own. nil: its own.
	KVFrom *int `json:"kv_from,omitempty"`
	// StateFloats is the recurrent state one sequence keeps for a
	// recurrent layer (arch.Layer.StateFloats); such a layer keeps no KV
	// cache.
	StateFloats int64 `json:"state_floats,omitempty"`
}

// layerPattern fills LayerPattern from the family of c's architecture,
// given config.json (cfg) or, without one, the GGUF metadata; moe are the
// layers holding routed experts.
func (s *Summary) layerPattern(c *Checkpoint, cfg map[string]any, moe map[int]bool) {
	var (
		f   *arch.Family
		hc  arch.Config
		err error
	)
	if cfg != nil {
		hc = arch.Config(cfg)
		f, err = arch.LookupConfig(hc)
	} else if c.Format == GGUF && s.Type != "mmproj" && s.Type != "adapter" && s.Type != "imatrix" {
		if f, err = arch.Lookup(s.Architecture); err == nil {
			infos := make([]tensor.Info, len(c.Tensors))
			for i, t := range c.Tensors {
				infos[i] = t.Info
			}
			hc, err = f.HFConfigOf(c.Metadata, infos)
		}
	}
	if f == nil || err != nil || f.Graph.EncoderOnly || f.Graph.EncoderDecoder {
		return
	}
	ls, err := f.LayerPattern(hc)
	if err != nil {
		return
	}
	for i, l := range ls {
		recurrent := l.Recurrent()
		k := LayerKind{Layer: i, Mixer: l.Name(), Window: l.Window, Rope: l.Rope, MoE: l.MoE || moe[i],
			Recurrent: recurrent, StateFloats: l.StateFloats}
		if recurrent && k.StateFloats == 0 {
			// The family's pattern states no size: Mamba's and Mamba-2's
			// state from the ssm.* keys it writes.
			if s.RecurrentFloats == 0 {
				s.RecurrentFloats = f.SSMStateFloats(hc)
			}
			k.StateFloats = s.RecurrentFloats
		}
		if l.KVShared {
			k.KVFrom = &l.KVFrom
		}
		s.LayerPattern = append(s.LayerPattern, k)
	}
}

// ProjectorSummary is what the clip.* keys of a multimodal projector GGUF
// (llama.cpp's mmproj files, tools/mtmd) say; 0 or "" when absent.
type ProjectorSummary struct {
	ProjectorType string `json:"projector_type"` // clip.projector_type: "mlp", "ldp", "resampler", "gemma3", …
	HasVision     bool   `json:"has_vision_encoder"`
	HasAudio      bool   `json:"has_audio_encoder"`
	ImageSize     int64  `json:"image_size,omitempty"`     // clip.vision.image_size
	PatchSize     int64  `json:"patch_size,omitempty"`     // clip.vision.patch_size
	VisionLayers  int64  `json:"vision_layers,omitempty"`  // clip.vision.block_count
	VisionWidth   int64  `json:"vision_width,omitempty"`   // clip.vision.embedding_length
	ProjectionDim int64  `json:"projection_dim,omitempty"` // clip.vision.projection_dim
	AudioLayers   int64  `json:"audio_layers,omitempty"`   // clip.audio.block_count
	// VisionHeads is clip.vision.attention.head_count.
	VisionHeads int64 `json:"vision_heads,omitempty"`
	// TokensPerImage is how many embeddings one image gives (the
	// projector's record: the patch grid, pooled), when tfconv knows the
	// projector type.
	TokensPerImage int64 `json:"tokens_per_image,omitempty"`
	// Summary names the tower and projection (the projector's record).
	Summary string `json:"summary,omitempty"`
}

// projectorSummary reads a projector's clip.* keys.
func projectorSummary(m tensor.Metadata) *ProjectorSummary {
	p := &ProjectorSummary{}
	// clip-impl.h's KEY_PROJ_TYPE; a projector of mixed modalities
	// names one per encoder instead.
	p.ProjectorType, _ = m.Str("clip.projector_type")
	for _, k := range []string{"clip.vision.projector_type", "clip.audio.projector_type"} {
		if v, ok := m.Str(k); ok && p.ProjectorType == "" {
			p.ProjectorType = v
		} else if ok && v != p.ProjectorType {
			p.ProjectorType += " + " + v
		}
	}
	if v, ok := m.Get("clip.has_vision_encoder"); ok {
		p.HasVision, _ = v.BoolValue()
	}
	if v, ok := m.Get("clip.has_audio_encoder"); ok {
		p.HasAudio, _ = v.BoolValue()
	}
	p.ImageSize, _ = m.Int("clip.vision.image_size")
	p.PatchSize, _ = m.Int("clip.vision.patch_size")
	p.VisionLayers, _ = m.Int("clip.vision.block_count")
	p.VisionWidth, _ = m.Int("clip.vision.embedding_length")
	p.VisionHeads, _ = m.Int("clip.vision.attention.head_count")
	p.ProjectionDim, _ = m.Int("clip.vision.projection_dim")
	p.AudioLayers, _ = m.Int("clip.audio.block_count")
	if rec, ok := arch.ProjectorByType(p.ProjectorType); ok {
		p.TokensPerImage = rec.TokensPerImage(m.Int)
		p.Summary = rec.Summary
	}
	return p
}

// hfProjector is the summary of a Hugging Face checkpoint's tower when its
// class has a projector record: the keys its mmproj would hold. A config
// the record cannot read leaves it out (inspect is not the place to
// refuse).
func hfProjector(c *Checkpoint) *ProjectorSummary {
	top, err := c.RawConfig()
	if err != nil || top == nil {
		return nil
	}
	rec, ok := arch.ProjectorFor(top)
	if !ok {
		return nil
	}
	pre, err := c.ProcessorConfig()
	if err != nil {
		return nil
	}
	md, err := rec.TowerMetadata(top, pre)
	if err != nil {
		return nil
	}
	return projectorSummary(md)
}

// ggufKind fills Type, FileType, Projector and a GGUF adapter's Adapter
// from a GGUF's metadata and tensor names.
func (s *Summary) ggufKind(c *Checkpoint) {
	m := c.Metadata
	s.Type, _ = m.Str("general.type")
	if a, _ := m.Str("general.architecture"); a == "clip" && (s.Type == "" || s.Type == "model") {
		s.Type = "mmproj"
	}
	if ft, ok := m.Int("general.file_type"); ok && ft >= 0 && ft <= math.MaxUint32 {
		s.FileType = gguf.FileType(ft).String()
	}
	switch s.Type {
	case "mmproj":
		s.Projector = projectorSummary(m)
	case "adapter":
		if s.Adapter == nil {
			s.Adapter = ggufAdapter(c)
		}
	}
}

// ggufAdapter summarizes a LoRA GGUF (convert_lora_to_gguf.py's layout):
// adapter.type, adapter.lora.alpha, the base model from general.base_model.*
// and one "W.lora_a" / "W.lora_b" pair per adapted weight W, whose lora_a
// is [rank, in].
func ggufAdapter(c *Checkpoint) *AdapterSummary {
	m := c.Metadata
	a := &AdapterSummary{Targets: []string{}}
	a.Type, _ = m.Str("adapter.type")
	if v, ok := m.Get("adapter.lora.alpha"); ok {
		a.Alpha, _ = v.Float()
	}
	a.BaseModel, _ = m.Str("general.base_model.0.repo_url")
	if name, ok := m.Str("general.base_model.0.name"); ok {
		if org, ok := m.Str("general.base_model.0.organization"); ok {
			name = org + "/" + name
		}
		a.BaseModel = name
	}
	targets := map[string]bool{}
	for _, t := range c.Tensors {
		w, ok := strings.CutSuffix(t.Name, ".lora_a")
		if !ok {
			continue
		}
		a.Pairs++
		if len(t.Shape) == 2 && (a.Rank == 0 || t.Shape[0] > a.Rank) {
			a.Rank = t.Shape[0]
		}
		if _, _, ok := LayerOf(w); ok { // blk.N.attn_q.weight, enc.blk.N.… → attn_q.weight
			parts := strings.Split(w, ".")
			for i, p := range parts {
				if _, err := strconv.Atoi(p); err == nil {
					w = strings.Join(parts[i+1:], ".")
					break
				}
			}
		}
		targets[strings.TrimSuffix(w, ".weight")] = true
	}
	for t := range targets {
		a.Targets = append(a.Targets, t)
	}
	sort.Strings(a.Targets)
	if a.Rank > 0 {
		a.Scale = a.Alpha / float64(a.Rank)
	}
	return a
}

// AdapterSummary describes a PEFT LoRA adapter from its adapter_config.json
// and tensors.
type AdapterSummary struct {
	Type         string   `json:"type"` // "lora"
	Rank         int64    `json:"rank"`
	Alpha        float64  `json:"alpha"`
	RSLoRA       bool     `json:"rslora"`
	Scale        float64  `json:"scale"`   // alpha/rank, or alpha/√rank with rsLoRA
	Targets      []string `json:"targets"` // target_modules (a regular expression when TargetsRegex)
	TargetsRegex bool     `json:"targets_regex,omitempty"`
	BaseModel    string   `json:"base_model"` // base_model_name_or_path
	// Pairs is how many base weights the adapter changes (0 when it cannot
	// be applied).
	Pairs int `json:"pairs"`
	// Unsupported says why tfconv cannot apply the adapter ("" when it can).
	Unsupported string `json:"unsupported,omitempty"`
}

func summarizeLoRA(c *Checkpoint) *AdapterSummary {
	cfg := c.LoRAConfig
	a := &AdapterSummary{Type: "lora", Rank: cfg.R, Alpha: cfg.Alpha, RSLoRA: cfg.RSLoRA, Scale: cfg.Scale(),
		Targets: cfg.Targets, TargetsRegex: cfg.TargetsRegex, BaseModel: cfg.BaseModel}
	if a.Targets == nil {
		a.Targets = []string{}
	}
	l, err := c.LoRA()
	if err != nil {
		a.Unsupported = err.Error()
	} else {
		a.Pairs = len(l.Pairs)
	}
	return a
}

// QuantizedSummary is how a GPTQ, AWQ or FP8 checkpoint stores its weights.
type QuantizedSummary struct {
	Method  string `json:"method"` // config.json quant_method: "gptq", "gptq_v2", "awq", "fp8", "compressed-tensors", "fbgemm_fp8"
	Bits    int64  `json:"bits"`   // per stored weight
	Scheme  string `json:"scheme"` // the layout in words
	Layers  int64  `json:"layers"` // weights presented dequantized
	Dropped int64  `json:"dropped_activation_scales,omitempty"`
}

// DTypeStat totals the tensors of one dtype.
type DTypeStat struct {
	DType   string `json:"dtype"`
	Tensors int    `json:"tensors"`
	Params  int64  `json:"params"`
	Bytes   int64  `json:"bytes"`
}

// LayerStat totals the tensors of one layer (block) of one stack. Tensors
// outside every layer (embeddings, final norm, output head) are in the row
// whose Layer is -1.
type LayerStat struct {
	Stack   string   `json:"stack"` // "", "encoder" or "decoder"
	Layer   int      `json:"layer"`
	Tensors int      `json:"tensors"`
	Params  int64    `json:"params"`
	Bytes   int64    `json:"bytes"`
	DTypes  []string `json:"dtypes"`
}

// layerPatterns find the layer a tensor belongs to from its name, in the
// naming schemes of Hugging Face (LLaMA model.layers.N, GPT-2 transformer.h.N,
// BERT encoder.layer.N, BART/Marian model.encoder.layers.N, T5
// encoder.block.N) and GGUF (blk.N, enc.blk.N, dec.blk.N).
var layerPatterns = []struct {
	re    *regexp.Regexp
	stack string // "" means: take it from submatch 1
}{
	{regexp.MustCompile(`(?:^|\.)(encoder|decoder)\.(?:layers|layer|block)\.(\d+)\.`), ""},
	{regexp.MustCompile(`^(enc|dec)\.blk\.(\d+)\.`), ""},
	{regexp.MustCompile(`(?:^|\.)(?:layers|layer|h|blk|block|blocks)\.(\d+)\.`), "-"},
}

// LayerOf returns the stack ("", "encoder", "decoder") and layer index of a
// tensor name, or ok=false for tensors outside the layers.
func LayerOf(name string) (stack string, layer int, ok bool) {
	for _, p := range layerPatterns {
		m := p.re.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		idx := m[len(m)-1]
		n, err := strconv.Atoi(idx)
		if err != nil || n < 0 {
			continue
		}
		if p.stack == "-" {
			return "", n, true
		}
		switch m[1] {
		case "encoder", "enc":
			stack = "encoder"
		default:
			stack = "decoder"
		}
		return stack, n, true
	}
	return "", 0, false
}

// countedTensors are the tensors a summary counts: c's, except that a
// Hugging Face checkpoint's packed tensors (arch.Family.Packed: gpt-oss's
// MXFP4 experts, uint8 values and scales) count as the tensors they hold,
// as their GGUF form has them.
func countedTensors(c *Checkpoint) []tensor.Info {
	out := make([]tensor.Info, len(c.Tensors))
	for i, t := range c.Tensors {
		out[i] = t.Info
	}
	cfg, err := c.Config()
	if err != nil || cfg == nil || !c.HuggingFace() {
		return out
	}
	f, ok := arch.ForConfig(arch.Config(cfg))
	if !ok || len(f.Packed) == 0 {
		return out
	}
	maps, err := f.PackedMappings(out)
	if err != nil || len(maps) == 0 {
		return out
	}
	packed := map[string]bool{}
	var made []tensor.Info
	for _, m := range maps {
		packed[m.Source] = true
		dt := m.Blocks
		if dt == 0 {
			t, _ := c.Tensor(m.Source)
			dt = t.DType
		} else {
			packed[m.Scales] = true
		}
		info := tensor.Info{Name: m.Name, DType: dt, Shape: m.Shape}
		if info.Size, err = dt.ShapeBytes(m.Shape); err != nil {
			return out
		}
		made = append(made, info)
	}
	kept := out[:0]
	for _, t := range out {
		if !packed[t.Name] {
			kept = append(kept, t)
		}
	}
	return append(kept, made...)
}

// Summarize computes the summary of an opened checkpoint.
func Summarize(c *Checkpoint) (*Summary, error) {
	s := &Summary{Format: c.Format, Source: c.Source, Tensors: len(c.Tensors), FileSize: c.Size(), Files: len(c.Files)}
	if c.LoRAConfig != nil {
		s.Adapter = summarizeLoRA(c)
	}
	if s.Source == s.Format {
		s.Source = ""
	}
	if m, ok := c.SourceInfo.Str(SourceInfoQuantMethod); ok {
		q := &QuantizedSummary{Method: m}
		q.Bits, _ = c.SourceInfo.Int(SourceInfoQuantBits)
		q.Scheme, _ = c.SourceInfo.Str(SourceInfoQuantScheme)
		q.Layers, _ = c.SourceInfo.Int(SourceInfoQuantLayers)
		q.Dropped, _ = c.SourceInfo.Int(SourceInfoQuantDropped)
		s.Quantized = q
	}
	dt := map[tensor.DType]*DTypeStat{}
	type lkey struct {
		stack string
		layer int
	}
	layers := map[lkey]*LayerStat{}
	layerDT := map[lkey]map[string]bool{}
	moe := map[int]bool{}
	for _, t := range countedTensors(c) {
		n := t.NumElements()
		s.Params += n
		s.TensorBytes += t.Size
		if _, ok := ExpertTensor(t.Name, t.Shape); ok {
			s.ExpertParams += n
			s.ExpertBytes += t.Size
		}
		d := dt[t.DType]
		if d == nil {
			d = &DTypeStat{DType: t.DType.String()}
			dt[t.DType] = d
		}
		d.Tensors++
		d.Params += n
		d.Bytes += t.Size

		k := lkey{"", -1}
		if st, l, ok := LayerOf(t.Name); ok {
			k = lkey{st, l}
		}
		ls := layers[k]
		if ls == nil {
			ls = &LayerStat{Stack: k.stack, Layer: k.layer}
			layers[k] = ls
			layerDT[k] = map[string]bool{}
		}
		ls.Tensors++
		ls.Params += n
		ls.Bytes += t.Size
		layerDT[k][t.DType.String()] = true
		if _, ok := ExpertTensor(t.Name, t.Shape); ok && k.stack == "" && k.layer >= 0 {
			moe[k.layer] = true
		}
	}
	if s.Params > 0 {
		s.BitsPerWeight = float64(s.TensorBytes) * 8 / float64(s.Params)
	}
	for _, d := range dt {
		s.DTypes = append(s.DTypes, *d)
	}
	sort.Slice(s.DTypes, func(i, j int) bool {
		if s.DTypes[i].Bytes != s.DTypes[j].Bytes {
			return s.DTypes[i].Bytes > s.DTypes[j].Bytes
		}
		return s.DTypes[i].DType < s.DTypes[j].DType
	})
	maxLayer := map[string]int{}
	for k, ls := range layers {
		for d := range layerDT[k] {
			ls.DTypes = append(ls.DTypes, d)
		}
		sort.Strings(ls.DTypes)
		s.LayerTable = append(s.LayerTable, *ls)
		if k.layer >= 0 && k.layer+1 > maxLayer[k.stack] {
			maxLayer[k.stack] = k.layer + 1
		}
	}
	stackOrder := map[string]int{"": 0, "encoder": 1, "decoder": 2}
	sort.Slice(s.LayerTable, func(i, j int) bool {
		a, b := s.LayerTable[i], s.LayerTable[j]
		if (a.Layer < 0) != (b.Layer < 0) {
			return a.Layer >= 0 // the non-layer row last
		}
		if a.Stack != b.Stack {
			return stackOrder[a.Stack] < stackOrder[b.Stack]
		}
		return a.Layer < b.Layer
	})

	cfg, err := c.Config()
	if err != nil {
		return nil, err
	}
	if cfg != nil {
		s.fromConfig(cfg)
	}
	if s.Architecture == "" || s.Hidden == 0 {
		s.fromGGUF(c.Metadata)
	}
	if c.Format == GGUF {
		s.ggufKind(c)
	} else if cfg != nil {
		s.Projector = hfProjector(c)
	}
	// What the names say, where the configuration is silent.
	if s.Layers == 0 {
		s.Layers = maxLayer[""]
	}
	if s.EncoderLayers == 0 {
		s.EncoderLayers = maxLayer["encoder"]
	}
	if s.DecoderLayers == 0 {
		s.DecoderLayers = maxLayer["decoder"]
	}
	if s.Layers == 0 {
		s.Layers = s.EncoderLayers + s.DecoderLayers
	}
	if s.KVHeads == 0 {
		s.KVHeads = s.Heads
	}
	if s.ExpertParams > 0 && s.Experts > 0 && s.ExpertsUsed > 0 && s.ExpertsUsed <= s.Experts {
		s.ActiveParams = s.Params - s.ExpertParams + s.ExpertParams/s.Experts*s.ExpertsUsed
	}
	if s.Adapter == nil {
		s.layerPattern(c, cfg, moe)
	}
	return s, nil
}

// hfExpert matches Hugging Face's per-expert tensors (Mixtral's
// block_sparse_moe.experts.N., Qwen2-MoE's and DeepSeek's mlp.experts.N.);
// shared experts ("shared_expert", "shared_experts") are not routed.
var hfExpert = regexp.MustCompile(`\.experts\.(\d+)\.`)

// ExpertTensor reports whether a tensor holds routed experts' weights, and
// how many experts it holds: GGUF's stacked "_exps." tensors (experts
// outermost, as gguf-py counts them), one Hugging Face expert's, or
// Hugging Face's stacked ones.
func ExpertTensor(name string, shape tensor.Shape) (experts int64, ok bool) {
	if strings.Contains(name, "_exps.") {
		if len(shape) >= 3 && shape[len(shape)-3] > 0 {
			return shape[len(shape)-3], true
		}
		return 0, false
	}
	if hfExpert.MatchString(name) {
		return 1, true
	}
	if hfStackedExperts.MatchString(name) && len(shape) == 3 && shape[0] > 0 {
		return shape[0], true
	}
	return 0, false
}

// hfStackedExperts matches Hugging Face's tensors that hold every expert
// of a layer, experts outermost (Llama 4's feed_forward.experts.gate_up_proj
// and down_proj, parameters without a ".weight").
var hfStackedExperts = regexp.MustCompile(`\.experts\.(gate_up|gate|up|down)_proj$`)

func (s *Summary) fromConfig(cfg map[string]any) {
	s.Architecture = cfgString(cfg, "model_type")
	if s.Architecture == "" {
		if a, ok := cfg["architectures"].([]any); ok && len(a) > 0 {
			s.Architecture, _ = a[0].(string)
		}
	}
	s.Layers = int(cfgInt(cfg, "num_hidden_layers", "n_layer", "num_layers"))
	s.EncoderLayers = int(cfgInt(cfg, "encoder_layers"))
	s.DecoderLayers = int(cfgInt(cfg, "decoder_layers", "num_decoder_layers"))
	if s.Architecture == "t5" && s.EncoderLayers == 0 {
		s.EncoderLayers = int(cfgInt(cfg, "num_layers"))
	}
	if s.EncoderLayers > 0 || s.DecoderLayers > 0 {
		s.Layers = s.EncoderLayers + s.DecoderLayers
	}
	s.Hidden = cfgInt(cfg, "hidden_size", "n_embd", "d_model")
	s.Heads = cfgInt(cfg, "num_attention_heads", "n_head", "num_heads", "encoder_attention_heads")
	s.KVHeads = cfgInt(cfg, "num_key_value_heads")
	s.KeyLength = cfgInt(cfg, "head_dim")
	s.ValueLength = s.KeyLength
	if n, r := cfgInt(cfg, "qk_nope_head_dim"), cfgInt(cfg, "qk_rope_head_dim"); n > 0 || r > 0 {
		// Multi-head latent attention (DeepSeek-2): a head's key is its
		// position-free and rotated parts, as the converter writes
		// key_length (arch.DeepSeek2); its value is v_head_dim wide.
		s.KeyLength, s.ValueLength = n+r, cfgInt(cfg, "v_head_dim")
	}
	s.Vocab = cfgInt(cfg, "vocab_size")
	s.Context = cfgInt(cfg, "max_position_embeddings", "n_positions", "n_ctx")
	s.Experts = cfgInt(cfg, "num_local_experts", "num_experts", "n_routed_experts")
	s.ExpertsUsed = cfgInt(cfg, "num_experts_per_tok")
	// The feed-forward widths, from the keys the family's converter reads
	// (package arch owns them).
	if f, ok := arch.ForConfig(arch.Config(cfg)); ok {
		// ERNIE 4.5 names its expert counts moe_num_experts and moe_k.
		s.Experts = f.Experts(arch.Config(cfg))
		if n, ok := f.ParamInt(arch.Config(cfg), "expert_used_count"); ok {
			s.ExpertsUsed = n
		}
		s.FFNLength, _ = f.ParamInt(arch.Config(cfg), "feed_forward_length")
		s.ExpertFFNLength, _ = f.ParamInt(arch.Config(cfg), "expert_feed_forward_length")
	}
}

func (s *Summary) fromGGUF(m tensor.Metadata) {
	arch, ok := m.Str("general.architecture")
	if !ok {
		return
	}
	s.Architecture = arch
	get := func(key string) int64 {
		v, ok := m.Int(arch + "." + key)
		if !ok {
			// A per-layer array (Nemotron-H's head_count_kv and
			// feed_forward_length, 0 in the layers without): the largest.
			if a, isArray := m.Get(arch + "." + key); isArray {
				if list, ok := a.Array(); ok {
					for i := 0; i < list.Len(); i++ {
						n, _ := list.Index(i).Int()
						v = max(v, n)
					}
				}
			}
		}
		return v
	}
	s.Layers = int(get("block_count"))
	if d := get("decoder_block_count"); d > 0 {
		s.EncoderLayers, s.DecoderLayers = s.Layers, int(d)
		s.Layers += int(d)
	}
	s.Hidden = get("embedding_length")
	s.Heads = get("attention.head_count")
	s.KVHeads = get("attention.head_count_kv")
	if v, ok := m.Get(arch + ".attention.head_count_kv"); ok {
		if a, ok := v.Array(); ok {
			// one count per layer (LFM2's: 0 for its convolutions): the
			// attention layers'
			for i := 0; i < a.Len(); i++ {
				n, _ := a.Index(i).Int()
				s.KVHeads = max(s.KVHeads, n)
			}
		}
	}
	s.KeyLength = get("attention.key_length")
	s.ValueLength = get("attention.value_length")
	s.Context = get("context_length")
	s.Experts = get("expert_count")
	s.ExpertsUsed = get("expert_used_count")
	s.FFNLength = get("feed_forward_length")
	s.ExpertFFNLength = get("expert_feed_forward_length")
	s.Vocab = get("vocab_size")
	if s.Vocab == 0 {
		if v, ok := m.Get("tokenizer.ggml.tokens"); ok {
			if a, ok := v.Array(); ok {
				s.Vocab = int64(a.Len())
			}
		}
	}
}

func cfgString(cfg map[string]any, key string) string {
	s, _ := cfg[key].(string)
	return s
}

// cfgInt returns the first of keys that holds an integer.
func cfgInt(cfg map[string]any, keys ...string) int64 {
	for _, k := range keys {
		switch v := cfg[k].(type) {
		case json.Number:
			if n, err := v.Int64(); err == nil {
				return n
			}
		case float64:
			return int64(v)
		}
	}
	return 0
}
