package safetensors

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// testdata is where the fixtures copied from the reference tools live.
const testdata = "../../testdata/safetensors"

// fixtureDirs are the hf-tiny checkpoints copied into testdata.
var fixtureDirs = []string{"llama", "llama-float16", "gpt2-float16", "bert-bfloat16", "t5"}

// hfConfig holds the config.json fields the expectations below need.
type hfConfig struct {
	ModelType  string `json:"model_type"`
	TorchDType string `json:"torch_dtype"`
	VocabSize  int64  `json:"vocab_size"`
	// llama / bert
	HiddenSize       int64 `json:"hidden_size"`
	IntermediateSize int64 `json:"intermediate_size"`
	NumLayers        int64 `json:"num_hidden_layers"`
	NumHeads         int64 `json:"num_attention_heads"`
	NumKVHeads       int64 `json:"num_key_value_heads"`
	MaxPositions     int64 `json:"max_position_embeddings"`
	TypeVocab        int64 `json:"type_vocab_size"`
	TieEmbeddings    *bool `json:"tie_word_embeddings"`
	// gpt2
	NEmbd      int64  `json:"n_embd"`
	NLayer     int64  `json:"n_layer"`
	NPositions int64  `json:"n_positions"`
	NInner     *int64 `json:"n_inner"`
	// t5
	DModel     int64 `json:"d_model"`
	DFF        int64 `json:"d_ff"`
	DKV        int64 `json:"d_kv"`
	T5Heads    int64 `json:"num_heads"`
	T5Layers   int64 `json:"num_layers"`
	T5DecLay   int64 `json:"num_decoder_layers"`
	RelBuckets int64 `json:"relative_attention_num_buckets"`
}

