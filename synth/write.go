package synth

import (
	"bytes"
	"embed"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/formats/safetensors"
	"github.com/tfconv/tfconv/internal/atomicfile"
	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
	"github.com/tfconv/tfconv/tokenizer"
)

// Sigma is the standard deviation of the weights (and of the noise on norms
// and biases): the initializer_range of the LLaMA, GPT-2 and BERT configs.
const Sigma = 0.02

// MaxShardBytes is where WriteHF starts a new safetensors shard: the 5 GB
// default of transformers' save_pretrained (decimal gigabytes, data bytes).
const MaxShardBytes = 5_000_000_000

// chunk is the number of elements generated per stream: a multiple of every
// block size written (Q8_0's 32), small enough that one chunk per CPU stays
// in cache-friendly buffers.
const chunk = 1 << 16

//go:embed vocab/*.gguf
var vocabFS embed.FS

// tokenizerKV returns the tokenizer.* keys of an embedded vocabulary
// (VocabSPM, …) and its token count.
func tokenizerKV(name string) (tensor.Metadata, int, error) {
	b, err := vocabFS.ReadFile("vocab/ggml-vocab-" + name + ".gguf")
	if err != nil {
		return nil, 0, fmt.Errorf("synth: vocabulary %s: %w", name, err)
	}
	f, err := gguf.NewFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, 0, fmt.Errorf("synth: vocabulary %s: %w", name, err)
	}
	var m tensor.Metadata
	n := -1
	for _, kv := range f.Metadata {
		if !strings.HasPrefix(kv.Key, "tokenizer.") {
			continue
		}
		m = append(m, kv)
		if kv.Key == "tokenizer.ggml.tokens" {
			if a, ok := kv.Value.Array(); ok {
				n = a.Len()
			}
		}
	}
	return m, n, nil
}

// padVocab extends the token list (and types, and scores where present)
// of tokenizer keys md from n to vocab tokens the way convert_hf_to_gguf.py
// fills embedding rows past the tokenizer (the scores and types package
// tokenizer gives them): first the added tokens (control), then "[PADi]"
// (unused).
func padVocab(md tensor.Metadata, n, vocab int, added []string) (tensor.Metadata, error) {
	if n+len(added) > vocab {
		return nil, fmt.Errorf("synth: %d tokens and %d added ones do not fit %d rows", n, len(added), vocab)
	}
	out := make(tensor.Metadata, 0, len(md))
	for _, kv := range md {
		a, isArr := kv.Value.Array()
		ok := true
		switch {
		case !isArr || a.Len() != n:
		case kv.Key == "tokenizer.ggml.tokens":
			var toks []string
			if toks, ok = a.Data.([]string); ok {
				kv.Value = tensor.ArrayOf(extend(toks, added, vocab, func(i int) string { return fmt.Sprintf("[PAD%d]", i) }))
			}
		case kv.Key == "tokenizer.ggml.token_type":
			var types []int32
			if types, ok = a.Data.([]int32); ok {
				kv.Value = tensor.ArrayOf(extend(types, repeat(int32(tokenizer.TypeControl), len(added)), vocab,
					func(int) int32 { return int32(tokenizer.TypeUnused) }))
			}
		case kv.Key == "tokenizer.ggml.scores":
			var scores []float32
			if scores, ok = a.Data.([]float32); ok {
				kv.Value = tensor.ArrayOf(extend(scores, repeat(float32(tokenizer.AddedTokenScore), len(added)), vocab,
					func(int) float32 { return tokenizer.PadScore }))
			}
		}
		if !ok {
			return nil, fmt.Errorf("synth: %s has an unexpected element type", kv.Key)
		}
		out = append(out, kv)
	}
	return out, nil
}

// extend returns a (not modified) followed by added, then pad(i) for each
// index i up to n.
func extend[T any](a, added []T, n int, pad func(i int) T) []T {
	out := append(slices.Clip(a), added...)
	for i := len(out); i < n; i++ {
		out = append(out, pad(i))
	}
	return out
}

