package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"

	spec "github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/internal/progress"
	"github.com/tfconv/tfconv/kernels"
	"github.com/tfconv/tfconv/tensor"
	"github.com/tfconv/tfconv/tokenizer"
)

// Config is the architecture of a loaded model: every number and choice the
// forward pass depends on, whatever file it was read from.
type Config struct {
	// attentionFree: no layer attends (Mamba's), so no head count is
	// stated (checkDims takes 0 heads then).
	attentionFree bool

	Arch          string  `json:"arch"`                     // gpt2, llama, bert, marian, bart, t5, bloom
	Layers        int     `json:"layers"`                   // decoder blocks (encoder blocks for encoder-only models)
	EncoderLayers int     `json:"encoder_layers,omitempty"` // encoder blocks of an encoder-decoder model
	DModel        int     `json:"d_model"`
	Vocab         int     `json:"vocab"`
	Heads         int     `json:"heads"`
	KVHeads       int     `json:"kv_heads"`
	HeadDim       int     `json:"head_dim"`
	FFN           int     `json:"ffn"`                     // feed-forward width (of each expert in a mixture)
	Experts       int     `json:"experts,omitempty"`       // feed-forwards per layer of a mixture of experts (0: dense)
	ExpertsUsed   int     `json:"experts_used,omitempty"`  // experts each token is routed to
	ExpertFFN     int     `json:"expert_ffn,omitempty"`    // a routed expert's feed-forward width
	SharedFFN     int     `json:"shared_ffn,omitempty"`    // the shared expert's width (0: none)
	MaxPositions  int     `json:"max_positions,omitempty"` // size of a learned or sinusoidal position table; 0 = unbounded
	Context       int     `json:"context,omitempty"`       // context length the model was trained on (config.json max_position_embeddings, GGUF context_length); 0 = not stated
	Eps           float32 `json:"eps"`                     // LayerNorm / RMSNorm epsilon
	Activation    string  `json:"activation"`              // gelu (erf), gelu_tanh, bloom_gelu, gelu_ggml (LoadOptions.MatchLlamaCpp), silu, relu; gated FFNs prefix "gated-"

	RopeTheta float64 `json:"rope_theta,omitempty"` // RoPE base; 0 = no RoPE
	RopeDim   int     `json:"rope_dim,omitempty"`   // rotated elements per head
	RopeNeox  bool    `json:"rope_neox,omitempty"`  // rotate-half pairs (HF) rather than interleaved pairs (GGUF)
	// MRoPE are M-RoPE's sections (time, height, width, extra: pairs per
	// position stream; Qwen-VL's rope.dimension_sections); zero: none.
	MRoPE []int `json:"mrope,omitempty"`
	// MRoPEInterleaved: the sections take every third pair (Qwen3-VL)
	// rather than consecutive runs.
	MRoPEInterleaved bool `json:"mrope_interleaved,omitempty"`

	ScaleEmbedding bool `json:"scale_embedding,omitempty"` // multiply token embeddings by √d_model
	TiedEmbeddings bool `json:"tied_embeddings"`           // lm_head shares the token embedding

	RelBuckets     int `json:"relative_buckets,omitempty"`      // T5 relative position buckets
	RelMaxDistance int `json:"relative_max_distance,omitempty"` // T5

	// Alibi adds ALiBi's per-head linear bias on key positions to every
	// attention score (BLOOM) instead of a position embedding.
	Alibi bool `json:"alibi,omitempty"`
	// TypeVocab is the number of token types (BERT's type_vocab_size): rows
	// of the token-type embedding; 0 for models without one.
	TypeVocab int `json:"type_vocab,omitempty"`

	BOS int `json:"bos"` // -1 when absent
	EOS int `json:"eos"` // -1 when absent
	// StopIDs are the other ids that end a generation as EOS does:
	// transformers' eos_token_id when it is a list (Llama 3.1's [128001,
	// 128008, 128009]: EOS is the first), llama.cpp's end-of-turn and
	// end-of-message tokens of a GGUF (endOfGeneration).
	StopIDs      []int `json:"stop_ids,omitempty"`
	PAD          int   `json:"pad"`                     // -1 when absent
	DecoderStart int   `json:"decoder_start,omitempty"` // encoder-decoder: first decoder token
	ForcedEOS    int   `json:"forced_eos"`              // -1 when absent: EOS forced at the last generated position

	EncoderDecoder bool   `json:"encoder_decoder,omitempty"`
	EncoderOnly    bool   `json:"encoder_only,omitempty"`
	Naming         string `json:"naming"` // "hf" or "gguf": which tensor names the checkpoint uses
}

