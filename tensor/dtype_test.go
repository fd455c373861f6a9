package tensor

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// The ggml type ids and block layouts as ggml's type_traits table gives them
// (ggml/src/ggml.c at llama.cpp c392e509), restated in the formats issue.
var ggmlTable = []struct {
	id          uint32
	name        string
	block, size int64
}{
	{0, "F32", 1, 4}, {1, "F16", 1, 2}, {2, "Q4_0", 32, 18}, {3, "Q4_1", 32, 20},
	{6, "Q5_0", 32, 22}, {7, "Q5_1", 32, 24}, {8, "Q8_0", 32, 34}, {9, "Q8_1", 32, 36},
	{10, "Q2_K", 256, 84}, {11, "Q3_K", 256, 110}, {12, "Q4_K", 256, 144}, {13, "Q5_K", 256, 176},
	{14, "Q6_K", 256, 210}, {15, "Q8_K", 256, 292}, {16, "IQ2_XXS", 256, 66}, {17, "IQ2_XS", 256, 74},
	{18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50}, {20, "IQ4_NL", 32, 18}, {21, "IQ3_S", 256, 110},
	{22, "IQ2_S", 256, 82}, {23, "IQ4_XS", 256, 136}, {24, "I8", 1, 1}, {25, "I16", 1, 2},
	{26, "I32", 1, 4}, {27, "I64", 1, 8}, {28, "F64", 1, 8}, {29, "IQ1_M", 256, 56},
	{30, "BF16", 1, 2}, {34, "TQ1_0", 256, 54}, {35, "TQ2_0", 256, 66}, {39, "MXFP4", 32, 17},
	{40, "NVFP4", 64, 36}, {41, "Q1_0", 128, 18},
}

func TestGGMLTypes(t *testing.T) {
	for _, want := range ggmlTable {
		d, ok := DTypeFromGGML(want.id)
		if !ok {
			t.Errorf("ggml id %d (%s) not known", want.id, want.name)
			continue
		}
		if d.String() != want.name || d.BlockSize() != want.block || d.BlockBytes() != want.size {
			t.Errorf("ggml id %d: got %s %d/%d, want %s %d/%d", want.id, d, d.BlockSize(), d.BlockBytes(), want.name, want.block, want.size)
		}
		if id, ok := d.GGMLType(); !ok || id != want.id {
			t.Errorf("%s.GGMLType() = %d, %v", d, id, ok)
		}
	}
	for _, removed := range []uint32{4, 5, 31, 32, 33, 36, 37, 38, 43, 1 << 31} {
		if d, ok := DTypeFromGGML(removed); ok {
			t.Errorf("removed/unknown ggml id %d accepted as %s", removed, d)
		}
	}
}

// The safetensors dtypes and their bit widths (huggingface/safetensors 0.6+
// Dtype::bitsize).
var safetensorsTable = map[string]int64{
	"BOOL": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8,
	"F8_E8M0": 8, "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8, "I16": 16, "U16": 16, "F16": 16, "BF16": 16,
	"I32": 32, "U32": 32, "F32": 32, "C64": 64, "F64": 64, "I64": 64, "U64": 64,
}

func TestSafetensorsDTypes(t *testing.T) {
	n := 0
	for _, d := range All() {
		name, ok := d.SafetensorsName()
		if !ok {
			continue
		}
		n++
		bits, known := safetensorsTable[name]
		if !known {
			t.Errorf("%s is not a safetensors dtype", name)
			continue
		}
		if got := d.BlockBytes() * 8 / d.BlockSize(); got != bits || d.BlockBytes()*8%d.BlockSize() != 0 {
			t.Errorf("%s: %d bits per element, want %d", name, got, bits)
		}
		if back, ok := DTypeFromSafetensors(name); !ok || back != d {
			t.Errorf("DTypeFromSafetensors(%q) = %v, %v", name, back, ok)
		}
	}
	if n != len(safetensorsTable) {
		t.Errorf("%d safetensors dtypes, want %d", n, len(safetensorsTable))
	}
	for _, bad := range []string{"f32", "Q4_0", "F8_E4M3FN", "", "INVALID"} {
		if _, ok := DTypeFromSafetensors(bad); ok {
			t.Errorf("DTypeFromSafetensors(%q) accepted", bad)
		}
	}
}

func TestParse(t *testing.T) {
	for _, d := range All() {
		if got, ok := Parse(strings.ToLower(d.String())); !ok || got != d {
			t.Errorf("Parse(%q) = %v, %v", strings.ToLower(d.String()), got, ok)
		}
	}
	if _, ok := Parse("q4_k_m"); ok {
		t.Error("q4_k_m is a preset, not a dtype")
	}
}

