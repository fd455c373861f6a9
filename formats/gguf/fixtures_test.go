package gguf

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/internal/fixtures"
	"github.com/tfconv/tfconv/tensor"
)

// sharedFixtures returns shared/fixtures beside the clone, or skips.
func sharedFixtures(t testing.TB) string { return fixtures.Require(t) }

const testdata = "../../testdata/gguf"

// vocabdata holds llama.cpp's tokenizer vocabularies, shipped once for the
// tokenizer and the GGUF tests.
const vocabdata = "../../testdata/tokenizer"

// pair is one member of a JSON object, kept in document order.
type pair struct {
	Key   string
	Value json.RawMessage
}

// orderedObject decodes a JSON object keeping its member order, which
// encoding/json's maps lose; summary.json lists tensors in file order.
func orderedObject(raw json.RawMessage) ([]pair, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("not an object")
	}
	var out []pair
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, pair{tok.(string), v})
	}
	return out, nil
}

// summaryFile is one entry of a summary.json "files" object.
type summaryFile struct {
	Bytes       int64           `json:"bytes"`
	SHA256      string          `json:"sha256"`
	FileType    *int64          `json:"general.file_type"`
	KVKeys      []string        `json:"kv_keys"`
	TensorTypes json.RawMessage `json:"tensor_types"`
}

// checkSummary asserts that f matches what the fixture build recorded.
func checkSummary(t *testing.T, name string, f *File, s summaryFile) {
	t.Helper()
	if s.Bytes != 0 && f.Size != s.Bytes {
		t.Errorf("%s: size %d, summary says %d", name, f.Size, s.Bytes)
	}
	if s.KVKeys != nil {
		var keys []string
		for _, kv := range f.Metadata {
			keys = append(keys, kv.Key)
		}
		if strings.Join(keys, "\n") != strings.Join(s.KVKeys, "\n") {
			t.Errorf("%s: keys\n%q\nsummary says\n%q", name, keys, s.KVKeys)
		}
	}
	if s.FileType != nil {
		v, ok := f.Metadata.Get("general.file_type")
		if got, isU32 := v.Any().(uint32); !ok || !isU32 || int64(got) != *s.FileType {
			t.Errorf("%s: general.file_type %v, summary says %d", name, v, *s.FileType)
		}
	}
	types, err := orderedObject(s.TensorTypes)
	if err != nil {
		t.Fatalf("%s: tensor_types: %v", name, err)
	}
	if len(types) != len(f.Tensors) {
		t.Fatalf("%s: %d tensors, summary lists %d", name, len(f.Tensors), len(types))
	}
	for i, p := range types {
		var want string
		if err := json.Unmarshal(p.Value, &want); err != nil {
			t.Fatal(err)
		}
		got := f.Tensors[i]
		if got.Name != p.Key || got.DType.String() != want {
			t.Errorf("%s: tensor %d is %s %s, summary says %s %s", name, i, got.Name, got.DType, p.Key, want)
		}
	}
}

// checkLayout asserts ggml's layout facts that hold for every file llama.cpp
// writes: tensors back to back at padded offsets, and the file ending with the
// last tensor's padding.
func checkLayout(t *testing.T, name string, f *File) {
	t.Helper()
	if len(f.Tensors) == 0 {
		return
	}
	if f.DataOffset%f.Alignment != 0 {
		t.Errorf("%s: data offset %d not aligned", name, f.DataOffset)
	}
	next := f.DataOffset
	for _, ts := range f.Tensors {
		if ts.Offset != next {
			t.Errorf("%s: %s at %d, want %d", name, ts.Name, ts.Offset, next)
		}
		n, _ := ts.DType.ShapeBytes(ts.Shape)
		if ts.Size != n || ts.Open().Size() != n {
			t.Errorf("%s: %s size %d, want %d", name, ts.Name, ts.Size, n)
		}
		next = ts.Offset + (ts.Size+f.Alignment-1)/f.Alignment*f.Alignment
	}
	if next != f.Size {
		t.Errorf("%s: padded data ends at %d, file is %d bytes", name, next, f.Size)
	}
}