// LoadOptions tunes Load.
type LoadOptions struct {
	// Threads sets the kernels' thread count when > 0 (kernels.SetThreads).
	Threads int
	// MatchLlamaCpp computes as llama.cpp's CPU backend does rather than as
	// the reference float32 model: every matrix multiply rounds its
	// activations to the weight type's vec_dot_type first (8-bit blocks for
	// quantized weights, binary16/bfloat16 for half-precision ones) and
	// sums in ggml's order (kernels.MatMulQ), and GELU reads ggml's binary16
	// table (Config.Activation becomes "gelu_ggml"). On CPUs with int8 dot
	// products this is also the faster mode for quantized weights. The
	// logits then follow llama.cpp's (the fixtures' README bounds its own
	// build-to-build variation) instead of transformers'.
	MatchLlamaCpp bool
	// Progress, when not nil, receives a progress line of the weight bytes
	// read ("load: …", with ETA): a large checkpoint takes a while to read.
	Progress io.Writer
}

// Input is one sequence to run.
type Input struct {
	Tokens        []int
	DecoderTokens []int // DecoderTokens only for encoder-decoder models

	// Mask is transformers' attention_mask over Tokens: false marks a
	// padding position, a key no query attends to (its own query row is
	// still computed). nil means every position is real. For
	// encoder-decoder models it masks the encoder's self-attention and the
	// decoder's cross-attention alike, as transformers does.
	//
	// A query that can see no unmasked key at all (the first rows of a
	// left-padded decoder-only input) gets a zero attention output, where
	// transformers averages over keys whose scores all equal finfo.min;
	// such rows are padding and their outputs carry no meaning.
	Mask []bool
	// DecoderMask is transformers' decoder_attention_mask over
	// DecoderTokens (encoder-decoder models only); nil means all real.
	DecoderMask []bool
	// TokenTypes are BERT's token_type_ids (segment ids) over Tokens, each
	// below Config.TypeVocab; nil means all 0.
	TokenTypes []int

	// Embeds, when non-nil, has one entry per token: a non-nil row of
	// d_model values replaces that position's input embedding as it is
	// (after the family's embedding scale, which it does not get: Gemma 3's
	// image features enter unscaled in transformers and llama.cpp alike).
	// Decoder-only models; the image path (ImageInput) fills it.
	Embeds [][]float32
	// Groups, when non-nil, has one entry per token: positions of one
	// contiguous run sharing a group ≥ 0 attend to each other both ways
	// (Gemma 3's image tokens); -1 keeps the causal mask.
	Groups []int
	// Positions, when non-nil, has one entry per token: its M-RoPE
	// positions (temporal, row, column), as transformers' get_rope_index
	// gives them for a prompt with an image (Qwen-VL). Only models with
	// M-RoPE sections take them; nil: the three equal 0, 1, 2, ….
	Positions [][4]int
	// Deepstack, when non-nil, holds per decoder layer l (from the first)
	// one entry per token: a non-nil row of d_model values is added to
	// that token's hidden state after layer l (Qwen3-VL's deepstack image
	// features). Decoder-only models.
	Deepstack [][][]float32
}

// Output is what Forward computed.
type Output struct {
	Logits [][]float32 // [T][vocab] (decoder positions for enc-dec); nil for encoder-only models
	Hidden [][]float32 // last hidden state [T][d_model] (after the final norm)
	Pooled []float32   // BERT's pooler output tanh(W·h[0]+b) when the checkpoint has a pooler
}

