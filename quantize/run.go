package quantize

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"runtime"
	"sync"
	"unsafe"

	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// TensorReport is the outcome for one tensor. The errors compare the
// output, decoded again, with the input decoded to float32.
type TensorReport struct {
	Name     string
	Type     tensor.DType
	Bytes    int64 // output bytes, including an int8 scale companion
	Elements int64
	RMSE     float64
	MaxAbs   float64
	// SQNR is 10·log10(Σx² / Σ(x−y)²) in dB; +Inf when the output is exact.
	SQNR   float64
	Reason string
	// Inexact counts the rows of an exact pass-through (Choice.Exact) that
	// held a block Q4_0 cannot hold exactly, encoded by ggml's rule.
	Inexact int64
	// Overflow counts the finite input values beyond Type's range (an f16
	// value past 65504, a block scale past f16's) written as ±Inf or NaN,
	// with RunOptions.AllowOverflow; OverflowMaxAbs is the largest of
	// their magnitudes.
	Overflow       int64
	OverflowMaxAbs float32
}

// Report is the outcome of Run.
type Report struct {
	Tensors       []TensorReport
	TotalBytes    int64
	TotalElements int64
	BitsPerWeight float64
}

// Sink receives tensor bodies in plan order; the gguf, native and
// safetensors writers all satisfy it.
type Sink interface {
	Next(name string) (io.Writer, error)
}

// RunOptions tunes Run.
type RunOptions struct {
	// Threads is the number of workers quantizing chunks of rows; 0 means
	// GOMAXPROCS. Reading and writing run beside them.
	Threads int
	// Progress, when set, is called before each tensor is written.
	Progress func(i, n int, name string)
	// Metadata is set in the GGUF and native output after
	// general.file_type, each key removed first and appended, as
	// llama-quantize sets its --imatrix keys (ImatrixMetadata).
	Metadata tensor.Metadata
	// AllowOverflow writes values beyond a tensor's type as ±Inf and counts
	// them (TensorReport.Overflow); without it they are an error naming
	// the tensor, once it is all counted.
	AllowOverflow bool
}

// OutputInfos lists the tensors Run writes for plan, in order: each choice,
// and after an int8 tensor its scale companion.
func OutputInfos(plan []Choice) []tensor.Info {
	var out []tensor.Info
	for _, ch := range plan {
		out = append(out, tensor.Info{Name: ch.Tensor.Name, DType: ch.Type, Shape: ch.Tensor.Shape.Clone()})
		if ch.Type == tensor.I8 && !ch.Copy {
			out = append(out, tensor.Info{Name: ch.Tensor.Name + tensor.ScaleSuffix, DType: tensor.F32, Shape: scaleShape(ch.Tensor.Shape)})
		}
	}
	return out
}

func scaleShape(s tensor.Shape) tensor.Shape {
	if len(s) <= 1 {
		return tensor.Shape{1}
	}
	return s[:len(s)-1].Clone()
}

// Run quantizes every tensor of plan and writes the bodies to sink in plan
// order (nil measures only: the dry run). The tensors stream through in
// chunks of whole rows: one goroutine reads them in order, opts.Threads
// workers decode, quantize and measure them (each row decoded again to
// compare), and the calling goroutine writes them in order, so reading,
// quantizing and writing overlap and memory holds a few chunks per worker,
// not a tensor.
func Run(plan []Choice, sink Sink, opts RunOptions) (*Report, error) {
	threads := opts.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	// Two chunks a worker keep every worker busy while the reader fills
	// one and the writer drains another.
	slots := 2*threads + 2
	free := make(chan *buffers, slots)
	for range slots {
		free <- &buffers{}
	}
	work := make(chan *chunk, slots)
	order := make(chan *chunk, slots+1) // +1: the producer's error chunk holds no buffer
	stop := make(chan struct{})
	go produce(plan, free, work, order, stop)
	var workers sync.WaitGroup
	for range threads {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for c := range work {
				c.err = c.process()
				close(c.done)
			}
		}()
	}
	rep, err := consume(plan, sink, opts, free, order)
	if err != nil {
		close(stop)
		for c := range order {
			<-c.done
		}
	}
	workers.Wait()
	return rep, err
}

