package convert

import (
	"cmp"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"slices"

	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/internal/directio"
	"github.com/tfconv/tfconv/internal/progress"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// job is one output tensor: its final name, dtype and shape, the input
// tensor it comes from and the element transform on the way.
type job struct {
	out tensor.Info
	src *checkpoint.Tensor
	m   Mapping
	// ggufBF16 selects gguf-py's NaN rule for BF16 output (see encode).
	ggufBF16 bool
	sum      uint32 // CRC-32C of the bytes written, for the self-check
	// allowOverflow writes values beyond the output type's range as ±Inf
	// (Options.AllowOverflow) instead of failing; overflow counts them.
	allowOverflow bool
	overflow      quant.OverflowError
	// from is the float tensor a derived output is computed from (an MLX
	// layer's codes, scales and biases: mlxJobs), for the report; quantized
	// marks the codes, which hold the source's values only approximately.
	from      *checkpoint.Tensor
	quantized bool
	// passBits: the output is part of an MLX layer of this many bits whose
	// codes are the source's GGUF blocks, copied (mlxPassThrough).
	passBits int
	// passMXFP4: the output is an MLX mxfp4 layer's codes or scales, the
	// source's MXFP4 blocks (Hugging Face's, or GGUF's moved into OCP
	// order) as they are (mlxSplitPacked).
	passMXFP4 bool
	// reencode sends a source already of the output type through the
	// decoder and the encoder (Options.Requantize) instead of copying it.
	reencode bool
	// written is set once the tensor was encoded (encodeWrite), and maxErr
	// is then its largest |output − source| over finite values.
	written bool
	maxErr  float64
}

// copied reports whether j's output bytes are its source's blocks, moved
// without decoding (a pass-through, or a quantized tensor kept as it is).
func (j *job) copied() bool {
	if j.reencode {
		return false
	}
	return j.m.Blocks != 0 && j.out.DType == j.m.Blocks || j.passBits != 0 || j.passMXFP4 ||
		j.src.DType == j.out.DType && j.out.DType.Quantized() && j.m.Transform == nil && j.from == nil && !j.quantized
}

// conversion is TensorReport.Conversion of j once written.
func (j *job) conversion() string {
	switch {
	case j.copied():
		return "copied"
	case j.quantized:
		return "reencoded"
	case j.written && j.maxErr == 0:
		return "exact"
	case j.written:
		return "reencoded"
	case j.src.DType == j.out.DType && j.m.Transform == nil && !j.reencode:
		return "exact" // a float tensor's bytes as they are
	}
	return ""
}

// chunkElems is how many elements the streaming path converts per step: a
// multiple of every GGML block size (32 and 256), 1 MiB of float32, big
// enough that the per-chunk overhead vanishes and small enough that memory
// stays flat whatever the tensor size.
const chunkElems = 1 << 18

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// engine writes jobs, reusing its buffers from tensor to tensor so memory
// stays at the largest tensor that needs a transform (or one chunk).
type engine struct {
	progress *progress.Meter
	// ov tallies the tensor being written's overflowing values.
	ov     quant.OverflowError
	raw    []byte
	f32a   []float32
	f32b   []float32
	f32c   []float32
	outBuf []byte
}

func grow[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	return b[:n]
}

// write streams j's data into w. Values beyond the output type's range are
// counted while the tensor is encoded (the one pass it needs); unless j
// allows them, the error comes once the whole tensor is counted, and the
// caller abandons the output.
func (e *engine) write(w io.Writer, j *job) error {
	h := crc32.New(castagnoli)
	dst := io.MultiWriter(w, h, e.progress)
	e.ov = quant.OverflowError{}
	var err error
	switch {
	case j.src.DType == j.out.DType && j.m.Transform == nil && !j.reencode:
		err = e.copyRaw(dst, j)
	case j.m.Transform == nil:
		err = e.stream(dst, j)
	default:
		err = e.whole(dst, j)
	}
	if err == nil && e.ov.Count > 0 && !j.allowOverflow {
		ov := e.ov
		err = fmt.Errorf("%w; --outtype bf16 or --outtype f32 holds them (--allow-overflow writes them as ±Inf)", &ov)
	}
	if err != nil {
		return fmt.Errorf("convert: tensor %q (from %q): %w", j.out.Name, j.src.Name, err)
	}
	j.overflow = e.ov
	j.sum = h.(hash.Hash32).Sum32()
	return nil
}

// copyRaw copies j's source bytes as they are. A source that writes
// itself (io.WriterTo: a remote tensor, whose bytes are already in the
// read cache's blocks) writes straight to w, without a copy through the
// engine's buffer.
func (e *engine) copyRaw(w io.Writer, j *job) error {
	var n int64
	var err error
	r := j.src.Open()
	if wt, ok := r.(io.WriterTo); ok {
		sw := &sizedWriter{w: w, left: j.src.Size}
		_, err = wt.WriteTo(sw)
		n = j.src.Size - sw.left
	} else {
		e.raw = grow(e.raw, 1<<20)
		n, err = io.CopyBuffer(w, io.LimitReader(r, j.src.Size), e.raw)
	}
	if err != nil {
		return err
	}
	if n != j.src.Size {
		return fmt.Errorf("read %d of %d bytes", n, j.src.Size)
	}
	return nil
}

// sizedWriter passes on the first left bytes a source's WriterTo offers
// and drops the rest, as io.LimitReader leaves a reader's rest unread.
type sizedWriter struct {
	w    io.Writer
	left int64
}

func (s *sizedWriter) Write(p []byte) (int, error) {
	k := min(int64(len(p)), s.left)
	n, err := s.w.Write(p[:k])
	s.left -= int64(n)
	if err == nil && int64(n) == k {
		n = len(p)
	}
	return n, err
}

// stream converts the tensor chunk by chunk.
func (e *engine) stream(w io.Writer, j *job) error {
	total := j.out.NumElements()
	r := j.src.Open()
	for done := int64(0); done < total; {
		n := min(int64(chunkElems), total-done)
		inBytes, err := j.src.DType.ByteSize(n)
		if err != nil {
			return err
		}
		e.raw = grow(e.raw, int(inBytes))
		if _, err := io.ReadFull(r, e.raw); err != nil {
			return err
		}
		e.f32a = grow(e.f32a, int(n))
		if err := quant.Dequantize(e.f32a, e.raw, j.src.DType); err != nil {
			return err
		}
		if err := e.encodeWrite(w, e.f32a, j); err != nil {
			return err
		}
		done += n
	}
	return nil
}

// whole reads the entire tensor, transforms it and writes it.
func (e *engine) whole(w io.Writer, j *job) error {
	// The input may hold more elements than the output (a part of a
	// tensor cut in parts: Mapping.Cut).
	n, in := j.out.NumElements(), j.src.NumElements()
	e.raw = grow(e.raw, int(j.src.Size))
	if _, err := io.ReadFull(j.src.Open(), e.raw); err != nil {
		return err
	}
	e.f32a = grow(e.f32a, int(in))
	if err := quant.Dequantize(e.f32a, e.raw, j.src.DType); err != nil {
		return err
	}
	e.f32b = grow(e.f32b, int(n))
	j.m.Transform(e.f32b, e.f32a)
	return e.encodeWrite(w, e.f32b, j)
}

func (e *engine) encodeWrite(w io.Writer, src []float32, j *job) error {
	nb, err := j.out.DType.ByteSize(int64(len(src)))
	if err != nil {
		return err
	}
	e.outBuf = grow(e.outBuf, int(nb))
	err = encode(e.outBuf, src, j.out.DType, j.ggufBF16)
	if ov := (*quant.OverflowError)(nil); errors.As(err, &ov) {
		e.ov.Add(ov)
	} else if err != nil {
		return err
	}
	// What the output holds, decoded, against the values encoded.
	e.f32c = grow(e.f32c, len(src))
	if err := quant.Dequantize(e.f32c, e.outBuf, j.out.DType); err != nil {
		return err
	}
	for i, v := range src {
		if d := math.Abs(float64(e.f32c[i]) - float64(v)); d > j.maxErr && !math.IsInf(d, 0) && !math.IsNaN(d) {
			j.maxErr = d
		}
	}
	j.written = true
	_, err = w.Write(e.outBuf)
	return err
}

// encode writes src as dtype t. For BF16 with ggufRule set, NaNs follow
// gguf-py (the converter llama.cpp ships): the sign, exponent and top
// mantissa bits are kept and the quiet bit set, where PyTorch (and
// quant.EncodeBF16Bytes) write the canonical 0x7FC0. Other values round
// to nearest even in both.
//
// Finite values beyond t's range are an *quant.OverflowError, with dst
// written in full.
func encode(dst []byte, src []float32, t tensor.DType, ggufRule bool) error {
	err := quant.Quantize(dst, src, t)
	if ov := (*quant.OverflowError)(nil); err != nil && !errors.As(err, &ov) {
		return err
	}
	if t == tensor.BF16 && ggufRule {
		for i, f := range src {
			if f != f {
				b := math.Float32bits(f)
				v := uint16(b>>16) | 0x40
				dst[2*i], dst[2*i+1] = byte(v), byte(v>>8)
			}
		}
	}
	return err
}

// checksum returns the CRC-32C of a tensor's bytes as stored.
func checksum(r io.Reader, size int64, buf []byte) (uint32, error) {
	h := crc32.New(castagnoli)
	n, err := io.CopyBuffer(h, io.LimitReader(r, size), buf)
	if err != nil {
		return 0, err
	}
	if n != size {
		return 0, fmt.Errorf("read %d of %d bytes", n, size)
	}
	return h.Sum32(), nil
}

// selfCheck re-opens the output and confirms every tensor is there with the
// planned dtype and shape and exactly the bytes the conversion produced
// (for q8_0 those are the quantized bytes, so this also catches a
// re-quantization that would come out different). The bytes are read back
// front to back, file by file, with directio.Scan: from the storage device
// where the file system allows it, not from what the page cache holds. It
// returns the one-line verdict.
func selfCheck(path string, jobs []*job) (string, error) {
	c, err := checkpoint.OpenStored(path)
	if err != nil {
		return "", fmt.Errorf("convert: self-check: %w", err)
	}
	defer c.Close()
	if len(c.Tensors) != len(jobs) {
		return "", fmt.Errorf("convert: self-check: %s has %d tensors, wrote %d", path, len(c.Tensors), len(jobs))
	}
	byFile := map[string][]*extent{}
	var files []string
	buf := make([]byte, 1<<20)
	for _, j := range jobs {
		t, ok := c.Tensor(j.out.Name)
		if !ok {
			return "", fmt.Errorf("convert: self-check: tensor %q missing from %s", j.out.Name, path)
		}
		if t.DType != j.out.DType || !t.Shape.Equal(j.out.Shape) {
			return "", fmt.Errorf("convert: self-check: tensor %q is %v %v in %s, wrote %v %v",
				j.out.Name, t.DType, t.Shape, path, j.out.DType, j.out.Shape)
		}
		if file, off, ok := t.Extent(); ok && t.Size > 0 {
			if byFile[file] == nil {
				files = append(files, file)
			}
			byFile[file] = append(byFile[file], &extent{name: j.out.Name, off: off, end: off + t.Size, want: j.sum,
				h: crc32.New(castagnoli)})
			continue
		}
		sum, err := checksum(t.Open(), t.Size, buf)
		if err != nil {
			return "", fmt.Errorf("convert: self-check: tensor %q: %w", j.out.Name, err)
		}
		if sum != j.sum {
			return "", mismatch(j.out.Name, path, sum, j.sum)
		}
	}
	for _, file := range files {
		if err := checkExtents(file, byFile[file]); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("self-check: ok, %d tensors re-read from the output, every byte as converted (crc32c)", len(jobs)), nil
}

// selfCheckShards is selfCheck for the shards of one part of a split set
// (--part), which is no whole set to open: each shard is opened alone, and
// every tensor in it must be one of jobs, with the bytes as converted.
func selfCheckShards(files []string, jobs []*job) (string, error) {
	byName := map[string]*job{}
	for _, j := range jobs {
		byName[j.out.Name] = j
	}
	n := 0
	for _, file := range files {
		f, err := gguf.Open(file)
		if err != nil {
			return "", fmt.Errorf("convert: self-check: %w", err)
		}
		var exts []*extent
		for _, t := range f.Tensors {
			j, ok := byName[t.Name]
			if !ok || t.DType != j.out.DType || !t.Shape.Equal(j.out.Shape) {
				f.Close()
				return "", fmt.Errorf("convert: self-check: tensor %q in %s was not written there", t.Name, file)
			}
			if t.Size > 0 {
				exts = append(exts, &extent{name: t.Name, off: t.Offset, end: t.Offset + t.Size, want: j.sum, h: crc32.New(castagnoli)})
			}
			n++
		}
		f.Close()
		if err := checkExtents(file, exts); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("self-check: ok, %d tensors of %d shards re-read from the output, every byte as converted (crc32c)", n, len(files)), nil
}

// extent is one tensor's bytes in an output file and the CRC-32C they must
// have.
type extent struct {
	name     string
	off, end int64
	want     uint32
	h        hash.Hash32
}

// checkExtents reads file once, front to back, and checks the CRC-32C of
// every extent (non-empty, not overlapping).
func checkExtents(file string, exts []*extent) error {
	slices.SortFunc(exts, func(a, b *extent) int { return cmp.Compare(a.off, b.off) })
	for i := 1; i < len(exts); i++ {
		if exts[i].off < exts[i-1].end {
			return fmt.Errorf("convert: self-check: tensors %q and %q overlap in %s", exts[i-1].name, exts[i].name, file)
		}
	}
	i := 0
	err := directio.Scan(file, exts[0].off, exts[len(exts)-1].end, func(off int64, p []byte) error {
		for len(p) > 0 && i < len(exts) {
			e := exts[i]
			if off < e.off { // padding between tensors
				k := min(e.off-off, int64(len(p)))
				p, off = p[k:], off+k
				continue
			}
			k := min(e.end-off, int64(len(p)))
			e.h.Write(p[:k])
			p, off = p[k:], off+k
			if off == e.end {
				if sum := e.h.Sum32(); sum != e.want {
					return mismatch(e.name, file, sum, e.want)
				}
				i++
			}
		}
		return nil
	})
	if err != nil {
		var fe *mismatchError
		if errors.As(err, &fe) {
			return err
		}
		return fmt.Errorf("convert: self-check: reading %s: %w", file, err)
	}
	return nil
}

// mismatchError is a tensor whose bytes in the output are not the ones
// converted.
type mismatchError struct{ msg string }

func (e *mismatchError) Error() string { return e.msg }

func mismatch(name, file string, sum, want uint32) error {
	return &mismatchError{fmt.Sprintf("convert: self-check: tensor %q: bytes in %s differ from what was written (crc32c %08x, want %08x)",
		name, file, sum, want)}
}

// reader is write as a reader: j's output bytes, converted as they are
// read — one chunk at a time where write streams (no transform), the whole
// tensor where a transform needs it, the source's bytes themselves where
// nothing changes — so a reader of the output holds about one chunk (or one
// transformed tensor) at a time. The overflow rule is write's, its error
// coming at the end of the tensor.
func (e *engine) reader(j *job) io.Reader {
	if j.src.DType == j.out.DType && j.m.Transform == nil && !j.reencode {
		return io.LimitReader(j.src.Open(), j.src.Size)
	}
	return &jobReader{e: e, j: j, total: j.out.NumElements()}
}

// jobReader is engine.reader's converting reader.
type jobReader struct {
	e           *engine
	j           *job
	src         io.Reader // the source tensor, opened at the first chunk
	done, total int64     // elements converted, of the tensor's
	buf         []byte    // converted bytes not yet read
	err         error
}

func (r *jobReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		if r.done == r.total {
			r.err = io.EOF
			if e := r.e.ov; e.Count > 0 && !r.j.allowOverflow {
				r.err = r.fail(fmt.Errorf("%w; --outtype bf16 or --outtype f32 holds them (--allow-overflow writes them as ±Inf)", &e))
			}
			continue
		}
		var out captureWriter
		if r.j.m.Transform != nil {
			r.err = r.e.whole(&out, r.j)
			r.done = r.total
		} else {
			r.err = r.next(&out)
		}
		if r.err == io.EOF {
			r.err = io.ErrUnexpectedEOF // the source ended early
		}
		r.err = r.fail(r.err)
		r.buf = out
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// next converts the next chunk of elements, as engine.stream does.
func (r *jobReader) next(w io.Writer) error {
	if r.src == nil {
		r.src = r.j.src.Open()
	}
	n := min(int64(chunkElems), r.total-r.done)
	inBytes, err := r.j.src.DType.ByteSize(n)
	if err != nil {
		return err
	}
	e := r.e
	e.raw = grow(e.raw, int(inBytes))
	if _, err := io.ReadFull(r.src, e.raw); err != nil {
		return err
	}
	e.f32a = grow(e.f32a, int(n))
	if err := quant.Dequantize(e.f32a, e.raw, r.j.src.DType); err != nil {
		return err
	}
	r.done += n
	return e.encodeWrite(w, e.f32a, r.j)
}

func (r *jobReader) fail(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("convert: tensor %q (from %q): %w", r.j.out.Name, r.j.src.Name, err)
}

// captureWriter keeps what is written to it: the engine's output buffer
// itself for its one write per chunk (the buffer is reused only for the
// next chunk, converted once this one is read), a copy for more writes.
type captureWriter []byte

func (c *captureWriter) Write(p []byte) (int, error) {
	if len(*c) == 0 {
		*c = p
	} else {
		*c = append((*c)[:len(*c):len(*c)], p...)
	}
	return len(p), nil
}
