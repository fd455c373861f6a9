package native

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"strconv"

	"github.com/tfconv/tfconv/tensor"
)

// Header is the file-level part of a checkpoint given to NewWriter.
type Header struct {
	// Source names the format the checkpoint came from (SourceSafetensors,
	// SourceGGUF) or is "" when tfconv made it.
	Source string
	// SourceInfo holds facts about the source container needed to give it
	// back exactly that are not part of its metadata (see doc.go).
	SourceInfo tensor.Metadata
	// Metadata is stored in the given order.
	Metadata tensor.Metadata
	// Alignment of every body: a power of two up to MaxAlignment; 0 means
	// DefaultAlignment.
	Alignment int64
}

// TensorSpec declares one tensor. Info.Offset and Info.Size are ignored: the
// writer lays the file out itself.
type TensorSpec struct {
	tensor.Info
	Attrs tensor.Metadata
}

// AuxSpec declares one embedded file by name (a clean slash-separated
// relative path such as "config.json" or "tokenizer/vocab.txt") and size.
type AuxSpec struct {
	Name string
	Size int64
}

// Writer streams a native checkpoint to an io.Writer without seeking. All aux
// files and tensors are declared up front; their bodies are then written in
// declared order, the aux files first (NextAux), then the tensors (Next).
// Close writes the checksum table and footer.
type Writer struct {
	w       io.Writer
	pos     int64
	bodies  []wbody
	naux    int
	next    int // index in bodies of the next body to open
	cur     *bodyWriter
	crcs    []byte // checksum table being built
	hcrc    uint32
	tableAt int64
	err     error // sticky: the output stream is broken
	closed  bool
}

type wbody struct {
	item         string
	name         string
	offset, size int64
}

