package native

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

var le64 = binary.LittleEndian

// anyOffset tells wantFormatError not to check the offset.
const anyOffset = math.MinInt64

// reseal recomputes the header checksum (and its copy in the footer) and the
// trailer checksum after a test has edited a file, following the layout in
// docs/native-format.md, so the edit reaches the parser instead of being
// caught as damage. It leaves inputs too short or inconsistent to locate the
// fields untouched.
func reseal(b []byte) {
	if len(b) < 64 {
		return
	}
	hlen := le64.Uint64(b[16:])
	if hlen > uint64(len(b)-32) {
		return
	}
	c := crc32.Update(0, crcC, b[:24])
	c = crc32.Update(c, crcC, b[28:32+hlen])
	le64.PutUint32(b[24:], c)
	fo := len(b) - 32
	le64.PutUint32(b[fo+16:], c)
	table := le64.Uint64(b[fo:])
	if table > uint64(fo) {
		return
	}
	le64.PutUint32(b[fo+20:], crc32.Checksum(b[table:fo+20], crcC))
}

func wantFormatError(t *testing.T, b []byte, sentinel error, offset int64, item, msg string) {
	t.Helper()
	_, err := NewFile(bytes.NewReader(b), int64(len(b)))
	var fe *tensor.FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v, want a *tensor.FormatError", err)
	}
	if !errors.Is(err, sentinel) {
		t.Errorf("error %v is not %v", err, sentinel)
	}
	if fe.Format != "native" || !strings.HasPrefix(err.Error(), "native: ") {
		t.Errorf("error %q does not name the package", err)
	}
	if offset != anyOffset && fe.Offset != offset {
		t.Errorf("error %v at offset %d, want %d", err, fe.Offset, offset)
	}
	if fe.Item != item {
		t.Errorf("error %v names %q, want %q", err, fe.Item, item)
	}
	if !strings.Contains(err.Error(), msg) {
		t.Errorf("error %q does not say %q", err, msg)
	}
}

// fieldAfterKey returns the position of the value of metadata key in b.
func fieldAfterKey(t *testing.T, b []byte, key string) int {
	t.Helper()
	pat := append(le64.AppendUint64(nil, uint64(len(key))), key...)
	i := bytes.Index(b, pat)
	if i < 0 {
		t.Fatalf("key %q not found", key)
	}
	return i + len(pat) + 4 // skip the kind
}

// entry gives the positions of the fields of tensor name's header entry.
type entry struct{ name, dtype, rank, dims, offset, size, attrs int }

func findEntry(t *testing.T, b []byte, name string) entry {
	t.Helper()
	hdr := b[:32+le64.Uint64(b[16:])]
	pat := append(le64.AppendUint64(nil, uint64(len(name))), name...)
	i := bytes.LastIndex(hdr, pat)
	if i < 0 {
		t.Fatalf("tensor %q not found", name)
	}
	var e entry
	e.name = i
	e.dtype = i + len(pat)
	e.rank = e.dtype + 8 + int(le64.Uint64(b[e.dtype:]))
	e.dims = e.rank + 4
	e.offset = e.dims + 8*int(le64.Uint32(b[e.rank:]))
	e.size = e.offset + 8
	e.attrs = e.size + 8
	return e
}

// emptyFile is the smallest valid file: no source, metadata, aux or tensors.
// Its header fields sit at fixed offsets: source length 32, source info
// count 40, metadata count 48, aux count 56, tensor count 64; data and the
// empty checksum table start at 72, the footer at 72.
func emptyFile(t testing.TB) []byte {
	b := write(t, Header{}, nil, nil)
	if len(b) != 104 {
		t.Fatalf("empty file is %d bytes, want 104", len(b))
	}
	return b
}

