package quantize

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
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
	// Threads is the worker count for the rows of one tensor; 0 means
	// GOMAXPROCS.
	Threads int
	// Progress, when set, is called before each tensor.
	Progress func(i, n int, name string)
	// Metadata is set in the GGUF and native output after
	// general.file_type, each key removed first and appended, as
	// llama-quantize sets its --imatrix keys (ImatrixMetadata).
	Metadata tensor.Metadata
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

// Run quantizes every tensor of plan, one at a time, and writes the bodies
// to sink (nil measures only: the dry run). Memory holds one tensor: its
// input bytes, its float32 values and its output. Rows are split among
// opts.Threads workers, each quantizing its rows and decoding them again to
// measure the error.
func Run(plan []Choice, sink Sink, opts RunOptions) (*Report, error) {
	threads := opts.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	rep := &Report{}
	var sc scratch
	for i, ch := range plan {
		if opts.Progress != nil {
			opts.Progress(i, len(plan), ch.Tensor.Name)
		}
		tr, err := runOne(ch, sink, threads, &sc)
		if err != nil {
			return nil, err
		}
		rep.Tensors = append(rep.Tensors, tr)
		rep.TotalBytes += tr.Bytes
		rep.TotalElements += tr.Elements
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
	// Four independent float64 chains per sum, kept in registers: through
	// the pointer, every element was a load and a store to a cache line the
	// other workers' stats share.
	var sig, noise [4]float64
	mx := s.maxAbs
	i := 0
	for ; i+4 <= len(x) && i+4 <= len(y); i += 4 {
		for k := range 4 {
			xv := float64(x[i+k])
			d := xv - float64(y[i+k])
			sig[k] += xv * xv
			noise[k] += d * d
			if a := math.Abs(d); a > mx || a != a { // a NaN difference is reported as NaN
				mx = a
			}
		}
	}
	for ; i < len(x); i++ {
		xv := float64(x[i])
		d := xv - float64(y[i])
		sig[0] += xv * xv
		noise[0] += d * d
		if a := math.Abs(d); a > mx || a != a {
			mx = a
		}
	}
	s.sig += (sig[0] + sig[1]) + (sig[2] + sig[3])
	s.noise += (noise[0] + noise[1]) + (noise[2] + noise[3])
	s.maxAbs = mx
}

// scratch holds the buffers one tensor needs, reused from tensor to tensor:
// fresh multi-gigabyte allocations cost as much in page faults and clearing
// as the quantization itself.
type scratch struct {
	raw, out []byte
	x        []float32
}

// grow returns b resized to n, reallocated only when too small.
func grow[T any](b *[]T, n int64) []T {
	if int64(cap(*b)) < n {
		*b = make([]T, n)
	}
	return (*b)[:n]
}

func runOne(ch Choice, sink Sink, threads int, sc *scratch) (TensorReport, error) {
	t := ch.Tensor
	n := t.NumElements()
	tr := TensorReport{Name: t.Name, Type: ch.Type, Elements: n, Reason: ch.Reason}
	if t.Size < 0 {
		return tr, fmt.Errorf("quantize: tensor %q: size %d", t.Name, t.Size)
	}
	raw := grow(&sc.raw, t.Size)
	if _, err := io.ReadFull(t.Open(), raw); err != nil {
		return tr, fmt.Errorf("quantize: tensor %q: %w", t.Name, err)
	}
	if ch.Copy {
		tr.Bytes = int64(len(raw))
		tr.SQNR = math.Inf(1)
		return tr, write(sink, t.Name, raw)
	}
	if !quant.CanDequantize(t.DType) {
		return tr, tensor.Unsupported("quantize: tensor %q: cannot decode %v", t.Name, t.DType)
	}
	// IQ2_XXS and IQ2_XS are encoded only with importance weights.
	if ch.Type != tensor.I8 && !quant.CanQuantize(ch.Type) && (ch.Importance == nil || !quant.CanQuantizeWeighted(ch.Type)) {
		return tr, tensor.Unsupported("quantize: tensor %q: cannot encode %v (%s)", t.Name, ch.Type, ch.Reason)
	}
	if ch.Importance != nil && !quant.CanQuantizeWeighted(ch.Type) {
		return tr, tensor.Unsupported("quantize: tensor %q: cannot encode %v with an importance matrix (%s)", t.Name, ch.Type, ch.Reason)
	}
	rowLen := t.Shape.RowLen()
	if rowLen <= 0 || n < 0 || n%rowLen != 0 {
		return tr, fmt.Errorf("quantize: tensor %q: bad shape %v", t.Name, t.Shape)
	}
	rows := n / rowLen
	// A stacked weight's matrices (experts) each have their own
	// importance: rows r of matrix r/matRows.
	matRows := rows
	if len(t.Shape) >= 3 {
		matRows = t.Shape[len(t.Shape)-2]
	}
	if ch.Importance != nil && (matRows <= 0 || int64(len(ch.Importance)) != rows/matRows*rowLen) {
		return tr, fmt.Errorf("quantize: tensor %q: %d importance values for %v", t.Name, len(ch.Importance), t.Shape)
	}
	// The input may itself be block-quantized: decode it in whole rows,
	// which are whole input blocks because its row length is a multiple of
	// its block size.
	inRowBytes, err := t.DType.ByteSize(rowLen)
	if err != nil || inRowBytes*rows != int64(len(raw)) {
		return tr, fmt.Errorf("quantize: tensor %q: %d bytes do not hold %v %v", t.Name, len(raw), t.DType, t.Shape)
	}
	outRowBytes, err := ch.Type.ByteSize(rowLen)
	if err != nil {
		return tr, fmt.Errorf("quantize: tensor %q: %w", t.Name, err)
	}
	var x []float32
	viewed := t.DType == tensor.F32 && quant.HostLittleEndian && n > 0
	if viewed {
		// F32 input is used in place: decoding it would only copy it.
		x = unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(raw))), n)
	} else {
		x = grow(&sc.x, n)
	}
	// An int8 input is scale·q: its values alone are not the weights.
	var inScales []float32
	if ch.Scales != nil {
		if inScales, err = ch.Scales(); err != nil {
			return tr, fmt.Errorf("quantize: %w", err)
		}
	}
	out := grow(&sc.out, outRowBytes*rows)
	var scales []float32
	if ch.Type == tensor.I8 {
		scales = make([]float32, rows)
	}
	workers := max(min(int64(threads), rows), 1)
	per := (rows + workers - 1) / workers
	all := make([]stats, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := int64(0); w < workers; w++ {
		r0, r1 := w*per, min((w+1)*per, rows)
		if r0 >= r1 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = work(ch.Type, t.DType, raw, x, out, scales, inScales, ch.Importance, matRows, r0, r1, rowLen, inRowBytes, outRowBytes, viewed, &all[w])
		}()
	}
	wg.Wait()
	var s stats
	for w := range all {
		if errs[w] != nil {
			return tr, fmt.Errorf("quantize: tensor %q: %w", t.Name, errs[w])
		}
		s.sig += all[w].sig
		s.noise += all[w].noise
		s.maxAbs = max(s.maxAbs, all[w].maxAbs)
	}
	tr.RMSE = math.Sqrt(s.noise / float64(n))
	tr.MaxAbs = s.maxAbs
	tr.SQNR = sqnr(s.sig, s.noise)
	tr.Bytes = int64(len(out))
	if err := write(sink, t.Name, out); err != nil {
		return tr, err
	}
	if scales != nil {
		sb := make([]byte, 4*len(scales))
		for i, f := range scales {
			binary.LittleEndian.PutUint32(sb[4*i:], math.Float32bits(f))
		}
		tr.Bytes += int64(len(sb))
		if err := write(sink, t.Name+tensor.ScaleSuffix, sb); err != nil {
			return tr, err
		}
	}
	return tr, nil
}

