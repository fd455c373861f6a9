package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// builder assembles GGUF bytes by hand, so that tests can make files the
// Writer would refuse to produce.
type builder struct{ b []byte }

func (h *builder) raw(p ...byte) *builder { h.b = append(h.b, p...); return h }
func (h *builder) u32(x uint32) *builder  { h.b = binary.LittleEndian.AppendUint32(h.b, x); return h }
func (h *builder) u64(x uint64) *builder  { h.b = binary.LittleEndian.AppendUint64(h.b, x); return h }
func (h *builder) str(s string) *builder  { return h.u64(uint64(len(s))).raw([]byte(s)...) }
func (h *builder) off() int64             { return int64(len(h.b)) }

// header starts a v3 file with the given counts.
func header(nTensors, nKV uint64) *builder {
	h := &builder{}
	return h.raw([]byte("GGUF")...).u32(3).u64(nTensors).u64(nKV)
}

// tinfo appends a tensor info.
func (h *builder) tinfo(name string, typ uint32, off uint64, ne ...int64) *builder {
	h.str(name).u32(uint32(len(ne)))
	for _, d := range ne {
		h.u64(uint64(d))
	}
	return h.u32(typ).u64(off)
}

// pad appends zeros up to a multiple of n.
func (h *builder) pad(n int) *builder {
	for len(h.b)%n != 0 {
		h.b = append(h.b, 0)
	}
	return h
}

// data appends n bytes of tensor data.
func (h *builder) data(n int) *builder {
	for i := 0; i < n; i++ {
		h.b = append(h.b, byte(i))
	}
	return h
}

func open(b []byte) (*File, error) { return NewFile(bytes.NewReader(b), int64(len(b))) }

// wantErr checks err is a *tensor.FormatError of the right class at the
// right place. off < 0 skips the offset check.
func wantErr(t *testing.T, name string, err error, unsupported bool, off int64, item, msg string) {
	t.Helper()
	var fe *tensor.FormatError
	if !errors.As(err, &fe) {
		t.Errorf("%s: error %v, want a *tensor.FormatError", name, err)
		return
	}
	if unsupported != errors.Is(err, tensor.ErrUnsupported) || unsupported == errors.Is(err, tensor.ErrFormat) {
		t.Errorf("%s: %v: unsupported=%v", name, err, unsupported)
	}
	if fe.Format != "gguf" || !strings.HasPrefix(err.Error(), "gguf: ") {
		t.Errorf("%s: %v: format %q", name, err, fe.Format)
	}
	if off >= 0 && fe.Offset != off {
		t.Errorf("%s: %v: offset %d, want %d", name, err, fe.Offset, off)
	}
	if fe.Item != item {
		t.Errorf("%s: %v: item %q, want %q", name, err, fe.Item, item)
	}
	if !strings.Contains(fe.Msg, msg) {
		t.Errorf("%s: %v: message lacks %q", name, err, msg)
	}
}

// validTwoTensor is a correct file: one key, an F32 [4] tensor and a Q8_0
// [2, 32] tensor, alignment 32.
func validTwoTensor() []byte {
	h := header(2, 1).str("general.architecture").u32(8).str("llama")
	h.tinfo("a", 0, 0, 4).tinfo("b", 8, 32, 32, 2).pad(32)
	h.data(16).pad(32).data(68).pad(32)
	return h.b
}