// consume writes the chunks in order and builds the report.
func consume(plan []Choice, sink Sink, opts RunOptions, free chan<- *buffers, order <-chan *chunk) (*Report, error) {
	rep := &Report{}
	var w io.Writer
	for c := range order {
		<-c.done
		if c.err != nil {
			return nil, c.err
		}
		j := c.job
		if c.first {
			if opts.Progress != nil {
				opts.Progress(j.index, len(plan), j.ch.Tensor.Name)
			}
			if sink != nil {
				var err error
				if w, err = sink.Next(j.ch.Tensor.Name); err != nil {
					return nil, err
				}
			}
		}
		if w != nil && len(c.out) > 0 {
			if _, err := w.Write(c.out); err != nil {
				return nil, fmt.Errorf("quantize: writing %q: %w", j.ch.Tensor.Name, err)
			}
		}
		j.tr.Bytes += int64(len(c.out))
		j.st.sig += c.st.sig
		j.st.noise += c.st.noise
		j.st.maxAbs = max(j.st.maxAbs, c.st.maxAbs) // NaN if either is
		j.ov.Add(&c.ov)
		j.tr.Inexact += c.inexact
		if c.buf != nil {
			free <- c.buf
		}
		if !c.last {
			continue
		}
		tr := j.tr
		if j.ov.Count > 0 {
			if !opts.AllowOverflow {
				return nil, fmt.Errorf("quantize: tensor %q: %w; --tensor-type '%s=f32' (or bf16) holds them (--allow-overflow writes them as ±Inf)",
					j.ch.Tensor.Name, &j.ov, regexp.QuoteMeta(j.ch.Tensor.Name))
			}
			tr.Overflow, tr.OverflowMaxAbs = j.ov.Count, j.ov.MaxAbs
		}
		if j.ch.Copy {
			tr.SQNR = math.Inf(1)
		} else {
			tr.RMSE = math.Sqrt(j.st.noise / float64(tr.Elements))
			tr.MaxAbs = j.st.maxAbs
			tr.SQNR = sqnr(j.st.sig, j.st.noise)
		}
		if j.scales != nil {
			sb := make([]byte, 4*len(j.scales))
			for i, f := range j.scales {
				binary.LittleEndian.PutUint32(sb[4*i:], math.Float32bits(f))
			}
			tr.Bytes += int64(len(sb))
			if err := write(sink, j.ch.Tensor.Name+tensor.ScaleSuffix, sb); err != nil {
				return nil, err
			}
		}
		rep.Tensors = append(rep.Tensors, tr)
		rep.TotalBytes += tr.Bytes
		rep.TotalElements += tr.Elements
	}
	if len(rep.Tensors) != len(plan) {
		return nil, fmt.Errorf("quantize: %d of %d tensors done", len(rep.Tensors), len(plan))
	}
	if rep.TotalElements > 0 {
		rep.BitsPerWeight = float64(rep.TotalBytes) * 8 / float64(rep.TotalElements)
	}
	return rep, nil
}

// stats accumulates error sums in float64.
type stats struct {
	sig, noise, maxAbs float64
}

func (s *stats) add(x, y []float32) {
	sig, noise, mx := quant.ErrorSums(x, y)
	s.sig += sig
	s.noise += noise
	s.maxAbs = max(s.maxAbs, mx) // NaN if either is
}

// Chunk sizes: a chunk holds whole rows, as many as fit in chunkElems
// values (at least one), or copyChunk bytes of a tensor copied as it is.
// 1 MiB of float32 is small beside any tensor worth splitting and large
// beside the cost of handing a chunk from one goroutine to the next.
const (
	chunkElems = 1 << 18
	copyChunk  = 1 << 20
)

