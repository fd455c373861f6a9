package gguf

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tfconv/tfconv/internal/atomicfile"
	"github.com/tfconv/tfconv/tensor"
)

// KeyChatTemplate is the metadata key holding the Jinja chat template.
const KeyChatTemplate = "tokenizer.chat_template"

// ErrRefused is matched (errors.Is) by every edit Edit refuses to make
// because the result would be inconsistent or the request is malformed.
var ErrRefused = errors.New("edit refused")

// maxKeyLen bounds a metadata key given on the command line; ggml has no
// limit of its own, but a key is a short dotted name.
const maxKeyLen = 256

// Assignment is one metadata value to set. Type is "" when the type is to be
// inferred: the existing key's type, or string for a new key.
type Assignment struct {
	Key   string
	Value string
	Type  string
}

// ParseAssignment parses KEY=VALUE[:TYPE]. The suffix after the last colon is
// a type only when it names one (uint8 … float64, bool, string, or
// array[ELEM] of one of those), so that a string value may hold colons;
// write ":string" after a string that ends in one of those names. An array
// value is a JSON array: [1, 2, 3] or ["a", "b"].
func ParseAssignment(s string) (Assignment, error) {
	key, val, ok := strings.Cut(s, "=")
	if !ok || key == "" {
		return Assignment{}, fmt.Errorf("gguf: --set %q: want KEY=VALUE[:TYPE]: %w", s, ErrRefused)
	}
	a := Assignment{Key: key, Value: val}
	if i := strings.LastIndexByte(val, ':'); i >= 0 {
		suffix := val[i+1:]
		if _, _, ok := parseType(suffix); ok {
			a.Value, a.Type = val[:i], suffix
		} else if strings.HasPrefix(suffix, "array") {
			return Assignment{}, fmt.Errorf("gguf: --set %q: %q is not a type: arrays are array[ELEM] of a scalar or string kind: %w", s, suffix, ErrRefused)
		}
	}
	return a, nil
}

// parseType reads a type name: a scalar kind or string, or array[ELEM] with
// ELEM one of those (elem is then the element kind).
func parseType(name string) (kind, elem tensor.Kind, ok bool) {
	if e, found := strings.CutPrefix(name, "array["); found && strings.HasSuffix(e, "]") {
		elem, ok = tensor.ParseKind(strings.TrimSuffix(e, "]"))
		return tensor.KindArray, elem, ok && elem != tensor.KindArray
	}
	kind, ok = tensor.ParseKind(name)
	return kind, 0, ok && kind != tensor.KindArray
}

// EditOptions says what Edit changes and where it writes.
type EditOptions struct {
	Set    []Assignment
	Delete []string
	// Out is the file to write; "" replaces the input (through a temporary
	// file renamed over it, so the input is whole at every moment).
	Out   string
	Force bool // replace an existing Out
	// InPlace overwrites the header bytes of the input itself, leaving the
	// tensor data where it is. It is refused unless the new header, padded,
	// ends exactly where the old one did (every data offset unchanged). It
	// is not atomic: a crash during the header write can leave a broken
	// header, which is why it is not the default.
	InPlace bool
	// Progress, when set, is called as tensor data is copied and hashed,
	// with the bytes done and the bytes there are in all (each tensor is
	// read twice: copied, then read back from the output and hashed).
	Progress func(done, total int64)
}

// progressWriter counts the bytes written through it for a Progress
// callback (nil: it counts for nobody).
type progressWriter struct {
	report      func(done, total int64)
	done, total int64
}

func (p *progressWriter) Write(b []byte) (int, error) {
	if p != nil && p.report != nil {
		p.done += int64(len(b))
		p.report(p.done, p.total)
	}
	return len(b), nil
}

// Change is one key set by Edit. Old is nil for a key that was added.
type Change struct {
	Key  string        `json:"key"`
	Type string        `json:"type"`
	Old  *tensor.Value `json:"old"`
	New  tensor.Value  `json:"new"`
}

// EditReport says what Edit did and what it checked.
type EditReport struct {
	Path    string   `json:"path"`
	Out     string   `json:"out"`
	InPlace bool     `json:"in_place"`
	Set     []Change `json:"set"`
	Deleted []string `json:"deleted"`
	// Tensors is the number of tensors whose data was hashed in the input
	// and again in the output; TensorDataEqual is true when every hash
	// matched (Edit fails otherwise, so a report always says true).
	Tensors         int   `json:"tensors"`
	TensorDataEqual bool  `json:"tensor_data_equal"`
	OldHeaderBytes  int64 `json:"old_header_bytes"` // data offset of the input
	NewHeaderBytes  int64 `json:"new_header_bytes"` // data offset of the output
	BytesWritten    int64 `json:"bytes_written"`
}

