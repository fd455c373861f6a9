package pytorch

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// pkl builds the pickle torch writes for a one-tensor state dict
// {name: _rebuild_tensor_v2(storage, off, size, stride, False, OrderedDict())}
// over ('storage', torch.<storageType>, "0", "cpu", numel).
func pkl(name, storageType string, numel, off int64, size, stride []int64) []byte {
	return pklCall("_rebuild_tensor_v2", "\x89h\x00)R", name, storageType, numel, off, size, stride)
}

// pklCall is pkl with another torch._utils function, tail being the pickled
// arguments after stride.
func pklCall(fn, tail, name, storageType string, numel, off int64, size, stride []int64) []byte {
	var b bytes.Buffer
	b.WriteString("\x80\x02ccollections\nOrderedDict\nq\x00)R(")
	uni := func(s string) {
		b.WriteByte('X')
		binary.Write(&b, binary.LittleEndian, uint32(len(s)))
		b.WriteString(s)
	}
	i64 := func(v int64) {
		b.WriteString("\x8a\x08")
		binary.Write(&b, binary.LittleEndian, v)
	}
	tuple := func(vs []int64) {
		b.WriteByte('(')
		for _, v := range vs {
			i64(v)
		}
		b.WriteByte('t')
	}
	uni(name)
	b.WriteString("ctorch._utils\n" + fn + "\n(")
	b.WriteString("(")
	uni("storage")
	b.WriteString("ctorch\n" + storageType + "\n")
	uni("0")
	uni("cpu")
	i64(numel)
	b.WriteString("tQ")
	i64(off)
	tuple(size)
	tuple(stride)
	b.WriteString(tail + "tRu.")
	return b.Bytes()
}

// zipOf writes records as torch does (stored, in order) into a zip.
func zipOf(records ...string) []byte {
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for i := 0; i < len(records); i += 2 {
		f, _ := w.CreateHeader(&zip.FileHeader{Name: records[i], Method: zip.Store})
		f.Write([]byte(records[i+1]))
	}
	w.Close()
	return buf.Bytes()
}

func oneTensor(storageType string, numel, off int64, size, stride []int64, data []byte) []byte {
	return zipOf("archive/data.pkl", string(pkl("w", storageType, numel, off, size, stride)),
		"archive/data/0", string(data), "archive/version", "3\n")
}