func readSummary(t *testing.T, path string) map[string]summaryFile {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Files map[string]summaryFile `json:"files"`
		GGUF  struct {
			Files map[string]summaryFile `json:"files"`
		} `json:"gguf"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Files != nil {
		return doc.Files
	}
	return doc.GGUF.Files
}

func TestTestdataSummary(t *testing.T) {
	files := readSummary(t, filepath.Join(testdata, "summary.json"))
	if len(files) != 3 {
		t.Fatalf("summary.json lists %d files, want 3", len(files))
	}
	arch := map[string]string{"llama-Q4_0.gguf": "llama", "llama-Q2_K.gguf": "llama", "bert-Q2_K.gguf": "bert"}
	for name, s := range files {
		p := filepath.Join(testdata, name)
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(raw)
		if hex.EncodeToString(sum[:]) != s.SHA256 {
			t.Errorf("%s: sha256 differs from the fixture's", name)
		}
		f, err := Open(p)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name != p || f.Version != 3 || f.Alignment != DefaultAlignment {
			t.Errorf("%s: name %q version %d alignment %d", name, f.Name, f.Version, f.Alignment)
		}
		if f.Architecture() != arch[name] {
			t.Errorf("%s: architecture %q, want %q", name, f.Architecture(), arch[name])
		}
		checkSummary(t, name, f, s)
		checkLayout(t, name, f)
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestTestdataShapes checks shapes against the model's config as recorded in
// the fixture README (hidden 256, intermediate 768, vocab 1000, GQA 4/2).
func TestTestdataShapes(t *testing.T) {
	f, err := Open(filepath.Join(testdata, "llama-Q4_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string]tensor.Shape{
		"token_embd.weight":      {1000, 256},
		"output_norm.weight":     {256},
		"blk.0.ffn_up.weight":    {768, 256},
		"blk.0.ffn_down.weight":  {256, 768},
		"blk.1.attn_k.weight":    {128, 256},
		"blk.1.attn_norm.weight": {256},
	}
	for name, s := range want {
		ts, ok := f.Tensor(name)
		if !ok {
			t.Fatalf("no %s", name)
		}
		if !ts.Shape.Equal(s) {
			t.Errorf("%s: shape %v, want %v", name, ts.Shape, s)
		}
		if ne := ts.NE(); !tensor.Shape(ne).Equal(s.Reversed()) {
			t.Errorf("%s: ne %v", name, ne)
		}
	}
	if n, _ := f.Metadata.Int("llama.embedding_length"); n != 256 {
		t.Errorf("llama.embedding_length %d", n)
	}
	if _, ok := f.Tensor("nope"); ok {
		t.Error("found a tensor that does not exist")
	}
	// A Q4_0 block is an f16 scale then 16 bytes of nibbles: 18 bytes per 32
	// weights, so the 256x1000 embedding is 144000 bytes.
	emb, _ := f.Tensor("token_embd.weight")
	if emb.Size != 1000*256/32*18 {
		t.Errorf("token_embd size %d", emb.Size)
	}
}

// TestTestdataF32Agree: the 1-D tensors stay F32 under llama-quantize --pure,
// so the Q4_0 and Q2_K files made from one f32 file hold the same bytes for
// them, at different offsets.
func TestTestdataF32Agree(t *testing.T) {
	a, err := Open(filepath.Join(testdata, "llama-Q4_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(filepath.Join(testdata, "llama-Q2_K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	n := 0
	for i := range a.Tensors {
		ta := &a.Tensors[i]
		if ta.DType != tensor.F32 {
			continue
		}
		tb, ok := b.Tensor(ta.Name)
		if !ok || tb.DType != tensor.F32 {
			t.Fatalf("%s missing or not F32 in Q2_K", ta.Name)
		}
		da, _ := io.ReadAll(ta.Open())
		db, _ := io.ReadAll(tb.Open())
		if !bytes.Equal(da, db) || int64(len(da)) != ta.Size {
			t.Errorf("%s: bytes differ", ta.Name)
		}
		// RMS norm weights of a trained-from-init model sit near 1.
		if v := math.Float32frombits(binary.LittleEndian.Uint32(da)); !(v > 0.5 && v < 1.5) {
			t.Errorf("%s[0] = %v", ta.Name, v)
		}
		n++
	}
	if n != 5 {
		t.Errorf("%d F32 tensors compared, want 5", n)
	}
}

// TestRewriteTestdata proves the writer follows ggml's layout: each file
// written by llama.cpp comes back byte for byte.
func TestRewriteTestdata(t *testing.T) {
	for _, name := range []string{"llama-Q4_0.gguf", "llama-Q2_K.gguf", "bert-Q2_K.gguf", "../tokenizer/ggml-vocab-gpt-2.gguf"} {
		orig, err := os.ReadFile(filepath.Join(testdata, name))
		if err != nil {
			t.Fatal(err)
		}
		f, err := NewFile(bytes.NewReader(orig), int64(len(orig)))
		if err != nil {
			t.Fatal(err)
		}
		if got := rewrite(t, f); !bytes.Equal(got, orig) {
			t.Errorf("%s: rewrite differs (%d vs %d bytes) from byte %d", name, len(got), len(orig), firstDiff(got, orig))
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// rewrite writes f back through Writer.
func rewrite(t testing.TB, f *File) []byte {
	t.Helper()
	infos := make([]tensor.Info, len(f.Tensors))
	for i, ts := range f.Tensors {
		infos[i] = ts.Info
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, f.Metadata, infos)
	if err != nil {
		t.Fatal(err)
	}
	for i := range f.Tensors {
		bw, err := w.Next(f.Tensors[i].Name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(bw, f.Tensors[i].Open()); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// gpt2ByteDecoder inverts GPT-2's bytes_to_unicode: printable bytes stand for
// themselves, the other 68 are mapped to code points from 256 up, in order.
func gpt2ByteDecoder() map[rune]byte {
	m := make(map[rune]byte, 256)
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			m[rune(b)] = byte(b)
		} else {
			m[rune(256+n)] = byte(b)
			n++
		}
	}
	return m
}

// TestVocabGPT2 decodes llama.cpp's expected token ids for each test text
// with the vocabulary we read, and expects the text back: every one of the
// long string arrays must be read exactly.
func TestVocabGPT2(t *testing.T) {
	f, err := Open(filepath.Join(vocabdata, "ggml-vocab-gpt-2.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if len(f.Tensors) != 0 || f.DataOffset != f.Size {
		t.Errorf("%d tensors, data offset %d of %d", len(f.Tensors), f.DataOffset, f.Size)
	}
	if m, _ := f.Metadata.Str("tokenizer.ggml.model"); m != "gpt2" {
		t.Errorf("tokenizer.ggml.model %q", m)
	}
	v, _ := f.Metadata.Get("tokenizer.ggml.tokens")
	arr, ok := v.Array()
	if !ok || arr.Elem != tensor.KindString {
		t.Fatalf("tokens: %v", v)
	}
	tokens := arr.Data.([]string)
	if len(tokens) != 50257 {
		t.Errorf("%d tokens, GPT-2 has 50257", len(tokens))
	}
	mv, _ := f.Metadata.Get("tokenizer.ggml.merges")
	if ma, ok := mv.Array(); !ok || ma.Len() != 50000 {
		t.Errorf("merges: %v, GPT-2 has 50000", mv)
	}
	inp, err := os.ReadFile(filepath.Join(vocabdata, "ggml-vocab-gpt-2.gguf.inp"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(filepath.Join(vocabdata, "ggml-vocab-gpt-2.gguf.out"))
	if err != nil {
		t.Fatal(err)
	}
	texts := strings.Split(string(inp), "\n__ggml_vocab_test__\n")
	texts = texts[:len(texts)-1] // the file ends with a separator
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(texts) != len(lines) || len(texts) < 40 {
		t.Fatalf("%d texts, %d id lines", len(texts), len(lines))
	}
	dec := gpt2ByteDecoder()
	for i, line := range lines {
		var got []byte
		for _, field := range strings.Fields(line) {
			id, err := strconv.Atoi(field)
			if err != nil || id < 0 || id >= len(tokens) {
				t.Fatalf("line %d: bad id %q", i, field)
			}
			for _, r := range tokens[id] {
				b, ok := dec[r]
				if !ok {
					t.Fatalf("token %d %q: rune %U is not byte-level", id, tokens[id], r)
				}
				got = append(got, b)
			}
		}
		if string(got) != texts[i] {
			t.Errorf("text %d: decoded %q, want %q", i, got, texts[i])
		}
	}
}

func TestSharedSummaries(t *testing.T) {
	root := sharedFixtures(t)
	for _, sp := range []string{"interop/llama", "interop/gpt2", "interop/bert", "trained/tiny-fortunes"} {
		files := readSummary(t, filepath.Join(root, sp, "summary.json"))
		n := 0
		for name, s := range files {
			p := filepath.Join(root, sp, "gguf", name)
			if _, err := os.Stat(p); err != nil {
				continue // the summaries also describe files not kept (README)
			}
			f, err := Open(p)
			if err != nil {
				t.Error(err)
				continue
			}
			checkSummary(t, p, f, s)
			checkLayout(t, p, f)
			f.Close()
			n++
		}
		if n < 4 {
			t.Errorf("%s: only %d files checked", sp, n)
		}
	}
	toks, _ := filepath.Glob(filepath.Join(root, "tokenizers", "*.gguf"))
	if len(toks) == 0 {
		t.Error("no tokenizer vocabularies")
	}
	for _, p := range toks {
		f, err := Open(p)
		if err != nil {
			t.Error(err)
			continue
		}
		v, _ := f.Metadata.Get("tokenizer.ggml.tokens")
		if a, ok := v.Array(); !ok || a.Elem != tensor.KindString || a.Len() < 1000 {
			t.Errorf("%s: tokenizer.ggml.tokens %v", p, v)
		}
		f.Close()
	}
}

// TestSharedRewrite rewrites every GGUF in the shared fixtures: converter
// outputs (gguf-py), llama-quantize outputs (ggml) and tokenizer vocabularies.
func TestSharedRewrite(t *testing.T) {
	root := sharedFixtures(t)
	var paths []string
	for _, g := range []string{"interop/*/gguf/*.gguf", "trained/*/gguf/*.gguf", "tokenizers/*.gguf"} {
		m, _ := filepath.Glob(filepath.Join(root, g))
		paths = append(paths, m...)
	}
	if len(paths) < 40 {
		t.Fatalf("only %d GGUF files found", len(paths))
	}
	for _, p := range paths {
		orig, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := NewFile(bytes.NewReader(orig), int64(len(orig)))
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if got := rewrite(t, f); !bytes.Equal(got, orig) {
			t.Errorf("%s: rewrite differs from byte %d", p, firstDiff(got, orig))
		}
	}
}

// safetensorsHeader reads a safetensors header with the few lines the format
// needs: u64 length, then JSON {name: {dtype, shape, data_offsets}}.
func safetensorsHeader(t *testing.T, raw []byte) (map[string]struct {
	DType   string  `json:"dtype"`
	Shape   []int64 `json:"shape"`
	Offsets []int64 `json:"data_offsets"`
}, int64) {
	t.Helper()
	n := int64(binary.LittleEndian.Uint64(raw))
	var h map[string]json.RawMessage
	if err := json.Unmarshal(raw[8:8+n], &h); err != nil {
		t.Fatal(err)
	}
	out := map[string]struct {
		DType   string  `json:"dtype"`
		Shape   []int64 `json:"shape"`
		Offsets []int64 `json:"data_offsets"`
	}{}
	for k, v := range h {
		if k == "__metadata__" {
			continue
		}
		e := out[k]
		if err := json.Unmarshal(v, &e); err != nil {
			t.Fatal(err)
		}
		out[k] = e
	}
	return out, 8 + n
}

// TestSharedHFBytes: llama.cpp's converter copies the f32 embedding unchanged,
// so its GGUF bytes equal transformers' safetensors bytes, and the GGUF ne is
// the safetensors shape reversed.
func TestSharedHFBytes(t *testing.T) {
	root := sharedFixtures(t)
	st, err := os.ReadFile(filepath.Join(root, "interop/llama/hf/model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	hdr, base := safetensorsHeader(t, st)
	f, err := Open(filepath.Join(root, "interop/llama/gguf/llama-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for gg, hf := range map[string]string{
		"token_embd.weight":   "model.embed_tokens.weight",
		"output_norm.weight":  "model.norm.weight",
		"blk.0.ffn_up.weight": "model.layers.0.mlp.up_proj.weight",
	} {
		ts, ok := f.Tensor(gg)
		if !ok {
			t.Fatalf("no %s", gg)
		}
		e, ok := hdr[hf]
		if !ok || e.DType != "F32" {
			t.Fatalf("safetensors %s: %+v", hf, e)
		}
		if !ts.Shape.Equal(e.Shape) || !tensor.Shape(ts.NE()).Equal(tensor.Shape(e.Shape).Reversed()) {
			t.Errorf("%s: shape %v ne %v, safetensors %v", gg, ts.Shape, ts.NE(), e.Shape)
		}
		got, err := io.ReadAll(ts.Open())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, st[base+e.Offsets[0]:base+e.Offsets[1]]) {
			t.Errorf("%s: bytes differ from %s", gg, hf)
		}
	}
}