// Trace is an optional recorder passed to Forward; nil records nothing.
type Trace struct {
	// Layers is filled by Forward: the hidden state after each block
	// [layer][T][d_model] (decoder blocks for enc-dec; encoder-only: encoder
	// blocks).
	Layers [][][]float32
	// Kinds is filled beside Layers by the architectures that state a
	// per-layer pattern (arch.Family.LayerPattern): each block's mixers by
	// arch.Layer.Name ("full_attention", "mamba2", "linear_attention",
	// "full_attention+mamba2" …); nil for the others.
	Kinds []string
	// AttnLayer and AttnHead choose the self-attention map to record;
	// AttnLayer < 0 records none.
	AttnLayer, AttnHead int
	// Attention is filled with the [Tq][Tk] softmax probabilities of that
	// layer and head.
	Attention [][]float32
}

// arch is what each architecture file implements.
type arch interface {
	// step runs tokens at positions s.cache.Len.. through the decoder (the
	// whole encoder for encoder-only models), appending keys and values to
	// s.cache. It returns the final hidden states [T][d_model] and, unless
	// the model is encoder-only, the logits: of every position, or only the
	// last one when lastOnly.
	step(s *Session, tokens []int, tr *Trace, lastOnly bool) (hidden, logits []float32, err error)
}

// encoderArch is implemented by encoder-decoder architectures.
type encoderArch interface {
	// encode runs the encoder over tokens and stores in s what the decoder's
	// cross-attention needs.
	encode(s *Session, tokens []int) error
}

// Model is a loaded transformer. It is safe for concurrent use; per-sequence
// state lives in a Session.
type Model struct {
	cfg    Config
	impl   arch
	ckpt   *checkpoint.Checkpoint
	tok    *tokenizer.Tokenizer
	Path   string  // as given to Load
	pooler *linear // BERT only

	// Tensors lists the checkpoint's tensors as Load found them (name,
	// dtype, shape, offset), in the checkpoint's order: what the weights
	// the model holds were stored as, so that no caller reopens the file
	// to ask.
	Tensors []tensor.Info
	// Metadata is the checkpoint's metadata as Load read it (GGUF KVs,
	// safetensors __metadata__, native metadata).
	Metadata tensor.Metadata
}

// Config returns the model's architecture.
func (m *Model) Config() Config { return m.cfg }

// Tokenizer returns the checkpoint's tokenizer, or nil when it carries none.
func (m *Model) Tokenizer() *tokenizer.Tokenizer { return m.tok }

// Close releases the checkpoint's files. Weights loaded into memory stay
// valid.
func (m *Model) Close() error {
	if m.ckpt == nil {
		return nil
	}
	err := m.ckpt.Close()
	m.ckpt = nil
	return err
}

// Load reads the model at path: a Hugging Face directory (config.json and
// HF tensor names), a GGUF file (metadata and llama.cpp tensor names) or a
// native .tfn file (its Source says which naming it keeps; config.json rides
// along as an aux file). Weights keep their checkpoint dtype; only 1-D
// tensors (norms, biases) are decoded to float32.
func Load(path string, opts LoadOptions) (*Model, error) {
	c, err := checkpoint.Open(path)
	if err != nil {
		return nil, err
	}
	m, err := LoadCheckpoint(c, opts)
	if err == nil {
		// Read over HTTP: the files the weights came from are checked
		// against the Hub's sha256 (fetching only what was not read).
		err = c.VerifySources()
	}
	// The weights have been read into memory; the files are not needed.
	c.Close()
	if err != nil {
		return nil, err
	}
	m.Path = path
	return m, nil
}

// LoadCheckpoint is Load of an opened checkpoint (or a view of one, such
// as checkpoint.WithTensors makes); c stays open, the caller's to close.
func LoadCheckpoint(c *checkpoint.Checkpoint, opts LoadOptions) (*Model, error) {
	if opts.Threads > 0 {
		kernels.SetThreads(opts.Threads)
	}
	var total int64
	for _, t := range c.Tensors {
		total += t.Size
	}
	meter := progress.New(opts.Progress, "load", total, progress.Bytes, "")
	m, mats, err := loadFrom(c, meter)
	if err == nil {
		meter.Set(total, total) // the tensors it did not read are not needed
	}
	meter.Finish()
	if err != nil {
		return nil, err
	}
	if opts.MatchLlamaCpp {
		matchLlamaCpp(m, mats)
	}
	m.Path = c.Path
	m.Tensors = make([]tensor.Info, len(c.Tensors))
	for i, t := range c.Tensors {
		m.Tensors[i] = t.Info
	}
	m.Metadata = c.Metadata
	if t, err := tokenizer.FromSource(c.Sides()); err == nil {
		m.tok = t
	}
	return m, nil
}

