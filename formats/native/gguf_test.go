package native

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// A minimal GGUF v2/v3 reader and writer, local to this test so that the
// GGUF → native → GGUF check does not depend on formats/gguf (nor on this
// package's own value decoder): it only needs to be exact on llama.cpp's files.

type ggufFile struct {
	version   uint32
	kvs       tensor.Metadata
	tensors   []ggufTensor
	alignment int64
	dataStart int64
}

type ggufTensor struct {
	name   string
	ne     []int64 // innermost first, as stored
	typ    uint32
	offset int64 // relative to the data section
	size   int64
}

type ggufReader struct {
	t *testing.T
	b []byte
	p int
}

func (r *ggufReader) u32() uint32 { v := binary.LittleEndian.Uint32(r.b[r.p:]); r.p += 4; return v }
func (r *ggufReader) u64() uint64 { v := binary.LittleEndian.Uint64(r.b[r.p:]); r.p += 8; return v }
func (r *ggufReader) str() string {
	n := int(r.u64())
	s := string(r.b[r.p : r.p+n])
	r.p += n
	return s
}

func (r *ggufReader) value(k tensor.Kind) tensor.Value {
	switch k {
	case tensor.KindUint8:
		r.p++
		return tensor.Uint8(r.b[r.p-1])
	case tensor.KindInt8:
		r.p++
		return tensor.Int8(int8(r.b[r.p-1]))
	case tensor.KindUint16:
		r.p += 2
		return tensor.Uint16(binary.LittleEndian.Uint16(r.b[r.p-2:]))
	case tensor.KindInt16:
		r.p += 2
		return tensor.Int16(int16(binary.LittleEndian.Uint16(r.b[r.p-2:])))
	case tensor.KindUint32:
		return tensor.Uint32(r.u32())
	case tensor.KindInt32:
		return tensor.Int32(int32(r.u32()))
	case tensor.KindFloat32:
		return tensor.Float32(math.Float32frombits(r.u32()))
	case tensor.KindBool:
		r.p++
		return tensor.Bool(r.b[r.p-1] != 0)
	case tensor.KindString:
		return tensor.String(r.str())
	case tensor.KindUint64:
		return tensor.Uint64(r.u64())
	case tensor.KindInt64:
		return tensor.Int64(int64(r.u64()))
	case tensor.KindFloat64:
		return tensor.Float64(math.Float64frombits(r.u64()))
	case tensor.KindArray:
		elem := tensor.Kind(r.u32())
		n := int(r.u64())
		vals := make([]tensor.Value, n)
		for i := range vals {
			vals[i] = r.value(elem)
		}
		return tensor.ArrayOf(sliceOf(r.t, elem, vals))
	}
	r.t.Fatalf("gguf: kind %d at %d", k, r.p)
	return tensor.Value{}
}

// sliceOf packs values of one kind into the typed slice tensor.Array wants.
func sliceOf(t *testing.T, elem tensor.Kind, vals []tensor.Value) any {
	switch elem {
	case tensor.KindString:
		s := make([]string, len(vals))
		for i, v := range vals {
			s[i], _ = v.Str()
		}
		return s
	case tensor.KindFloat32:
		s := make([]float32, len(vals))
		for i, v := range vals {
			s[i] = v.Any().(float32)
		}
		return s
	case tensor.KindInt32:
		s := make([]int32, len(vals))
		for i, v := range vals {
			s[i] = v.Any().(int32)
		}
		return s
	case tensor.KindUint32:
		s := make([]uint32, len(vals))
		for i, v := range vals {
			s[i] = v.Any().(uint32)
		}
		return s
	}
	t.Fatalf("gguf: arrays of %s are not needed by the fixtures", elem)
	return nil
}

func readGGUF(t *testing.T, b []byte) ggufFile {
	t.Helper()
	if string(b[:4]) != "GGUF" {
		t.Fatalf("not a GGUF file")
	}
	r := &ggufReader{t: t, b: b, p: 4}
	g := ggufFile{version: r.u32(), alignment: 32}
	nt, nkv := r.u64(), r.u64()
	for range nkv {
		key := r.str()
		v := r.value(tensor.Kind(r.u32()))
		g.kvs = append(g.kvs, tensor.KV{Key: key, Value: v})
		if key == "general.alignment" {
			a, _ := v.Int()
			g.alignment = a
		}
	}
	for range nt {
		gt := ggufTensor{name: r.str()}
		gt.ne = make([]int64, r.u32())
		for i := range gt.ne {
			gt.ne[i] = int64(r.u64())
		}
		gt.typ = r.u32()
		gt.offset = int64(r.u64())
		g.tensors = append(g.tensors, gt)
	}
	g.dataStart = (int64(r.p) + g.alignment - 1) / g.alignment * g.alignment
	for i := range g.tensors {
		d, ok := tensor.DTypeFromGGML(g.tensors[i].typ)
		if !ok {
			t.Fatalf("ggml type %d", g.tensors[i].typ)
		}
		size, err := d.ShapeBytes(tensor.Shape(g.tensors[i].ne).Reversed())
		if err != nil {
			t.Fatal(err)
		}
		g.tensors[i].size = size
	}
	return g
}

