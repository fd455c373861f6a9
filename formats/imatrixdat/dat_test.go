package imatrixdat

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// mixtral.c392e509.dat was written by llama-imatrix at llama.cpp c392e509
// (testdata/imatrix/README.md).
const sample = "../../testdata/imatrix/mixtral.c392e509.dat"

func TestReadLlamaImatrixFile(t *testing.T) {
	f, err := Open(sample)
	if err != nil {
		t.Fatal(err)
	}
	// Facts of the file: 2 layers × (q, k, v, o, router, 3 expert
	// stacks), computed over 15 chunks of calib.txt, each entry called
	// once per chunk.
	if len(f.Entries) != 16 || !f.HasTrailer || f.Chunks != 15 || f.Dataset != "calib.txt" {
		t.Fatalf("%d entries, trailer %v, %d chunks, dataset %q", len(f.Entries), f.HasTrailer, f.Chunks, f.Dataset)
	}
	for _, e := range f.Entries {
		want := 64
		switch {
		case strings.Contains(e.Name, "ffn_down_exps"):
			want = 4 * 128
		case strings.Contains(e.Name, "_exps"):
			want = 4 * 64
		}
		if len(e.Values) != want || e.NCall != 15 {
			t.Errorf("%s: %d values, ncall %d; want %d, 15", e.Name, len(e.Values), e.NCall, want)
		}
	}
	// Writing it back gives the same bytes.
	raw, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Write(&b, f); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), raw) {
		t.Error("written file differs from the one read")
	}
	// A file without the trailer (before mid-2024) reads too.
	noTrailer := raw[:len(raw)-4-4-len("calib.txt")]
	g, err := NewFile(bytes.NewReader(noTrailer), int64(len(noTrailer)))
	if err != nil || g.HasTrailer || len(g.Entries) != 16 {
		t.Errorf("without trailer: %v", err)
	}
}

func le(v ...any) []byte {
	var b bytes.Buffer
	for _, x := range v {
		switch x := x.(type) {
		case string:
			b.WriteString(x)
		default:
			binary.Write(&b, binary.LittleEndian, x)
		}
	}
	return b.Bytes()
}

func TestMalformed(t *testing.T) {
	one := float32(1)
	cases := []struct {
		name   string
		data   []byte
		offset int64
		msg    string
	}{
		{"empty", nil, 0, "file ends"},
		{"no entries", le(int32(0)), 0, "entry count 0"},
		{"huge count", le(int32(math.MaxInt32), int32(1), "a", int32(1), int32(1), one), 0, "entry count"},
		{"negative name", le(int32(1), int32(-5), "a", int32(1), int32(1), one), 4, "name length -5"},
		{"long name", le(int32(1), int32(1000), "a", int32(1), int32(1), one), 4, "name length 1000"},
		{"no values", le(int32(1), int32(1), "a", int32(1), int32(0), one), 13, "value count 0"},
		{"values past end", le(int32(1), int32(1), "a", int32(1), int32(9), one), 13, "value count 9"},
		{"duplicate", le(int32(2), int32(1), "a", int32(1), int32(1), one, int32(1), "a", int32(1), int32(1), one), 21, "appears twice"},
		{"cut trailer", le(int32(1), int32(1), "a", int32(1), int32(1), one, int16(3)), 21, "file ends"},
		{"junk after", le(int32(1), int32(1), "a", int32(1), int32(1), one, int32(1), int32(1), "xy"), 30, "bytes after"},
	}
	for _, c := range cases {
		_, err := NewFile(bytes.NewReader(c.data), int64(len(c.data)))
		var fe *tensor.FormatError
		if !errors.As(err, &fe) || !errors.Is(err, tensor.ErrFormat) {
			t.Errorf("%s: error %v, want a FormatError", c.name, err)
			continue
		}
		if fe.Offset != c.offset || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v (offset %d), want offset %d and %q", c.name, err, fe.Offset, c.offset, c.msg)
		}
	}
	// Open names the file.
	p := t.TempDir() + "/bad.dat"
	os.WriteFile(p, le(int32(0)), 0o644)
	if _, err := Open(p); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("Open: %v", err)
	}
}

// FuzzOpen: any bytes either fail with a FormatError or parse into a file
// that writes back to bytes that read back the same.
func FuzzOpen(f *testing.F) {
	raw, err := os.ReadFile(sample)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Add(raw[:len(raw)/3])
	f.Add(le(int32(1), int32(1), "a", int32(1), int32(1), float32(2)))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := NewFile(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			var fe *tensor.FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error is not a FormatError: %v", err)
			}
			return
		}
		var b bytes.Buffer
		if err := Write(&b, g); err != nil {
			t.Fatal(err)
		}
		h, err := NewFile(bytes.NewReader(b.Bytes()), int64(b.Len()))
		if err != nil {
			t.Fatal(err)
		}
		if len(h.Entries) != len(g.Entries) || h.Dataset != g.Dataset || h.Chunks != g.Chunks {
			t.Fatal("round trip changed the file")
		}
	})
}