// NewWriter validates the declarations, lays out the file and writes its
// leading header to w. Nothing in h, aux or tensors is retained.
func NewWriter(w io.Writer, h Header, aux []AuxSpec, tensors []TensorSpec) (*Writer, error) {
	align := h.Alignment
	if align == 0 {
		align = DefaultAlignment
	}
	if align < 1 || align > MaxAlignment || align&(align-1) != 0 {
		return nil, fmt.Errorf("native: alignment %d is not a power of two in [1, %d]", align, MaxAlignment)
	}
	if len(h.Source) > MaxSourceLen {
		return nil, fmt.Errorf("native: source name of %d bytes exceeds the cap of %d", len(h.Source), MaxSourceLen)
	}
	if err := checkMetadata(h.SourceInfo); err != nil {
		return nil, fmt.Errorf("native: source info: %w", err)
	}
	if err := checkMetadata(h.Metadata); err != nil {
		return nil, fmt.Errorf("native: %w", err)
	}
	if len(aux) > MaxAux {
		return nil, fmt.Errorf("native: %d aux files exceed the cap of %d", len(aux), MaxAux)
	}
	if len(tensors) > MaxTensors {
		return nil, fmt.Errorf("native: %d tensors exceed the cap of %d", len(tensors), MaxTensors)
	}
	nw := &Writer{w: w, naux: len(aux)}
	auxNames := make(map[string]struct{}, len(aux))
	for _, a := range aux {
		item := "aux file " + strconv.Quote(a.Name)
		switch {
		case len(a.Name) > MaxNameLen:
			return nil, fmt.Errorf("native: %s: name exceeds %d bytes", item, MaxNameLen)
		case !fs.ValidPath(a.Name) || a.Name == ".":
			return nil, fmt.Errorf("native: %s: name is not a clean relative slash-separated path", item)
		case a.Size < 0:
			return nil, fmt.Errorf("native: %s: negative size %d", item, a.Size)
		}
		if _, dup := auxNames[a.Name]; dup {
			return nil, fmt.Errorf("native: %s: declared twice", item)
		}
		auxNames[a.Name] = struct{}{}
		nw.bodies = append(nw.bodies, wbody{item: item, name: a.Name, size: a.Size})
	}
	index := make(map[string]int, len(tensors))
	for i, t := range tensors {
		item := "tensor " + strconv.Quote(t.Name)
		switch {
		case t.Name == "":
			return nil, fmt.Errorf("native: tensor %d has an empty name", i)
		case len(t.Name) > MaxNameLen:
			return nil, fmt.Errorf("native: %s: name exceeds %d bytes", item, MaxNameLen)
		case len(t.Shape) > tensor.MaxDims:
			return nil, fmt.Errorf("native: %s: rank %d exceeds %d", item, len(t.Shape), tensor.MaxDims)
		}
		if _, dup := index[t.Name]; dup {
			return nil, fmt.Errorf("native: %s: declared twice", item)
		}
		index[t.Name] = i
		size, err := t.DType.ShapeBytes(t.Shape)
		if err != nil {
			return nil, fmt.Errorf("native: %s: %w", item, err)
		}
		if err := checkMetadata(t.Attrs); err != nil {
			return nil, fmt.Errorf("native: %s: attributes: %w", item, err)
		}
		nw.bodies = append(nw.bodies, wbody{item: item, name: t.Name, size: size})
	}
	lookup := func(n string) (tensor.Info, bool) {
		i, ok := index[n]
		if !ok {
			return tensor.Info{}, false
		}
		return tensors[i].Info, true
	}
	for _, t := range tensors {
		if p := quantProblem(t.Info, t.Attrs, lookup); p != "" {
			return nil, fmt.Errorf("native: tensor %q: %s", t.Name, p)
		}
	}

	// The header holds fixed-width offsets, so its length does not depend on
	// their values: encode once to measure, lay out, encode for real.
	hdr := encodeHeader(h, aux, tensors, nw.bodies)
	if len(hdr) > MaxHeaderSize {
		return nil, fmt.Errorf("native: header of %d bytes exceeds the cap of %d", len(hdr), MaxHeaderSize)
	}
	cur := int64(preambleSize + len(hdr))
	for i := range nw.bodies {
		b := &nw.bodies[i]
		var err error
		if b.offset, err = tensor.AlignUp(cur, align); err != nil {
			return nil, fmt.Errorf("native: %s: %w", b.item, err)
		}
		if cur, err = tensor.AddInt64(b.offset, b.size); err != nil {
			return nil, fmt.Errorf("native: %s: %w", b.item, err)
		}
	}
	nw.tableAt = cur
	hdr = encodeHeader(h, aux, tensors, nw.bodies)

	var pre [preambleSize]byte
	copy(pre[:], Magic)
	le.PutUint16(pre[8:], MajorVersion)
	le.PutUint16(pre[10:], MinorVersion)
	le.PutUint32(pre[12:], uint32(align))
	le.PutUint64(pre[16:], uint64(len(hdr)))
	nw.hcrc = headerCRC(pre[:], hdr)
	le.PutUint32(pre[24:], nw.hcrc)
	nw.crcs = make([]byte, 0, crcSize*len(nw.bodies)+footerSize)
	if err := nw.write(pre[:]); err != nil {
		return nil, err
	}
	if err := nw.write(hdr); err != nil {
		return nil, err
	}
	return nw, nil
}

func encodeHeader(h Header, aux []AuxSpec, tensors []TensorSpec, bodies []wbody) []byte {
	e := &encoder{}
	e.str(h.Source)
	e.metadata(h.SourceInfo)
	e.metadata(h.Metadata)
	e.u64(uint64(len(aux)))
	for i, a := range aux {
		e.str(a.Name)
		e.u64(uint64(a.Size))
		e.u64(uint64(bodies[i].offset))
	}
	e.u64(uint64(len(tensors)))
	for i, t := range tensors {
		b := bodies[len(aux)+i]
		e.str(t.Name)
		e.str(t.DType.String())
		e.u32(uint32(len(t.Shape)))
		for _, d := range t.Shape {
			e.u64(uint64(d))
		}
		e.u64(uint64(b.offset))
		e.u64(uint64(b.size))
		e.metadata(t.Attrs)
	}
	return e.b
}

