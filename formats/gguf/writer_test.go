package gguf

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

func TestWriterErrors(t *testing.T) {
	f32 := func(name string, shape ...int64) tensor.Info {
		return tensor.Info{Name: name, DType: tensor.F32, Shape: shape}
	}
	bad := []struct {
		name    string
		meta    tensor.Metadata
		tensors []tensor.Info
		msg     string
	}{
		{"empty key", tensor.Metadata{{Key: "", Value: tensor.Uint8(1)}}, nil, "empty metadata key"},
		{"dup key", tensor.Metadata{{Key: "a", Value: tensor.Uint8(1)}, {Key: "a", Value: tensor.Uint8(2)}}, nil, `duplicate metadata key "a"`},
		{"zero value", tensor.Metadata{{Key: "a"}}, nil, "invalid (zero) value"},
		{"alignment u64", tensor.Metadata{{Key: KeyAlignment, Value: tensor.Uint64(32)}}, nil, "must be a uint32"},
		{"alignment 24", tensor.Metadata{{Key: KeyAlignment, Value: tensor.Uint32(24)}}, nil, "not a power of two"},
		{"array mismatch", tensor.Metadata{{Key: "a", Value: tensor.ArrayOf([]tensor.Array{{Elem: tensor.KindInt8, Data: []uint8{1}}})}}, nil, "array of int8 holds []uint8"},
		{"dup tensor", nil, []tensor.Info{f32("a", 2), f32("a", 2)}, `duplicate tensor "a"`},
		{"empty name", nil, []tensor.Info{f32("", 2)}, "tensor name is empty"},
		{"long name", nil, []tensor.Info{f32(strings.Repeat("n", 64), 2)}, "the limit is 63"},
		{"5 dims", nil, []tensor.Info{f32("a", 1, 1, 1, 1, 1)}, "5 dimensions"},
		{"no ggml type", nil, []tensor.Info{{Name: "a", DType: tensor.U8, Shape: tensor.Shape{2}}}, "dtype U8 has no ggml type"},
		{"block", nil, []tensor.Info{{Name: "a", DType: tensor.Q4_0, Shape: tensor.Shape{2, 48}}}, "not a multiple"},
		{"size", nil, []tensor.Info{{Name: "a", DType: tensor.F32, Shape: tensor.Shape{2}, Size: 7}}, "Size 7"},
		// ggml's loader divides by ne[1..3]; an empty row is refused too.
		{"zero dim", nil, []tensor.Info{f32("blk.0.ffn_up.weight", 2, 0, 8)}, `tensor "blk.0.ffn_up.weight": dimension 1 of [2 0 8] is 0`},
		{"zero row", nil, []tensor.Info{f32("a", 4, 0)}, `tensor "a": dimension 1 of [4 0] is 0`},
		{"zero 1-D", nil, []tensor.Info{f32("a", 2), f32("b", 0)}, `tensor "b": dimension 0 of [0] is 0`},
	}
	for _, c := range bad {
		var buf bytes.Buffer
		_, err := NewWriter(&buf, c.meta, c.tensors)
		if err == nil || !strings.HasPrefix(err.Error(), "gguf: ") || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v", c.name, err)
		}
		if buf.Len() != 0 {
			t.Errorf("%s: wrote %d bytes before failing", c.name, buf.Len())
		}
	}
}

