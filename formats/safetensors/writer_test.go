package safetensors

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// rewrite reads a file and writes it back with NewWriter in the same order
// with the same metadata, copying each body through Tensor.Open.
func rewrite(t *testing.T, src []byte) []byte {
	t.Helper()
	f, err := NewFile(bytes.NewReader(src), int64(len(src)))
	if err != nil {
		t.Fatal(err)
	}
	infos := make([]tensor.Info, len(f.Tensors))
	for i, tt := range f.Tensors {
		infos[i] = tt.Info
	}
	var out bytes.Buffer
	w, err := NewWriter(&out, infos, f.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	for i := range f.Tensors {
		tt := &f.Tensors[i]
		bw, err := w.Next(tt.Name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(bw, tt.Open()); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w.Written() != int64(out.Len()) {
		t.Errorf("Written %d, buffer has %d", w.Written(), out.Len())
	}
	return out.Bytes()
}

// TestRoundTripByteIdentical is the proof that the writer follows the
// reference: files written by transformers' save_pretrained (through the
// safetensors Rust serializer) come out byte for byte the same.
func TestRoundTripByteIdentical(t *testing.T) {
	for _, d := range fixtureDirs {
		t.Run(d, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join(testdata, d, "model.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			if got := rewrite(t, src); !bytes.Equal(got, src) {
				t.Errorf("rewritten file differs from the original (%d vs %d bytes); first difference at %d", len(got), len(src), firstDiff(got, src))
			}
		})
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

// TestReferenceOrderMatchesFixtures: the reference wrote these files, so its
// order must be theirs.
func TestReferenceOrderMatchesFixtures(t *testing.T) {
	for _, d := range fixtureDirs {
		f, err := Open(filepath.Join(testdata, d, "model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		var infos []tensor.Info
		for _, tt := range f.Tensors {
			infos = append(infos, tt.Info)
		}
		shuffled := slices.Clone(infos)
		slices.Reverse(shuffled)
		got := ReferenceOrder(shuffled)
		for i := range infos {
			if got[i].Name != infos[i].Name {
				t.Errorf("%s: ReferenceOrder[%d] = %s, file has %s", d, i, got[i].Name, infos[i].Name)
				break
			}
		}
		f.Close()
	}
}

// TestReferenceOrderDTypes checks the dtype order, which the fixtures (one
// dtype each) cannot: the reference sorts by its Dtype enum, descending
// (U64 I64 F64 C64 F32 U32 I32 BF16 F16 U16 I16 F8_E5M2FNUZ F8_E4M3FNUZ
// F8_E8M0 F8_E4M3 F8_E5M2 I8 U8 F6_E3M2 F6_E2M3 F4 BOOL), then by name.
func TestReferenceOrderDTypes(t *testing.T) {
	in := []tensor.Info{
		{Name: "b", DType: tensor.F16}, {Name: "mask", DType: tensor.BOOL}, {Name: "a", DType: tensor.F16},
		{Name: "scale", DType: tensor.F8_E8M0}, {Name: "w", DType: tensor.F32}, {Name: "ids", DType: tensor.I64},
		{Name: "z", DType: tensor.BF16}, {Name: "fp4", DType: tensor.F4}, {Name: "q", DType: tensor.I8},
		{Name: "c", DType: tensor.C64}, {Name: "d", DType: tensor.F64}, {Name: "u", DType: tensor.U8},
		{Name: "e4", DType: tensor.F8_E4M3}, {Name: "e5", DType: tensor.F8_E5M2}, {Name: "u16", DType: tensor.U16},
		{Name: "i16", DType: tensor.I16}, {Name: "B", DType: tensor.F16},
	}
	want := []string{"ids", "d", "c", "w", "z", "B", "a", "b", "u16", "i16", "scale", "e4", "e5", "q", "u", "fp4", "mask"}
	var got []string
	for _, ti := range ReferenceOrder(in) {
		got = append(got, ti.Name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("ReferenceOrder = %q\nwant             %q", got, want)
	}
	if in[0].Name != "b" {
		t.Error("ReferenceOrder modified its input")
	}
}

// TestReferenceSerializerBytes checks the writer against the byte arrays
// that the reference's own tests (safetensors/src/tensor.rs:
// test_serialization, test_empty, test_serialization_forced_alignement)
// assert.
func TestReferenceSerializerBytes(t *testing.T) {
	f32s := func(vs ...float32) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
		return b
	}
	data := f32s(0, 1, 2, 3, 4, 5)
	tests := []struct {
		name    string
		tensors []tensor.Info
		meta    tensor.Metadata
		want    []byte
	}{
		{"test_serialization", []tensor.Info{{Name: "attn.0", DType: tensor.F32, Shape: tensor.Shape{1, 2, 3}}}, nil, []byte{
			64, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 46, 48, 34, 58, 123, 34, 100,
			116, 121, 112, 101, 34, 58, 34, 70, 51, 50, 34, 44, 34, 115, 104, 97, 112, 101, 34,
			58, 91, 49, 44, 50, 44, 51, 93, 44, 34, 100, 97, 116, 97, 95, 111, 102, 102, 115,
			101, 116, 115, 34, 58, 91, 48, 44, 50, 52, 93, 125, 125, 0, 0, 0, 0, 0, 0, 128, 63,
			0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64, 0, 0, 160, 64}},
		{"test_serialization_forced_alignement", []tensor.Info{{Name: "attn0", DType: tensor.F32, Shape: tensor.Shape{1, 1, 2, 3}}}, nil, []byte{
			72, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 48, 34, 58, 123, 34, 100, 116,
			121, 112, 101, 34, 58, 34, 70, 51, 50, 34, 44, 34, 115, 104, 97, 112, 101, 34, 58,
			91, 49, 44, 49, 44, 50, 44, 51, 93, 44, 34, 100, 97, 116, 97, 95, 111, 102, 102,
			115, 101, 116, 115, 34, 58, 91, 48, 44, 50, 52, 93, 125, 125, 32, 32, 32, 32, 32,
			32, 32, 0, 0, 0, 0, 0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64, 0, 0,
			160, 64}},
		{"test_empty", nil, nil, []byte{8, 0, 0, 0, 0, 0, 0, 0, 123, 125, 32, 32, 32, 32, 32, 32}},
		{"test_empty with metadata", nil, tensor.Metadata{{Key: "framework", Value: tensor.String("pt")}}, []byte{
			40, 0, 0, 0, 0, 0, 0, 0, 123, 34, 95, 95, 109, 101, 116, 97, 100, 97, 116, 97, 95,
			95, 34, 58, 123, 34, 102, 114, 97, 109, 101, 119, 111, 114, 107, 34, 58, 34, 112,
			116, 34, 125, 125, 32, 32, 32, 32, 32}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			w, err := NewWriter(&out, tc.tensors, tc.meta)
			if err != nil {
				t.Fatal(err)
			}
			for _, ti := range tc.tensors {
				bw, err := w.Next(ti.Name)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := bw.Write(data); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), tc.want) {
				t.Errorf("got  %q\nwant %q", out.Bytes(), tc.want)
			}
			if _, err := NewFile(bytes.NewReader(out.Bytes()), int64(out.Len())); err != nil {
				t.Errorf("reading it back: %v", err)
			}
		})
	}
}

// TestHeaderEscaping checks names that need escaping: serde_json escapes
// only '"', '\\' and control characters (\u001f in lower-case hex), and
// leaves '/', '<', DEL and non-ASCII alone; the reader must decode the same
// names back.
func TestHeaderEscaping(t *testing.T) {
	names := []string{"a\"b", `back\slash`, "tab\tnl\ncr\rbs\bff\f", "\x01\x1f", "slash/<&>\x7f", "é😀", ""}
	var infos []tensor.Info
	for _, n := range names {
		infos = append(infos, tensor.Info{Name: n, DType: tensor.U8, Shape: tensor.Shape{1}})
	}
	var out bytes.Buffer
	w, err := NewWriter(&out, infos, tensor.Metadata{{Key: "k\"", Value: tensor.String("v\x00")}})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		bw, err := w.Next(n)
		if err != nil {
			t.Fatal(err)
		}
		bw.Write([]byte{7})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	hdr := out.String()
	for _, frag := range []string{`"k\"":"v\u0000"`, `"a\"b"`, `"back\\slash"`, `"tab\tnl\ncr\rbs\bff\f"`, `"\u0001\u001f"`, "\"slash/<&>\x7f\"", `"é😀"`, `"":{`} {
		if !strings.Contains(hdr, frag) {
			t.Errorf("header lacks %s", frag)
		}
	}
	f, err := NewFile(bytes.NewReader(out.Bytes()), int64(out.Len()))
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range names {
		if f.Tensors[i].Name != n {
			t.Errorf("tensor %d read back as %q, want %q", i, f.Tensors[i].Name, n)
		}
	}
	if v, _ := f.Metadata.Str("k\""); v != "v\x00" {
		t.Errorf("metadata read back as %v", f.Metadata)
	}
}

func TestWriterErrors(t *testing.T) {
	two := []tensor.Info{{Name: "a", DType: tensor.F32, Shape: tensor.Shape{2}}, {Name: "b", DType: tensor.F16, Shape: tensor.Shape{3}}}
	newW := func(t *testing.T) *Writer {
		w, err := NewWriter(io.Discard, two, nil)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	t.Run("short body", func(t *testing.T) {
		w := newW(t)
		bw, _ := w.Next("a")
		bw.Write(make([]byte, 7))
		if _, err := w.Next("b"); err == nil || !strings.Contains(err.Error(), "short: 7 of 8") {
			t.Errorf("Next after a short body: %v", err)
		}
		if err := w.Close(); err == nil {
			t.Error("Close after a failure succeeded")
		}
	})
	t.Run("long body", func(t *testing.T) {
		w := newW(t)
		bw, _ := w.Next("a")
		if n, err := bw.Write(make([]byte, 9)); err == nil || n != 0 || !strings.Contains(err.Error(), "longer than its 8 bytes") {
			t.Errorf("Write of 9 bytes into 8: %d, %v", n, err)
		}
		if err := w.Close(); err == nil {
			t.Error("Close after a long body succeeded")
		}
	})
	t.Run("long in pieces", func(t *testing.T) {
		w := newW(t)
		bw, _ := w.Next("a")
		if _, err := bw.Write(make([]byte, 5)); err != nil {
			t.Fatal(err)
		}
		if _, err := bw.Write(make([]byte, 4)); err == nil {
			t.Error("9th byte accepted")
		}
	})
	t.Run("wrong order", func(t *testing.T) {
		w := newW(t)
		if _, err := w.Next("b"); err == nil || !strings.Contains(err.Error(), `next declared tensor is "a"`) {
			t.Errorf("Next out of order: %v", err)
		}
	})
	t.Run("missing tensor", func(t *testing.T) {
		w := newW(t)
		bw, _ := w.Next("a")
		bw.Write(make([]byte, 8))
		if err := w.Close(); err == nil || !strings.Contains(err.Error(), `"b"`) {
			t.Errorf("Close with b unwritten: %v", err)
		}
	})
	t.Run("short last body", func(t *testing.T) {
		w := newW(t)
		bw, _ := w.Next("a")
		bw.Write(make([]byte, 8))
		bw, _ = w.Next("b")
		bw.Write(make([]byte, 5))
		if err := w.Close(); err == nil || !strings.Contains(err.Error(), "short: 5 of 6") {
			t.Errorf("Close with a short last body: %v", err)
		}
	})
	t.Run("write to finished body", func(t *testing.T) {
		w := newW(t)
		a, _ := w.Next("a")
		a.Write(make([]byte, 8))
		w.Next("b")
		if _, err := a.Write([]byte{1}); err == nil {
			t.Error("write to a finished body succeeded")
		}
	})
	t.Run("extra Next", func(t *testing.T) {
		w, _ := NewWriter(io.Discard, nil, nil)
		if _, err := w.Next("a"); err == nil {
			t.Error("Next beyond the declared tensors succeeded")
		}
	})
	t.Run("use after Close", func(t *testing.T) {
		w, _ := NewWriter(io.Discard, nil, nil)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Next("a"); err == nil {
			t.Error("Next after Close succeeded")
		}
	})
	bad := []struct {
		name    string
		tensors []tensor.Info
		meta    tensor.Metadata
		msg     string
	}{
		{"metadata not string", nil, tensor.Metadata{{Key: "n", Value: tensor.Uint32(1)}}, "are strings"},
		{"metadata duplicate", nil, tensor.Metadata{{Key: "n", Value: tensor.String("1")}, {Key: "n", Value: tensor.String("2")}}, "duplicate"},
		{"duplicate tensor", []tensor.Info{two[0], two[0]}, nil, "declared twice"},
		{"ggml dtype", []tensor.Info{{Name: "q", DType: tensor.Q8_0, Shape: tensor.Shape{32}}}, nil, "cannot be stored"},
		{"invalid dtype", []tensor.Info{{Name: "q", Shape: tensor.Shape{32}}}, nil, "cannot be stored"},
		{"negative dim", []tensor.Info{{Name: "n", DType: tensor.F32, Shape: tensor.Shape{-1}}}, nil, "negative"},
		{"F4 half byte", []tensor.Info{{Name: "n", DType: tensor.F4, Shape: tensor.Shape{3}}}, nil, "whole number"},
		{"reserved name", []tensor.Info{{Name: "__metadata__", DType: tensor.F32, Shape: tensor.Shape{1}}}, nil, "reserved"},
		{"bad UTF-8", []tensor.Info{{Name: "\xff", DType: tensor.F32, Shape: tensor.Shape{1}}}, nil, "UTF-8"},
		{"size overflow", []tensor.Info{{Name: "a", DType: tensor.U8, Shape: tensor.Shape{math.MaxInt64}}, {Name: "b", DType: tensor.U8, Shape: tensor.Shape{1}}}, nil, "overflows"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			_, err := NewWriter(&out, tc.tensors, tc.meta)
			if err == nil || !strings.Contains(err.Error(), tc.msg) || !strings.HasPrefix(err.Error(), "safetensors: ") {
				t.Errorf("NewWriter: %v, want an error saying %q", err, tc.msg)
			}
			if out.Len() != 0 {
				t.Errorf("wrote %d bytes despite the error", out.Len())
			}
		})
	}
}
