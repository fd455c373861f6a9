package imatrix

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/formats/imatrixdat"
	"github.com/tfconv/tfconv/internal/openfile"
	"github.com/tfconv/tfconv/tensor"
)

// GGUF metadata keys of an importance matrix (llama.cpp's
// common/imatrix-loader.h) and its tensor-name suffixes.
const (
	KeyDatasets   = "imatrix.datasets"
	KeyChunkCount = "imatrix.chunk_count"
	KeyChunkSize  = "imatrix.chunk_size"
	sumsSuffix    = ".in_sum2"
	countsSuffix  = ".counts"
)

// Format is an importance-matrix file format.
type Format string

// The two formats llama.cpp reads.
const (
	GGUF Format = "gguf"
	Dat  Format = "dat"
)

// ParseFormat accepts llama-imatrix's --output-format names.
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(s)); f {
	case GGUF, Dat:
		return f, nil
	}
	return "", fmt.Errorf("imatrix: unknown output format %q (gguf or dat)", s)
}

// WriteGGUF writes m as current llama-imatrix writes its GGUF file. A
// legacy matrix is written as llama-imatrix --in-file converts one: the
// stored values × ChunkSize as sums and ncall × ChunkSize as the count.
func WriteGGUF(w io.Writer, m *Matrix) error {
	m = m.sums()
	ds := m.Datasets
	if ds == nil {
		ds = []string{}
	}
	meta := tensor.Metadata{
		{Key: "general.type", Value: tensor.String("imatrix")},
		{Key: KeyDatasets, Value: tensor.ArrayOf(ds)},
		{Key: KeyChunkCount, Value: tensor.Uint32(uint32(m.ChunkCount))},
		{Key: KeyChunkSize, Value: tensor.Uint32(uint32(m.ChunkSize))},
	}
	var infos []tensor.Info
	for _, e := range m.Entries {
		mats, cols := int64(len(e.Counts)), int64(e.Cols())
		// ggml writes a dimension count without trailing 1s (ggml_n_dims).
		ss, cs := tensor.Shape{mats, cols}, tensor.Shape{mats, 1}
		if mats == 1 {
			ss, cs = tensor.Shape{cols}, tensor.Shape{1}
		}
		infos = append(infos, tensor.Info{Name: e.Name + sumsSuffix, DType: tensor.F32, Shape: ss},
			tensor.Info{Name: e.Name + countsSuffix, DType: tensor.F32, Shape: cs})
	}
	gw, err := gguf.NewWriter(w, meta, infos)
	if err != nil {
		return err
	}
	for k, e := range m.Entries {
		counts := make([]float32, len(e.Counts))
		for i, c := range e.Counts {
			counts[i] = float32(c)
		}
		for i, vals := range [][]float32{e.Sums, counts} {
			bw, err := gw.Next(infos[2*k+i].Name)
			if err != nil {
				return err
			}
			if _, err := bw.Write(f32Bytes(vals)); err != nil {
				return err
			}
		}
	}
	return gw.Close()
}

// sums returns m with raw sums and counts: m itself unless it is legacy.
func (m *Matrix) sums() *Matrix {
	if !m.Legacy {
		return m
	}
	cs := max(m.ChunkSize, 1)
	out := &Matrix{Datasets: m.Datasets, ChunkCount: m.ChunkCount, ChunkSize: m.ChunkSize}
	for _, e := range m.Entries {
		s := make([]float32, len(e.Sums))
		for i, v := range e.Sums {
			s[i] = v * float32(cs)
		}
		out.Entries = append(out.Entries, Entry{Name: e.Name, Sums: s, Counts: []int64{e.Counts[0] * int64(cs)}})
	}
	return out
}

// WriteDat writes m as current llama-imatrix --output-format dat writes it
// (see the package comment).
func WriteDat(w io.Writer, m *Matrix) error {
	f := &imatrixdat.File{HasTrailer: true, Chunks: int32(m.ChunkCount)}
	if n := len(m.Datasets); n > 0 {
		f.Dataset = m.Datasets[n-1]
	}
	for _, e := range m.Entries {
		if m.Legacy {
			f.Entries = append(f.Entries, imatrixdat.Entry{Name: e.Name, NCall: int32(e.Counts[0]), Values: e.Sums})
			continue
		}
		if m.ChunkSize <= 0 {
			return fmt.Errorf("imatrix: %s: no chunk size to count calls with", e.Name)
		}
		var most int64
		for _, c := range e.Counts {
			most = max(most, c)
		}
		ncall := int32((most + int64(m.ChunkSize) - 1) / int64(m.ChunkSize))
		cols := e.Cols()
		v := make([]float32, len(e.Sums))
		for i, s := range e.Sums {
			count := float32(e.Counts[i/cols])
			if count == 0 {
				s, count = 1, 1
			}
			v[i] = s / count * float32(ncall)
		}
		f.Entries = append(f.Entries, imatrixdat.Entry{Name: e.Name, NCall: ncall, Values: v})
	}
	return imatrixdat.Write(w, f)
}

// Write writes m in format f.
func Write(w io.Writer, m *Matrix, f Format) error {
	if f == Dat {
		return WriteDat(w, m)
	}
	return WriteGGUF(w, m)
}

// Open reads an importance matrix in either format, told apart by the
// GGUF magic.
func Open(path string) (*Matrix, error) {
	return openfile.Read(path, "imatrix", func(r io.ReaderAt, size int64) (*Matrix, error) { return read(r, size, path) })
}

