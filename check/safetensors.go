package check

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/tfconv/tfconv/formats/safetensors"
	"github.com/tfconv/tfconv/sniff"
	"github.com/tfconv/tfconv/tensor"
)

// stEntry is one tensor entry of a safetensors header as the walk read it.
type stEntry struct {
	name       string
	keyOff     int64 // absolute offset of the entry's key
	dtype      tensor.DType
	shape      tensor.Shape
	begin, end int64
	okShape    bool
	okOffsets  bool
}

// errStop ends a walk after a structural finding has been recorded.
var errStop = errors.New("check: walk stopped")

// jsonWalk reads a JSON document token by token, recording findings.
type jsonWalk struct {
	r    *Report
	file string
	dec  *json.Decoder
	base int64 // absolute offset of the document's first byte
	rule string
}

func (w *jsonWalk) pos() int64 { return w.base + w.dec.InputOffset() }

// token returns the next token; a syntax error is recorded and stops the walk.
func (w *jsonWalk) token() (json.Token, error) {
	at := w.pos()
	t, err := w.dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			at = w.base + se.Offset
		}
		w.r.add(w.rule, w.file, at, "", "invalid JSON: %v", err)
		return nil, errStop
	}
	return t, nil
}

// skip consumes the rest of a value whose first token was t.
func (w *jsonWalk) skip(t json.Token, depth int) error {
	d, ok := t.(json.Delim)
	if !ok || d == '}' || d == ']' {
		return nil
	}
	if depth >= safetensors.MaxJSONDepth {
		w.r.add(w.rule, w.file, w.pos(), "", "JSON nested deeper than %d levels", safetensors.MaxJSONDepth)
		return errStop
	}
	for {
		t, err := w.token()
		if err != nil {
			return err
		}
		if d, ok := t.(json.Delim); ok && (d == '}' || d == ']') {
			return nil
		}
		if err := w.skip(t, depth+1); err != nil {
			return err
		}
	}
}

// intArray reads a value that should be an array of at most max
// non-negative int64s. It consumes the whole value in every case and returns
// a problem description when it is anything else.
func (w *jsonWalk) intArray(max int) ([]int64, string, error) {
	t, err := w.token()
	if err != nil {
		return nil, "", err
	}
	if d, ok := t.(json.Delim); !ok || d != '[' {
		return nil, fmt.Sprintf("want an array, found %s", describe(t)), w.skip(t, 1)
	}
	var out []int64
	problem := ""
	for {
		t, err := w.token()
		if err != nil {
			return nil, "", err
		}
		if d, ok := t.(json.Delim); ok && d == ']' {
			return out, problem, nil
		}
		if problem != "" {
			if err := w.skip(t, 1); err != nil {
				return nil, "", err
			}
			continue
		}
		num, ok := t.(json.Number)
		switch {
		case !ok:
			problem = "element " + strconv.Itoa(len(out)) + " is " + describe(t) + ", not an integer"
			if err := w.skip(t, 1); err != nil {
				return nil, "", err
			}
			continue
		case len(out) == max:
			problem = fmt.Sprintf("more than %d elements", max)
			continue
		}
		v, err := strconv.ParseInt(string(num), 10, 64)
		switch {
		case err == nil && v < 0:
			problem = fmt.Sprintf("element %d is negative (%d)", len(out), v)
		case errors.Is(err, strconv.ErrRange) && num[0] != '-':
			problem = fmt.Sprintf("element %d (%s) overflows int64", len(out), num)
		case err != nil:
			problem = fmt.Sprintf("element %d (%s) is not a non-negative integer", len(out), num)
		}
		out = append(out, v)
	}
}

