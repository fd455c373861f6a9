package check

import (
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// scanChunk is the number of bytes decoded at a time. It bounds the scan's
// memory (this plus four bytes per decoded element) whatever the tensor size,
// and is large enough that the per-chunk overhead is negligible.
const scanChunk = 1 << 20

// scanner decodes tensors chunk by chunk, reusing its buffers.
type scanner struct {
	raw []byte
	f32 []float32
}

// item quotes a tensor name for a Finding.
func tensorItem(name string) string { return "tensor " + strconv.Quote(name) }
func keyItem(name string) string    { return "key " + strconv.Quote(name) }

// scanTensor reads the size bytes at off in rd, decoding them when dt is a
// float type tfconv can decode, and records NaN and Inf findings. When crc
// is not nil every byte also goes through it. It returns a read error, if
// any (the findings so far stand).
func (s *scanner) scanTensor(r *Report, file string, rd io.ReaderAt, info tensor.Info, crc hash.Hash32) error {
	decode := info.DType.Float() && quant.CanDequantize(info.DType)
	if !decode && crc == nil {
		return nil
	}
	bb, bs := info.DType.BlockBytes(), info.DType.BlockSize()
	chunk := int64(scanChunk)
	if decode {
		chunk -= chunk % bb
		if chunk < bb {
			chunk = bb
		}
	}
	if int64(len(s.raw)) < chunk {
		s.raw = make([]byte, chunk)
	}
	var nan, inf int64
	firstNaN, firstInf := int64(-1), int64(-1)
	var elem int64
	for done := int64(0); done < info.Size; {
		n := min(chunk, info.Size-done)
		b := s.raw[:n]
		if m, err := rd.ReadAt(b, info.Offset+done); int64(m) != n {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("reading %s at %d: %w", tensorItem(info.Name), info.Offset+done, err)
		}
		r.didScan(n)
		if crc != nil {
			crc.Write(b)
		}
		if decode {
			ne := int(n / bb * bs)
			if cap(s.f32) < ne {
				s.f32 = make([]float32, ne)
			}
			out := s.f32[:ne]
			if err := quant.Dequantize(out, b, info.DType); err != nil {
				return fmt.Errorf("decoding %s: %w", tensorItem(info.Name), err)
			}
			for i, v := range out {
				switch {
				case v != v:
					if nan == 0 {
						firstNaN = elem + int64(i)
					}
					nan++
				case math.IsInf(float64(v), 0):
					if inf == 0 {
						firstInf = elem + int64(i)
					}
					inf++
				}
			}
			elem += int64(ne)
		}
		done += n
	}
	total := info.NumElements()
	if nan > 0 {
		r.add("nan-in-weights", file, info.Offset, tensorItem(info.Name), "%d of %d values are NaN (first: element %d)", nan, total, firstNaN)
	}
	if inf > 0 {
		r.add("inf-in-weights", file, info.Offset, tensorItem(info.Name), "%d of %d values are infinite (first: element %d)", inf, total, firstInf)
	}
	return nil
}

// scanAll scans every tensor; a read error stops the scan as one finding.
func scanAll(r *Report, file string, rd io.ReaderAt, infos []tensor.Info) {
	var s scanner
	r.expect(infos...)
	for _, info := range infos {
		if err := s.scanTensor(r, file, rd, info, nil); err != nil {
			r.add("io-error", file, info.Offset, tensorItem(info.Name), "%v", err)
			return
		}
	}
}

// placedInfo is a tensor and the file that holds it.
type placedInfo struct {
	file string
	tensor.Info
}

// checkInt8Scales checks the per-row scales of the I8 tensors among ts (one
// file, or every shard of a set): "<name>.scale" (tensor.ScaleSuffix), as
// tfconv quantize writes it, must be F32 with one value per row or a single
// one. An I8 weight matrix without it is only a warning: plain int8 data is
// legal, but nothing can run it as weights.
func checkInt8Scales(r *Report, ts []placedInfo) {
	byName := make(map[string]placedInfo, len(ts))
	for _, t := range ts {
		byName[t.Name] = t
	}
	for _, t := range ts {
		if t.DType != tensor.I8 {
			continue
		}
		s, ok := byName[t.Name+tensor.ScaleSuffix]
		rowLen := t.Shape.RowLen()
		if !ok {
			if len(t.Shape) >= 2 && strings.HasSuffix(t.Name, ".weight") {
				r.add("int8-no-scale", t.file, t.Offset, tensorItem(t.Name), "I8 %v has no tensor %q", t.Shape, t.Name+tensor.ScaleSuffix)
			}
			continue
		}
		var rows int64
		if rowLen > 0 {
			rows = t.NumElements() / rowLen
		}
		if n := s.NumElements(); s.DType != tensor.F32 || (n != rows && n != 1) {
			r.add("int8-scale", s.file, s.Offset, tensorItem(s.Name), "%v %v, but I8 %q %v needs F32 with %d values (one per row) or 1",
				s.DType, s.Shape, t.Name, t.Shape, rows)
		}
	}
}

// placed attaches file to infos.
func placed(file string, infos []tensor.Info) []placedInfo {
	out := make([]placedInfo, len(infos))
	for i, in := range infos {
		out[i] = placedInfo{file, in}
	}
	return out
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)