// Views are checked against their storage and the storage against its
// record; errors name the tensor.
func TestViews(t *testing.T) {
	f32 := make([]byte, 4*12)
	for i := range 12 {
		binary.LittleEndian.PutUint32(f32[4*i:], uint32(i))
	}
	cases := []struct {
		name string
		file []byte
		want string // error text, or "" to succeed
		data []uint32
	}{
		{"contiguous", oneTensor("FloatStorage", 12, 2, []int64{2, 3}, []int64{3, 1}, f32), "", []uint32{2, 3, 4, 5, 6, 7}},
		{"transpose", oneTensor("FloatStorage", 12, 0, []int64{4, 3}, []int64{1, 4}, f32), "", []uint32{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}},
		{"every other", oneTensor("FloatStorage", 12, 1, []int64{2, 3}, []int64{6, 2}, f32), "", []uint32{1, 3, 5, 7, 9, 11}},
		{"rebuild_tensor", zipOf("archive/data.pkl", string(pklCall("_rebuild_tensor", "", "w", "FloatStorage", 12, 1, []int64{2}, []int64{1})),
			"archive/data/0", string(f32)), "", []uint32{1, 2}},
		{"rebuild_tensor_v3", zipOf("archive/data.pkl", string(pklCall("_rebuild_tensor_v3", "\x89h\x00)Rctorch\nfloat32\n", "w", "UntypedStorage", 48, 3, []int64{3}, []int64{1})),
			"archive/data/0", string(f32)), "", []uint32{3, 4, 5}},
		{"rebuild_tensor_v3 complex128", zipOf("archive/data.pkl", string(pklCall("_rebuild_tensor_v3", "\x89h\x00)Rctorch\ncomplex128\n", "w", "UntypedStorage", 48, 0, []int64{3}, []int64{1})),
			"archive/data/0", string(f32)), "dtype torch.complex128 has no tfconv dtype", nil},
		{"rebuild_tensor_v3 not a dtype", zipOf("archive/data.pkl", string(pklCall("_rebuild_tensor_v3", "\x89h\x00)RK\x01", "w", "UntypedStorage", 48, 0, []int64{3}, []int64{1})),
			"archive/data/0", string(f32)), "not a torch dtype", nil},
		{"rebuild_tensor_v2 args", zipOf("archive/data.pkl", string(pklCall("_rebuild_tensor_v2", "", "w", "FloatStorage", 12, 0, []int64{3}, []int64{1})),
			"archive/data/0", string(f32)), "called with 4 arguments", nil},
		{"view past storage", oneTensor("FloatStorage", 12, 10, []int64{3}, []int64{1}, f32), `tensor "w": view (offset 10, size [3], stride [1]) needs 52 bytes of storage "0", which holds 48`, nil},
		{"record short", oneTensor("FloatStorage", 13, 0, []int64{3}, []int64{1}, f32), `tensor "w": storage "0": record is 48 bytes, the storage needs 52`, nil},
		{"stride overflow", oneTensor("FloatStorage", 12, 0, []int64{3}, []int64{1 << 62}, f32), "overflows", nil},
		{"expand", oneTensor("FloatStorage", 12, 0, []int64{100, 12}, []int64{0, 1}, f32), "repeats elements", nil},
		{"rank mismatch", oneTensor("FloatStorage", 12, 0, []int64{3}, []int64{1, 1}, f32), "stride is not a tuple of 1", nil},
		{"negative size", oneTensor("FloatStorage", 12, 0, []int64{-3}, []int64{1}, f32), "size is not a tuple", nil},
		{"complex double", oneTensor("ComplexDoubleStorage", 3, 0, []int64{3}, []int64{1}, f32), "torch.ComplexDoubleStorage has no tfconv dtype", nil},
		{"quantized", oneTensor("QInt8Storage", 3, 0, []int64{3}, []int64{1}, f32), "torch.QInt8Storage has no tfconv dtype", nil},
		{"unknown storage", oneTensor("FooStorage", 3, 0, []int64{3}, []int64{1}, f32), `global "torch.FooStorage" is not allowed`, nil},
		{"no record", zipOf("archive/data.pkl", string(pkl("w", "FloatStorage", 1, 0, nil, nil))), `storage "0": no record archive/data/0`, nil},
		{"big endian", zipOf("archive/data.pkl", string(pkl("w", "FloatStorage", 1, 0, nil, nil)), "archive/data/0", "abcd", "archive/byteorder", "big"), `byte order "big"`, nil},
		{"two data.pkl", zipOf("a/data.pkl", "", "b/data.pkl", ""), "two data.pkl", nil},
		{"no data.pkl", zipOf("a/version", "3"), "without a data.pkl", nil},
		{"not a dict", zipOf("archive/data.pkl", "\x80\x02K\x01."), "holds an int, not a state dict", nil},
		{"nested dict", zipOf("archive/data.pkl", "\x80\x02}X\x05\x00\x00\x00model}s."), `key "model": holds a dict, not a tensor`, nil},
		{"trailing pickle bytes", zipOf("archive/data.pkl", "\x80\x02}.xx"), "2 bytes after the pickle's STOP", nil},
		{"not torch", []byte("\x80\x02}."), "torch's magic number", nil},
		{"garbage", []byte("hello"), "neither a zip archive", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := NewFile(bytes.NewReader(c.file), int64(len(c.file)))
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("error %v, want %q", err, c.want)
				}
				if !errors.Is(err, tensor.ErrFormat) && !errors.Is(err, tensor.ErrUnsupported) {
					t.Errorf("error %v is neither ErrFormat nor ErrUnsupported", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(f.Tensors[0].Open())
			if err != nil {
				t.Fatal(err)
			}
			var got []uint32
			for i := 0; i+4 <= len(b); i += 4 {
				got = append(got, binary.LittleEndian.Uint32(b[i:]))
			}
			if fmt.Sprint(got) != fmt.Sprint(c.data) {
				t.Errorf("data %v, want %v", got, c.data)
			}
		})
	}
}

