package native

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// crcC is computed here from the standard library, independently of the
// package's own table, so a wrong polynomial in the package would show.
var crcC = crc32.MakeTable(crc32.Castagnoli)

type auxBody struct {
	name string
	data []byte
}

type tensorBody struct {
	spec TensorSpec
	data []byte
}

func spec(name string, d tensor.DType, shape ...int64) TensorSpec {
	return TensorSpec{Info: tensor.Info{Name: name, DType: d, Shape: shape}}
}

// randomBody returns deterministic pseudo-random bytes for a tensor.
func randomBody(t testing.TB, s TensorSpec, seed uint64) []byte {
	t.Helper()
	n, err := s.DType.ShapeBytes(s.Shape)
	if err != nil {
		t.Fatalf("%s: %v", s.Name, err)
	}
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// write builds a complete file, writing each body in two pieces so that
// bodies split across Write calls are exercised.
func write(t testing.TB, h Header, aux []auxBody, tensors []tensorBody) []byte {
	t.Helper()
	var as []AuxSpec
	for _, a := range aux {
		as = append(as, AuxSpec{Name: a.name, Size: int64(len(a.data))})
	}
	var ts []TensorSpec
	for _, tb := range tensors {
		ts = append(ts, tb.spec)
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, h, as, ts)
	if err != nil {
		t.Fatalf("NewWriter: %v", err)
	}
	put := func(bw io.Writer, data []byte) {
		half := len(data) / 2
		for _, p := range [][]byte{data[:half], data[half:]} {
			if n, err := bw.Write(p); err != nil || n != len(p) {
				t.Fatalf("Write: %d, %v", n, err)
			}
		}
	}
	for _, a := range aux {
		bw, err := w.NextAux(a.name)
		if err != nil {
			t.Fatalf("NextAux(%q): %v", a.name, err)
		}
		put(bw, a.data)
	}
	for _, tb := range tensors {
		bw, err := w.Next(tb.spec.Name)
		if err != nil {
			t.Fatalf("Next(%q): %v", tb.spec.Name, err)
		}
		put(bw, tb.data)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return buf.Bytes()
}

func parse(t testing.TB, b []byte) *File {
	t.Helper()
	f, err := NewFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("NewFile: %v", err)
	}
	return f
}

// allKinds holds every metadata kind, in deliberately unsorted key order,
// with the values that lossy encodings get wrong: NaN payloads, -0,
// uint64 above 2^53, invalid UTF-8, empty and nested arrays.
func allKinds() tensor.Metadata {
	nanPayload32 := math.Float32frombits(0x7fc00001)
	signalingNaN32 := math.Float32frombits(0x7f800001)
	nanPayload64 := math.Float64frombits(0x7ff8000000000001)
	return tensor.Metadata{
		{Key: "z.first", Value: tensor.String("order is kept, not sorted")},
		{Key: "u8", Value: tensor.Uint8(255)},
		{Key: "i8", Value: tensor.Int8(-128)},
		{Key: "u16", Value: tensor.Uint16(65535)},
		{Key: "i16", Value: tensor.Int16(-32768)},
		{Key: "u32", Value: tensor.Uint32(math.MaxUint32)},
		{Key: "i32", Value: tensor.Int32(math.MinInt32)},
		{Key: "f32.nan", Value: tensor.Float32(nanPayload32)},
		{Key: "f32.snan", Value: tensor.Float32(signalingNaN32)},
		{Key: "f32.negzero", Value: tensor.Float32(float32(math.Copysign(0, -1)))},
		{Key: "f32.eps", Value: tensor.Float32(1e-5)},
		{Key: "bool.true", Value: tensor.Bool(true)},
		{Key: "bool.false", Value: tensor.Bool(false)},
		{Key: "string", Value: tensor.String("héllo \x00 \xff\xfe not UTF-8")},
		{Key: "string.empty", Value: tensor.String("")},
		{Key: "u64.max", Value: tensor.Uint64(math.MaxUint64)},
		{Key: "u64.2^53+1", Value: tensor.Uint64(1<<53 + 1)},
		{Key: "i64.min", Value: tensor.Int64(math.MinInt64)},
		{Key: "f64.nan", Value: tensor.Float64(nanPayload64)},
		{Key: "f64.denormal", Value: tensor.Float64(5e-324)},
		{Key: "f64.inf", Value: tensor.Float64(math.Inf(-1))},
		{Key: "a.u8", Value: tensor.ArrayOf([]uint8{0, 1, 255})},
		{Key: "a.i8", Value: tensor.ArrayOf([]int8{-128, 0, 127})},
		{Key: "a.u16", Value: tensor.ArrayOf([]uint16{1, 65535})},
		{Key: "a.i16", Value: tensor.ArrayOf([]int16{-32768, 32767})},
		{Key: "a.u32", Value: tensor.ArrayOf([]uint32{0, math.MaxUint32})},
		{Key: "a.i32", Value: tensor.ArrayOf([]int32{math.MinInt32, -1})},
		{Key: "a.f32", Value: tensor.ArrayOf([]float32{nanPayload32, signalingNaN32, -0.5, float32(math.Inf(1))})},
		{Key: "a.bool", Value: tensor.ArrayOf([]bool{true, false, true})},
		{Key: "a.string", Value: tensor.ArrayOf([]string{"", "a", "\xff", "tokens ▁the"})},
		{Key: "a.u64", Value: tensor.ArrayOf([]uint64{math.MaxUint64, 1<<53 + 1})},
		{Key: "a.i64", Value: tensor.ArrayOf([]int64{math.MinInt64, math.MaxInt64})},
		{Key: "a.f64", Value: tensor.ArrayOf([]float64{nanPayload64, math.Copysign(0, -1)})},
		{Key: "a.empty", Value: tensor.ArrayOf([]float32{})},
		{Key: "a.nested", Value: tensor.ArrayOf([]tensor.Array{
			{Elem: tensor.KindUint32, Data: []uint32{1, 2, 3}},
			{Elem: tensor.KindString, Data: []string{"x", ""}},
			{Elem: tensor.KindArray, Data: []tensor.Array{
				{Elem: tensor.KindFloat64, Data: []float64{nanPayload64}},
				{Elem: tensor.KindArray, Data: []tensor.Array{}},
			}},
			{Elem: tensor.KindInt8, Data: []int8{}},
		})},
	}
}

// dtypeShape is a small valid shape for d: rows of three blocks.
func dtypeShape(d tensor.DType) tensor.Shape { return tensor.Shape{2, 3 * d.BlockSize()} }

func TestRoundTripEveryDTypeAndKind(t *testing.T) {
	var tensors []tensorBody
	for i, d := range tensor.All() {
		s := spec("t."+d.String(), d, dtypeShape(d)...)
		tensors = append(tensors, tensorBody{s, randomBody(t, s, uint64(i))})
	}
	// Edge shapes: a scalar, an empty tensor, the largest rank.
	scalar := spec("scalar", tensor.F32)
	tensors = append(tensors, tensorBody{scalar, []byte{0, 0, 0x80, 0x3f}})
	empty := spec("empty", tensor.F16, 0, 5)
	tensors = append(tensors, tensorBody{empty, []byte{}})
	deep := spec("deep", tensor.I8, make([]int64, tensor.MaxDims)...)
	for i := range deep.Shape {
		deep.Shape[i] = 1
	}
	deep.Attrs = tensor.Metadata{{Key: "note", Value: tensor.String("attrs are typed")}, {Key: "n", Value: tensor.Uint64(math.MaxUint64)}}
	tensors = append(tensors, tensorBody{deep, []byte{0x7f}})

	h := Header{
		Source:     SourceGGUF,
		SourceInfo: tensor.Metadata{{Key: "gguf.version", Value: tensor.Uint32(3)}},
		Metadata:   allKinds(),
	}
	aux := []auxBody{
		{"config.json", []byte(`{"hidden_size": 64}`)},
		{"tokenizer/merges.txt", []byte("#version: 0.2\nĠ t\n")},
		{"empty.txt", nil},
	}
	b := write(t, h, aux, tensors)

	if !bytes.HasPrefix(b, []byte("\x89TFN\r\n\x1a\n")) || !bytes.HasSuffix(b, []byte("TFN\x00TAIL")) {
		t.Fatalf("file does not start and end with the magics")
	}
	f := parse(t, b)
	if f.Version != [2]uint16{1, 0} || f.Alignment != 64 || f.Source != "gguf" || f.Size != int64(len(b)) {
		t.Errorf("version %v alignment %d source %q size %d", f.Version, f.Alignment, f.Source, f.Size)
	}
	if !f.SourceInfo.Equal(h.SourceInfo) {
		t.Errorf("source info %v, want %v", f.SourceInfo, h.SourceInfo)
	}
	if !f.Metadata.Equal(h.Metadata) {
		for i := range h.Metadata {
			if i >= len(f.Metadata) || f.Metadata[i].Key != h.Metadata[i].Key || !f.Metadata[i].Value.Equal(h.Metadata[i].Value) {
				t.Fatalf("metadata entry %d (%s) does not round-trip", i, h.Metadata[i].Key)
			}
		}
		t.Fatalf("metadata has %d entries, want %d", len(f.Metadata), len(h.Metadata))
	}
	// Decoded arrays hold the Go slice types tensor.ArrayOf expects.
	if a, _ := f.Metadata[len(f.Metadata)-1].Value.Array(); a.Elem != tensor.KindArray {
		t.Errorf("nested array decoded as %v", a.Elem)
	} else if inner := a.Data.([]tensor.Array)[3]; inner.Elem != tensor.KindInt8 || inner.Data.([]int8) == nil {
		t.Errorf("empty int8 array decoded as %#v", inner)
	}

	if len(f.Aux) != len(aux) {
		t.Fatalf("%d aux files, want %d", len(f.Aux), len(aux))
	}
	for i, a := range aux {
		got, err := f.Aux[i].ReadAll()
		if err != nil || f.Aux[i].Name != a.name || !bytes.Equal(got, a.data) || f.Aux[i].CRC != crc32.Checksum(a.data, crcC) {
			t.Errorf("aux %d: %q %q %v crc %08x", i, f.Aux[i].Name, got, err, f.Aux[i].CRC)
		}
		if byName, ok := f.AuxFile(a.name); !ok || byName != &f.Aux[i] {
			t.Errorf("AuxFile(%q) = %v, %v", a.name, byName, ok)
		}
		if f.Aux[i].Offset%64 != 0 {
			t.Errorf("aux %q at unaligned offset %d", a.name, f.Aux[i].Offset)
		}
	}
	if len(f.Tensors) != len(tensors) {
		t.Fatalf("%d tensors, want %d", len(f.Tensors), len(tensors))
	}
	prevEnd := int64(0)
	for i, tb := range tensors {
		got := &f.Tensors[i]
		if got.Name != tb.spec.Name || got.DType != tb.spec.DType || !got.Shape.Equal(tb.spec.Shape) || got.Size != int64(len(tb.data)) {
			t.Errorf("tensor %d: %s %s %v %d, want %s %s %v %d", i, got.Name, got.DType, got.Shape, got.Size,
				tb.spec.Name, tb.spec.DType, tb.spec.Shape, len(tb.data))
		}
		if got.Offset%64 != 0 || got.Offset < prevEnd {
			t.Errorf("tensor %s at offset %d (previous ends at %d)", got.Name, got.Offset, prevEnd)
		}
		prevEnd = got.Offset + got.Size
		if !got.Attrs.Equal(tb.spec.Attrs) {
			t.Errorf("tensor %s attrs %v, want %v", got.Name, got.Attrs, tb.spec.Attrs)
		}
		if got.CRC != crc32.Checksum(tb.data, crcC) {
			t.Errorf("tensor %s CRC %08x, want %08x", got.Name, got.CRC, crc32.Checksum(tb.data, crcC))
		}
		data, err := io.ReadAll(got.Open())
		if err != nil || !bytes.Equal(data, tb.data) {
			t.Errorf("tensor %s: Open read %d bytes, %v", got.Name, len(data), err)
		}
		raw, err := io.ReadAll(got.OpenRaw())
		if err != nil || !bytes.Equal(raw, tb.data) {
			t.Errorf("tensor %s: OpenRaw read %d bytes, %v", got.Name, len(raw), err)
		}
		if byName, ok := f.Tensor(tb.spec.Name); !ok || byName != got {
			t.Errorf("Tensor(%q) = %v, %v", tb.spec.Name, byName, ok)
		}
	}
	// The checksum table (4 bytes per body) and the 32-byte footer follow
	// the last body directly.
	if want := prevEnd + 4*int64(len(aux)+len(tensors)) + 32; int64(len(b)) != want {
		t.Errorf("file is %d bytes, want %d", len(b), want)
	}
	if _, ok := f.Tensor("missing"); ok {
		t.Error("Tensor(missing) found something")
	}
	if _, ok := f.AuxFile("missing"); ok {
		t.Error("AuxFile(missing) found something")
	}
	if err := f.Verify(); err != nil {
		t.Errorf("Verify: %v", err)
	}
}

func TestAlignment(t *testing.T) {
	for _, align := range []int64{1, 8, 4096, MaxAlignment} {
		a := spec("a", tensor.F16, 3)
		bsp := spec("b", tensor.Q8_0, 1, 32)
		b := write(t, Header{Alignment: align}, []auxBody{{"x.txt", []byte("odd")}},
			[]tensorBody{{a, randomBody(t, a, 1)}, {bsp, randomBody(t, bsp, 2)}})
		f := parse(t, b)
		if f.Alignment != align {
			t.Errorf("alignment %d read as %d", align, f.Alignment)
		}
		// Each body starts at the first multiple of align after the previous.
		prev := int64(32) + int64(binary.LittleEndian.Uint64(b[16:]))
		offs := []int64{f.Aux[0].Offset, f.Tensors[0].Offset, f.Tensors[1].Offset}
		ends := []int64{f.Aux[0].Offset + 3, f.Tensors[0].Offset + 6, f.Tensors[1].Offset + 34}
		for i, off := range offs {
			want := (prev + align - 1) / align * align
			if off != want {
				t.Errorf("alignment %d: body %d at %d, want %d", align, i, off, want)
			}
			for _, p := range b[prev:off] {
				if p != 0 {
					t.Fatalf("alignment %d: padding before body %d is not zero", align, i)
				}
			}
			prev = ends[i]
		}
		if err := f.Verify(); err != nil {
			t.Errorf("alignment %d: %v", align, err)
		}
	}
}

func TestDeterministic(t *testing.T) {
	build := func() []byte {
		var tensors []tensorBody
		for i, d := range []tensor.DType{tensor.BF16, tensor.Q4_K, tensor.F4, tensor.I8} {
			s := spec(d.String(), d, dtypeShape(d)...)
			tensors = append(tensors, tensorBody{s, randomBody(t, s, uint64(i))})
		}
		return write(t, Header{Source: SourceSafetensors, Metadata: allKinds()},
			[]auxBody{{"config.json", []byte("{}")}}, tensors)
	}
	a, b := build(), build()
	if !bytes.Equal(a, b) {
		t.Fatalf("two writes of the same input differ (%d and %d bytes)", len(a), len(b))
	}
}

func TestOpenPath(t *testing.T) {
	s := spec("w", tensor.F32, 2, 2)
	b := write(t, Header{}, nil, []tensorBody{{s, randomBody(t, s, 7)}})
	path := filepath.Join(t.TempDir(), "m.tfn")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Name != path || f.Size != int64(len(b)) || f.Source != "" || len(f.Tensors) != 1 {
		t.Errorf("Open: name %q size %d source %q %d tensors", f.Name, f.Size, f.Source, len(f.Tensors))
	}
	if err := f.Verify(); err != nil {
		t.Error(err)
	}
	if err := f.Close(); err != nil {
		t.Error(err)
	}

	b[len(b)-1] ^= 1
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(path)
	var fe *tensor.FormatError
	if !errors.As(err, &fe) || fe.File != path || !strings.Contains(err.Error(), path) {
		t.Errorf("Open of a damaged file: %v, want a FormatError naming %s", err, path)
	}
}

func TestQuantScaleConvention(t *testing.T) {
	w := spec("w", tensor.I8, 3, 4)
	w.Attrs = tensor.Metadata{{Key: AttrQuantScale, Value: tensor.String("w.scale")}, {Key: AttrQuantAxis, Value: tensor.Int32(0)}}
	sc := spec("w.scale", tensor.F32, 3)
	whole := spec("v", tensor.I8, 5)
	whole.Attrs = tensor.Metadata{{Key: AttrQuantScale, Value: tensor.String("v.scale")}}
	vsc := spec("v.scale", tensor.F32)
	b := write(t, Header{}, nil, []tensorBody{
		{w, randomBody(t, w, 1)}, {sc, randomBody(t, sc, 2)}, {whole, randomBody(t, whole, 3)}, {vsc, randomBody(t, vsc, 4)},
	})
	f := parse(t, b)
	got, _ := f.Tensor("w")
	if name, _ := got.Attrs.Str(AttrQuantScale); name != "w.scale" {
		t.Errorf("quant.scale = %q", name)
	}
	if axis, ok := got.Attrs.Get(AttrQuantAxis); !ok || axis.Kind() != tensor.KindInt32 {
		t.Errorf("quant.axis = %v", axis)
	}

	bad := func(attrs tensor.Metadata, scale TensorSpec) error {
		w := spec("w", tensor.I8, 3, 4)
		w.Attrs = attrs
		_, err := NewWriter(io.Discard, Header{}, nil, []TensorSpec{w, scale})
		return err
	}
	str := tensor.String
	cases := map[string]error{
		"wrong length":  bad(tensor.Metadata{{Key: AttrQuantScale, Value: str("s")}, {Key: AttrQuantAxis, Value: tensor.Int32(1)}}, spec("s", tensor.F32, 3)),
		"per-tensor":    bad(tensor.Metadata{{Key: AttrQuantScale, Value: str("s")}}, spec("s", tensor.F32, 3)),
		"missing":       bad(tensor.Metadata{{Key: AttrQuantScale, Value: str("nope")}}, spec("s", tensor.F32)),
		"not F32":       bad(tensor.Metadata{{Key: AttrQuantScale, Value: str("s")}}, spec("s", tensor.F16)),
		"axis int64":    bad(tensor.Metadata{{Key: AttrQuantScale, Value: str("s")}, {Key: AttrQuantAxis, Value: tensor.Int64(0)}}, spec("s", tensor.F32, 3)),
		"axis too big":  bad(tensor.Metadata{{Key: AttrQuantScale, Value: str("s")}, {Key: AttrQuantAxis, Value: tensor.Int32(2)}}, spec("s", tensor.F32, 3)),
		"axis alone":    bad(tensor.Metadata{{Key: AttrQuantAxis, Value: tensor.Int32(0)}}, spec("s", tensor.F32, 3)),
		"self":          bad(tensor.Metadata{{Key: AttrQuantScale, Value: str("w")}}, spec("s", tensor.F32, 3)),
		"scale not str": bad(tensor.Metadata{{Key: AttrQuantScale, Value: tensor.Uint8(1)}}, spec("s", tensor.F32, 3)),
	}
	for name, err := range cases {
		if err == nil || !strings.HasPrefix(err.Error(), "native: tensor \"w\"") {
			t.Errorf("%s: NewWriter error %v", name, err)
		}
	}
	// The reader enforces the convention too: point the axis at dimension 1
	// (length 4) while the scale tensor keeps 3 elements.
	at := fieldAfterKey(t, b, AttrQuantAxis)
	binary.LittleEndian.PutUint32(b[at:], 1)
	reseal(b)
	wantFormatError(t, b, tensor.ErrFormat, anyOffset, `tensor "w"`, "has 3 elements, want 4")
}

func TestWriterErrors(t *testing.T) {
	f32 := spec("a", tensor.F32, 2)
	check := func(name string, err error, want string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "native: ") {
			t.Errorf("%s: error %v, want one containing %q", name, err, want)
		}
	}
	nw := func(h Header, aux []AuxSpec, ts ...TensorSpec) error {
		_, err := NewWriter(io.Discard, h, aux, ts)
		return err
	}
	check("alignment", nw(Header{Alignment: 48}, nil), "power of two")
	check("huge alignment", nw(Header{Alignment: 2 * MaxAlignment}, nil), "power of two")
	check("dup tensor", nw(Header{}, nil, f32, f32), "declared twice")
	check("empty name", nw(Header{}, nil, spec("", tensor.F32, 1)), "empty name")
	check("block", nw(Header{}, nil, spec("q", tensor.Q4_0, 2, 31)), "block size")
	check("invalid dtype", nw(Header{}, nil, spec("x", tensor.Invalid, 1)), "invalid dtype")
	check("rank", nw(Header{}, nil, spec("x", tensor.F32, make([]int64, tensor.MaxDims+1)...)), "rank")
	check("long name", nw(Header{}, nil, spec(strings.Repeat("n", MaxNameLen+1), tensor.F32, 1)), "exceeds")
	check("aux path", nw(Header{}, []AuxSpec{{"../etc/passwd", 1}}), "clean relative")
	check("aux abs", nw(Header{}, []AuxSpec{{"/abs", 1}}), "clean relative")
	check("aux dup", nw(Header{}, []AuxSpec{{"a", 1}, {"a", 2}}), "declared twice")
	check("aux neg", nw(Header{}, []AuxSpec{{"a", -1}}), "negative")
	check("dup key", nw(Header{Metadata: tensor.Metadata{{Key: "k", Value: tensor.Uint8(1)}, {Key: "k", Value: tensor.Uint8(2)}}}, nil), "duplicate metadata key")
	check("invalid value", nw(Header{Metadata: tensor.Metadata{{Key: "k"}}}, nil), "invalid value")
	check("mismatched array", nw(Header{Metadata: tensor.Metadata{{Key: "k", Value: tensor.ArrayOf([]tensor.Array{{Elem: tensor.KindUint8, Data: []int16{1}}})}}}, nil), "holds []int16")
	deep := tensor.Array{Elem: tensor.KindUint8, Data: []uint8{1}}
	for range MaxDepth {
		deep = tensor.Array{Elem: tensor.KindArray, Data: []tensor.Array{deep}}
	}
	check("deep array", nw(Header{Metadata: tensor.Metadata{{Key: "k", Value: tensor.ArrayOf(deep.Data)}}}, nil), "nested deeper")
	check("source", nw(Header{Source: strings.Repeat("s", MaxSourceLen+1)}, nil), "source name")

	// Streaming discipline: declared order, exact sizes, all bodies.
	b := spec("b", tensor.F32, 1)
	w, err := NewWriter(io.Discard, Header{}, []AuxSpec{{"c.json", 2}}, []TensorSpec{f32, b})
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.Next("a")
	check("tensor before aux", err, "declared order")
	aw, err := w.NextAux("c.json")
	if err != nil {
		t.Fatal(err)
	}
	_, err = aw.Write([]byte("{}x"))
	check("aux too long", err, "exceeds the declared size")
	if _, err := aw.Write([]byte("{")); err != nil {
		t.Fatal(err)
	}
	_, err = w.Next("a")
	check("aux short", err, "1 of 2 bytes written")
	if _, err := aw.Write([]byte("}")); err != nil {
		t.Fatal(err)
	}
	_, err = w.Next("b")
	check("out of order", err, `next is tensor "a"`)
	tw, err := w.Next("a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	check("missing body", w.Close(), `1 declared bodies not written (next: tensor "b")`)
	if _, err := tw.Write([]byte{0}); err == nil {
		t.Error("write to a finished body succeeded")
	}

	// Errors from the underlying writer stick.
	w, err = NewWriter(&failAfter{n: 40}, Header{}, nil, []TensorSpec{f32})
	if err == nil {
		t.Fatalf("NewWriter to a failing writer succeeded")
	}
	if !errors.Is(err, errBroken) {
		t.Errorf("error %v does not wrap the writer's", err)
	}
}

var errBroken = errors.New("broken pipe")

type failAfter struct{ n int }

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		n := f.n
		f.n = 0
		return n, errBroken
	}
	f.n -= len(p)
	return len(p), nil
}