func describe(t json.Token) string {
	switch v := t.(type) {
	case json.Delim:
		if v == '{' {
			return "an object"
		}
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", t)
}

// checkSafetensorsFile checks one safetensors file and returns the names of
// its tensors and the layout of those it could place. The error is an I/O
// error that makes the file unreadable.
func checkSafetensorsFile(r *Report, path string) ([]string, []tensor.Info, error) {
	f, size, err := r.openFile(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	// A shard that is no checkpoint at all (an HTML page saved under its
	// name) says what it is rather than reading as a header length.
	head := make([]byte, min(sniff.HeadLen, size))
	if _, err := f.ReadAt(head, 0); err == nil {
		if nc := sniff.NotCheckpoint(sniff.Format(head, path), head, path); nc != nil {
			r.notCheckpoint(path, nc)
			return nil, nil, nil
		}
	}
	entries, dataOff := walkSafetensors(r, path, f, size)
	var infos []tensor.Info
	if dataOff >= 0 {
		infos = stLayout(r, path, f, size, dataOff, entries)
		if _, err := safetensors.NewFile(f, size); err != nil && r.errorsIn(path) == 0 {
			var fe *tensor.FormatError
			off := int64(-1)
			if errors.As(err, &fe) {
				off = fe.Offset
			}
			r.add("st-rejected", path, off, "", "%v", err)
		}
		scanAll(r, path, f, infos)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.name)
	}
	return names, infos, nil
}

// walkSafetensors reads the header of a safetensors file. It returns the
// entries and the data section's offset, or -1 when the walk had to stop.
func walkSafetensors(r *Report, path string, f io.ReaderAt, size int64) ([]stEntry, int64) {
	if size < 8 {
		r.add("st-truncated", path, 0, "", "file is %d bytes, too short for the 8-byte header length", size)
		return nil, -1
	}
	var nb [8]byte
	if _, err := f.ReadAt(nb[:], 0); err != nil {
		r.add("io-error", path, 0, "", "reading the header length: %v", err)
		return nil, -1
	}
	n := binary.LittleEndian.Uint64(nb[:])
	if err := safetensors.CheckHeaderLen(n, size); err != nil {
		r.add("st-header-length", path, 0, "", "%v", err)
		return nil, -1
	}
	hdr := make([]byte, n)
	if _, err := f.ReadAt(hdr, 8); err != nil {
		r.add("io-error", path, 8, "", "reading the header: %v", err)
		return nil, -1
	}
	if (8+n)%8 != 0 {
		r.add("st-header-unaligned", path, 0, "", "the data section starts at %d, not a multiple of 8", 8+n)
	}
	if i := safetensors.InvalidUTF8(hdr); i >= 0 {
		r.add("st-header-utf8", path, 8+int64(i), "", "header is not valid UTF-8")
	}
	w := &jsonWalk{r: r, file: path, base: 8, rule: "st-header-json"}
	w.dec = json.NewDecoder(bytes.NewReader(hdr))
	w.dec.UseNumber()
	entries, err := w.header()
	if err != nil {
		return nil, -1
	}
	// Only whitespace may follow the object.
	if w.dec.More() {
		r.add("st-header-json", path, w.pos(), "", "invalid JSON: text after the header object")
		return nil, -1
	}
	if _, err := w.dec.Token(); !errors.Is(err, io.EOF) {
		r.add("st-header-json", path, w.pos(), "", "invalid JSON after the header object")
		return nil, -1
	}
	return entries, 8 + int64(n)
}

// header walks the top-level object.
func (w *jsonWalk) header() ([]stEntry, error) {
	t, err := w.token()
	if err != nil {
		return nil, err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		w.r.add("st-header-json", w.file, w.base, "", "header is %s, not an object", describe(t))
		return nil, errStop
	}
	var entries []stEntry
	seen := map[string]bool{}
	for w.dec.More() {
		keyOff := w.pos()
		t, err := w.token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string)
		dup := seen[key]
		seen[key] = true
		if key == "__metadata__" {
			if dup {
				w.r.add("st-duplicate-key", w.file, keyOff, keyItem(key), "appears twice in the header")
			}
			if err := w.metadata(); err != nil {
				return nil, err
			}
			continue
		}
		if dup {
			w.r.add("dup-tensor-name", w.file, keyOff, tensorItem(key), "appears twice in the header")
		}
		e, err := w.entry(key, keyOff)
		if err != nil {
			return nil, err
		}
		if !dup {
			entries = append(entries, e)
		}
	}
	if _, err := w.token(); err != nil { // '}'
		return nil, err
	}
	return entries, nil
}

func (w *jsonWalk) metadata() error {
	item := keyItem("__metadata__")
	t, err := w.token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		w.r.add("st-metadata", w.file, w.pos(), item, "want an object of strings, found %s", describe(t))
		return w.skip(t, 1)
	}
	seen := map[string]bool{}
	for w.dec.More() {
		at := w.pos()
		t, err := w.token()
		if err != nil {
			return err
		}
		k, _ := t.(string)
		if seen[k] {
			w.r.add("st-duplicate-key", w.file, at, item, "metadata key %q appears twice", k)
		}
		seen[k] = true
		v, err := w.token()
		if err != nil {
			return err
		}
		if _, ok := v.(string); !ok {
			w.r.add("st-metadata", w.file, at, item, "value of %q is %s, not a string", k, describe(v))
			if err := w.skip(v, 2); err != nil {
				return err
			}
		}
	}
	_, err = w.token()
	return err
}