// writeGGUF lays a GGUF file out the way llama.cpp does: header, KVs, tensor
// infos, zero padding to the alignment (only when there are tensors), then
// each tensor at the next aligned offset in order.
func writeGGUF(version uint32, kvs tensor.Metadata, names []string, nes [][]int64, types []uint32, data [][]byte, align int64) []byte {
	var b []byte
	le := binary.LittleEndian
	str := func(s string) { b = le.AppendUint64(b, uint64(len(s))); b = append(b, s...) }
	var val func(v tensor.Value)
	val = func(v tensor.Value) {
		switch x := v.Any().(type) {
		case uint8:
			b = append(b, x)
		case int8:
			b = append(b, byte(x))
		case uint16:
			b = le.AppendUint16(b, x)
		case int16:
			b = le.AppendUint16(b, uint16(x))
		case uint32:
			b = le.AppendUint32(b, x)
		case int32:
			b = le.AppendUint32(b, uint32(x))
		case float32:
			b = le.AppendUint32(b, math.Float32bits(x))
		case bool:
			if x {
				b = append(b, 1)
			} else {
				b = append(b, 0)
			}
		case string:
			str(x)
		case uint64:
			b = le.AppendUint64(b, x)
		case int64:
			b = le.AppendUint64(b, uint64(x))
		case float64:
			b = le.AppendUint64(b, math.Float64bits(x))
		case tensor.Array:
			b = le.AppendUint32(b, uint32(x.Elem))
			b = le.AppendUint64(b, uint64(x.Len()))
			for i := range x.Len() {
				val(x.Index(i))
			}
		}
	}
	b = append(b, "GGUF"...)
	b = le.AppendUint32(b, version)
	b = le.AppendUint64(b, uint64(len(names)))
	b = le.AppendUint64(b, uint64(len(kvs)))
	for _, kv := range kvs {
		str(kv.Key)
		b = le.AppendUint32(b, uint32(kv.Value.Kind()))
		val(kv.Value)
	}
	off := int64(0)
	for i, n := range names {
		str(n)
		b = le.AppendUint32(b, uint32(len(nes[i])))
		for _, d := range nes[i] {
			b = le.AppendUint64(b, uint64(d))
		}
		b = le.AppendUint32(b, types[i])
		b = le.AppendUint64(b, uint64(off))
		off = (off + int64(len(data[i])) + align - 1) / align * align
	}
	pad := func() {
		for int64(len(b))%align != 0 {
			b = append(b, 0)
		}
	}
	if len(data) > 0 { // vocabulary-only files end right after the KVs
		pad()
	}
	for i := range data {
		b = append(b, data[i]...)
		if i < len(data)-1 {
			pad()
		}
	}
	return b
}