// twoTensors has tensors "a" and "b" (F32 [4], 16 bytes each) and one aux file.
func twoTensors(t testing.TB) []byte {
	a, b := spec("a", tensor.F32, 4), spec("b", tensor.F32, 4)
	return write(t, Header{Metadata: tensor.Metadata{{Key: "k", Value: tensor.Uint32(7)}}},
		[]auxBody{{"config.json", []byte(`{"a":1}`)}},
		[]tensorBody{{a, randomBody(t, a, 1)}, {b, randomBody(t, b, 2)}})
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

func TestTruncatedEverywhere(t *testing.T) {
	for _, full := range [][]byte{emptyFile(t), twoTensors(t)} {
		for n := range len(full) {
			_, err := NewFile(bytes.NewReader(full[:n]), int64(n))
			if !errors.Is(err, tensor.ErrFormat) {
				t.Fatalf("file cut to %d of %d bytes: error %v, want ErrFormat", n, len(full), err)
			}
		}
		// A reader that claims more bytes than it has fails cleanly too.
		_, err := NewFile(bytes.NewReader(full[:len(full)-1]), int64(len(full)))
		if !errors.Is(err, tensor.ErrFormat) || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("short reader: %v", err)
		}
	}
}

// TestShortHeaderEverywhere declares every shorter header length (resealed,
// so the checksum passes): the parser must stop inside some field each time.
func TestShortHeaderEverywhere(t *testing.T) {
	base := twoTensors(t)
	hlen := le64.Uint64(base[16:])
	ends := 0
	for hl := range hlen {
		b := clone(base)
		le64.PutUint64(b[16:], hl)
		reseal(b)
		_, err := NewFile(bytes.NewReader(b), int64(len(b)))
		if !errors.Is(err, tensor.ErrFormat) {
			t.Fatalf("header length %d of %d: %v", hl, hlen, err)
		}
		if strings.Contains(err.Error(), "header ends inside") {
			ends++
		}
	}
	if ends == 0 {
		t.Error("no short header was reported as ending inside a field")
	}
}

func TestPreambleErrors(t *testing.T) {
	b := clone(emptyFile(t))
	b[0] = 'X'
	wantFormatError(t, b, tensor.ErrFormat, 0, "", "bad magic")

	b = clone(emptyFile(t))
	le64.PutUint16(b[8:], 2)
	reseal(b)
	wantFormatError(t, b, tensor.ErrUnsupported, 8, "", "format version 2.0")

	b = clone(emptyFile(t))
	le64.PutUint32(b[12:], 48)
	reseal(b)
	wantFormatError(t, b, tensor.ErrFormat, 12, "", "alignment 48")

	for _, hlen := range []uint64{1 << 63, math.MaxUint64, MaxHeaderSize + 1, 41} {
		b = clone(emptyFile(t))
		le64.PutUint64(b[16:], hlen)
		wantFormatError(t, b, tensor.ErrFormat, 16, "", "header length")
	}

	// A newer minor version is read; the unknown flags word is ignored.
	b = clone(emptyFile(t))
	le64.PutUint16(b[10:], 9)
	le64.PutUint32(b[28:], 0xffffffff)
	reseal(b)
	if f := parse(t, b); f.Version != [2]uint16{1, 9} {
		t.Errorf("version %v", f.Version)
	}
}

func TestNewerMinorMayExtendHeader(t *testing.T) {
	// Insert 8 bytes at the end of the empty file's header (offset 72).
	e := emptyFile(t)
	b := append(clone(e[:72]), 1, 2, 3, 4, 5, 6, 7, 8)
	b = append(b, e[72:]...)
	le64.PutUint64(b[16:], 48)
	le64.PutUint64(b[len(b)-32:], 80)
	reseal(b)
	wantFormatError(t, b, tensor.ErrFormat, 72, "", "8 unexpected bytes at the end of a version 1.0 header")
	le64.PutUint16(b[10:], 1)
	reseal(b)
	if f := parse(t, b); f.Version != [2]uint16{1, 1} || len(f.Tensors) != 0 {
		t.Errorf("version 1.1 file: %v, %d tensors", f.Version, len(f.Tensors))
	}
}

func TestHugeCounts(t *testing.T) {
	fields := []struct {
		off  int
		item string
		msg  string
	}{
		{32, "", "source length"},
		{40, "source info", "metadata count"},
		{48, "", "metadata count"},
		{56, "", "aux file count"},
		{64, "", "tensor count"},
	}
	for _, f := range fields {
		for _, n := range []uint64{1 << 63, math.MaxUint64, 1 << 32, 1 << 20, 2} {
			if f.off == 32 && n == 2 {
				n = MaxSourceLen + 1 // a 2-byte source is valid
			}
			b := clone(emptyFile(t))
			le64.PutUint64(b[f.off:], n)
			reseal(b)
			wantFormatError(t, b, tensor.ErrFormat, int64(f.off), f.item, f.msg)
		}
	}
}