func (w *jsonWalk) entry(name string, keyOff int64) (stEntry, error) {
	e := stEntry{name: name, keyOff: keyOff}
	item := tensorItem(name)
	if name == "" {
		w.r.add("st-empty-name", w.file, keyOff, item, "tensor name is empty")
	}
	t, err := w.token()
	if err != nil {
		return e, err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		w.r.add("st-entry", w.file, keyOff, item, "entry is %s, not an object", describe(t))
		return e, w.skip(t, 1)
	}
	seen := map[string]bool{}
	for w.dec.More() {
		at := w.pos()
		t, err := w.token()
		if err != nil {
			return e, err
		}
		k, _ := t.(string)
		if seen[k] {
			w.r.add("st-duplicate-key", w.file, at, item, "field %q appears twice", k)
		}
		seen[k] = true
		switch k {
		case "dtype":
			v, err := w.token()
			if err != nil {
				return e, err
			}
			s, ok := v.(string)
			if !ok {
				w.r.add("st-dtype", w.file, at, item, "dtype is %s, not a string", describe(v))
				if err := w.skip(v, 2); err != nil {
					return e, err
				}
				continue
			}
			d, err := safetensors.ParseDType(s)
			if err != nil {
				w.r.add("st-dtype", w.file, at, item, "%v", err)
				continue
			}
			e.dtype = d
		case "shape":
			v, problem, err := w.intArray(tensor.MaxDims)
			if err != nil {
				return e, err
			}
			if problem != "" {
				w.r.add("st-shape", w.file, at, item, "shape: %s", problem)
				continue
			}
			e.shape, e.okShape = tensor.Shape(v), true
			if e.shape == nil {
				e.shape = tensor.Shape{}
			}
		case "data_offsets":
			v, problem, err := w.intArray(2)
			if err != nil {
				return e, err
			}
			if problem == "" && len(v) != 2 {
				problem = fmt.Sprintf("%d elements, want 2", len(v))
			}
			if problem == "" && v[0] > v[1] {
				problem = fmt.Sprintf("[%d,%d] ends before it begins", v[0], v[1])
			}
			if problem != "" {
				w.r.add("st-offsets", w.file, at, item, "data_offsets: %s", problem)
				continue
			}
			e.begin, e.end, e.okOffsets = v[0], v[1], true
		default:
			w.r.add("st-entry", w.file, at, item, "unknown field %q (a tensor has exactly dtype, shape and data_offsets)", k)
			v, err := w.token()
			if err != nil {
				return e, err
			}
			if err := w.skip(v, 2); err != nil {
				return e, err
			}
		}
	}
	for _, k := range []string{"dtype", "shape", "data_offsets"} {
		if !seen[k] {
			w.r.add("st-entry", w.file, keyOff, item, "missing field %q", k)
		}
	}
	_, err = w.token()
	return e, err
}

// stLayout checks sizes and the tiling of the data section, and returns the
// tensors whose data can be scanned.
func stLayout(r *Report, path string, f io.ReaderAt, size, dataOff int64, entries []stEntry) []tensor.Info {
	dataLen := size - dataOff
	var ranged []*stEntry
	var infos []tensor.Info
	for i := range entries {
		e := &entries[i]
		if !e.okOffsets {
			continue
		}
		ranged = append(ranged, e)
		abs := dataOff + e.begin // both are below 2^63 and dataOff is small
		if abs < 0 {
			abs = e.keyOff
		}
		if !e.dtype.Valid() || !e.okShape {
			continue
		}
		n, err := e.dtype.ShapeBytes(e.shape)
		if err != nil {
			r.add("st-shape", path, e.keyOff, tensorItem(e.name), "%s %v has no valid byte size: %v", e.dtype, e.shape, err)
			continue
		}
		if e.end-e.begin != n {
			r.add("st-size-mismatch", path, abs, tensorItem(e.name), "data_offsets [%d,%d] hold %d bytes, but %s %v needs %d", e.begin, e.end, e.end-e.begin, e.dtype, e.shape, n)
			continue
		}
		if bb := e.dtype.BlockBytes(); e.dtype.BlockSize() == 1 && bb > 1 && abs%bb != 0 && n > 0 {
			r.add("st-misaligned", path, abs, tensorItem(e.name), "data at offset %d is not a multiple of the %d-byte %s element", abs, bb, e.dtype)
		}
		if e.end <= dataLen {
			infos = append(infos, tensor.Info{Name: e.name, DType: e.dtype, Shape: e.shape, Offset: abs, Size: n})
		}
	}
	spans := make([]safetensors.Span, len(ranged))
	for i, e := range ranged {
		spans[i] = safetensors.Span{Begin: e.begin, End: e.end}
	}
	_, cursor, last := safetensors.Tile(spans, dataLen, func(g safetensors.Gap) bool {
		e := ranged[g.Index]
		item := tensorItem(e.name)
		abs := dataOff + e.begin
		if abs < 0 {
			abs = e.keyOff
		}
		switch g.Kind {
		case safetensors.Hole:
			after := "the start of the data section"
			if g.Prev >= 0 {
				after = "tensor " + strconv.Quote(ranged[g.Prev].name)
			}
			r.add("st-hole", path, dataOff+g.From, item, "data section bytes [%d,%d) between %s and this tensor belong to no tensor", g.From, g.To, after)
		case safetensors.Overlap:
			r.add("st-overlap", path, abs, item, "data_offsets [%d,%d] overlap tensor %q, which ends at %d", e.begin, e.end, ranged[g.Prev].name, g.To)
		case safetensors.PastEnd:
			r.add("st-out-of-bounds", path, abs, item, "data_offsets [%d,%d] run past the end of the file (the data section is %d bytes)", e.begin, e.end, dataLen)
		}
		return true
	})
	if cursor < dataLen {
		what := "the header"
		if last >= 0 {
			what = "tensor " + strconv.Quote(ranged[last].name)
		}
		r.checkTrailing("st-trailing-bytes", path, f, dataOff+cursor, size, what)
	}
	return infos
}