// loadFrom loads the model in c and returns it with every weight matrix
// it loaded.
func loadFrom(c *checkpoint.Checkpoint, meter *progress.Meter) (*Model, []*kernels.Matrix, error) {
	l := &loader{c: c, meter: meter}
	if c.Format == checkpoint.GGUF || c.Source == checkpoint.GGUF {
		m, err := loadGGUF(l)
		if err == nil {
			endOfGeneration(m, c, nil)
		}
		return m, l.mats, err
	}
	hc, err := c.Config()
	if err != nil {
		return nil, nil, err
	}
	if hc == nil {
		return nil, nil, fmt.Errorf("model: %s: no config.json (needed to know the architecture of a Hugging Face checkpoint)", c.Path)
	}
	m, err := loadHF(l, spec.Config(hc))
	if err == nil {
		endOfGeneration(m, c, spec.Config(hc))
	}
	return m, l.mats, err
}

// endOfGeneration sets the ids that end a generation. A Hugging Face
// checkpoint (hc, its config.json) stops where transformers' generate()
// does: at every id of eos_token_id, an int or a list, taken from
// generation_config.json when that states it (generate() reads it first),
// else from config.json; the first is Config.EOS. A GGUF also stops at
// llama.cpp's end-of-turn and end-of-message tokens (tokenizer.ggml.
// eot_token_id, eom_token_id), as llama.cpp's generation does.
func endOfGeneration(m *Model, c *checkpoint.Checkpoint, hc spec.Config) {
	cfg := &m.cfg
	var ids []int
	if hc == nil {
		for _, k := range []string{"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"} {
			if id := mdInt(c.Metadata, k, -1); id >= 0 {
				ids = append(ids, id)
			}
		}
		if cfg.EOS < 0 && len(ids) > 0 {
			cfg.EOS, ids = ids[0], ids[1:]
		}
	} else {
		ids = eosList(c, hc)
		if len(ids) == 0 {
			return
		}
		cfg.EOS, ids = ids[0], ids[1:]
	}
	cfg.StopIDs = nil
	for _, id := range ids {
		if id != cfg.EOS && id >= 0 && (cfg.Vocab == 0 || id < cfg.Vocab) && !slices.Contains(cfg.StopIDs, id) {
			cfg.StopIDs = append(cfg.StopIDs, id)
		}
	}
}

// eosList reads eos_token_id, an int or a list of ints, from
// generation_config.json, else from config.json (hc); nil when neither
// states one.
func eosList(c *checkpoint.Checkpoint, hc spec.Config) []int {
	ids := func(v any) []int {
		var out []int
		add := func(x any) {
			if n, ok := x.(json.Number); ok {
				if i, err := n.Int64(); err == nil && i >= 0 && i < 1<<31 {
					out = append(out, int(i))
				}
			}
		}
		if list, ok := v.([]any); ok {
			for _, x := range list {
				add(x)
			}
		} else {
			add(v)
		}
		return out
	}
	if b, err := c.ReadAux("generation_config.json"); err == nil {
		var gc map[string]any
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		if d.Decode(&gc) == nil {
			if v, ok := gc["eos_token_id"]; ok {
				return ids(v)
			}
		}
	}
	return ids(hc["eos_token_id"])
}