// refusedKey reports why key may not be set or deleted, or "".
func refusedKey(key string) string {
	switch {
	case key == KeyAlignment:
		return "general.alignment fixes where every tensor's data starts; changing it would need the data moved (convert the file instead)"
	case strings.HasPrefix(key, "split."):
		return "split.* keys tie the shards of a split model together; changing one shard's would break the set"
	}
	return ""
}

// ApplyEdits returns meta with the assignments and deletions of opts made,
// and the changes. It refuses (ErrRefused) the keys that would make the file
// inconsistent, values of the wrong type for an existing key, arrays,
// deleting general.architecture or a key that is absent, and a key named
// twice.
func ApplyEdits(meta tensor.Metadata, set []Assignment, del []string) (tensor.Metadata, []Change, error) {
	return applyEdits("", meta, set, del)
}

// applyEdits is ApplyEdits with errors naming file when it is not "".
func applyEdits(file string, meta tensor.Metadata, set []Assignment, del []string) (tensor.Metadata, []Change, error) {
	prefix := "gguf: "
	if file != "" {
		prefix += file + ": "
	}
	refuse := func(key, format string, args ...any) error {
		return fmt.Errorf("%skey %q: %s: %w", prefix, key, fmt.Sprintf(format, args...), ErrRefused)
	}
	out := make(tensor.Metadata, len(meta))
	copy(out, meta)
	named := map[string]bool{}
	var changes []Change
	for _, a := range set {
		if a.Key == "" || len(a.Key) > maxKeyLen || !utf8.ValidString(a.Key) {
			return nil, nil, refuse(a.Key, "a key is 1 to %d bytes of UTF-8", maxKeyLen)
		}
		if named[a.Key] {
			return nil, nil, refuse(a.Key, "named twice")
		}
		named[a.Key] = true
		if why := refusedKey(a.Key); why != "" {
			return nil, nil, refuse(a.Key, "cannot be set: %s", why)
		}
		old, exists := out.Get(a.Key)
		kind, elem := tensor.KindString, tensor.Kind(0)
		if a.Type != "" {
			var ok bool
			if kind, elem, ok = parseType(a.Type); !ok {
				return nil, nil, refuse(a.Key, "unknown type %q (uint8, int8, uint16, int16, uint32, int32, uint64, int64, float32, float64, bool, string, or array[ELEM] of one of them)", a.Type)
			}
		}
		if exists {
			oldElem := tensor.Kind(0)
			if arr, isArr := old.Array(); isArr {
				if arr.Elem == tensor.KindArray {
					return nil, nil, refuse(a.Key, "holds an array of arrays, which cannot be edited")
				}
				oldElem = arr.Elem
			}
			if a.Type != "" && (kind != old.Kind() || elem != oldElem) {
				return nil, nil, refuse(a.Key, "is a %s; an edit keeps the type, and %s was asked", typeName(old.Kind(), oldElem), a.Type)
			}
			kind, elem = old.Kind(), oldElem
		}
		var v tensor.Value
		var err error
		if kind == tensor.KindArray {
			v, err = ParseArrayValue(a.Value, elem)
		} else {
			v, err = ParseValue(a.Value, kind)
		}
		if err != nil {
			return nil, nil, refuse(a.Key, "%v", err)
		}
		c := Change{Key: a.Key, Type: typeName(kind, elem), New: v}
		if exists {
			o := old
			c.Old = &o
		}
		out.Set(a.Key, v)
		changes = append(changes, c)
	}
	for _, key := range del {
		if named[key] {
			return nil, nil, refuse(key, "named twice")
		}
		named[key] = true
		if why := refusedKey(key); why != "" {
			return nil, nil, refuse(key, "cannot be deleted: %s", why)
		}
		if key == KeyArchitecture {
			return nil, nil, refuse(key, "cannot be deleted: every loader needs it to know what the file holds")
		}
		i := -1
		for j := range out {
			if out[j].Key == key {
				i = j
				break
			}
		}
		if i < 0 {
			return nil, nil, refuse(key, "cannot be deleted: not present")
		}
		out = append(out[:i], out[i+1:]...)
	}
	return out, changes, nil
}