// ggufThroughNative converts a GGUF file to native (KVs as metadata, shapes
// in tfconv's row-major order, the GGUF version as source info), reads it
// back, rebuilds the GGUF from the native file alone and requires it to be
// byte-identical to the original.
func ggufThroughNative(t *testing.T, orig []byte) *File {
	t.Helper()
	g := readGGUF(t, orig)
	var tensors []tensorBody
	for _, gt := range g.tensors {
		d, _ := tensor.DTypeFromGGML(gt.typ)
		start := g.dataStart + gt.offset
		tensors = append(tensors, tensorBody{
			TensorSpec{Info: tensor.Info{Name: gt.name, DType: d, Shape: tensor.Shape(gt.ne).Reversed()}},
			orig[start : start+gt.size],
		})
	}
	h := Header{
		Source:     SourceGGUF,
		SourceInfo: tensor.Metadata{{Key: "gguf.version", Value: tensor.Uint32(g.version)}},
		Metadata:   g.kvs,
	}
	f := parse(t, write(t, h, nil, tensors))
	if err := f.Verify(); err != nil {
		t.Fatal(err)
	}

	// Rebuild from the native file only.
	ver, _ := f.SourceInfo.Get("gguf.version")
	align := int64(32)
	if a, ok := f.Metadata.Int("general.alignment"); ok {
		align = a
	}
	var names []string
	var nes [][]int64
	var types []uint32
	var data [][]byte
	for i := range f.Tensors {
		nt := &f.Tensors[i]
		typ, ok := nt.DType.GGMLType()
		if !ok {
			t.Fatalf("%s: %s has no ggml type", nt.Name, nt.DType)
		}
		body := make([]byte, nt.Size)
		if _, err := nt.OpenRaw().ReadAt(body, 0); err != nil && nt.Size > 0 {
			t.Fatal(err)
		}
		names = append(names, nt.Name)
		nes = append(nes, nt.Shape.Reversed())
		types = append(types, typ)
		data = append(data, body)
	}
	rebuilt := writeGGUF(ver.Any().(uint32), f.Metadata, names, nes, types, data, align)
	if !bytes.Equal(rebuilt, orig) {
		n := 0
		for n < len(rebuilt) && n < len(orig) && rebuilt[n] == orig[n] {
			n++
		}
		t.Fatalf("GGUF rebuilt from native differs from the original at byte %d (%d vs %d bytes)", n, len(rebuilt), len(orig))
	}
	return f
}

func TestGGUFFixtureThroughNative(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "gguf")
	orig, err := os.ReadFile(filepath.Join(dir, "llama-Q2_K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	var summary struct {
		Files map[string]struct {
			Bytes       int               `json:"bytes"`
			SHA256      string            `json:"sha256"`
			KVKeys      []string          `json:"kv_keys"`
			TensorTypes map[string]string `json:"tensor_types"`
		} `json:"files"`
	}
	sj, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(sj, &summary); err != nil {
		t.Fatal(err)
	}
	want := summary.Files["llama-Q2_K.gguf"]
	if sum := sha256.Sum256(orig); hex.EncodeToString(sum[:]) != want.SHA256 || len(orig) != want.Bytes {
		t.Fatalf("testdata llama-Q2_K.gguf is not the file summary.json describes")
	}

	f := ggufThroughNative(t, orig)

	// What llama.cpp recorded about the file, seen through native.
	var keys []string
	for _, kv := range f.Metadata {
		keys = append(keys, kv.Key)
	}
	if strings.Join(keys, ",") != strings.Join(want.KVKeys, ",") {
		t.Errorf("metadata keys %v, want %v", keys, want.KVKeys)
	}
	if len(f.Tensors) != len(want.TensorTypes) {
		t.Errorf("%d tensors, want %d", len(f.Tensors), len(want.TensorTypes))
	}
	for name, typ := range want.TensorTypes {
		nt, ok := f.Tensor(name)
		if !ok || nt.DType.String() != typ {
			t.Errorf("tensor %s: %v, want %s", name, nt, typ)
		}
	}
	if ft, _ := f.Metadata.Int("general.file_type"); ft != 10 {
		t.Errorf("general.file_type %d, want 10 (Q2_K)", ft)
	}
	if v, _ := f.SourceInfo.Get("gguf.version"); !v.Equal(tensor.Uint32(3)) {
		t.Errorf("gguf.version %v", v)
	}
	if toks, ok := f.Metadata.Get("tokenizer.ggml.tokens"); !ok || toks.String() != "[string × 1000]" {
		t.Errorf("tokenizer.ggml.tokens: %v", toks)
	}
}

// TestSharedGGUFThroughNative repeats the byte-exact GGUF round trip on every
// GGUF in the shared fixtures (all quantization types, the tokenizer-only
// vocabularies) when they are present.
func TestSharedGGUFThroughNative(t *testing.T) {
	root := sharedFixtures(t)
	var paths []string
	for _, pat := range []string{"interop/*/gguf/*.gguf", "trained/*/gguf/*.gguf", "tokenizers/*.gguf"} {
		m, _ := filepath.Glob(filepath.Join(root, pat))
		paths = append(paths, m...)
	}
	if len(paths) == 0 {
		t.Skip("no GGUF fixtures")
	}
	sort.Strings(paths)
	for _, p := range paths {
		rel, _ := filepath.Rel(root, p)
		t.Run(rel, func(t *testing.T) {
			orig, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			ggufThroughNative(t, orig)
		})
	}
}