func TestValidHandMade(t *testing.T) {
	b := validTwoTensor()
	f, err := open(b)
	if err != nil {
		t.Fatal(err)
	}
	if f.Architecture() != "llama" || len(f.Tensors) != 2 {
		t.Fatalf("%+v", f)
	}
	a, bt := f.Tensors[0], f.Tensors[1]
	if a.DType != tensor.F32 || !a.Shape.Equal(tensor.Shape{4}) || a.Size != 16 || a.Offset != f.DataOffset {
		t.Errorf("a: %+v", a.Info)
	}
	if bt.DType != tensor.Q8_0 || !bt.Shape.Equal(tensor.Shape{2, 32}) || bt.Size != 68 || bt.Offset != f.DataOffset+32 {
		t.Errorf("b: %+v", bt.Info)
	}
	got := make([]byte, 68)
	if _, err := bt.Open().ReadAt(got, 0); err != nil || got[0] != 0 || got[67] != 67 {
		t.Errorf("b data %v %v", got[:4], err)
	}
	// Version 2 has the same layout.
	b2 := append([]byte(nil), b...)
	b2[4] = 2
	if f, err := open(b2); err != nil || f.Version != 2 {
		t.Errorf("v2: %v", err)
	}
}

// TestTruncatedEverywhere cuts a valid file at every length: it must fail
// with ErrFormat until the last tensor's data is complete (its trailing
// padding is optional, as in ggml).
func TestTruncatedEverywhere(t *testing.T) {
	b := validTwoTensor()
	dataOff := len(b) - 128 // a: 16 bytes padded to 32; b: 68 padded to 96
	for n := 0; n < len(b); n++ {
		f, err := open(b[:n])
		if n >= dataOff+32+68 {
			if err != nil {
				t.Errorf("truncated to %d (only padding lost): %v", n, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("truncated to %d of %d: accepted with %d tensors", n, len(b), len(f.Tensors))
			continue
		}
		var fe *tensor.FormatError
		if !errors.Is(err, tensor.ErrFormat) || !errors.As(err, &fe) || fe.Offset < 0 || fe.Offset > int64(n) {
			t.Errorf("truncated to %d: %v", n, err)
		}
	}
}

type badCase struct {
	name        string
	build       func() ([]byte, int64) // file, offset of the field at fault
	unsupported bool
	item, msg   string
}

// kvFile is a file with one key whose value bytes are v (type tag included).
func kvFile(key string, v func(h *builder)) ([]byte, int64) {
	h := header(0, 1).str(key)
	off := h.off()
	v(h)
	return h.b, off
}

var badCases = []badCase{
	{"bad magic", func() ([]byte, int64) { return (&builder{}).raw([]byte("GGUFx")...).b[1:], 0 }, false, "", "bad magic"},
	{"short magic", func() ([]byte, int64) { return []byte("GG"), 0 }, false, "", "end of file"},
	{"version 0", func() ([]byte, int64) { h := header(0, 0); h.b[4] = 0; return h.b, 4 }, false, "", "bad version"},
	{"version 1", func() ([]byte, int64) { h := header(0, 0); h.b[4] = 1; return h.b, 4 }, true, "", "version 1"},
	{"version 4", func() ([]byte, int64) { h := header(0, 0); h.b[4] = 4; return h.b, 4 }, true, "", "version 4"},
	{"big-endian", func() ([]byte, int64) {
		b := []byte("GGUF\x00\x00\x00\x03")
		b = binary.BigEndian.AppendUint64(b, 0)
		b = binary.BigEndian.AppendUint64(b, 0)
		return b, 4
	}, true, "", "big-endian GGUF is not supported"},
	{"n_tensors 2^63", func() ([]byte, int64) { return header(1<<63, 0).b, 8 }, false, "", "tensor count"},
	{"n_tensors 2^64-1", func() ([]byte, int64) { return header(math.MaxUint64, 0).b, 8 }, false, "", "tensor count"},
	{"n_kv 2^63", func() ([]byte, int64) { return header(0, 1<<63).b, 16 }, false, "", "metadata count"},
	{"n_kv just too many", func() ([]byte, int64) {
		h := header(0, 2).str("k").u32(0).raw(1)
		return h.raw(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0).b, 16 // 14+12 bytes left: room for one
	}, false, "", "metadata count"},
	{"key length 2^63", func() ([]byte, int64) { return header(0, 1).u64(1 << 63).raw(make([]byte, 20)...).b, 24 }, false, "", "exceeds the limit"},
	{"key length past end", func() ([]byte, int64) { return header(0, 1).u64(100).raw([]byte("abcdef0123456")...).b, 24 }, false, "", "exceeds the 13 bytes left"},
	{"empty key", func() ([]byte, int64) { return header(0, 1).str("").u32(0).raw(1, 0).b, 24 }, false, "", "key 0 is empty"},
	{"duplicate key", func() ([]byte, int64) {
		h := header(0, 2).str("a.b").u32(0).raw(1)
		off := h.off()
		return h.str("a.b").u32(0).raw(2).b, off
	}, false, `key "a.b"`, "duplicate key"},
	{"value type 13", func() ([]byte, int64) { return kvFile("k", func(h *builder) { h.u32(13).raw(0, 0, 0, 0) }) }, false, `key "k"`, "invalid value type 13"},
	{"value type -1", func() ([]byte, int64) {
		return kvFile("k", func(h *builder) { h.u32(math.MaxUint32).raw(0, 0, 0, 0) })
	}, false, `key "k"`, "invalid value type -1"},
	{"bool 2", func() ([]byte, int64) {
		b, off := kvFile("k", func(h *builder) { h.u32(7).raw(2) })
		return b, off + 4
	}, false, `key "k"`, "bool value 2"},
	{"string value past end", func() ([]byte, int64) {
		b, off := kvFile("k", func(h *builder) { h.u32(8).u64(5).raw('a', 'b') })
		return b, off + 4
	}, false, `key "k"`, "exceeds the 2 bytes left"},
	{"truncated u64", func() ([]byte, int64) {
		b, off := kvFile("k", func(h *builder) { h.u32(10).raw(1, 2, 3) })
		return b, off + 4
	}, false, `key "k"`, "end of file reading uint64 value"},
	{"array count 2^63", func() ([]byte, int64) {
		b, off := kvFile("k", func(h *builder) { h.u32(9).u32(0).u64(1<<63).raw(1, 2, 3) })
		return b, off + 8
	}, false, `key "k"`, "exceeds the limit"},
	{"array of u32 longer than file", func() ([]byte, int64) {
		b, off := kvFile("k", func(h *builder) { h.u32(9).u32(4).u64(3).u32(1).u32(2) })
		return b, off + 8
	}, false, `key "k"`, "3 uint32 elements needs at least 4 bytes per element, 8 bytes left"},
	{"array of strings: count vs 8-byte lengths", func() ([]byte, int64) {
		// 16 bytes left hold the lengths of at most 2 strings.
		b, off := kvFile("k", func(h *builder) { h.u32(9).u32(8).u64(3).str("ab").raw(0, 0, 0, 0, 0, 0) })
		return b, off + 8
	}, false, `key "k"`, "3 string elements needs at least 8 bytes per element, 16 bytes left"},
	{"array: second string past end", func() ([]byte, int64) {
		h := header(0, 1).str("k").u32(9).u32(8).u64(2).str("ab")
		off := h.off()
		return h.u64(1<<40).raw(0, 0, 0, 0, 0, 0, 0, 0).b, off
	}, false, `key "k"`, "string element 1 length 1099511627776 exceeds"},
	{"array of bool 3", func() ([]byte, int64) {
		b, off := kvFile("k", func(h *builder) { h.u32(9).u32(7).u64(2).raw(1, 3) })
		return b, off + 4 + 12 + 1
	}, false, `key "k"`, "bool element 1 is 3"},
	{"arrays nested 5 deep", func() ([]byte, int64) {
		h := header(0, 1).str("k").u32(9)
		for i := 0; i < 4; i++ {
			h.u32(9).u64(1)
		}
		off := h.off() - 12
		return h.u32(0).u64(0).b, off
	}, false, `key "k"`, "nested deeper than 4"},
	{"alignment is u64", func() ([]byte, int64) {
		return kvFile(KeyAlignment, func(h *builder) { h.u32(10).u64(32) })
	}, false, `key "general.alignment"`, "must be a uint32, not uint64"},
	{"alignment 0", func() ([]byte, int64) {
		b, off := kvFile(KeyAlignment, func(h *builder) { h.u32(4).u32(0) })
		return b, off + 4
	}, false, `key "general.alignment"`, "alignment 0 is not a power of two"},
	{"alignment 48", func() ([]byte, int64) {
		b, off := kvFile(KeyAlignment, func(h *builder) { h.u32(4).u32(48) })
		return b, off + 4
	}, false, `key "general.alignment"`, "alignment 48 is not a power of two"},
	{"tensor name length 2^63", func() ([]byte, int64) {
		h := header(1, 0)
		return h.u64(1 << 63).raw(make([]byte, 40)...).b, 24
	}, false, "", "exceeds the limit"},
	{"empty tensor name", func() ([]byte, int64) { return header(1, 0).tinfo("", 0, 0, 1).pad(32).data(4).b, 24 }, false, `tensor ""`, "tensor name is empty"},
	{"tensor name 64 bytes", func() ([]byte, int64) {
		return header(1, 0).tinfo(strings.Repeat("x", 64), 0, 0, 1).pad(32).data(4).b, 24
	}, false, `tensor "` + strings.Repeat("x", 64) + `"`, "64 bytes long, the limit is 63"},
	{"tensor name with NUL", func() ([]byte, int64) { return header(1, 0).tinfo("a\x00b", 0, 0, 1).pad(32).data(4).b, 24 }, false, `tensor "a\x00b"`, "NUL"},
	{"duplicate tensor", func() ([]byte, int64) {
		h := header(2, 0).tinfo("t", 0, 0, 1)
		off := h.off()
		return h.tinfo("t", 0, 32, 1).pad(32).data(64).b, off
	}, false, `tensor "t"`, "duplicate tensor name"},
	{"n_dims 0", func() ([]byte, int64) {
		h := header(1, 0).str("t")
		off := h.off()
		return h.u32(0).u32(0).u64(0).pad(32).data(4).b, off
	}, false, `tensor "t"`, "has 0 dimensions, want 1 to 4"},
	{"n_dims 5", func() ([]byte, int64) {
		return header(1, 0).tinfo("t", 0, 0, 1, 1, 1, 1, 1).pad(32).data(4).b, 24 + 8 + 1
	}, false, `tensor "t"`, "has 5 dimensions"},
	{"negative ne", func() ([]byte, int64) {
		return header(1, 0).tinfo("t", 0, 0, 4, -2).pad(32).data(64).b, 24 + 9 + 4 + 8
	}, false, `tensor "t"`, "dimension 1 is negative (-2)"},
	{"ne product overflows", func() ([]byte, int64) {
		return header(1, 0).tinfo("t", 0, 0, 1<<32, 1<<32).pad(32).data(64).b, 24 + 9 + 4
	}, false, `tensor "t"`, "overflows int64"},
	{"byte size overflows", func() ([]byte, int64) {
		return header(1, 0).tinfo("t", 28, 0, 1<<31, 1<<31).pad(32).data(64).b, 24 + 9 + 4
	}, false, `tensor "t"`, "overflows"},
	{"ne[0] not a multiple of the block", func() ([]byte, int64) {
		return header(1, 0).tinfo("t", 8, 0, 33, 2).pad(32).data(100).b, 24 + 9 + 4
	}, false, `tensor "t"`, "ne[0]=33 is not a multiple of the Q8_0 block size 32"},
	{"unknown type 43", func() ([]byte, int64) {
		return header(1, 0).tinfo("t", 43, 0, 32).pad(32).data(64).b, 24 + 9 + 4 + 8
	}, true, `tensor "t"`, "unknown ggml type id 43"},
	{"data offset misaligned", func() ([]byte, int64) {
		h := header(1, 0).tinfo("t", 0, 16, 4).pad(32).data(64)
		return h.b, 24 + 9 + 4 + 8 + 4
	}, false, `tensor "t"`, "data offset 16 is not a multiple of the alignment 32"},
	{"data offset not running (gap)", func() ([]byte, int64) {
		h := header(2, 0).tinfo("a", 0, 0, 4)
		off := h.off() + 9 + 4 + 8 + 4
		return h.tinfo("b", 0, 64, 4).pad(32).data(128).b, off
	}, false, `tensor "b"`, "data offset 64, want 32"},
	{"overlapping tensors", func() ([]byte, int64) {
		h := header(2, 0).tinfo("a", 0, 0, 4)
		off := h.off() + 9 + 4 + 8 + 4
		return h.tinfo("b", 0, 0, 4).pad(32).data(64).b, off
	}, false, `tensor "b"`, "data offset 0, want 32"},
	{"first tensor not at 0", func() ([]byte, int64) {
		return header(1, 0).tinfo("a", 0, 32, 4).pad(32).data(64).b, 24 + 9 + 4 + 8 + 4
	}, false, `tensor "a"`, "data offset 32, want 0"},
	{"data past end", func() ([]byte, int64) {
		b := header(1, 0).tinfo("a", 0, 0, 16).pad(32).data(63).b
		return b, int64(len(b))
	}, false, `tensor "a"`, "truncated: expected 128 bytes, got 127"}, // a 64-byte header, 64 bytes of data
	{"data section past end", func() ([]byte, int64) {
		h := header(1, 0).tinfo("a", 0, 0, 0)
		return h.b, h.off()
	}, false, "", "past the end of the file"},
	{"offset 2^64-32", func() ([]byte, int64) {
		return header(1, 0).tinfo("a", 0, math.MaxUint64-31, 4).pad(32).data(64).b, 24 + 9 + 4 + 8 + 4
	}, false, `tensor "a"`, "want 0"},
}

func TestMalformed(t *testing.T) {
	for _, c := range badCases {
		b, off := c.build()
		_, err := open(b)
		wantErr(t, c.name, err, c.unsupported, off, c.item, c.msg)
	}
}

func TestRemovedTypes(t *testing.T) {
	names := map[uint32]string{4: "Q4_2", 5: "Q4_3", 31: "Q4_0_4_4", 32: "Q4_0_4_8", 33: "Q4_0_8_8", 36: "IQ4_NL_4_4", 37: "IQ4_NL_4_8", 38: "IQ4_NL_8_8"}
	for id, old := range names {
		b := header(1, 0).tinfo("t", id, 0, 256).pad(32).data(1024).b
		_, err := open(b)
		wantErr(t, old, err, true, 24+9+4+8, `tensor "t"`, "ggml type id "+strconv.Itoa(int(id))+" ("+old+") was removed")
	}
}

// TestAlignment64 reads a file whose general.alignment is 64.
func TestAlignment64(t *testing.T) {
	h := header(2, 1).str(KeyAlignment).u32(4).u32(64)
	h.tinfo("a", 0, 0, 4).tinfo("b", 0, 64, 4).pad(64).data(16).pad(64).data(16)
	f, err := open(h.b)
	if err != nil {
		t.Fatal(err)
	}
	if f.Alignment != 64 || f.DataOffset%64 != 0 || f.Tensors[1].Offset != f.DataOffset+64 {
		t.Errorf("alignment %d data %d b at %d", f.Alignment, f.DataOffset, f.Tensors[1].Offset)
	}
	// 32 would be the next offset at the default alignment, not at 64.
	h = header(2, 1).str(KeyAlignment).u32(4).u32(64)
	h.tinfo("a", 0, 0, 4).tinfo("b", 0, 32, 4).pad(64).data(16).pad(64).data(16)
	_, err = open(h.b)
	wantErr(t, "offset 32 at alignment 64", err, false, -1, `tensor "b"`, "not a multiple of the alignment 64")
}

// TestAllValueKinds reads one key of each of the 13 kinds, plus arrays of
// each and an array of arrays, from hand-encoded bytes.
func TestAllValueKinds(t *testing.T) {
	h := header(0, 15)
	h.str("u8").u32(0).raw(200)
	h.str("i8").u32(1).raw(0xFE)
	h.str("u16").u32(2).raw(0x34, 0x12)
	h.str("i16").u32(3).raw(0xFF, 0xFF)
	h.str("u32").u32(4).u32(0xDEADBEEF)
	h.str("i32").u32(5).u32(0xFFFFFFF9)
	h.str("f32").u32(6).u32(0x3FC00000)
	h.str("bool").u32(7).raw(1)
	h.str("str").u32(8).str("héllo")
	h.str("u64").u32(10).u64(1 << 40)
	h.str("i64").u32(11).u64(math.MaxUint64)
	h.str("f64").u32(12).u64(math.Float64bits(-2.5))
	h.str("arr.f32").u32(9).u32(6).u64(2).u32(math.Float32bits(1)).u32(0x7FC00001)
	h.str("arr.str").u32(9).u32(8).u64(3).str("a").str("").str("ccc")
	h.str("arr.arr").u32(9).u32(9).u64(2).u32(4).u64(1).u32(7).u32(7).u64(2).raw(0, 1)
	f, err := open(h.b)
	if err != nil {
		t.Fatal(err)
	}
	want := tensor.Metadata{
		{Key: "u8", Value: tensor.Uint8(200)},
		{Key: "i8", Value: tensor.Int8(-2)},
		{Key: "u16", Value: tensor.Uint16(0x1234)},
		{Key: "i16", Value: tensor.Int16(-1)},
		{Key: "u32", Value: tensor.Uint32(0xDEADBEEF)},
		{Key: "i32", Value: tensor.Int32(-7)},
		{Key: "f32", Value: tensor.Float32(1.5)},
		{Key: "bool", Value: tensor.Bool(true)},
		{Key: "str", Value: tensor.String("héllo")},
		{Key: "u64", Value: tensor.Uint64(1 << 40)},
		{Key: "i64", Value: tensor.Int64(-1)},
		{Key: "f64", Value: tensor.Float64(-2.5)},
		{Key: "arr.f32", Value: tensor.ArrayOf([]float32{1, math.Float32frombits(0x7FC00001)})},
		{Key: "arr.str", Value: tensor.ArrayOf([]string{"a", "", "ccc"})},
		{Key: "arr.arr", Value: tensor.ArrayOf([]tensor.Array{
			{Elem: tensor.KindUint32, Data: []uint32{7}},
			{Elem: tensor.KindBool, Data: []bool{false, true}},
		})},
	}
	if !f.Metadata.Equal(want) {
		for i := range want {
			if i < len(f.Metadata) && !f.Metadata[i].Value.Equal(want[i].Value) {
				t.Errorf("%s: %v, want %v", want[i].Key, f.Metadata[i].Value, want[i].Value)
			}
		}
		t.Fatalf("metadata differs")
	}
	// The writer encodes them back to the same bytes.
	var buf bytes.Buffer
	w, err := NewWriter(&buf, f.Metadata, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), h.b) {
		t.Errorf("re-encoded differs at byte %d", firstDiff(buf.Bytes(), h.b))
	}
}

// TestAllocationBounded: hostile counts and lengths must not make the reader
// allocate more than a small multiple of the file size.
func TestAllocationBounded(t *testing.T) {
	const slack = 1 << 20 // bufio's buffer and bookkeeping
	for _, c := range badCases {
		b, _ := c.build()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		open(b)
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got > slack+64*uint64(len(b)) {
			t.Errorf("%s: allocated %d bytes for a %d-byte file", c.name, got, len(b))
		}
	}
}