func TestByteSize(t *testing.T) {
	cases := []struct {
		d     DType
		shape Shape
		want  int64
		ok    bool
	}{
		{F32, Shape{1000, 64}, 256000, true},
		{F32, Shape{}, 4, true},
		{F16, Shape{0, 7}, 0, true},
		{Q8_0, Shape{256, 64}, 256 * 2 * 34, true},
		{Q4_K, Shape{2, 512}, 2 * 2 * 144, true},
		{Q4_K, Shape{512, 2}, 0, false}, // row of 2 is not a whole block
		{Q8_0, Shape{33}, 0, false},
		{F4, Shape{3, 2}, 3, true},
		{F4, Shape{3}, 0, false},
		{F6_E2M3, Shape{2, 2}, 3, true},
		{F6_E3M2, Shape{2, 3}, 0, false},
		{F32, Shape{-1}, 0, false},
		{F32, Shape{1 << 62, 4}, 0, false},       // 2^64 elements
		{F64, Shape{1 << 61}, 0, false},          // 2^64 bytes
		{Q8_0, Shape{1 << 58, 1 << 5}, 0, false}, // 2^63 elements
		{F32, Shape{1 << 30, 1 << 30, 1 << 3}, 0, false},
	}
	for _, c := range cases {
		got, err := c.d.ShapeBytes(c.shape)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("%s%v: got %d, %v; want %d ok=%v", c.d, c.shape, got, err, c.want, c.ok)
		}
	}
	if _, err := Invalid.ByteSize(1); err == nil {
		t.Error("Invalid.ByteSize accepted")
	}
	if got := Q8_0.BitsPerElement(); got != 8.5 {
		t.Errorf("Q8_0 bits per element = %v", got)
	}
	if _, err := AlignUp(math.MaxInt64-3, 32); err == nil {
		t.Error("AlignUp overflow not caught")
	}
	if got, _ := AlignUp(33, 32); got != 64 {
		t.Errorf("AlignUp(33,32) = %d", got)
	}
	if _, err := AddInt64(math.MaxInt64, 1); err == nil {
		t.Error("AddInt64 overflow not caught")
	}
}

func TestShape(t *testing.T) {
	s := Shape{2, 3, 4}
	if s.String() != "[2 3 4]" || !s.Reversed().Equal(Shape{4, 3, 2}) || s.RowLen() != 4 {
		t.Errorf("shape helpers: %v %v %d", s, s.Reversed(), s.RowLen())
	}
	if n, _ := (Shape{}).NumElements(); n != 1 {
		t.Errorf("scalar has %d elements", n)
	}
}

func TestValues(t *testing.T) {
	nan := math.Float32frombits(0x7fc00001)
	vals := []Value{
		Uint8(1), Int8(-1), Uint16(2), Int16(-2), Uint32(3), Int32(-3), Float32(nan), Bool(true),
		String("é"), Uint64(math.MaxUint64), Int64(math.MinInt64), Float64(-0.0),
		ArrayOf([]string{"a", "b"}), ArrayOf([]Array{{Elem: KindInt32, Data: []int32{1, 2}}}),
	}
	kinds := []Kind{KindUint8, KindInt8, KindUint16, KindInt16, KindUint32, KindInt32, KindFloat32, KindBool,
		KindString, KindUint64, KindInt64, KindFloat64, KindArray, KindArray}
	for i, v := range vals {
		if v.Kind() != kinds[i] {
			t.Errorf("value %d has kind %s", i, v.Kind())
		}
		if !v.Equal(v) {
			t.Errorf("%v not equal to itself", v)
		}
	}
	if Float32(nan).Equal(Float32(float32(math.NaN()))) && math.Float32bits(float32(math.NaN())) != 0x7fc00001 {
		t.Error("float equality is not bitwise")
	}
	if Uint32(1).Equal(Int32(1)) {
		t.Error("values of different kinds compare equal")
	}
	if _, ok := Uint64(math.MaxUint64).Int(); ok {
		t.Error("uint64 above MaxInt64 converted to int64")
	}
	var m Metadata
	m.Set("a", Uint32(7))
	m.Set("b", String("x"))
	m.Set("a", Uint32(8))
	if n, _ := m.Int("a"); n != 8 || len(m) != 2 || m[0].Key != "a" {
		t.Errorf("Set/Int: %v", m)
	}
	b, err := json.Marshal(map[string]Value{"f": Float32(0.1), "n": Float32(nan), "arr": ArrayOf([]uint64{math.MaxUint64})})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != `{"arr":[18446744073709551615],"f":0.1,"n":"NaN"}` {
		t.Errorf("JSON: %s", got)
	}
}