// buffers are one chunk's memory, reused from chunk to chunk.
type buffers struct {
	raw, out []byte
	x, y     []float32
}

// grow returns b resized to n, reallocated only when too small.
func grow[T any](b *[]T, n int64) []T {
	if int64(cap(*b)) < n {
		*b = make([]T, n)
	}
	return (*b)[:n]
}

// job is one tensor on its way through the pipeline.
type job struct {
	index int
	ch    Choice
	tr    TensorReport
	// Rows of rowLen values: the input's inRowBytes each, the output's
	// outRowBytes; the importance entry changes every matRows rows.
	rowLen, rows, matRows   int64
	inRowBytes, outRowBytes int64
	viewed                  bool                // F32 input quantized in place
	inScales                []float32           // int8 input: its row scales
	scales                  []float32           // int8 output: its row scales
	st                      stats               // summed by the writer, in order
	ov                      quant.OverflowError // summed by the writer
}

// chunk is rows [r0, r1) of a job, or bytes of a copied tensor.
type chunk struct {
	job         *job
	first, last bool
	r0, r1      int64
	buf         *buffers
	out         []byte // what the writer writes
	st          stats
	ov          quant.OverflowError // values beyond the output type, counted
	inexact     int64               // rows of an exact pass-through encoded by ggml's rule
	err         error
	done        chan struct{}
}

// produce reads the plan's tensors in order into chunks, hands the ones to
// quantize to the workers and every one to the writer, in order. A tensor
// that cannot be done ends the stream with an error chunk.
func produce(plan []Choice, free chan *buffers, work, order chan<- *chunk, stop <-chan struct{}) {
	defer close(order)
	defer close(work)
	fail := func(err error) {
		c := &chunk{err: err, done: make(chan struct{})}
		close(c.done)
		order <- c
	}
	take := func() *buffers {
		select {
		case b := <-free:
			return b
		case <-stop:
			return nil
		}
	}
	for i, ch := range plan {
		j, err := prepare(i, ch)
		if err != nil {
			fail(err)
			return
		}
		t := ch.Tensor
		r := t.Open()
		if ch.Copy {
			for off := int64(0); ; {
				n := min(copyChunk, t.Size-off)
				b := take()
				if b == nil {
					return
				}
				raw := grow(&b.raw, n)
				if _, err := io.ReadFull(r, raw); err != nil {
					free <- b
					fail(fmt.Errorf("quantize: tensor %q: %w", t.Name, err))
					return
				}
				c := &chunk{job: j, first: off == 0, last: off+n == t.Size, buf: b, out: raw, done: make(chan struct{})}
				close(c.done)
				order <- c
				if off += n; c.last {
					break
				}
			}
			continue
		}
		per := max(1, chunkElems/j.rowLen)
		for r0 := int64(0); ; r0 += per {
			r1 := min(j.rows, r0+per)
			b := take()
			if b == nil {
				return
			}
			if _, err := io.ReadFull(r, grow(&b.raw, (r1-r0)*j.inRowBytes)); err != nil {
				free <- b
				fail(fmt.Errorf("quantize: tensor %q: %w", t.Name, err))
				return
			}
			c := &chunk{job: j, first: r0 == 0, last: r1 == j.rows, r0: r0, r1: r1, buf: b, done: make(chan struct{})}
			order <- c
			work <- c
			if c.last {
				break
			}
		}
	}
}