// A view sparse enough to be read run by run (not as one span) gives the
// same bytes.
func TestGatherRuns(t *testing.T) {
	const n = 1 << 19 // 2 MiB of f32: the span is far above 2×size+1 MiB
	data := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(data[4*i:], uint32(i))
	}
	for _, c := range []struct {
		size, stride []int64
		first        []uint32
	}{
		{[]int64{2, 3}, []int64{n / 2, 1}, []uint32{0, 1, 2, n / 2, n/2 + 1, n/2 + 2}},
		{[]int64{2, 2}, []int64{n / 2, n / 4}, []uint32{0, n / 4, n / 2, 3 * n / 4}},
	} {
		file := oneTensor("FloatStorage", n, 0, c.size, c.stride, data)
		f, err := NewFile(bytes.NewReader(file), int64(len(file)))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(f.Tensors[0].Open())
		if err != nil {
			t.Fatal(err)
		}
		var got []uint32
		for i := 0; i+4 <= len(b); i += 4 {
			got = append(got, binary.LittleEndian.Uint32(b[i:]))
		}
		if fmt.Sprint(got) != fmt.Sprint(c.first) {
			t.Errorf("size %v stride %v: %v, want %v", c.size, c.stride, got, c.first)
		}
	}
}

// FuzzOpen reads arbitrary bytes. It must never panic or allocate beyond
// the caps; an accepted file's tensors must read to exactly their size or
// fail with an error.
func FuzzOpen(f *testing.F) {
	for _, p := range []string{"zip/pytorch_model.bin", "archive.bin", "legacy.bin", "params.bin",
		"sharded/pytorch_model-00002-of-00002.bin"} {
		b, err := os.ReadFile(filepath.Join(testdata, p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	hostile, _ := filepath.Glob(filepath.Join(testdata, "hostile", "*.bin"))
	for _, p := range hostile {
		if b, err := os.ReadFile(p); err == nil && len(b) <= 16<<10 {
			f.Add(b)
		}
	}
	f32 := make([]byte, 48)
	f.Add(oneTensor("FloatStorage", 12, 0, []int64{4, 3}, []int64{1, 4}, f32))
	f.Add(oneTensor("HalfStorage", 24, 1, []int64{2, 3}, []int64{6, 2}, f32))
	f.Add(oneTensor("BoolStorage", 48, 0, []int64{48}, []int64{1}, f32))
	f.Fuzz(func(t *testing.T, b []byte) {
		pf, err := NewFile(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			if !errors.Is(err, tensor.ErrFormat) && !errors.Is(err, tensor.ErrUnsupported) {
				t.Fatalf("error %v is neither ErrFormat nor ErrUnsupported", err)
			}
			return
		}
		for i := range pf.Tensors {
			tt := &pf.Tensors[i]
			if want, err := tt.DType.ShapeBytes(tt.Shape); err != nil || want != tt.Size {
				t.Fatalf("%q: size %d, shape %v of %s gives %d (%v)", tt.Name, tt.Size, tt.Shape, tt.DType, want, err)
			}
			if tt.Size > int64(len(b)) {
				t.Fatalf("%q: %d bytes from a %d-byte file", tt.Name, tt.Size, len(b))
			}
			got, err := io.ReadAll(tt.Open())
			if err == nil && int64(len(got)) != tt.Size {
				t.Fatalf("%q: read %d bytes, want %d", tt.Name, len(got), tt.Size)
			}
		}
		if _, err := Scan(bytes.NewReader(b), int64(len(b)), ""); err != nil {
			t.Fatalf("Scan refuses what NewFile reads: %v", err)
		}
	})
}