func readConfig(t *testing.T, dir string) hfConfig {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c hfConfig
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// expectedTensors derives every tensor name and shape a transformers
// checkpoint of this config holds (as save_pretrained writes it: tied
// weights stored once).
func expectedTensors(t *testing.T, c hfConfig) map[string]tensor.Shape {
	t.Helper()
	m := map[string]tensor.Shape{}
	add := func(shape tensor.Shape, name string) { m[name] = shape }
	switch c.ModelType {
	case "llama":
		h, v, in := c.HiddenSize, c.VocabSize, c.IntermediateSize
		kv := c.NumKVHeads * (h / c.NumHeads)
		add(tensor.Shape{v, h}, "model.embed_tokens.weight")
		add(tensor.Shape{h}, "model.norm.weight")
		if c.TieEmbeddings == nil || !*c.TieEmbeddings {
			add(tensor.Shape{v, h}, "lm_head.weight")
		}
		for i := range c.NumLayers {
			p := fmt.Sprintf("model.layers.%d.", i)
			add(tensor.Shape{h, h}, p+"self_attn.q_proj.weight")
			add(tensor.Shape{kv, h}, p+"self_attn.k_proj.weight")
			add(tensor.Shape{kv, h}, p+"self_attn.v_proj.weight")
			add(tensor.Shape{h, h}, p+"self_attn.o_proj.weight")
			add(tensor.Shape{in, h}, p+"mlp.gate_proj.weight")
			add(tensor.Shape{in, h}, p+"mlp.up_proj.weight")
			add(tensor.Shape{h, in}, p+"mlp.down_proj.weight")
			add(tensor.Shape{h}, p+"input_layernorm.weight")
			add(tensor.Shape{h}, p+"post_attention_layernorm.weight")
		}
	case "gpt2":
		h, inner := c.NEmbd, 4*c.NEmbd
		if c.NInner != nil {
			inner = *c.NInner
		}
		add(tensor.Shape{c.VocabSize, h}, "transformer.wte.weight")
		add(tensor.Shape{c.NPositions, h}, "transformer.wpe.weight")
		add(tensor.Shape{h}, "transformer.ln_f.weight")
		add(tensor.Shape{h}, "transformer.ln_f.bias")
		for i := range c.NLayer {
			p := fmt.Sprintf("transformer.h.%d.", i)
			// GPT-2 uses Conv1D: weights are [in, out].
			add(tensor.Shape{h, 3 * h}, p+"attn.c_attn.weight")
			add(tensor.Shape{3 * h}, p+"attn.c_attn.bias")
			add(tensor.Shape{h, h}, p+"attn.c_proj.weight")
			add(tensor.Shape{h}, p+"attn.c_proj.bias")
			add(tensor.Shape{h, inner}, p+"mlp.c_fc.weight")
			add(tensor.Shape{inner}, p+"mlp.c_fc.bias")
			add(tensor.Shape{inner, h}, p+"mlp.c_proj.weight")
			add(tensor.Shape{h}, p+"mlp.c_proj.bias")
			for _, ln := range []string{"ln_1", "ln_2"} {
				add(tensor.Shape{h}, p+ln+".weight")
				add(tensor.Shape{h}, p+ln+".bias")
			}
		}
	case "bert":
		h, in := c.HiddenSize, c.IntermediateSize
		add(tensor.Shape{c.VocabSize, h}, "embeddings.word_embeddings.weight")
		add(tensor.Shape{c.MaxPositions, h}, "embeddings.position_embeddings.weight")
		add(tensor.Shape{c.TypeVocab, h}, "embeddings.token_type_embeddings.weight")
		add(tensor.Shape{h}, "embeddings.LayerNorm.weight")
		add(tensor.Shape{h}, "embeddings.LayerNorm.bias")
		add(tensor.Shape{h, h}, "pooler.dense.weight")
		add(tensor.Shape{h}, "pooler.dense.bias")
		for i := range c.NumLayers {
			p := fmt.Sprintf("encoder.layer.%d.", i)
			for _, lin := range []string{"attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"} {
				add(tensor.Shape{h, h}, p+lin+".weight")
				add(tensor.Shape{h}, p+lin+".bias")
			}
			add(tensor.Shape{in, h}, p+"intermediate.dense.weight")
			add(tensor.Shape{in}, p+"intermediate.dense.bias")
			add(tensor.Shape{h, in}, p+"output.dense.weight")
			add(tensor.Shape{h}, p+"output.dense.bias")
			for _, ln := range []string{"attention.output.LayerNorm", "output.LayerNorm"} {
				add(tensor.Shape{h}, p+ln+".weight")
				add(tensor.Shape{h}, p+ln+".bias")
			}
		}
	case "t5":
		d, inner := c.DModel, c.T5Heads*c.DKV
		add(tensor.Shape{c.VocabSize, d}, "shared.weight")
		attn := func(p string) {
			add(tensor.Shape{inner, d}, p+".q.weight")
			add(tensor.Shape{inner, d}, p+".k.weight")
			add(tensor.Shape{inner, d}, p+".v.weight")
			add(tensor.Shape{d, inner}, p+".o.weight")
		}
		for _, stack := range []struct {
			name   string
			layers int64
		}{{"encoder", c.T5Layers}, {"decoder", c.T5DecLay}} {
			add(tensor.Shape{d}, stack.name+".final_layer_norm.weight")
			for i := range stack.layers {
				p := fmt.Sprintf("%s.block.%d.layer.", stack.name, i)
				attn(p + "0.SelfAttention")
				if i == 0 {
					add(tensor.Shape{c.RelBuckets, c.T5Heads}, p+"0.SelfAttention.relative_attention_bias.weight")
				}
				add(tensor.Shape{d}, p+"0.layer_norm.weight")
				ff := "1"
				if stack.name == "decoder" {
					attn(p + "1.EncDecAttention")
					add(tensor.Shape{d}, p+"1.layer_norm.weight")
					ff = "2"
				}
				add(tensor.Shape{c.DFF, d}, p+ff+".DenseReluDense.wi.weight")
				add(tensor.Shape{d, c.DFF}, p+ff+".DenseReluDense.wo.weight")
				add(tensor.Shape{d}, p+ff+".layer_norm.weight")
			}
		}
	default:
		t.Fatalf("no expectations for model_type %q", c.ModelType)
	}
	return m
}

// torchDTypes maps config.json's torch_dtype to the safetensors dtype.
var torchDTypes = map[string]tensor.DType{"float32": tensor.F32, "float16": tensor.F16, "bfloat16": tensor.BF16}

// checkFixture asserts that a checkpoint folder's model.safetensors holds
// exactly what its config.json says.
func checkFixture(t *testing.T, dir string) {
	t.Helper()
	c := readConfig(t, dir)
	want := expectedTensors(t, c)
	dt, ok := torchDTypes[c.TorchDType]
	if !ok {
		t.Fatalf("torch_dtype %q", c.TorchDType)
	}
	f, err := Open(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if format, ok := f.Metadata.Str("format"); !ok || format != "pt" || len(f.Metadata) != 1 {
		t.Errorf("metadata = %v, want format=pt (as save_pretrained writes)", f.Metadata)
	}
	if len(f.Tensors) != len(want) {
		t.Errorf("%d tensors, want %d", len(f.Tensors), len(want))
	}
	next := f.DataOffset
	for i := range f.Tensors {
		tt := &f.Tensors[i]
		shape, ok := want[tt.Name]
		if !ok {
			t.Errorf("unexpected tensor %q", tt.Name)
			continue
		}
		if !tt.Shape.Equal(shape) || tt.DType != dt {
			t.Errorf("%s: %s %v, want %s %v", tt.Name, tt.DType, tt.Shape, dt, shape)
		}
		// Data order is the file's order: contiguous from the data section.
		if tt.Offset != next {
			t.Errorf("%s: offset %d, want %d", tt.Name, tt.Offset, next)
		}
		next += tt.Size
		if got, ok := f.Tensor(tt.Name); !ok || got != tt {
			t.Errorf("Tensor(%q) does not find it", tt.Name)
		}
	}
	if next != f.Size {
		t.Errorf("tensors end at %d, file is %d bytes", next, f.Size)
	}
}

func TestFixtures(t *testing.T) {
	for _, d := range fixtureDirs {
		t.Run(d, func(t *testing.T) { checkFixture(t, filepath.Join(testdata, d)) })
	}
}

func TestLlamaFixture(t *testing.T) {
	// Spelled out from hf-tiny/llama/config.json: vocab 1000, hidden 64,
	// intermediate 172, 4 heads, 2 KV heads (head_dim 16).
	for dir, dt := range map[string]tensor.DType{"llama": tensor.F32, "llama-float16": tensor.F16} {
		f, err := Open(filepath.Join(testdata, dir, "model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		for name, shape := range map[string]tensor.Shape{
			"model.embed_tokens.weight":              {1000, 64},
			"model.layers.1.self_attn.k_proj.weight": {32, 64},
			"model.layers.0.mlp.down_proj.weight":    {64, 172},
		} {
			tt, ok := f.Tensor(name)
			if !ok {
				t.Fatalf("%s: no %s", dir, name)
			}
			if tt.DType != dt || !tt.Shape.Equal(shape) {
				t.Errorf("%s: %s is %s %v, want %s %v", dir, name, tt.DType, tt.Shape, dt, shape)
			}
			if wantSize := shape.RowLen() * shape[0] * (dt.BlockBytes()); tt.Size != wantSize {
				t.Errorf("%s: %s size %d, want %d", dir, name, tt.Size, wantSize)
			}
		}
		// The header of this file is 2144 bytes (its first 8 bytes say so).
		if f.HeaderLen != 2144 || f.DataOffset != 2152 {
			t.Errorf("%s: HeaderLen %d DataOffset %d, want 2144 2152", dir, f.HeaderLen, f.DataOffset)
		}
		if _, ok := f.Tensor("model.embed_tokens"); ok {
			t.Error("Tensor found a name that is not in the file")
		}
		f.Close()
	}
}

// TestTensorData reads bodies through Tensor.Open. In hf-tiny/llama the
// norm weights are random values around 1 (0.69..1.37) and every other weight
// is below 0.6 in magnitude; reading at a wrong offset or with a wrong size
// would mix bytes of neighbouring floats and break those bounds.
func TestTensorData(t *testing.T) {
	const (
		normLo, normHi = 0.5, 1.5 // bounds of the norm weights
		maxWeight      = 1.0      // bound of every other weight
	)
	f, err := Open(filepath.Join(testdata, "llama", "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, tt := range f.Tensors {
		b, err := io.ReadAll(tt.Open())
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(b)) != tt.Size {
			t.Fatalf("%s: read %d bytes, want %d", tt.Name, len(b), tt.Size)
		}
		norm := strings.Contains(tt.Name, "norm")
		nonzero := false
		for i := 0; i < len(b); i += 4 {
			v := float64(math.Float32frombits(binary.LittleEndian.Uint32(b[i:])))
			nonzero = nonzero || v != 0
			if (norm && !(v > normLo && v < normHi)) || (!norm && !(math.Abs(v) < maxWeight)) {
				t.Fatalf("%s[%d] = %g: not a plausible weight", tt.Name, i/4, v)
			}
		}
		if !nonzero {
			t.Errorf("%s is all zeros", tt.Name)
		}
	}
}

// countingReader records the highest byte read.
type countingReader struct {
	r   io.ReaderAt
	mu  sync.Mutex
	max int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.mu.Lock()
	c.max = max(c.max, off+int64(n))
	c.mu.Unlock()
	return n, err
}

func TestHeaderOnly(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testdata, "t5", "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	cr := &countingReader{r: bytes.NewReader(b)}
	f, err := NewFile(cr, int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if cr.max != f.DataOffset {
		t.Errorf("parsing read up to byte %d, want exactly the header (%d)", cr.max, f.DataOffset)
	}
	if f.Name != "" {
		t.Errorf("NewFile Name = %q", f.Name)
	}
	if err := f.Close(); err != nil {
		t.Errorf("Close of a NewFile: %v", err)
	}
}

func TestOpenClosesOnError(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "bad.safetensors")
	if err := os.WriteFile(p, []byte("\x02\x00\x00\x00\x00\x00\x00\x00[]"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(p)
	var fe *tensor.FormatError
	if !errors.As(err, &fe) || fe.File != p || fe.Offset != 8 {
		t.Fatalf("Open: %v; want a FormatError naming %s at offset 8", err, p)
	}
	if _, err := Open(filepath.Join(dir, "absent.safetensors")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open of a missing file: %v", err)
	}
}

// file builds a safetensors file from a header and a data section length.
func file(header string, dataLen int) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	b = append(b, header...)
	return append(b, make([]byte, dataLen)...)
}

// withN builds a file whose length field is n, whatever follows.
func withN(n uint64, rest string) []byte {
	return append(binary.LittleEndian.AppendUint64(nil, n), rest...)
}

const okEntry = `{"dtype":"F32","shape":[2],"data_offsets":[0,8]}`

func TestMalformed(t *testing.T) {
	tests := []struct {
		name   string
		data   []byte
		msg    string   // substring of the error
		item   string   // FormatError.Item, when not ""
		offset offsetFn // FormatError.Offset
	}{
		{"empty", nil, "too short", "", abs(0)},
		{"7 bytes", []byte{1, 0, 0, 0, 0, 0, 0}, "too short", "", abs(0)},
		{"N beyond file", withN(100, "{}"), "runs past the end", "", abs(0)},
		{"N over 100MB", withN(100_000_001, "{}"), "exceeds the limit", "", abs(0)},
		{"N huge", withN(math.MaxUint64, "{}"), "exceeds the limit", "", abs(0)},
		{"empty header", file("", 0), "does not start with '{'", "", abs(8)},
		{"leading space", file(` {}`, 0), "does not start with '{'", "", abs(8)},
		{"array", file(`[]`, 0), "does not start with '{'", "", abs(8)},
		{"bad UTF-8", file("{\"a\xff\":"+okEntry+"}", 8), "not valid UTF-8", "", at("\xff")},
		{"overlong UTF-8", file("{\"\xc0\xaf\":"+okEntry+"}", 8), "not valid UTF-8", "", at("\xc0")},
		{"missing colon", file(`{"a" `+okEntry+`}`, 8), "want ':'", "", at(`{"dtype"`)},
		{"trailing comma", file(`{"a":`+okEntry+`,}`, 8), "want a string", "", at(",}").plus(1)},
		{"unterminated", file(`{"a`, 0), "unterminated string", "", at(`"a`)},
		{"unclosed object", file(`{"a":`+okEntry, 8), "want ',' or '}'", "", data(0)},
		{"garbage after", file(`{} x`, 0), "after the header object", "", at("x")},
		{"two objects", file(`{}{}`, 0), "after the header object", "", at("{}").plus(2)},
		{"NUL padding", file("{}\x00\x00\x00\x00\x00\x00", 0), "after the header object", "", abs(10)},
		{"control char", file("{\"a\tb\":"+okEntry+"}", 8), "control character", "", at("\t")},
		{"bad escape", file(`{"a\qb":`+okEntry+`}`, 8), `bad escape \q`, "", at(`\q`)},
		{"lone surrogate", file(`{"\ud800":`+okEntry+`}`, 8), "lone leading surrogate", "", at(`\u`)},
		{"lone trailing surrogate", file(`{"\udc00":`+okEntry+`}`, 8), "lone trailing surrogate", "", at(`\u`)},
		{"tensor not object", file(`{"a":[1]}`, 0), "want an object", `tensor "a"`, at("[")},
		{"unknown dtype", file(`{"a":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}}`, 8), `unknown dtype "F33"`, `tensor "a"`, at(`"F33"`)},
		{"wrong-case dtype", file(`{"a":{"dtype":"f32","shape":[2],"data_offsets":[0,8]}}`, 8), "case-sensitive", `tensor "a"`, at(`"f32"`)},
		{"ggml dtype", file(`{"a":{"dtype":"Q8_0","shape":[32],"data_offsets":[0,34]}}`, 34), `unknown dtype "Q8_0"`, `tensor "a"`, at(`"Q8_0"`)},
		{"dtype number", file(`{"a":{"dtype":3,"shape":[2],"data_offsets":[0,8]}}`, 8), "dtype must be a string", `tensor "a"`, at("3")},
		{"extra key", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}}`, 8), `unknown key "x"`, `tensor "a"`, at(`"x"`)},
		{"missing shape", file(`{"a":{"dtype":"F32","data_offsets":[0,8]}}`, 8), `missing key "shape"`, `tensor "a"`, at(`{"dtype"`)},
		{"missing offsets", file(`{"a":{"dtype":"F32","shape":[2]}}`, 8), `missing key "data_offsets"`, `tensor "a"`, at(`{"dtype"`)},
		{"duplicate dtype", file(`{"a":{"dtype":"F32","dtype":"F16","shape":[2],"data_offsets":[0,8]}}`, 8), `duplicate key "dtype"`, `tensor "a"`, at(`"dtype":"F16"`)},
		{"duplicate tensor", file(`{"a":`+okEntry+`,"a":`+okEntry+`}`, 8), "appears twice", `tensor "a"`, at(`,"a"`).plus(1)},
		{"duplicate metadata", file(`{"__metadata__":{},"__metadata__":{},"a":`+okEntry+`}`, 8), "appears twice", `key "__metadata__"`, at(`,"__metadata__"`).plus(1)},
		{"duplicate metadata key", file(`{"__metadata__":{"k":"1","k":"2"}}`, 0), "appears twice", `key "k"`, at(`,"k"`).plus(1)},
		{"metadata number", file(`{"__metadata__":{"k":1}}`, 0), "value must be a string", `key "k"`, at("1")},
		{"metadata nested", file(`{"__metadata__":{"k":{"x":"y"}}}`, 0), "value must be a string", `key "k"`, at(`{"x"`)},
		{"metadata array", file(`{"__metadata__":["a"]}`, 0), "want an object of strings", `key "__metadata__"`, at("[")},
		{"metadata null", file(`{"__metadata__":null}`, 0), "want an object of strings", `key "__metadata__"`, at("null")},
		{"negative dim", file(`{"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}`, 8), "shape dimension is negative", `tensor "a"`, at("-2")},
		{"float dim", file(`{"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}}`, 8), "not an integer", `tensor "a"`, at("2.0")},
		{"exponent dim", file(`{"a":{"dtype":"F32","shape":[2e0],"data_offsets":[0,8]}}`, 8), "not an integer", `tensor "a"`, at("2e0")},
		{"leading zero", file(`{"a":{"dtype":"F32","shape":[02],"data_offsets":[0,8]}}`, 8), "leading zero", `tensor "a"`, at("02")},
		{"dim overflows int64", file(`{"a":{"dtype":"F32","shape":[9223372036854775808],"data_offsets":[0,8]}}`, 8), "overflows int64", `tensor "a"`, at("9223")},
		{"element count overflows", file(`{"a":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,8]}}`, 8), "no valid byte size", `tensor "a"`, data(0)},
		{"byte count overflows", file(`{"a":{"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,8]}}`, 8), "no valid byte size", `tensor "a"`, data(0)},
		{"too many dims", file(`{"a":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,2],"data_offsets":[0,8]}}`, 8), "more than 16 dimensions", `tensor "a"`, at("2]")},
		{"shape not array", file(`{"a":{"dtype":"F32","shape":2,"data_offsets":[0,8]}}`, 8), "want a shape array", `tensor "a"`, at("2,")},
		{"F4 half byte", file(`{"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}`, 2), "no valid byte size", `tensor "a"`, data(0)},
		{"size mismatch", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,12]}}`, 12), "needs 8", `tensor "a"`, data(0)},
		{"bf16 size mismatch", file(`{"a":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,8]}}`, 8), "needs 12", `tensor "a"`, data(0)},
		{"offsets reversed", file(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}}`, 8), "end before they begin", `tensor "a"`, data(8)},
		{"three offsets", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8,8]}}`, 8), "exactly two", `tensor "a"`, at(",8]")},
		{"one offset", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[8]}}`, 8), "exactly two", `tensor "a"`, at("]}}")},
		{"negative offset", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}}`, 8), "data_offsets begin is negative", `tensor "a"`, at("-8")},
		{"hole at start", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, 12), "hole", `tensor "a"`, data(4)},
		{"hole between", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}`, 12),
			`bytes [4,8) between tensor "a"`, `tensor "b"`, data(8)},
		{"overlap", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8),
			`overlap tensor "a"`, `tensor "b"`, data(4)},
		{"same offsets", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 8),
			`overlap tensor "a"`, `tensor "b"`, data(0)},
		{"data past EOF", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 4), "run past the end", `tensor "a"`, data(0)},
		{"trailing bytes", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 9), "1 trailing bytes", "", data(8)},
		{"trailing bytes no tensors", file(`{}`, 3), "3 trailing bytes", "", data(0)},
		// An empty tensor at offset 2^63-1 of an empty data section: beyond the end (check says the same).
		{"offset overflow", file(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[9223372036854775807,9223372036854775807]}}`, 0), "run past the end", `tensor "a"`, at(`"a"`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := NewFile(bytes.NewReader(tc.data), int64(len(tc.data)))
			if err == nil {
				t.Fatalf("accepted: %+v", f.Tensors)
			}
			t.Log(err)
			checkFormatError(t, err, tc.msg, tc.item, tc.offset(tc.data))
		})
	}
}

// offsetFn computes an expected error offset from the file's bytes.
type offsetFn func(b []byte) int64

// at is the absolute offset of the first occurrence of marker in the file.
func at(marker string) offsetFn {
	return func(b []byte) int64 { return int64(bytes.Index(b, []byte(marker))) }
}

func (f offsetFn) plus(k int64) offsetFn { return func(b []byte) int64 { return f(b) + k } }

// data is offset k of the data section (8+N+k).
func data(k int64) offsetFn {
	return func(b []byte) int64 { return 8 + int64(binary.LittleEndian.Uint64(b)) + k }
}

// abs is a fixed offset; negative counts from the end of the file.
func abs(k int64) offsetFn {
	return func(b []byte) int64 {
		if k < 0 {
			return int64(len(b)) + k
		}
		return k
	}
}

func checkFormatError(t *testing.T, err error, msg, item string, offset int64) {
	t.Helper()
	if !errors.Is(err, tensor.ErrFormat) {
		t.Fatalf("error %v does not match tensor.ErrFormat", err)
	}
	var fe *tensor.FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v is not a *tensor.FormatError", err)
	}
	if fe.Format != "safetensors" || !strings.HasPrefix(err.Error(), "safetensors: ") {
		t.Errorf("error %q does not come from safetensors", err)
	}
	if !strings.Contains(err.Error(), msg) {
		t.Errorf("error %q does not say %q", err, msg)
	}
	if item != "" && fe.Item != item {
		t.Errorf("error %q: Item %q, want %q", err, fe.Item, item)
	}
	if offset >= 0 && fe.Offset != offset {
		t.Errorf("error %q: Offset %d, want %d", err, fe.Offset, offset)
	}
}

// TestTruncated cuts a real file at several points: inside the length,
// inside the header, at the end of the header, and inside the data.
func TestTruncated(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testdata, "bert-bfloat16", "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	n := int(binary.LittleEndian.Uint64(b))
	for _, cut := range []int{0, 4, 7, 8, 9, 8 + n/2, 8 + n - 1, 8 + n, 8 + n + 1, len(b) / 2, len(b) - 1} {
		_, err := NewFile(bytes.NewReader(b[:cut]), int64(cut))
		if err == nil {
			t.Errorf("cut at %d: accepted", cut)
			continue
		}
		if !errors.Is(err, tensor.ErrFormat) {
			t.Errorf("cut at %d: %v is not ErrFormat", cut, err)
		}
	}
	// One byte too many is as wrong as one too few.
	long := append(slices.Clone(b), 0)
	if _, err := NewFile(bytes.NewReader(long), int64(len(long))); !errors.Is(err, tensor.ErrFormat) || !strings.Contains(err.Error(), "1 trailing bytes") {
		t.Errorf("extra byte: %v", err)
	}
	// A reader shorter than the size it is said to have.
	if _, err := NewFile(bytes.NewReader(b[:100]), int64(len(b))); !errors.Is(err, tensor.ErrFormat) || !strings.Contains(err.Error(), "truncated header") {
		t.Errorf("short reader: %v", err)
	}
}

// TestAccepted covers inputs the reference accepts that a careless reader
// might not.
func TestAccepted(t *testing.T) {
	tests := []struct {
		name   string
		data   []byte
		check  func(*File) error
		tensor []string
	}{
		{"empty object", file(`{}`, 0), nil, nil},
		{"padding whitespace", file("{}  \t\r\n ", 0), nil, nil},
		{"whitespace inside", file(`{ "a" : { "shape" : [ 2 ] , "data_offsets" : [ 0 , 8 ] , "dtype" : "F32" } }`, 8), nil, []string{"a"}},
		{"scalar and empty", file(`{"s":{"dtype":"I64","shape":[],"data_offsets":[0,8]},"e":{"dtype":"F16","shape":[0,5],"data_offsets":[8,8]}}`, 8), nil, []string{"s", "e"}},
		{"header order differs from data order", file(`{"b":{"dtype":"U8","shape":[1],"data_offsets":[1,2]},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, 2), nil, []string{"a", "b"}},
		{"F4 whole bytes", file(`{"a":{"dtype":"F4","shape":[2,3],"data_offsets":[0,3]}}`, 3), nil, []string{"a"}},
		{"F6 whole bytes", file(`{"a":{"dtype":"F6_E3M2","shape":[4],"data_offsets":[0,3]}}`, 3), nil, []string{"a"}},
		{"escaped names", file(`{"\u00e9\n\"x\ud83d\ude00":{"dtype":"BOOL","shape":[1],"data_offsets":[0,1]}}`, 1), nil, []string{"é\n\"x😀"}},
		{"metadata kept in order", file(`{"__metadata__":{"z":"1","a":"\u0041"}}`, 0), func(f *File) error {
			want := tensor.Metadata{{Key: "z", Value: tensor.String("1")}, {Key: "a", Value: tensor.String("A")}}
			if !f.Metadata.Equal(want) {
				return fmt.Errorf("metadata %v, want %v", f.Metadata, want)
			}
			return nil
		}, nil},
		{"empty metadata", file(`{"__metadata__":{}}`, 0), func(f *File) error {
			if f.Metadata == nil || len(f.Metadata) != 0 {
				return fmt.Errorf("metadata %#v, want empty and non-nil", f.Metadata)
			}
			return nil
		}, nil},
		{"no metadata", file(`{}`, 0), func(f *File) error {
			if f.Metadata != nil {
				return fmt.Errorf("metadata %#v, want nil", f.Metadata)
			}
			return nil
		}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := NewFile(bytes.NewReader(tc.data), int64(len(tc.data)))
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tt := range f.Tensors {
				names = append(names, tt.Name)
			}
			if !slices.Equal(names, tc.tensor) {
				t.Errorf("tensors %q, want %q", names, tc.tensor)
			}
			if tc.check != nil {
				if err := tc.check(f); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// TestFixtureChecksums guards the copies against edits: they must stay the
// bytes the reference tools wrote, as listed in testdata's README.md.
func TestFixtureChecksums(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(testdata, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(readme), "\n") {
		fields := strings.Fields(line)
		if len(fields) != 2 || len(fields[0]) != 64 {
			continue
		}
		b, err := os.ReadFile(filepath.Join(testdata, fields[1]))
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%x", sha256.Sum256(b)); got != fields[0] {
			t.Errorf("%s: sha256 %s, README says %s", fields[1], got, fields[0])
		}
		n++
	}
	if n != 2*len(fixtureDirs) {
		t.Errorf("README lists %d checksums, want %d", n, 2*len(fixtureDirs))
	}
}