// ParseValue parses s as a scalar or string of kind k, refusing values out
// of the kind's range.
func ParseValue(s string, k tensor.Kind) (tensor.Value, error) {
	bits := map[tensor.Kind]int{
		tensor.KindUint8: 8, tensor.KindInt8: 8, tensor.KindUint16: 16, tensor.KindInt16: 16,
		tensor.KindUint32: 32, tensor.KindInt32: 32, tensor.KindUint64: 64, tensor.KindInt64: 64,
	}[k]
	switch k {
	case tensor.KindUint8, tensor.KindUint16, tensor.KindUint32, tensor.KindUint64:
		x, err := strconv.ParseUint(s, 0, bits)
		if err != nil {
			return tensor.Value{}, fmt.Errorf("%q is not a %s", s, k)
		}
		switch k {
		case tensor.KindUint8:
			return tensor.Uint8(uint8(x)), nil
		case tensor.KindUint16:
			return tensor.Uint16(uint16(x)), nil
		case tensor.KindUint32:
			return tensor.Uint32(uint32(x)), nil
		}
		return tensor.Uint64(x), nil
	case tensor.KindInt8, tensor.KindInt16, tensor.KindInt32, tensor.KindInt64:
		x, err := strconv.ParseInt(s, 0, bits)
		if err != nil {
			return tensor.Value{}, fmt.Errorf("%q is not a %s", s, k)
		}
		switch k {
		case tensor.KindInt8:
			return tensor.Int8(int8(x)), nil
		case tensor.KindInt16:
			return tensor.Int16(int16(x)), nil
		case tensor.KindInt32:
			return tensor.Int32(int32(x)), nil
		}
		return tensor.Int64(x), nil
	case tensor.KindFloat32:
		x, err := strconv.ParseFloat(s, 32)
		if err != nil {
			return tensor.Value{}, fmt.Errorf("%q is not a float32", s)
		}
		return tensor.Float32(float32(x)), nil
	case tensor.KindFloat64:
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return tensor.Value{}, fmt.Errorf("%q is not a float64", s)
		}
		return tensor.Float64(x), nil
	case tensor.KindBool:
		switch s {
		case "true", "1":
			return tensor.Bool(true), nil
		case "false", "0":
			return tensor.Bool(false), nil
		}
		return tensor.Value{}, fmt.Errorf("%q is not a bool (true, false, 1, 0)", s)
	case tensor.KindString:
		if !utf8.ValidString(s) {
			return tensor.Value{}, errors.New("a GGUF string must be valid UTF-8")
		}
		if len(s) > maxStringLen {
			return tensor.Value{}, fmt.Errorf("string of %d bytes exceeds the limit of %d", len(s), maxStringLen)
		}
		return tensor.String(s), nil
	}
	return tensor.Value{}, fmt.Errorf("type %s cannot be set", k)
}

// typeName names a kind as --set's TYPE does: "uint32", "array[string]".
func typeName(k, elem tensor.Kind) string {
	if k == tensor.KindArray {
		return "array[" + elem.String() + "]"
	}
	return k.String()
}

// ParseArrayValue parses s, a JSON array, as an array of elem values, each
// checked as ParseValue checks a scalar: [1, 2, 3], [0.5, 1e-6],
// [true, false], ["a", "b"]. An empty array is allowed.
func ParseArrayValue(s string, elem tensor.Kind) (tensor.Value, error) {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var raw []any
	if err := d.Decode(&raw); err != nil || d.More() {
		return tensor.Value{}, fmt.Errorf("%.60q is not a JSON array", s)
	}
	if len(raw) > maxArrayLen {
		return tensor.Value{}, fmt.Errorf("array of %d elements exceeds the limit of %d", len(raw), maxArrayLen)
	}
	vals := make([]tensor.Value, len(raw))
	for i, x := range raw {
		var text string
		switch x := x.(type) {
		case string:
			if elem != tensor.KindString {
				return tensor.Value{}, fmt.Errorf("element %d is a string, want %s", i, elem)
			}
			text = x
		case json.Number:
			text = x.String()
		case bool:
			text = strconv.FormatBool(x)
		default:
			return tensor.Value{}, fmt.Errorf("element %d (%v) is not a %s", i, x, elem)
		}
		if elem == tensor.KindString {
			if _, ok := x.(string); !ok {
				return tensor.Value{}, fmt.Errorf("element %d (%v) is not a JSON string", i, x)
			}
		}
		v, err := ParseValue(text, elem)
		if err != nil {
			return tensor.Value{}, fmt.Errorf("element %d: %v", i, err)
		}
		vals[i] = v
	}
	return tensor.ArrayOf(typedSlice(elem, vals)), nil
}