func repeat[T any](v T, n int) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// fileType is llama.cpp's general.file_type (enum llama_ftype) of an output
// whose matrices are t.
func fileType(t tensor.DType) (uint32, error) {
	switch t {
	case tensor.F32, tensor.F16, tensor.BF16, tensor.Q8_0:
		ft, _ := quant.FileTypeOf(t)
		return ft, nil
	}
	return 0, tensor.Unsupported("synth: type %s: want f32, f16, bf16 or q8_0", t)
}

// GGUFMetadata returns the key-value pairs WriteGGUF writes: those of
// llama.cpp's converter for the architecture (same keys, same order), the
// embedded vocabulary's tokenizer.* keys and general.quantization_version.
func GGUFMetadata(s Shape, t tensor.DType) (tensor.Metadata, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	ft, err := fileType(t)
	if err != nil {
		return nil, err
	}
	tok, nv, err := tokenizerKV(s.vocab())
	if err != nil {
		return nil, err
	}
	_, rotary := s.family()
	switch {
	case nv == s.Vocab:
	case nv < s.Vocab && rotary:
		if tok, err = padVocab(tok, nv, s.Vocab, s.Added); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("synth: shape %q: vocab %d, but the embedded %s vocabulary has %d tokens", s.Name, s.Vocab, s.vocab(), nv)
	}
	a := s.Arch + "."
	u := func(v int) tensor.Value { return tensor.Uint32(uint32(v)) }
	m := tensor.Metadata{
		{Key: "general.architecture", Value: tensor.String(s.Arch)},
		{Key: "general.type", Value: tensor.String("model")},
		{Key: "general.name", Value: tensor.String("synth " + s.Name)},
		{Key: a + "block_count", Value: u(s.Layers)},
		{Key: a + "context_length", Value: u(s.Context)},
		{Key: a + "embedding_length", Value: u(s.Hidden)},
		{Key: a + "feed_forward_length", Value: u(s.FFN)},
		{Key: a + "attention.head_count", Value: u(s.Heads)},
	}
	switch f, _ := s.family(); {
	case f != nil:
		// The family's own metadata, from the config.json WriteHF writes,
		// keys the converter writes early right after the architecture.
		kv, err := f.GGUFMetadata(arch.Config(hfConfigMap(s)), ft)
		if err != nil {
			return nil, fmt.Errorf("synth: %w", err)
		}
		head := m[:1:1]
		var rest tensor.Metadata
		for _, x := range kv {
			if f.Early(x.Key) {
				head = append(head, x)
			} else {
				rest = append(rest, x)
			}
		}
		m = append(append(head, m[1:3]...), rest...)
	case s.Arch == GPT2:
		m = append(m,
			tensor.KV{Key: a + "attention.layer_norm_epsilon", Value: tensor.Float32(s.NormEps)},
			tensor.KV{Key: "general.file_type", Value: tensor.Uint32(ft)},
		)
	case s.Arch == BERT:
		m = append(m,
			tensor.KV{Key: a + "attention.layer_norm_epsilon", Value: tensor.Float32(s.NormEps)},
			tensor.KV{Key: "general.file_type", Value: tensor.Uint32(ft)},
			tensor.KV{Key: a + "attention.causal", Value: tensor.Bool(false)},
		)
	}
	m = append(m, tok...)
	m = append(m, tensor.KV{Key: "general.quantization_version", Value: tensor.Uint32(2)})
	return m, nil
}