// Read reads an importance matrix of size bytes held by r, in either
// format.
func Read(r io.ReaderAt, size int64) (*Matrix, error) { return read(r, size, "") }

func read(r io.ReaderAt, size int64, name string) (*Matrix, error) {
	var magic [4]byte
	if _, err := r.ReadAt(magic[:], 0); err == nil && string(magic[:]) == "GGUF" {
		g, err := gguf.NewFile(r, size)
		if err != nil {
			return nil, named(err, name)
		}
		g.Name = name
		return FromGGUF(g)
	}
	d, err := imatrixdat.NewFile(r, size)
	if err != nil {
		return nil, named(err, name)
	}
	return FromDat(d), nil
}

// named puts the file name into a format error from a reader that was given
// only an io.ReaderAt.
func named(err error, name string) error {
	var fe *tensor.FormatError
	if errors.As(err, &fe) && fe.File == "" {
		fe.File = name
	}
	return err
}

// FromDat is the legacy matrix a .dat file holds.
func FromDat(d *imatrixdat.File) *Matrix {
	m := &Matrix{Legacy: true, ChunkCount: int(d.Chunks)}
	if d.Dataset != "" {
		m.Datasets = []string{d.Dataset}
	}
	for _, e := range d.Entries {
		m.Entries = append(m.Entries, Entry{Name: e.Name, Sums: e.Values, Counts: []int64{int64(e.NCall)}})
	}
	sort.Slice(m.Entries, func(i, j int) bool { return m.Entries[i].Name < m.Entries[j].Name })
	return m
}

// FromGGUF reads the matrix an imatrix GGUF holds: every W.in_sum2 with its
// W.counts.
func FromGGUF(g *gguf.File) (*Matrix, error) {
	fail := func(item, format string, args ...any) error {
		return &tensor.FormatError{Format: "imatrix", File: g.Name, Offset: -1, Item: item, Msg: fmt.Sprintf(format, args...)}
	}
	m := &Matrix{}
	if v, ok := g.Metadata.Get(KeyDatasets); ok {
		a, ok := v.Array()
		names, isStr := a.Data.([]string)
		if !ok || !isStr {
			return nil, fail(fmt.Sprintf("key %q", KeyDatasets), "is %s, not a string array", v.Kind())
		}
		m.Datasets = append([]string(nil), names...)
	}
	for _, k := range []struct {
		key string
		dst *int
	}{{KeyChunkCount, &m.ChunkCount}, {KeyChunkSize, &m.ChunkSize}} {
		if n, ok := g.Metadata.Int(k.key); ok {
			if n < 0 || n > math.MaxInt32 {
				return nil, fail(fmt.Sprintf("key %q", k.key), "value %d out of range", n)
			}
			*k.dst = int(n)
		}
	}
	pairs := map[string][2]*gguf.Tensor{}
	for i := range g.Tensors {
		t := &g.Tensors[i]
		if base, ok := strings.CutSuffix(t.Name, sumsSuffix); ok {
			p := pairs[base]
			p[0] = t
			pairs[base] = p
		} else if base, ok := strings.CutSuffix(t.Name, countsSuffix); ok {
			p := pairs[base]
			p[1] = t
			pairs[base] = p
		}
	}
	if len(pairs) == 0 {
		return nil, fail("", "no %s/%s tensors: not an importance matrix", sumsSuffix, countsSuffix)
	}
	for name, p := range pairs {
		item := fmt.Sprintf("tensor %q", name+sumsSuffix)
		if p[0] == nil || p[1] == nil {
			return nil, fail(item, "has no matching %s/%s tensor", sumsSuffix, countsSuffix)
		}
		sums, err := readF32(p[0])
		if err != nil {
			return nil, fail(item, "%v", err)
		}
		counts, err := readF32(p[1])
		if err != nil {
			return nil, fail(fmt.Sprintf("tensor %q", p[1].Name), "%v", err)
		}
		if len(counts) == 0 || len(sums)%len(counts) != 0 || len(sums) == 0 {
			return nil, fail(item, "%d sums for %d counts", len(sums), len(counts))
		}
		e := Entry{Name: name, Sums: sums, Counts: make([]int64, len(counts))}
		for i, c := range counts {
			if !(c >= 0 && c < 1<<62) {
				return nil, fail(fmt.Sprintf("tensor %q", p[1].Name), "count %v", c)
			}
			e.Counts[i] = int64(math.Round(float64(c)))
		}
		m.Entries = append(m.Entries, e)
	}
	sort.Slice(m.Entries, func(i, j int) bool { return m.Entries[i].Name < m.Entries[j].Name })
	return m, nil
}

// readF32 reads an f32 tensor's values (its size is bounded by the file).
func readF32(t *gguf.Tensor) ([]float32, error) {
	if t.DType != tensor.F32 {
		return nil, fmt.Errorf("is %s, not F32", t.DType)
	}
	b := make([]byte, t.Size)
	if _, err := io.ReadFull(t.Open(), b); err != nil {
		return nil, err
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

func f32Bytes(v []float32) []byte {
	var b bytes.Buffer
	b.Grow(4 * len(v))
	for _, x := range v {
		binary.Write(&b, binary.LittleEndian, math.Float32bits(x))
	}
	return b.Bytes()
}