// prepare checks what plan[i] asks for and works out its row geometry.
func prepare(i int, ch Choice) (*job, error) {
	t := ch.Tensor
	n := t.NumElements()
	j := &job{index: i, ch: ch, tr: TensorReport{Name: t.Name, Type: ch.Type, Elements: n, Reason: ch.Reason}}
	if t.Size < 0 {
		return nil, fmt.Errorf("quantize: tensor %q: size %d", t.Name, t.Size)
	}
	if ch.Copy {
		return j, nil
	}
	if !quant.CanDequantize(t.DType) {
		return nil, tensor.Unsupported("quantize: tensor %q: cannot decode %v", t.Name, t.DType)
	}
	// IQ2_XXS and IQ2_XS are encoded only with importance weights.
	if ch.Type != tensor.I8 && !quant.CanQuantize(ch.Type) && (ch.Importance == nil || !quant.CanQuantizeWeighted(ch.Type)) {
		return nil, tensor.Unsupported("quantize: tensor %q: cannot encode %v (%s)", t.Name, ch.Type, ch.Reason)
	}
	if ch.Importance != nil && !quant.CanQuantizeWeighted(ch.Type) {
		return nil, tensor.Unsupported("quantize: tensor %q: cannot encode %v with an importance matrix (%s)", t.Name, ch.Type, ch.Reason)
	}
	rowLen := t.Shape.RowLen()
	if rowLen <= 0 || n < 0 || n%rowLen != 0 {
		return nil, fmt.Errorf("quantize: tensor %q: bad shape %v", t.Name, t.Shape)
	}
	j.rowLen, j.rows = rowLen, n/rowLen
	// A stacked weight's matrices (experts) each have their own
	// importance: rows r of matrix r/matRows.
	j.matRows = j.rows
	if len(t.Shape) >= 3 {
		j.matRows = t.Shape[len(t.Shape)-2]
	}
	if ch.Importance != nil && (j.matRows <= 0 || int64(len(ch.Importance)) != j.rows/j.matRows*rowLen) {
		return nil, fmt.Errorf("quantize: tensor %q: %d importance values for %v", t.Name, len(ch.Importance), t.Shape)
	}
	// The input may itself be block-quantized: it is decoded in whole rows,
	// which are whole input blocks because its row length is a multiple of
	// its block size.
	var err error
	j.inRowBytes, err = t.DType.ByteSize(rowLen)
	if err != nil || j.inRowBytes*j.rows != t.Size {
		return nil, fmt.Errorf("quantize: tensor %q: %d bytes do not hold %v %v", t.Name, t.Size, t.DType, t.Shape)
	}
	if j.outRowBytes, err = ch.Type.ByteSize(rowLen); err != nil {
		return nil, fmt.Errorf("quantize: tensor %q: %w", t.Name, err)
	}
	// F32 input is used in place: decoding it would only copy it.
	j.viewed = t.DType == tensor.F32 && quant.HostLittleEndian
	// An int8 input is scale·q: its values alone are not the weights.
	if ch.Scales != nil {
		if j.inScales, err = ch.Scales(); err != nil {
			return nil, fmt.Errorf("quantize: %w", err)
		}
		if int64(len(j.inScales)) != j.rows {
			return nil, fmt.Errorf("quantize: tensor %q: %d row scales for %d rows", t.Name, len(j.inScales), j.rows)
		}
	}
	if ch.Type == tensor.I8 {
		j.scales = make([]float32, j.rows)
	}
	return j, nil
}

// sqnr is the signal-to-quantization-noise ratio in dB.
func sqnr(sig, noise float64) float64 {
	if noise == 0 {
		return math.Inf(1)
	}
	return 10 * math.Log10(sig/noise)
}