// infos gives every spec its dtype: in GGUF (gguf), the type llama.cpp's
// converter gives it (arch.GGUFTensorType: F32 for 1-D tensors, norms,
// biases and routers, t for the rest); in safetensors, t for matrices and
// F32 for 1-D tensors, as transformers' mixed dtypes have them.
func infos(specs []spec, t tensor.DType, gguf bool) ([]tensor.Info, error) {
	out := make([]tensor.Info, len(specs))
	for i, sp := range specs {
		d := t
		switch {
		case gguf:
			d = arch.GGUFTensorType(sp.name, sp.shape, t)
		case len(sp.shape) == 1:
			d = tensor.F32
		}
		size, err := d.ShapeBytes(sp.shape)
		if err != nil {
			return nil, fmt.Errorf("synth: tensor %q: %w", sp.name, err)
		}
		out[i] = tensor.Info{Name: sp.name, DType: d, Shape: sp.shape, Size: size}
	}
	return out, nil
}

// GGUFTensors returns the tensor directory WriteGGUF writes, in file order.
func GGUFTensors(s Shape, t tensor.DType) ([]tensor.Info, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	if _, err := fileType(t); err != nil {
		return nil, err
	}
	return infos(s.ggufTensors(), t, true)
}

// WriteGGUF streams a GGUF v3 checkpoint of shape s with matrices of type t
// (F32, F16, BF16 or Q8_0; 1-D tensors, norms, biases and routers F32, as
// the converter writes them) and values drawn from seed.
// The output is deterministic. w is not closed.
func WriteGGUF(w io.Writer, s Shape, t tensor.DType, seed uint64) error {
	return WriteGGUFProgress(w, s, t, seed, nil)
}

// WriteGGUFProgress is WriteGGUF that also writes every tensor byte to
// progress (a progress meter: it counts them), when not nil.
func WriteGGUFProgress(w io.Writer, s Shape, t tensor.DType, seed uint64, progress io.Writer) error {
	meta, err := GGUFMetadata(s, t)
	if err != nil {
		return err
	}
	specs := s.ggufTensors()
	ts, err := infos(specs, t, true)
	if err != nil {
		return err
	}
	gw, err := gguf.NewWriter(w, meta, ts)
	if err != nil {
		return err
	}
	if err := writeBodies(counted(gw.Next, progress), specs, ts, seed); err != nil {
		return err
	}
	return gw.Close()
}

// HFTensors returns the tensors WriteHF writes, in data order.
func HFTensors(s Shape, t tensor.DType) ([]tensor.Info, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	if _, ok := t.SafetensorsName(); !ok || (t != tensor.F32 && t != tensor.F16 && t != tensor.BF16) {
		return nil, tensor.Unsupported("synth: type %s: safetensors output wants f32, f16 or bf16", t)
	}
	if f, ok := s.family(); ok && len(f.Packed) > 0 {
		return nil, tensor.Unsupported("synth: %s: its Hugging Face form packs tensors (%s keeps its experts as blocks): write GGUF", s.Name, f.Name)
	}
	return infos(s.hfTensors(), t, false)
}

// WriteHF writes a Hugging Face checkpoint folder dir, as WriteHFDir with
// force: into an existing folder it replaces the files of the same names.
func WriteHF(dir string, s Shape, t tensor.DType, seed uint64) error {
	_, err := WriteHFDir(dir, true, s, t, seed, nil)
	return err
}

// WriteHFDir writes a Hugging Face checkpoint folder dir: config.json and
// model.safetensors, or model-0000i-of-0000n.safetensors plus
// model.safetensors.index.json when the data exceeds MaxShardBytes
// (safetensors.WriteFolder: the files appear whole or not at all; an
// existing folder that is not empty is written into only with force, which
// replaces the files of the same names and an earlier save's stale weight
// files and keeps every other file). Every tensor byte is also written to
// progress (a progress meter: it counts them) when it is not nil. The
// result names the files replaced and removed.
func WriteHFDir(dir string, force bool, s Shape, t tensor.DType, seed uint64, progress io.Writer) (atomicfile.DirResult, error) {
	ts, err := HFTensors(s, t)
	if err != nil {
		return atomicfile.DirResult{}, err
	}
	cfg, err := HFConfig(s, t)
	if err != nil {
		return atomicfile.DirResult{}, err
	}
	// The folder's parents are made as before (os.MkdirAll); the folder
	// itself appears whole.
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(dir)), 0o755); err != nil {
		return atomicfile.DirResult{}, fmt.Errorf("synth: %w", err)
	}
	meta := tensor.Metadata{{Key: "format", Value: tensor.String("pt")}}
	return safetensors.WriteFolder(dir, force, map[string][]byte{"config.json": cfg}, ts, MaxShardBytes, meta,
		func(next func(string) (io.Writer, error)) error {
			return writeBodies(counted(next, progress), s.hfTensors(), ts, seed)
		})
}