func (w *Writer) write(p []byte) error {
	if w.err != nil {
		return w.err
	}
	n, err := w.w.Write(p)
	w.pos += int64(n)
	if err == nil && n != len(p) {
		err = io.ErrShortWrite
	}
	if err != nil {
		w.err = fmt.Errorf("native: %w", err)
	}
	return w.err
}

var zeros [4096]byte

// open finishes the current body and starts the next declared one, which
// must be the aux file or tensor called name.
func (w *Writer) open(aux bool, name string) (io.Writer, error) {
	if w.err != nil {
		return nil, w.err
	}
	if w.closed {
		return nil, errors.New("native: writer is closed")
	}
	if err := w.finish(); err != nil {
		return nil, err
	}
	kind := "tensor"
	if aux {
		kind = "aux file"
	}
	if w.next >= len(w.bodies) {
		return nil, fmt.Errorf("native: %s %q: every declared body is already written", kind, name)
	}
	b := &w.bodies[w.next]
	if (w.next < w.naux) != aux || b.name != name {
		return nil, fmt.Errorf("native: %s %q: bodies go in declared order (aux files, then tensors); next is %s", kind, name, b.item)
	}
	for w.pos < b.offset {
		if err := w.write(zeros[:min(int64(len(zeros)), b.offset-w.pos)]); err != nil {
			return nil, err
		}
	}
	w.next++
	w.cur = &bodyWriter{w: w, b: b}
	return w.cur, nil
}

// NextAux starts the body of the next declared aux file, which must be name.
// The returned writer accepts exactly the declared size.
func (w *Writer) NextAux(name string) (io.Writer, error) { return w.open(true, name) }

// Next starts the data of the next declared tensor, which must be name, after
// every aux file. The returned writer accepts exactly the declared size
// (DType.ShapeBytes of the shape).
func (w *Writer) Next(name string) (io.Writer, error) { return w.open(false, name) }

// finish checks that the current body is complete and records its checksum.
func (w *Writer) finish() error {
	c := w.cur
	if c == nil {
		return nil
	}
	if c.n != c.b.size {
		return fmt.Errorf("native: %s: %d of %d bytes written", c.b.item, c.n, c.b.size)
	}
	w.crcs = le.AppendUint32(w.crcs, c.crc)
	w.cur = nil
	c.done = true
	return nil
}

// Close finishes the last body and writes the checksum table and footer. It
// fails if any declared body was not written; it does not close the
// underlying writer.
func (w *Writer) Close() error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return nil
	}
	if err := w.finish(); err != nil {
		return err
	}
	if w.next < len(w.bodies) {
		return fmt.Errorf("native: close: %d declared bodies not written (next: %s)", len(w.bodies)-w.next, w.bodies[w.next].item)
	}
	if w.pos != w.tableAt {
		return fmt.Errorf("native: internal error: data ends at %d, layout says %d", w.pos, w.tableAt)
	}
	t := le.AppendUint64(w.crcs, uint64(w.tableAt))
	t = le.AppendUint64(t, uint64(len(w.bodies)))
	t = le.AppendUint32(t, w.hcrc)
	t = le.AppendUint32(t, crc32.Checksum(t, castagnoli))
	t = append(t, footerMagic...)
	if err := w.write(t); err != nil {
		return err
	}
	w.closed = true
	return nil
}

// bodyWriter takes one body's bytes, checksumming them on the way.
type bodyWriter struct {
	w    *Writer
	b    *wbody
	n    int64
	crc  uint32
	done bool
}

func (bw *bodyWriter) Write(p []byte) (int, error) {
	if bw.done {
		return 0, fmt.Errorf("native: %s: write after its body was finished", bw.b.item)
	}
	if int64(len(p)) > bw.b.size-bw.n {
		// Nothing is written, so the stream stays well-formed.
		return 0, fmt.Errorf("native: %s: write of %d bytes exceeds the declared size (%d of %d written)", bw.b.item, len(p), bw.n, bw.b.size)
	}
	if err := bw.w.write(p); err != nil {
		return 0, err
	}
	bw.n += int64(len(p))
	bw.crc = crc32.Update(bw.crc, castagnoli, p)
	return len(p), nil
}