// typedSlice gathers scalar values of kind elem into the Go slice
// tensor.ArrayOf takes.
func typedSlice(elem tensor.Kind, vals []tensor.Value) any {
	switch elem {
	case tensor.KindUint8:
		return gather[uint8](vals)
	case tensor.KindInt8:
		return gather[int8](vals)
	case tensor.KindUint16:
		return gather[uint16](vals)
	case tensor.KindInt16:
		return gather[int16](vals)
	case tensor.KindUint32:
		return gather[uint32](vals)
	case tensor.KindInt32:
		return gather[int32](vals)
	case tensor.KindUint64:
		return gather[uint64](vals)
	case tensor.KindInt64:
		return gather[int64](vals)
	case tensor.KindFloat32:
		return gather[float32](vals)
	case tensor.KindFloat64:
		return gather[float64](vals)
	case tensor.KindBool:
		return gather[bool](vals)
	}
	return gather[string](vals)
}

func gather[T any](vals []tensor.Value) []T {
	out := make([]T, len(vals))
	for i, v := range vals {
		out[i] = v.Any().(T)
	}
	return out
}

// IsFile reports whether path starts with the GGUF magic.
func IsFile(path string) (bool, error) {
	fh, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("gguf: %w", err)
	}
	defer fh.Close()
	var b [4]byte
	n, _ := io.ReadFull(fh, b[:])
	return string(b[:n]) == Magic, nil
}

// Edit changes the metadata of the GGUF file at path and writes the result
// to opts.Out, or over path when Out is "" (a temporary file in the same
// folder, synced and renamed: the input is whole until the rename and the
// output whole after it), or with InPlace into path's header bytes. Tensor
// bodies are streamed, never held in memory, and copied byte for byte; the
// output is re-read and every tensor's sha256 compared with the input's
// before it replaces anything.
func Edit(path string, opts EditOptions) (*EditReport, error) {
	if ok, err := IsFile(path); err != nil {
		return nil, err
	} else if !ok {
		return nil, tensor.Unsupported("gguf: %s: not a GGUF file; edit supports GGUF only (safetensors and native files are not supported)", path)
	}
	if opts.InPlace && opts.Out != "" {
		return nil, fmt.Errorf("gguf: --in-place and --out exclude each other: %w", ErrRefused)
	}
	if len(opts.Set) == 0 && len(opts.Delete) == 0 {
		return nil, fmt.Errorf("gguf: %s: nothing to edit (give --set, --delete or --chat-template-file): %w", path, ErrRefused)
	}
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	meta, changes, err := applyEdits(path, f.Metadata, opts.Set, opts.Delete)
	if err != nil {
		return nil, err
	}
	infos := make([]tensor.Info, len(f.Tensors))
	for i, t := range f.Tensors {
		infos[i] = t.Info
	}
	hdr, _, _, err := encodeHeader(meta, infos)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	rep := &EditReport{Path: path, Out: opts.Out, InPlace: opts.InPlace, Set: changes, Deleted: opts.Delete,
		Tensors: len(f.Tensors), OldHeaderBytes: f.DataOffset, NewHeaderBytes: int64(len(hdr))}
	if rep.Out == "" {
		rep.Out = path
	}
	if rep.Set == nil {
		rep.Set = []Change{}
	}
	if rep.Deleted == nil {
		rep.Deleted = []string{}
	}
	prog := &progressWriter{report: opts.Progress}
	for _, t := range f.Tensors {
		prog.total += 2 * t.Size
	}
	if opts.InPlace {
		err = editInPlace(f, path, hdr, rep, prog)
	} else {
		err = rewriteEdited(f, path, opts, meta, infos, rep, prog)
	}
	if err != nil {
		return nil, err
	}
	rep.TensorDataEqual = true
	return rep, nil
}

// hashTensors returns the sha256 of every tensor's data.
func hashTensors(f *File, prog *progressWriter) ([][sha256.Size]byte, error) {
	sums := make([][sha256.Size]byte, len(f.Tensors))
	h := sha256.New()
	for i := range f.Tensors {
		h.Reset()
		if _, err := io.Copy(io.MultiWriter(h, prog), f.Tensors[i].Open()); err != nil {
			return nil, fmt.Errorf("gguf: tensor %q: %w", f.Tensors[i].Name, err)
		}
		h.Sum(sums[i][:0])
	}
	return sums, nil
}