// counted is next with each body also written to progress (nil: next).
func counted(next func(string) (io.Writer, error), progress io.Writer) func(string) (io.Writer, error) {
	if progress == nil {
		return next
	}
	return func(name string) (io.Writer, error) {
		w, err := next(name)
		if err != nil {
			return nil, err
		}
		return io.MultiWriter(w, progress), nil
	}
}

// HFConfig returns the config.json WriteHF writes: the keys transformers
// 4.43 writes for the architecture's model class.
func HFConfig(s Shape, t tensor.DType) ([]byte, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	dt := map[tensor.DType]string{tensor.F32: "float32", tensor.F16: "float16", tensor.BF16: "bfloat16"}[t]
	if dt == "" {
		return nil, tensor.Unsupported("synth: type %s: safetensors output wants f32, f16 or bf16", t)
	}
	c := hfConfigMap(s)
	c["torch_dtype"] = dt
	// encoding/json sorts map keys, as transformers' to_json_string does.
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("synth: config.json: %w", err)
	}
	return append(b, '\n'), nil
}

// hfConfigMap is the config.json of s, without torch_dtype.
func hfConfigMap(s Shape) map[string]any {
	var c map[string]any
	switch f, _ := s.family(); {
	case f != nil:
		c = map[string]any{
			"architectures": []string{f.HFClass}, "model_type": f.ModelType,
			"attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2,
			"hidden_size": s.Hidden, "initializer_range": Sigma,
			"intermediate_size": s.FFN, "max_position_embeddings": s.Context,
			"num_attention_heads": s.Heads, "num_hidden_layers": s.Layers, "num_key_value_heads": s.KVHeads,
			"rope_scaling": nil, "rope_theta": s.RopeBase,
			"tie_word_embeddings": s.Tied, "use_cache": true, "vocab_size": s.Vocab,
		}
		if f.Graph.Norm == arch.RMSNorm {
			c["rms_norm_eps"] = s.NormEps
		} else {
			c["layer_norm_eps"] = s.NormEps
		}
		if s.HeadDim > 0 {
			c["head_dim"] = s.HeadDim
		}
		if s.vocab() == VocabGPT2 {
			c["bos_token_id"], c["eos_token_id"] = 50256, 50256
		}
		for k, v := range f.HFConst {
			c[k] = v
		}
		// The widths under the keys the family's converter reads them
		// from (Llama 4: intermediate_size_mlp dense, intermediate_size an
		// expert's).
		for _, p := range f.Params {
			switch {
			case p.Key == "feed_forward_length" && len(p.HF) > 0:
				c[p.HF[0]] = s.FFN
			case p.Key == "expert_feed_forward_length" && len(p.HF) > 0 && s.ExpertFFN > 0:
				c[p.HF[0]] = s.ExpertFFN
			case p.Key == "expert_shared_feed_forward_length" && len(p.HF) > 0 && s.SharedFFN > 0:
				c[p.HF[0]] = s.SharedFFN
			}
		}
		if f == arch.Llama {
			// transformers 4.43's LlamaConfig.
			c["attention_bias"], c["pretraining_tp"] = false, 1
		}
		for k, v := range s.Config {
			if v == nil {
				delete(c, k) // a key the checkpoint does not state
				continue
			}
			c[k] = v
		}
		if types, ok := c["layer_types"].([]any); ok && len(types) > s.Layers {
			// --layers keeps the first layers: their types
			c["layer_types"] = slices.Clone(types[:s.Layers])
		}
	case s.Arch == GPT2:
		c = map[string]any{
			"architectures": []string{"GPT2LMHeadModel"}, "model_type": "gpt2",
			"activation_function": "gelu_new", "attn_pdrop": 0.1, "bos_token_id": 50256, "eos_token_id": 50256,
			"embd_pdrop": 0.1, "initializer_range": Sigma, "layer_norm_epsilon": s.NormEps,
			"n_ctx": s.Context, "n_embd": s.Hidden, "n_head": s.Heads, "n_inner": s.FFN, "n_layer": s.Layers,
			"n_positions": s.Context, "resid_pdrop": 0.1, "scale_attn_weights": true, "use_cache": true,
			"vocab_size": s.Vocab,
		}
	case s.Arch == BERT:
		c = map[string]any{
			"architectures": []string{"BertModel"}, "model_type": "bert",
			"attention_probs_dropout_prob": 0.1, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
			"hidden_size": s.Hidden, "initializer_range": Sigma, "intermediate_size": s.FFN,
			"layer_norm_eps": s.NormEps, "max_position_embeddings": s.Context, "num_attention_heads": s.Heads,
			"num_hidden_layers": s.Layers, "pad_token_id": 0, "position_embedding_type": "absolute",
			"type_vocab_size": s.TypeVocab, "use_cache": true, "vocab_size": s.Vocab,
		}
	}
	return c
}