// matchLlamaCpp switches m to LoadOptions.MatchLlamaCpp: every matrix
// rounds its activations as llama.cpp does (kernels.Matrix.RoundActivations)
// and its GELU becomes ggml's.
func matchLlamaCpp(m *Model, mats []*kernels.Matrix) {
	for _, w := range mats {
		w.RoundActivations = true
	}
	// ggml has one GELU, the tanh form through its table, for every
	// architecture (BERT's erf GELU included).
	if act := strings.TrimPrefix(m.cfg.Activation, "gated-"); act == "gelu" || act == "gelu_tanh" || act == "bloom_gelu" {
		m.cfg.Activation = strings.TrimSuffix(m.cfg.Activation, act) + "gelu_ggml"
	}
	// what else a family's own forward pass computes otherwise than
	// llama.cpp's graph
	if a, ok := m.impl.(interface{ matchLlamaCpp() }); ok {
		a.matchLlamaCpp()
	}
}

// ownForward are the families of package arch with a forward pass of their
// own; every other family runs on the one decoder (decoder.go).
var ownForward = map[string]func(familyLoader, spec.Config) (*Model, error){
	"gpt2": loadGPT2, "bert": loadBert, "bloom": loadBloomFamily, "t5": loadT5,
	"bart": loadBart, "marian": loadMarian, "deepseek2": loadDeepSeek2, "gemma3n": loadGemma3n,
}

// loadFamily loads a family of package arch from either naming.
func loadFamily(l *loader, f *spec.Family, hc spec.Config, hf bool) (*Model, error) {
	load, ok := ownForward[f.Name]
	if !ok {
		return loadDecoder(l, f, hc, hf)
	}
	c, err := familyConfig(l, f, hc, hf)
	if err != nil {
		return nil, err
	}
	return load(familyLoader{loader: l, f: f, hf: hf}, c)
}

// Architectures lists what Load runs, from package arch's families: HF
// model_type values and GGUF general.architecture values (families with a
// GGUF form), each sorted.
func Architectures() (hf, gguf []string) {
	seen := map[string]bool{}
	for _, f := range spec.Families() {
		if !runsMixers(f) {
			seen[f.Name] = true
			continue
		}
		for _, t := range f.ModelTypes {
			if !seen[t] {
				seen[t] = true
				hf = append(hf, t)
			}
		}
	}
	sort.Strings(hf)
	for _, n := range spec.Supported() {
		if f, ok := spec.ByName(n); !ok || runsMixers(f) {
			gguf = append(gguf, n)
		}
	}
	return hf, gguf
}

// runsMixers reports whether the runtime builds every mixer the family's
// layers may use (arch.Family.Mixers).
func runsMixers(f *spec.Family) bool {
	for _, m := range f.Mixers {
		if !canRun(m) {
			return false
		}
	}
	return true
}

func loadHF(l *loader, hc spec.Config) (*Model, error) {
	f, ok := spec.ForConfig(hc)
	if !ok {
		hf, _ := Architectures()
		mt, _ := hc.Str("model_type")
		return nil, tensor.Unsupported("model: %s: config.json model_type %q is not supported (runs: %s)", l.c.Path, mt, strings.Join(hf, ", "))
	}
	m, err := loadFamily(l, f, hc, true)
	if err != nil {
		return nil, err
	}
	m.cfg.Naming = "hf"
	return m, nil
}

func loadGGUF(l *loader) (*Model, error) {
	a, _ := l.c.Metadata.Str("general.architecture")
	f, ok := spec.ByName(a)
	if !ok || f.Name != a || f.NoGGUF != "" {
		_, gg := Architectures()
		return nil, tensor.Unsupported("model: %s: general.architecture %q is not supported (runs: %s)", l.c.Path, a, strings.Join(gg, ", "))
	}
	m, err := loadFamily(l, f, nil, false)
	if err != nil {
		return nil, err
	}
	if err := refuseWeightScales(l.c, l.scaled); err != nil {
		m.Close()
		return nil, err
	}
	m.cfg.Naming = "gguf"
	return m, nil
}