// compareTensors checks that out lists the tensors of in, with the same
// dtype, shape and data hash.
func compareTensors(in *File, inSums [][sha256.Size]byte, out *File, outName string, prog *progressWriter) error {
	if len(out.Tensors) != len(in.Tensors) {
		return fmt.Errorf("gguf: %s: %d tensors after the edit, %d before", outName, len(out.Tensors), len(in.Tensors))
	}
	outSums, err := hashTensors(out, prog)
	if err != nil {
		return fmt.Errorf("%s: %w", outName, err)
	}
	for i, t := range in.Tensors {
		o := out.Tensors[i]
		if o.Name != t.Name || o.DType != t.DType || !o.Shape.Equal(t.Shape) || outSums[i] != inSums[i] {
			return fmt.Errorf("gguf: %s: tensor %q differs from the input after the edit", outName, t.Name)
		}
	}
	return nil
}

func editInPlace(f *File, path string, hdr []byte, rep *EditReport, prog *progressWriter) error {
	if int64(len(hdr)) != f.DataOffset {
		return fmt.Errorf("gguf: %s: --in-place: the new header takes %d bytes with its padding, the data section starts at %d; "+
			"an in-place edit must keep every data offset (GGUF cannot describe extra padding), so write a new file instead (drop --in-place): %w",
			path, len(hdr), f.DataOffset, ErrRefused)
	}
	sums, err := hashTensors(f, prog)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	wf, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	if _, err := wf.WriteAt(hdr, 0); err != nil {
		wf.Close()
		return fmt.Errorf("gguf: %s: writing the header: %w", path, err)
	}
	if err := wf.Sync(); err != nil {
		wf.Close()
		return fmt.Errorf("gguf: %s: %w", path, err)
	}
	if err := wf.Close(); err != nil {
		return fmt.Errorf("gguf: %s: %w", path, err)
	}
	rep.BytesWritten = int64(len(hdr))
	g, err := Open(path)
	if err != nil {
		return fmt.Errorf("gguf: %s: reading back after the edit: %w", path, err)
	}
	defer g.Close()
	return compareTensors(f, sums, g, path, prog)
}

// countingWriter counts the bytes that pass.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func rewriteEdited(f *File, path string, opts EditOptions, meta tensor.Metadata, infos []tensor.Info, rep *EditReport, prog *progressWriter) error {
	var (
		out *atomicfile.File
		err error
	)
	if opts.Out == "" {
		// Replacing the input is what was asked; the open handle f keeps
		// reading the old file after the rename. A symlink is followed, so
		// that the link stays a link to the edited file.
		dst, err := filepath.EvalSymlinks(path)
		if err != nil {
			return fmt.Errorf("gguf: %w", err)
		}
		out, err = atomicfile.Create(dst, true)
		if err != nil {
			return fmt.Errorf("gguf: %w", err)
		}
	} else {
		out, err = atomicfile.Create(opts.Out, opts.Force, path)
		if err != nil {
			return fmt.Errorf("gguf: %w", err)
		}
	}
	defer out.Abort()
	bw := bufio.NewWriterSize(out, 1<<20)
	cw := &countingWriter{w: bw}
	w, err := NewWriter(cw, meta, infos)
	if err != nil {
		return err
	}
	sums := make([][sha256.Size]byte, len(f.Tensors))
	h := sha256.New()
	for i := range f.Tensors {
		t := &f.Tensors[i]
		body, err := w.Next(t.Name)
		if err != nil {
			return err
		}
		h.Reset()
		if _, err := io.Copy(io.MultiWriter(body, h, prog), t.Open()); err != nil {
			return fmt.Errorf("gguf: %s: tensor %q: %w", rep.Out, t.Name, err)
		}
		h.Sum(sums[i][:0])
	}
	if err := w.Close(); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("gguf: %s: %w", rep.Out, err)
	}
	rep.BytesWritten = cw.n
	g, err := NewFile(out.File, cw.n)
	if err != nil {
		return fmt.Errorf("gguf: %s: reading back the new file: %w", rep.Out, err)
	}
	if !g.Metadata.Equal(meta) {
		return fmt.Errorf("gguf: %s: the metadata read back differs from what was written", rep.Out)
	}
	if err := compareTensors(f, sums, g, rep.Out, prog); err != nil {
		return err
	}
	if opts.Out == "" {
		// The replaced file keeps its permissions.
		if st, err := os.Stat(path); err == nil {
			out.Chmod(st.Mode().Perm())
		}
	}
	if err := out.Commit(); err != nil {
		return fmt.Errorf("gguf: %s: %w", rep.Out, err)
	}
	return nil
}

// ReadChatTemplate reads a chat template file for KeyChatTemplate.
func ReadChatTemplate(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("gguf: chat template: %w", err)
	}
	if !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0 {
		return "", fmt.Errorf("gguf: chat template %s: not UTF-8 text: %w", path, ErrRefused)
	}
	return string(b), nil
}