// process handles the chunk's rows: decode the input (times its row scales
// for an int8 input), encode (weighted by the importance entry of the
// row's matrix, when there is one), decode the output again into a row
// buffer and compare.
func (c *chunk) process() error {
	j, b := c.job, c.buf
	rows := c.r1 - c.r0
	n := rows * j.rowLen
	raw := b.raw[:rows*j.inRowBytes]
	var x []float32
	if j.viewed {
		if n > 0 {
			x = unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(raw))), n)
		}
	} else {
		x = grow(&b.x, n)
		if err := quant.Dequantize(x, raw, j.ch.Tensor.DType); err != nil {
			return fmt.Errorf("quantize: tensor %q: %w", j.ch.Tensor.Name, err)
		}
		if j.inScales != nil {
			for r := range rows {
				s := j.inScales[c.r0+r]
				xr := x[r*j.rowLen : (r+1)*j.rowLen]
				for i := range xr {
					xr[i] *= s
				}
			}
		}
	}
	out := grow(&b.out, rows*j.outRowBytes)
	y := grow(&b.y, j.rowLen)
	dt := j.ch.Type
	for r := range rows {
		xr := x[r*j.rowLen : (r+1)*j.rowLen]
		or := out[r*j.outRowBytes : (r+1)*j.outRowBytes]
		if dt == tensor.I8 {
			q := int8s(or)
			sc := j.scales[c.r0+r : c.r0+r+1]
			if err := quant.QuantizeInt8Rows(q, sc, xr, 1, int(j.rowLen)); err != nil {
				return fmt.Errorf("quantize: tensor %q: %w", j.ch.Tensor.Name, err)
			}
			quant.DequantizeInt8(y, q, sc[0])
		} else {
			var w []float32
			if imp := j.ch.Importance; imp != nil {
				m := (c.r0 + r) / j.matRows
				w = imp[m*j.rowLen : (m+1)*j.rowLen]
			}
			if j.ch.Exact && quant.EncodeExact(or, xr, dt) {
				if err := quant.Dequantize(y, or, dt); err != nil {
					return fmt.Errorf("quantize: tensor %q: %w", j.ch.Tensor.Name, err)
				}
				c.st.add(xr, y)
				continue
			}
			if j.ch.Exact {
				c.inexact++
			}
			err := quant.QuantizeRows(or, xr, dt, int(j.rowLen), w)
			if ov := (*quant.OverflowError)(nil); errors.As(err, &ov) {
				c.ov.Add(ov) // the writer decides, once the tensor is counted
			} else if err != nil {
				return fmt.Errorf("quantize: tensor %q: %w", j.ch.Tensor.Name, err)
			}
			if err := quant.Dequantize(y, or, dt); err != nil {
				return fmt.Errorf("quantize: tensor %q: %w", j.ch.Tensor.Name, err)
			}
		}
		c.st.add(xr, y)
	}
	c.out = out
	return nil
}

// int8s views b as int8 values without copying: the int8 output is written
// in place into the byte buffer that goes to the file.
func int8s(b []byte) []int8 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*int8)(unsafe.Pointer(unsafe.SliceData(b))), len(b))
}

func write(sink Sink, name string, b []byte) error {
	if sink == nil {
		return nil
	}
	w, err := sink.Next(name)
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("quantize: writing %q: %w", name, err)
	}
	return nil
}

// BufferBytes is the most memory Run's buffers take for plan with threads
// workers (0: GOMAXPROCS): 2·threads+2 chunk slots, each grown to the
// largest chunk any tensor needs — its input rows, their output, and the
// decoded and re-decoded float32 values — or to copyChunk for a tensor
// copied as it is. tfconv plan predicts peak memory with it.
func BufferBytes(plan []Choice, threads int) int64 {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	var slot int64
	for _, ch := range plan {
		t := ch.Tensor
		if ch.Copy {
			slot = max(slot, min(copyChunk, t.Size))
			continue
		}
		rowLen := t.Shape.RowLen()
		if rowLen <= 0 {
			continue
		}
		elems := min(t.NumElements(), max(1, chunkElems/rowLen)*rowLen)
		in, err1 := t.DType.ByteSize(elems)
		out, err2 := ch.Type.ByteSize(elems)
		if err1 != nil || err2 != nil {
			continue
		}
		slot = max(slot, in+out+8*elems)
	}
	return int64(2*threads+2) * slot
}