// sqnr is the signal-to-quantization-noise ratio in dB.
func sqnr(sig, noise float64) float64 {
	if noise == 0 {
		return math.Inf(1)
	}
	return 10 * math.Log10(sig/noise)
}

// work handles rows [r0, r1): decode the input (times its row scales for an
// int8 input), encode (weighted by imp's entry for the row's matrix of
// matRows rows, when imp is not nil), decode the output into a small buffer
// and compare.
func work(dt, in tensor.DType, raw []byte, x []float32, out []byte, scales, inScales, imp []float32, matRows,
	r0, r1, rowLen, inRowBytes, outRowBytes int64, viewed bool, s *stats) error {
	if !viewed {
		xs := x[r0*rowLen : r1*rowLen]
		if err := quant.Dequantize(xs, raw[r0*inRowBytes:r1*inRowBytes], in); err != nil {
			return err
		}
		for r := r0; r < r1 && inScales != nil; r++ {
			xr := x[r*rowLen : (r+1)*rowLen]
			for i := range xr {
				xr[i] *= inScales[r]
			}
		}
	}
	y := make([]float32, rowLen)
	for r := r0; r < r1; r++ {
		xr := x[r*rowLen : (r+1)*rowLen]
		or := out[r*outRowBytes : (r+1)*outRowBytes]
		if dt == tensor.I8 {
			q := int8s(or)
			if err := quant.QuantizeInt8Rows(q, scales[r:r+1], xr, 1, int(rowLen)); err != nil {
				return err
			}
			quant.DequantizeInt8(y, q, scales[r])
		} else {
			var w []float32
			if imp != nil {
				m := r / matRows
				w = imp[m*rowLen : (m+1)*rowLen]
			}
			if err := quant.QuantizeRows(or, xr, dt, int(rowLen), w); err != nil {
				return err
			}
			if err := quant.Dequantize(y, or, dt); err != nil {
				return err
			}
		}
		s.add(xr, y)
	}
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