func TestHeaderFieldErrors(t *testing.T) {
	base := twoTensors(t)
	e := findEntry(t, base, "b")
	ea := findEntry(t, base, "a")
	aOff := int64(le64.Uint64(base[ea.offset:]))
	cases := []struct {
		name     string
		edit     func(b []byte)
		sentinel error
		offset   int
		msg      string
	}{
		{"overlap", func(b []byte) { le64.PutUint64(b[e.offset:], uint64(aOff)) }, tensor.ErrFormat, e.offset, "overlaps"},
		{"overlap header", func(b []byte) { le64.PutUint64(b[e.offset:], 0) }, tensor.ErrFormat, e.offset, "overlaps the header"},
		{"misaligned", func(b []byte) { le64.PutUint64(b[e.offset:], uint64(aOff+64+4)) }, tensor.ErrFormat, e.offset, "not a multiple of the alignment 64"},
		{"past end", func(b []byte) { le64.PutUint64(b[e.offset:], 1<<40) }, tensor.ErrFormat, e.offset, "runs past the data section"},
		{"offset 2^63", func(b []byte) { le64.PutUint64(b[e.offset:], 1<<63) }, tensor.ErrFormat, e.offset, "exceeds 2^63-1"},
		{"offset overflow", func(b []byte) { le64.PutUint64(b[e.offset:], math.MaxInt64-7) }, tensor.ErrFormat, e.offset, "overflows"},
		{"size", func(b []byte) { le64.PutUint64(b[e.size:], 17) }, tensor.ErrFormat, e.size, "size 17 does not match F32 [4]"},
		{"unknown dtype", func(b []byte) { copy(b[e.dtype+8:], "F33") }, tensor.ErrUnsupported, e.dtype, `unknown dtype "F33"`},
		{"lower-case dtype", func(b []byte) { copy(b[e.dtype+8:], "f32") }, tensor.ErrFormat, e.dtype, "not spelled canonically"},
		{"garbage dtype", func(b []byte) { le64.PutUint64(b[e.dtype:], 7) }, tensor.ErrUnsupported, e.dtype, `unknown dtype "F32\x01`},
		{"dtype too long", func(b []byte) { le64.PutUint64(b[e.dtype:], 1<<40) }, tensor.ErrFormat, e.dtype, "dtype name length"},
		{"rank", func(b []byte) { le64.PutUint32(b[e.rank:], tensor.MaxDims+1) }, tensor.ErrFormat, e.rank, "rank 17"},
		{"negative dim", func(b []byte) { le64.PutUint64(b[e.dims:], 1<<63) }, tensor.ErrFormat, e.dims, "dimension"},
		{"duplicate name", func(b []byte) { b[e.name+8] = 'a' }, tensor.ErrFormat, e.name, "duplicate tensor name"},
		{"empty name", func(b []byte) { le64.PutUint64(b[e.name:], 0) }, tensor.ErrFormat, anyOffsetInt, ""},
		{"name too long", func(b []byte) { le64.PutUint64(b[e.name:], MaxNameLen+1) }, tensor.ErrFormat, e.name, "tensor name length 1025 exceeds the cap"},
		{"attr count", func(b []byte) { le64.PutUint64(b[e.attrs:], 1<<63) }, tensor.ErrFormat, e.attrs, "metadata count"},
		{"bool", func(b []byte) {
			// Turn metadata "k" (uint32 7) into a bool whose byte is 7.
			le64.PutUint32(b[fieldAfterKey(t, b, "k")-4:], uint32(tensor.KindBool))
		}, tensor.ErrFormat, anyOffsetInt, ""},
		{"kind", func(b []byte) { le64.PutUint32(b[fieldAfterKey(t, b, "k")-4:], 13) }, tensor.ErrFormat, fieldAfterKey(t, base, "k") - 4, "unknown value kind 13"},
		{"aux path", func(b []byte) { copy(b[bytes.Index(b, []byte("config.json")):], "../fig.json") }, tensor.ErrFormat, anyOffsetInt, "clean relative"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := clone(base)
			c.edit(b)
			reseal(b)
			_, err := NewFile(bytes.NewReader(b), int64(len(b)))
			var fe *tensor.FormatError
			if !errors.As(err, &fe) || !errors.Is(err, c.sentinel) {
				t.Fatalf("error %v, want a FormatError matching %v", err, c.sentinel)
			}
			if c.offset != anyOffsetInt && fe.Offset != int64(c.offset) {
				t.Errorf("error %v at offset %d, want %d", err, fe.Offset, c.offset)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q does not say %q", err, c.msg)
			}
		})
	}
}