// refuseWeightScales refuses a GGUF that holds one of llama.cpp's
// per-tensor weight scales (a tensor NAME.scale beside NAME.weight, which
// llama.cpp d32676d7 multiplies into NAME.weight's product: build_lora_mm,
// the second-level scale of NVFP4 checkpoints convert_hf_to_gguf.py repacks
// from ModelOpt or compressed-tensors) that the family's linears did not
// apply (applied: loader.weightScale's), so that no factor is silently left
// out. NAME.input_scale, which llama.cpp loads but never computes with, is
// not looked at.
func refuseWeightScales(c *checkpoint.Checkpoint, applied map[string]bool) error {
	for _, t := range c.Tensors {
		base, ok := strings.CutSuffix(t.Name, ".scale")
		if !ok || applied[t.Name] {
			continue
		}
		if w, ok := c.Tensor(base + ".weight"); ok {
			return tensor.Unsupported("model: %s: tensor %q is a scale llama.cpp multiplies into the product of %q (%v; "+
				"NVFP4 checkpoints' second-level scale), which tfconv does not apply to that tensor", c.Path, t.Name, w.Name, w.DType)
		}
	}
	return nil
}

// Forward runs one whole sequence and returns the logits of every position
// (decoder positions for encoder-decoder models) or, for encoder-only
// models, the last hidden state.
func (m *Model) Forward(in Input, tr *Trace) (*Output, error) {
	if err := m.checkInput(&in); err != nil {
		return nil, err
	}
	s := m.NewSession()
	if m.cfg.EncoderDecoder {
		if err := s.encode(in.Tokens, in.Mask); err != nil {
			return nil, err
		}
		return s.forward(in.DecoderTokens, in.DecoderMask, tr, false)
	}
	s.types = in.TokenTypes
	s.embeds = in.Embeds
	s.positions = in.Positions
	s.deepstack = in.Deepstack
	if in.Groups != nil {
		s.groups = in.Groups
	}
	return s.forward(in.Tokens, in.Mask, tr, false)
}

// checkInput validates what Forward cannot check token by token: that the
// masks and token types line up with the tokens and fit the model.
func (m *Model) checkInput(in *Input) error {
	c := &m.cfg
	if !c.EncoderDecoder && len(in.DecoderTokens) > 0 {
		return fmt.Errorf("model: %s is not an encoder-decoder model: decoder tokens given", c.Arch)
	}
	if !c.EncoderDecoder && in.DecoderMask != nil {
		return fmt.Errorf("model: %s is not an encoder-decoder model: decoder mask given", c.Arch)
	}
	if err := checkMask(in.Mask, len(in.Tokens), "mask", "tokens"); err != nil {
		return err
	}
	if err := checkMask(in.DecoderMask, len(in.DecoderTokens), "decoder mask", "decoder tokens"); err != nil {
		return err
	}
	if err := checkSoft(c, in); err != nil {
		return err
	}
	if in.TokenTypes == nil {
		return nil
	}
	if c.TypeVocab == 0 {
		return fmt.Errorf("model: %s has no token types (token_type_ids are a BERT input)", c.Arch)
	}
	if len(in.TokenTypes) != len(in.Tokens) {
		return fmt.Errorf("model: %d token types for %d tokens", len(in.TokenTypes), len(in.Tokens))
	}
	for i, t := range in.TokenTypes {
		if t < 0 || t >= c.TypeVocab {
			return fmt.Errorf("model: token type %d (index %d) outside the model's %d token types (type_vocab_size)", t, i, c.TypeVocab)
		}
	}
	return nil
}