func TestWriterBodies(t *testing.T) {
	infos := []tensor.Info{
		{Name: "a", DType: tensor.F32, Shape: tensor.Shape{3}},
		{Name: "b", DType: tensor.Q8_0, Shape: tensor.Shape{32}},
	}
	newW := func() *Writer {
		w, err := NewWriter(&bytes.Buffer{}, nil, infos)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	w := newW()
	if _, err := w.Next("b"); err == nil || !strings.Contains(err.Error(), `declared order is "a"`) {
		t.Errorf("out of order: %v", err)
	}
	w = newW()
	a, _ := w.Next("a")
	a.Write(make([]byte, 11))
	if _, err := w.Next("b"); err == nil || !strings.Contains(err.Error(), "body is 11 bytes, want 12") {
		t.Errorf("short body: %v", err)
	}
	w = newW()
	a, _ = w.Next("a")
	if _, err := a.Write(make([]byte, 13)); err == nil || !strings.Contains(err.Error(), "longer than its 12 bytes") {
		t.Errorf("long body: %v", err)
	}
	if err := w.Close(); err == nil {
		t.Error("Close after a failed write succeeded")
	}
	w = newW()
	a, _ = w.Next("a")
	a.Write(make([]byte, 12))
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), `not written: ["b"]`) {
		t.Errorf("missing body: %v", err)
	}
}

// TestWriterLayout writes with alignment 64 and a scalar, then reads back.
func TestWriterLayout(t *testing.T) {
	meta := tensor.Metadata{
		{Key: "general.architecture", Value: tensor.String("test")},
		{Key: KeyAlignment, Value: tensor.Uint32(64)},
		{Key: "nested", Value: tensor.ArrayOf([]tensor.Array{{Elem: tensor.KindString, Data: []string{"x", "yz"}}})},
	}
	infos := []tensor.Info{
		{Name: "scalar", DType: tensor.F32, Shape: tensor.Shape{}},
		{Name: "m", DType: tensor.Q4_K, Shape: tensor.Shape{3, 256}},
		{Name: "h", DType: tensor.BF16, Shape: tensor.Shape{2, 3, 5}},
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, meta, infos)
	if err != nil {
		t.Fatal(err)
	}
	bodies := map[string][]byte{}
	for i, in := range w.Tensors() {
		body := bytes.Repeat([]byte{byte(i + 1)}, int(in.Size))
		bodies[in.Name] = body
		bw, err := w.Next(in.Name)
		if err != nil {
			t.Fatal(err)
		}
		// In two pieces, to exercise the running count.
		bw.Write(body[:len(body)/2])
		bw.Write(body[len(body)/2:])
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := open(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if f.Alignment != 64 || f.DataOffset%64 != 0 || !f.Metadata.Equal(meta) {
		t.Errorf("alignment %d data offset %d", f.Alignment, f.DataOffset)
	}
	want := []tensor.Shape{{1}, {3, 256}, {2, 3, 5}}
	sizes := []int64{4, 3 * 144, 60}
	for i, ts := range f.Tensors {
		if !ts.Shape.Equal(want[i]) || ts.Size != sizes[i] || (ts.Offset-f.DataOffset)%64 != 0 {
			t.Errorf("%s: %v size %d at %d", ts.Name, ts.Shape, ts.Size, ts.Offset)
		}
		got := make([]byte, ts.Size)
		ts.Open().ReadAt(got, 0)
		if !bytes.Equal(got, bodies[ts.Name]) {
			t.Errorf("%s: data differs", ts.Name)
		}
	}
	if last := f.Tensors[2]; f.Size != last.Offset+64 {
		t.Errorf("file is %d bytes, want the last tensor padded to %d", f.Size, last.Offset+64)
	}
}

// errWriter fails after n bytes.
type errWriter struct{ n int }

func (e *errWriter) Write(p []byte) (int, error) {
	if len(p) > e.n {
		return 0, errors.New("disk full")
	}
	e.n -= len(p)
	return len(p), nil
}

func TestWriterPropagatesErrors(t *testing.T) {
	infos := []tensor.Info{{Name: "a", DType: tensor.F32, Shape: tensor.Shape{4}}}
	if _, err := NewWriter(&errWriter{n: 10}, nil, infos); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("header: %v", err)
	}
	w, err := NewWriter(&errWriter{n: 70}, nil, infos)
	if err != nil {
		t.Fatal(err)
	}
	bw, _ := w.Next("a")
	if _, err := bw.Write(make([]byte, 16)); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("body: %v", err)
	}
	if err := w.Close(); err == nil {
		t.Error("Close succeeded after a failed write")
	}
}