const anyOffsetInt = -1 << 40

func TestChecksums(t *testing.T) {
	base := twoTensors(t)
	f := parse(t, base)
	if err := f.Verify(); err != nil {
		t.Fatal(err)
	}
	tb, _ := f.Tensor("b")

	// A flipped data byte: Open's reader fails at the end, OpenRaw does
	// not check, Verify names the tensor.
	b := clone(base)
	b[tb.Offset+5] ^= 0x10
	f = parse(t, b)
	tb, _ = f.Tensor("b")
	data, err := io.ReadAll(tb.Open())
	var fe *tensor.FormatError
	if !errors.As(err, &fe) || !errors.Is(err, tensor.ErrFormat) || fe.Item != `tensor "b"` || fe.Offset != tb.Offset {
		t.Errorf("reading a damaged tensor: %v", err)
	}
	if len(data) >= 16 {
		t.Errorf("the damaged tensor was delivered whole (%d bytes)", len(data))
	}
	// A caller reading exactly Size bytes sees the error too.
	if _, err := io.ReadFull(tb.Open(), make([]byte, tb.Size)); !errors.Is(err, tensor.ErrFormat) {
		t.Errorf("io.ReadFull of a damaged tensor: %v", err)
	}
	// So does one reading byte by byte; the 15 intact-looking bytes come first.
	r := tb.Open()
	var one [1]byte
	got := 0
	for {
		n, err := r.Read(one[:])
		got += n
		if err != nil {
			if !errors.Is(err, tensor.ErrFormat) || got != 15 {
				t.Errorf("byte-wise read: %d bytes, then %v", got, err)
			}
			break
		}
	}
	if raw, err := io.ReadAll(tb.OpenRaw()); err != nil || !bytes.Equal(raw, b[tb.Offset:tb.Offset+16]) {
		t.Errorf("OpenRaw: %v", err)
	}
	if _, err := io.ReadAll(f.Tensors[0].Open()); err != nil {
		t.Errorf("undamaged tensor a: %v", err)
	}
	err = f.Verify()
	if !errors.As(err, &fe) || fe.Item != `tensor "b"` || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Errorf("Verify: %v, want it to name tensor \"b\"", err)
	}

	// A flipped aux byte.
	b = clone(base)
	b[f.Aux[0].Offset] ^= 1
	f = parse(t, b)
	if _, err := f.Aux[0].ReadAll(); !errors.As(err, &fe) || fe.Item != `aux file "config.json"` {
		t.Errorf("ReadAll of a damaged aux file: %v", err)
	}
	if err := f.Verify(); !errors.As(err, &fe) || fe.Item != `aux file "config.json"` {
		t.Errorf("Verify: %v", err)
	}

	// Padding is not covered: flipping it is harmless.
	b = clone(base)
	b[f.Aux[0].Offset+int64(f.Aux[0].Size)] ^= 1
	if err := parse(t, b).Verify(); err != nil {
		t.Errorf("damaged padding: %v", err)
	}

	// A flipped header byte is caught before parsing.
	b = clone(base)
	b[fieldAfterKey(t, b, "k")] ^= 1
	wantFormatError(t, b, tensor.ErrFormat, 24, "", "header checksum mismatch")
	b = clone(base)
	b[29] ^= 1 // the reserved flags word is covered too
	wantFormatError(t, b, tensor.ErrFormat, 24, "", "header checksum mismatch")

	// A flipped checksum-table byte is caught by the trailer checksum.
	b = clone(base)
	n := len(b)
	b[n-32-1] ^= 1
	wantFormatError(t, b, tensor.ErrFormat, int64(n-12), "", "trailer checksum mismatch")

	// Footer fields.
	b = clone(base)
	b[n-1] ^= 1
	wantFormatError(t, b, tensor.ErrFormat, int64(n-8), "", "bad footer magic")
	b = clone(base)
	le64.PutUint64(b[n-24:], 2)
	reseal(b)
	wantFormatError(t, b, tensor.ErrFormat, int64(n-24), "", "footer counts 2 checksums, header declares 3")
	b = clone(base)
	le64.PutUint64(b[n-32:], 1<<63)
	wantFormatError(t, b, tensor.ErrFormat, int64(n-32), "", "does not end at the footer")
	b = clone(base)
	le64.PutUint32(b[n-16:], 0)
	wantFormatError(t, b, tensor.ErrFormat, int64(n-16), "", "header and trailer are from different files")
	// A table that starts inside the last tensor.
	b = clone(base)
	copy(b[n-32-12-4:], b[n-32-12:n-32]) // move the table 4 bytes earlier
	le64.PutUint64(b[n-32:], uint64(n-32-12-4))
	b = append(b[:n-32-4], b[n-32:]...)
	reseal(b)
	wantFormatError(t, b, tensor.ErrFormat, int64(findEntry(t, b, "b").offset), `tensor "b"`, "runs past the data section")
}