// checkSoft checks Input.Embeds and Input.Groups against the tokens.
func checkSoft(c *Config, in *Input) error {
	if (in.Embeds != nil || in.Groups != nil || in.Positions != nil || in.Deepstack != nil) && (c.EncoderDecoder || c.EncoderOnly) {
		return fmt.Errorf("model: %s: input embeddings and attention groups are for decoder-only models", c.Arch)
	}
	if in.Embeds != nil {
		if len(in.Embeds) != len(in.Tokens) {
			return fmt.Errorf("model: %d input embeddings for %d tokens", len(in.Embeds), len(in.Tokens))
		}
		for i, e := range in.Embeds {
			if e != nil && len(e) != c.DModel {
				return fmt.Errorf("model: input embedding %d has %d values, the model's width is %d", i, len(e), c.DModel)
			}
		}
	}
	if len(in.Deepstack) > c.Layers {
		return fmt.Errorf("model: %d deepstack layers for a model of %d", len(in.Deepstack), c.Layers)
	}
	for l, rows := range in.Deepstack {
		if len(rows) != len(in.Tokens) {
			return fmt.Errorf("model: deepstack layer %d has %d rows for %d tokens", l, len(rows), len(in.Tokens))
		}
		for i, e := range rows {
			if e != nil && len(e) != c.DModel {
				return fmt.Errorf("model: deepstack layer %d row %d has %d values, the model's width is %d", l, i, len(e), c.DModel)
			}
		}
	}
	if in.Positions != nil {
		if len(in.Positions) != len(in.Tokens) {
			return fmt.Errorf("model: %d M-RoPE positions for %d tokens", len(in.Positions), len(in.Tokens))
		}
		if c.MRoPE == nil {
			return fmt.Errorf("model: %s has no M-RoPE sections: it takes no position triples", c.Arch)
		}
		for i, p := range in.Positions {
			for _, x := range p {
				if x < 0 || x > 1<<30 {
					return fmt.Errorf("model: M-RoPE position %v (index %d) out of range", p, i)
				}
			}
		}
	}
	if in.Groups != nil {
		if len(in.Groups) != len(in.Tokens) {
			return fmt.Errorf("model: %d attention groups for %d tokens", len(in.Groups), len(in.Tokens))
		}
		seen := map[int]bool{}
		for i, g := range in.Groups {
			if g >= 0 && seen[g] && (i == 0 || in.Groups[i-1] != g) {
				return fmt.Errorf("model: attention group %d is not one contiguous run (again at index %d)", g, i)
			}
			seen[g] = true
		}
	}
	return nil
}

// checkMask rejects a mask that does not cover its n tokens one to one, or
// that hides every one of them (transformers then attends uniformly to
// padding; there is nothing meaningful to compute).
func checkMask(mask []bool, n int, what, of string) error {
	if mask == nil {
		return nil
	}
	if len(mask) != n {
		return fmt.Errorf("model: %s has %d entries for %d %s", what, len(mask), n, of)
	}
	for _, v := range mask {
		if v {
			return nil
		}
	}
	return fmt.Errorf("model: %s hides every one of the %d %s", what, n, of)
}

func (m *Model) checkTokens(tokens []int, what string) error {
	if len(tokens) == 0 {
		return fmt.Errorf("model: no %s tokens", what)
	}
	for i, t := range tokens {
		if t < 0 || t >= m.cfg.Vocab {
			return fmt.Errorf("model: %s token %d (index %d) outside the vocabulary of %d", what, t, i, m.cfg.Vocab)
		}
	}
	return nil
}

// rows splits a flat [T][n] slice into T row slices sharing its memory.
func rows(x []float32, n int) [][]float32 {
	if n == 0 {
		return nil
	}
	out := make([][]float32, len(x)/n)
	for i := range out {
		out[i] = x[i*n : (i+1)*n : (i+1)*n]
	}
	return out
}

// errNoEncoder is returned when a decoder step runs before Encode.
var errNoEncoder = errors.New("model: encoder-decoder model: Encode must run before the decoder")

// CheckLength says what running n positions means for this model: an
// error where positions past a learned position table have no embedding,
// a warning (and nil error) past the context the model was trained on, as
// llama-perplexity warns; "" and nil within it.
func (m *Model) CheckLength(n int) (warning string, err error) {
	c := &m.cfg
	if c.MaxPositions > 0 && n > c.MaxPositions {
		return "", fmt.Errorf("model: %d positions exceed the %d of %s's learned position table: positions past it have no embedding", n, c.MaxPositions, c.Arch)
	}
	if c.Context > 0 && n > c.Context {
		return fmt.Sprintf("%d positions exceed the %d-token context %s was trained on: results past it are not meaningful", n, c.Context, c.Arch), nil
	}
	return "", nil
}

// invSqrt is 1/√n as float32, the attention scale most models use.
func invSqrt(n int) float32 { return float32(1 / math.Sqrt(float64(n))) }