// writeBodies generates and writes every tensor through next, one group of
// chunks (one per CPU) at a time.
func writeBodies(next func(string) (io.Writer, error), specs []spec, ts []tensor.Info, seed uint64) error {
	workers := runtime.GOMAXPROCS(0)
	type buf struct {
		f   []float32
		out []byte
	}
	bufs := make([]buf, workers)
	for i := range bufs {
		bufs[i] = buf{f: make([]float32, chunk), out: make([]byte, chunk*4)}
	}
	for i, sp := range specs {
		w, err := next(sp.name)
		if err != nil {
			return err
		}
		n, _ := sp.shape.NumElements() // checked by infos
		key := nameKey(seed, sp.name)
		nchunks := (n + chunk - 1) / chunk
		for c0 := int64(0); c0 < nchunks; c0 += int64(workers) {
			g := min(int64(workers), nchunks-c0)
			sizes := make([]int, g)
			var wg sync.WaitGroup
			var errs = make([]error, g)
			for j := range g {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c := c0 + j
					m := int(min(chunk, n-c*chunk))
					fill(bufs[j].f[:m], key, uint64(c), sp.kind)
					sizes[j], errs[j] = encode(bufs[j].out, bufs[j].f[:m], ts[i].DType)
				}()
			}
			wg.Wait()
			for j := range g {
				if errs[j] != nil {
					return fmt.Errorf("synth: tensor %q: %w", sp.name, errs[j])
				}
				if _, err := w.Write(bufs[j].out[:sizes[j]]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// encode writes src in type t to dst and returns the byte count.
func encode(dst []byte, src []float32, t tensor.DType) (int, error) {
	nb, err := t.ByteSize(int64(len(src)))
	if err != nil {
		return 0, err
	}
	if t == tensor.F32 {
		for i, v := range src {
			binary.LittleEndian.PutUint32(dst[4*i:], mathFloat32bits(v))
		}
		return int(nb), nil
	}
	return int(nb), quant.Quantize(dst[:nb], src, t)
}

// nameKey mixes the seed and a tensor name into the key of its streams.
func nameKey(seed uint64, name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return mix(seed ^ mix(h.Sum64()))
}