func TestAuxReadAllCap(t *testing.T) {
	a := AuxFile{Name: "huge.bin", Size: MaxAuxReadAll + 1, r: bytes.NewReader(nil)}
	if _, err := a.ReadAll(); !errors.Is(err, tensor.ErrUnsupported) {
		t.Errorf("ReadAll of %d bytes: %v", a.Size, err)
	}
}

func FuzzOpen(f *testing.F) {
	f.Add(emptyFile(f))
	two := twoTensors(f)
	f.Add(two)
	s := spec("q", tensor.Q4_K, 1, 256)
	f.Add(write(f, Header{Source: SourceGGUF, Metadata: allKinds(), Alignment: 32}, []auxBody{{"tokenizer.model", []byte{1, 2, 3}}},
		[]tensorBody{{s, randomBody(f, s, 3)}}))
	f.Add(realSeed(f))
	f.Add(two[:len(two)/2])
	bad := clone(two)
	bad[0] = 0
	f.Add(bad)
	bad = clone(two)
	le64.PutUint64(bad[56:], 1<<63)
	reseal(bad)
	f.Add(bad)
	f.Add([]byte(Magic))
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzCheck(t, b)
		// Most mutations break the header checksum; resealing lets them
		// reach the parser.
		c := clone(b)
		reseal(c)
		fuzzCheck(t, c)
	})
}

// realSeed is a native file made from the transformers fixture: its
// __metadata__, its config.json, and its two smallest tensors.
func realSeed(t testing.TB) []byte {
	dir := filepath.Join("..", "..", "testdata", "safetensors", "llama")
	st, err := os.ReadFile(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	meta, sts, data := parseSafetensors(t, st)
	sort.Slice(sts, func(i, j int) bool { return sts[i].end-sts[i].begin < sts[j].end-sts[j].begin })
	var tensors []tensorBody
	for _, s := range sts[:2] {
		tensors = append(tensors, tensorBody{TensorSpec{Info: tensor.Info{Name: s.name, DType: s.dtype, Shape: s.shape}}, data[s.begin:s.end]})
	}
	return write(t, Header{Source: SourceSafetensors, Metadata: meta}, []auxBody{{"config.json", cfg}}, tensors)
}

func fuzzCheck(t *testing.T, b []byte) {
	f, err := NewFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		if !errors.Is(err, tensor.ErrFormat) && !errors.Is(err, tensor.ErrUnsupported) {
			t.Fatalf("error %v is neither ErrFormat nor ErrUnsupported", err)
		}
		return
	}
	end := int64(32)
	for _, tn := range f.Tensors {
		if tn.Offset%f.Alignment != 0 || tn.Offset < end || tn.Offset+tn.Size > int64(len(b)) {
			t.Fatalf("tensor %q at [%d, +%d) in a %d-byte file", tn.Name, tn.Offset, tn.Size, len(b))
		}
		end = tn.Offset + tn.Size
		if _, ok := f.Tensor(tn.Name); !ok {
			t.Fatalf("tensor %q not found by name", tn.Name)
		}
	}
	for i := range f.Aux {
		if _, err := f.Aux[i].ReadAll(); err != nil && !errors.Is(err, tensor.ErrFormat) {
			t.Fatal(err)
		}
	}
	if err := f.Verify(); err != nil && !errors.Is(err, tensor.ErrFormat) {
		t.Fatal(err)
	}
}
