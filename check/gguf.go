package check

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"slices"
	"strconv"

	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/tensor"
)

// Limits of the GGUF walk. They are ggml's, as in formats/gguf.
const (
	ggufMaxStringLen  = 1 << 30
	ggufMaxArrayLen   = 1 << 30
	ggufMaxArrayDepth = 4
	ggufMinKVBytes    = 8 + 1 + 4 + 1
	ggufMinTensorInfo = 8 + 1 + 4 + 8 + 4 + 8
	// ggufMaxWalkDims is how many dimensions the walk reads from a tensor
	// info whose n_dims is out of range before it gives up: past this the
	// count is garbage and the rest of the header cannot be located.
	ggufMaxWalkDims = tensor.MaxDims
	// ggufPaddingCheck caps the padding bytes read to check they are zero.
	ggufPaddingCheck = 1 << 16
)

// ggufWalk reads a GGUF header sequentially, recording findings.
type ggufWalk struct {
	r     *Report
	file  string
	br    *bufio.Reader
	off   int64
	size  int64
	b     [8]byte
	keyAt map[string]int64 // offset of each metadata key (its first appearance)
}

func (w *ggufWalk) remaining() int64 { return w.size - w.off }

// read fills p; a short file is recorded as gguf-truncated and stops the walk.
func (w *ggufWalk) read(p []byte, what string) error {
	if int64(len(p)) > w.remaining() {
		w.r.add("gguf-truncated", w.file, w.off, "", "the file ends inside %s (%d bytes needed, %d left)", what, len(p), w.remaining())
		return errStop
	}
	if _, err := io.ReadFull(w.br, p); err != nil {
		w.r.add("io-error", w.file, w.off, "", "reading %s: %v", what, err)
		return errStop
	}
	w.off += int64(len(p))
	return nil
}

// discard skips n bytes already checked against the remaining size.
func (w *ggufWalk) discard(n int64, what string) error {
	if n > w.remaining() {
		return w.read(make([]byte, w.remaining()+1), what)
	}
	if _, err := w.br.Discard(int(n)); err != nil {
		w.r.add("io-error", w.file, w.off, "", "reading %s: %v", what, err)
		return errStop
	}
	w.off += n
	return nil
}

func (w *ggufWalk) u32(what string) (uint32, error) {
	err := w.read(w.b[:4], what)
	return binary.LittleEndian.Uint32(w.b[:4]), err
}

func (w *ggufWalk) u64(what string) (uint64, error) {
	err := w.read(w.b[:8], what)
	return binary.LittleEndian.Uint64(w.b[:8]), err
}

// str reads a string; when keep is false its bytes are skipped, not stored.
func (w *ggufWalk) str(item, what string, keep bool) (string, error) {
	at := w.off
	n, err := w.u64(what + " length")
	if err != nil {
		return "", err
	}
	if n > ggufMaxStringLen {
		w.r.add("gguf-string-length", w.file, at, item, "%s length %d exceeds the limit of %d bytes", what, n, ggufMaxStringLen)
		return "", errStop
	}
	if n > uint64(w.remaining()) {
		w.r.add("gguf-string-length", w.file, at, item, "%s length %d exceeds the %d bytes left in the file", what, n, w.remaining())
		return "", errStop
	}
	if !keep {
		return "", w.discard(int64(n), what)
	}
	p := make([]byte, n)
	if err := w.read(p, what); err != nil {
		return "", err
	}
	return string(p), nil
}

// value walks one value of kind k, returning scalars (and short strings)
// for the keys the walk interprets; arrays are walked without being stored.
func (w *ggufWalk) value(item string, k tensor.Kind, depth int, badBool *bool) (any, error) {
	at := w.off
	switch k {
	case tensor.KindBool:
		if err := w.read(w.b[:1], "bool value"); err != nil {
			return nil, err
		}
		if w.b[0] > 1 && !*badBool {
			*badBool = true
			w.r.add("gguf-bool", w.file, at, item, "bool value %d is neither 0 nor 1", w.b[0])
		}
		return w.b[0] != 0, nil
	case tensor.KindString:
		return w.str(item, "string value", true)
	case tensor.KindArray:
		return nil, w.array(item, depth+1, badBool)
	}
	n := k.Size()
	if n <= 0 {
		w.r.add("gguf-value-type", w.file, at, item, "invalid value type %d", uint32(k))
		return nil, errStop
	}
	if err := w.read(w.b[:n], k.String()+" value"); err != nil {
		return nil, err
	}
	switch k {
	case tensor.KindUint16:
		return binary.LittleEndian.Uint16(w.b[:2]), nil
	case tensor.KindInt32:
		return int32(binary.LittleEndian.Uint32(w.b[:4])), nil
	case tensor.KindUint32:
		return binary.LittleEndian.Uint32(w.b[:4]), nil
	}
	return nil, nil
}

func (w *ggufWalk) kind(item, what string) (tensor.Kind, error) {
	at := w.off
	k, err := w.u32(what)
	if err != nil {
		return 0, err
	}
	if !tensor.Kind(k).Valid() {
		w.r.add("gguf-value-type", w.file, at, item, "invalid %s %d", what, int32(k))
		return 0, errStop
	}
	return tensor.Kind(k), nil
}

// array walks an array whose header is at the cursor; depth is its nesting
// level (1 for a key's value).
func (w *ggufWalk) array(item string, depth int, badBool *bool) error {
	at := w.off
	elem, err := w.kind(item, "array element type")
	if err != nil {
		return err
	}
	if elem == tensor.KindArray {
		if depth >= ggufMaxArrayDepth {
			w.r.add("gguf-array-depth", w.file, at, item, "arrays nested deeper than %d levels", ggufMaxArrayDepth)
			return errStop
		}
		if depth == 1 {
			w.r.add("gguf-nested-array", w.file, at, item, "array of arrays: ggml refuses these")
		}
	}
	countAt := w.off
	n, err := w.u64("array length")
	if err != nil {
		return err
	}
	if n > ggufMaxArrayLen {
		w.r.add("gguf-array-length", w.file, countAt, item, "array length %d exceeds the limit of %d elements", n, ggufMaxArrayLen)
		return errStop
	}
	per := int64(elem.Size())
	switch elem {
	case tensor.KindString:
		per = 8
	case tensor.KindArray:
		per = 12
	}
	if n > uint64(w.remaining()/per) {
		w.r.add("gguf-array-length", w.file, countAt, item, "array of %d %s elements needs at least %d bytes each, %d bytes left", n, elem, per, w.remaining())
		return errStop
	}
	switch elem {
	case tensor.KindString:
		for i := uint64(0); i < n; i++ {
			if _, err := w.str(item, "string element "+strconv.FormatUint(i, 10), false); err != nil {
				return err
			}
		}
	case tensor.KindArray:
		for i := uint64(0); i < n; i++ {
			if err := w.array(item, depth+1, badBool); err != nil {
				return err
			}
		}
	case tensor.KindBool:
		for i := uint64(0); i < n; i++ {
			if _, err := w.value(item, tensor.KindBool, depth, badBool); err != nil {
				return err
			}
		}
	default:
		return w.discard(int64(n)*per, "array data")
	}
	return nil
}

// ggEntry is a tensor info as the walk read it.
type ggEntry struct {
	info      tensor.Info
	at        int64 // offset of the tensor info
	offsetPos int64
	rel       uint64
	usable    bool // dtype and shape valid, so Size is known
}

// ggufResult is what checkGGUFFile learned, for split-set checks.
type ggufResult struct {
	names []string
	meta  map[string]any // scalar split.* values
}

// checkGGUFFile checks one GGUF file. res, when not nil, receives the tensor
// names and split keys.
func checkGGUFFile(r *Report, path string, res *ggufResult) error {
	f, size, err := r.openFile(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := &ggufWalk{r: r, file: path, size: size, br: bufio.NewReaderSize(io.NewSectionReader(f, 0, size), 1<<16)}
	entries, dataOff, align, meta, err := w.header()
	if res != nil {
		res.meta = meta
		for _, e := range entries {
			res.names = append(res.names, e.info.Name)
		}
	}
	if err != nil {
		return nil
	}
	infos := w.layout(f, entries, dataOff, align)
	gf, err := gguf.NewFile(f, size)
	if err != nil && r.errorsIn(path) == 0 {
		var fe *tensor.FormatError
		off := int64(-1)
		if errors.As(err, &fe) {
			off = fe.Offset
		}
		r.add("gguf-rejected", path, off, "", "%v", err)
	}
	if err == nil {
		checkVocab(r, path, gf, w.keyAt, entries)
	}
	scanAll(r, path, f, infos)
	return nil
}

// header walks the fixed header, the metadata and the tensor infos.
func (w *ggufWalk) header() (entries []ggEntry, dataOff, align int64, meta map[string]any, err error) {
	meta = map[string]any{}
	var magic [4]byte
	if err = w.read(magic[:], "the magic"); err != nil {
		return
	}
	if string(magic[:]) != gguf.Magic {
		w.r.add("gguf-version", w.file, 0, "", "magic %q: a byte-swapped GGUF magic", magic[:])
		err = errStop
		return
	}
	version, err := w.u32("the version")
	if err != nil {
		return
	}
	switch {
	case version&0xFFFF == 0 && version != 0:
		w.r.add("gguf-big-endian", w.file, 4, "", "version reads as %#x: a big-endian GGUF", version)
		err = errStop
	case version == 0 || version == 1 || version > gguf.Version:
		w.r.add("gguf-version", w.file, 4, "", "version %d: tfconv reads versions 2 and 3", version)
		err = errStop
	}
	if err != nil {
		return
	}
	nT, err := w.u64("the tensor count")
	if err != nil {
		return
	}
	nKV, err := w.u64("the metadata count")
	if err != nil {
		return
	}
	if nKV > uint64(w.remaining()/ggufMinKVBytes) {
		w.r.add("gguf-count", w.file, 16, "", "metadata count %d cannot fit in the %d bytes left", nKV, w.remaining())
		err = errStop
		return
	}
	if nT > uint64(w.remaining()/ggufMinTensorInfo) {
		w.r.add("gguf-count", w.file, 8, "", "tensor count %d cannot fit in the %d bytes left", nT, w.remaining())
		err = errStop
		return
	}
	align = gguf.DefaultAlignment
	seen := map[string]bool{}
	for i := uint64(0); i < nKV; i++ {
		at := w.off
		var key string
		if key, err = w.str("", "key "+strconv.FormatUint(i, 10), true); err != nil {
			return
		}
		item := keyItem(key)
		if key == "" {
			w.r.add("gguf-empty-key", w.file, at, "", "key %d is empty", i)
		}
		if seen[key] && key != "" {
			w.r.add("gguf-duplicate-key", w.file, at, item, "appears twice (ggml refuses the file, gguf-py keeps the last)")
		}
		dup := seen[key]
		seen[key] = true
		if !dup {
			if w.keyAt == nil {
				w.keyAt = map[string]int64{}
			}
			w.keyAt[key] = at
		}
		typeAt := w.off
		var k tensor.Kind
		if k, err = w.kind(item, "value type"); err != nil {
			return
		}
		var v any
		badBool := false
		if v, err = w.value(item, k, 0, &badBool); err != nil {
			return
		}
		if dup {
			continue
		}
		if k != tensor.KindArray && k != tensor.KindString {
			meta[key] = v
		}
		if key == gguf.KeyAlignment {
			a, ok := v.(uint32)
			switch {
			case !ok:
				w.r.add("gguf-alignment", w.file, typeAt, item, "must be a uint32, not %s", k)
			case a == 0 || a&(a-1) != 0:
				w.r.add("gguf-alignment", w.file, typeAt+4, item, "alignment %d is not a power of two", a)
			default:
				align = int64(a)
			}
		}
	}
	names := map[string]bool{}
	for i := uint64(0); i < nT; i++ {
		e := ggEntry{at: w.off}
		var name string
		if name, err = w.str("", "tensor name "+strconv.FormatUint(i, 10), true); err != nil {
			return
		}
		item := tensorItem(name)
		switch {
		case name == "":
			w.r.add("gguf-tensor-name", w.file, e.at, item, "tensor name is empty")
		case len(name) >= gguf.MaxNameLen:
			w.r.add("gguf-tensor-name", w.file, e.at, item, "tensor name is %d bytes long, the limit is %d", len(name), gguf.MaxNameLen-1)
		}
		for j := 0; j < len(name); j++ {
			if name[j] == 0 {
				w.r.add("gguf-tensor-name", w.file, e.at, item, "tensor name has a NUL byte at %d", j)
				break
			}
		}
		if names[name] {
			w.r.add("dup-tensor-name", w.file, e.at, item, "appears twice in the tensor infos")
		}
		names[name] = true
		dimsAt := w.off
		var nd uint32
		if nd, err = w.u32("the dimension count"); err != nil {
			return
		}
		e.usable = true
		if nd < 1 || nd > gguf.MaxDims {
			w.r.add("gguf-dims", w.file, dimsAt, item, "has %d dimensions, want 1 to %d", nd, gguf.MaxDims)
			e.usable = false
			if nd > ggufMaxWalkDims {
				err = errStop
				return
			}
		}
		ne := make([]int64, nd)
		for j := range ne {
			var x uint64
			if x, err = w.u64("a dimension"); err != nil {
				return
			}
			ne[j] = int64(x)
			if ne[j] < 0 && e.usable {
				w.r.add("gguf-shape", w.file, dimsAt+4+8*int64(j), item, "dimension %d is negative (%d)", j, ne[j])
				e.usable = false
			}
			if ne[j] == 0 && e.usable {
				// Still usable: the data (none) can be located and the
				// rest of the layout checked.
				w.r.add("gguf-zero-dim", w.file, dimsAt+4+8*int64(j), item, "ne[%d] is 0: ggml's loader divides by ne[1..3] and dies", j)
			}
		}
		shape := tensor.Shape(ne).Reversed()
		if _, nerr := shape.NumElements(); nerr != nil && e.usable {
			w.r.add("gguf-shape", w.file, dimsAt+4, item, "ne %v: element count overflows int64", ne)
			e.usable = false
		}
		typeAt := w.off
		var id uint32
		if id, err = w.u32("the tensor type"); err != nil {
			return
		}
		dt, ok := tensor.DTypeFromGGML(id)
		if !ok {
			w.r.add("gguf-type", w.file, typeAt, item, "ggml type id %d is not a current ggml type", id)
			e.usable = false
		}
		if e.usable {
			if bs := dt.BlockSize(); ne[0]%bs != 0 {
				w.r.add("gguf-block-size", w.file, dimsAt+4, item, "row length ne[0]=%d is not a multiple of the %s block size %d", ne[0], dt, bs)
				e.usable = false
			} else if n, serr := dt.ShapeBytes(shape); serr != nil {
				w.r.add("gguf-shape", w.file, dimsAt+4, item, "%s %v: %v", dt, ne, serr)
				e.usable = false
			} else {
				e.info.Size = n
			}
		}
		e.offsetPos = w.off
		if e.rel, err = w.u64("the data offset"); err != nil {
			return
		}
		e.info.Name, e.info.DType, e.info.Shape = name, dt, shape
		entries = append(entries, e)
	}
	dataOff = w.off
	if nT > 0 {
		p, aerr := tensor.AlignUp(w.off, align)
		if aerr != nil || p > w.size {
			w.r.add("gguf-truncated", w.file, w.off, "", "the data section (header end %d padded to %d) starts past the end of the %d-byte file", w.off, align, w.size)
			err = errStop
			return
		}
		dataOff = p
		w.checkZeros(w.off, dataOff, "the header's padding")
	}
	return entries, dataOff, align, meta, nil
}

// checkZeros records a gguf-padding warning when [from, to) holds a
// non-zero byte (looking at no more than ggufPaddingCheck bytes).
func (w *ggufWalk) checkZeros(from, to int64, what string) {
	n := min(to-from, ggufPaddingCheck)
	if n <= 0 {
		return
	}
	p := make([]byte, n)
	if err := w.read(p, what); err != nil {
		return
	}
	for i, c := range p {
		if c != 0 {
			w.r.add("gguf-padding", w.file, from+int64(i), "", "%s holds byte %#02x", what, c)
			return
		}
	}
}

// layout checks every tensor's placement and returns those whose data can
// be scanned.
func (w *ggufWalk) layout(f io.ReaderAt, entries []ggEntry, dataOff, align int64) []tensor.Info {
	type placed struct {
		e          *ggEntry
		begin, end int64 // relative to dataOff
		idx        int
	}
	var ps []placed
	var infos []tensor.Info
	var next int64 // where ggml expects the next tensor
	inOrder := true
	for i := range entries {
		e := &entries[i]
		item := tensorItem(e.info.Name)
		if e.rel%uint64(align) != 0 {
			w.r.add("gguf-misaligned", w.file, e.offsetPos, item, "data offset %d is not a multiple of the alignment %d", e.rel, align)
		}
		if !e.usable {
			inOrder = false
			continue
		}
		abs, err := tensor.AddInt64(dataOff, int64(min(e.rel, 1<<63-1)))
		end, err2 := tensor.AddInt64(abs, e.info.Size)
		if err != nil || err2 != nil || e.rel > 1<<62 || end > w.size {
			w.r.add("gguf-out-of-bounds", w.file, e.offsetPos, item, "data at offset %d + %d bytes runs past the end of the %d-byte file", e.rel, e.info.Size, w.size)
			inOrder = false
			continue
		}
		if int64(e.rel) != next {
			inOrder = false
		}
		padded, _ := tensor.AlignUp(e.info.Size, align)
		next = int64(e.rel) + padded
		e.info.Offset = abs
		ps = append(ps, placed{e: e, begin: int64(e.rel), end: int64(e.rel) + e.info.Size, idx: i})
		infos = append(infos, e.info)
	}
	byOffset := slices.Clone(ps)
	slices.SortStableFunc(byOffset, func(a, b placed) int {
		if a.begin != b.begin {
			return cmpInt64(a.begin, b.begin)
		}
		return cmpInt64(a.end, b.end)
	})
	var cursor int64
	var prev *ggEntry
	holeOrOverlap := false
	for _, p := range byOffset {
		item := tensorItem(p.e.info.Name)
		padded, _ := tensor.AlignUp(cursor, align)
		switch {
		case p.begin < cursor:
			w.r.add("gguf-overlap", w.file, p.e.offsetPos, item, "data [%d,%d) overlaps tensor %q, which ends at %d", p.begin, p.end, prev.info.Name, cursor)
			holeOrOverlap = true
		case p.begin > padded:
			after := "the start of the data section"
			if prev != nil {
				after = "tensor " + strconv.Quote(prev.info.Name)
			}
			w.r.add("gguf-hole", w.file, dataOff+padded, item, "data-section bytes [%d,%d) between %s and this tensor belong to no tensor", padded, p.begin, after)
			holeOrOverlap = true
		}
		if p.end >= cursor {
			cursor, prev = p.end, p.e
		}
	}
	if !inOrder && !holeOrOverlap && len(ps) == len(entries) {
		w.r.add("gguf-order", w.file, -1, "", "tensor data is not laid out in tensor-info order, each right after the previous one's padding")
	}
	end := dataOff + cursor
	if len(entries) == 0 {
		end = dataOff
	}
	if pe, err := tensor.AlignUp(end, align); err == nil && w.size > pe {
		what := "the metadata"
		if prev != nil {
			what = "tensor " + strconv.Quote(prev.info.Name) + " and its padding"
		}
		w.r.checkTrailing("gguf-trailing-bytes", w.file, f, pe, w.size, what)
	}
	return infos
}

// checkGGUFSplit checks every shard of a split set and their split keys.
func checkGGUFSplit(r *Report, path string) error {
	prefix, i, n, _ := gguf.ParseSplitName(path)
	if n < 1 || i < 1 || i > n {
		r.Files = append(r.Files, path)
		r.add("gguf-split", path, -1, "", "shard number %d of %d is out of range", i, n)
		return nil
	}
	seen := map[string]string{}
	var total int64 = -1
	var count int64
	for i := 0; i < n; i++ {
		p := gguf.SplitPath(prefix, i, n)
		res := &ggufResult{}
		if err := checkGGUFFile(r, p, res); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				r.Files = append(r.Files, p)
				r.add("gguf-split", p, -1, "", "shard %d of %d is missing", i+1, n)
				continue
			}
			return err
		}
		for _, name := range res.names {
			if prev, dup := seen[name]; dup && prev != p {
				r.add("dup-tensor-name", p, -1, tensorItem(name), "also in %s", prev)
			}
			seen[name] = p
		}
		count += int64(len(res.names))
		if v, ok := res.meta[gguf.KeySplitNo].(uint16); !ok || int(v) != i {
			r.add("gguf-split", p, -1, keyItem(gguf.KeySplitNo), "is %v, want uint16 %d", res.meta[gguf.KeySplitNo], i)
		}
		if v, ok := res.meta[gguf.KeySplitCount].(uint16); !ok || int(v) != n {
			r.add("gguf-split", p, -1, keyItem(gguf.KeySplitCount), "is %v, want uint16 %d", res.meta[gguf.KeySplitCount], n)
		}
		if v, ok := res.meta[gguf.KeySplitTensorsCount].(int32); ok {
			if total >= 0 && int64(v) != total {
				r.add("gguf-split", p, -1, keyItem(gguf.KeySplitTensorsCount), "is %d, shard 1 says %d", v, total)
			}
			if total < 0 {
				total = int64(v)
			}
		} else if i == 0 {
			r.add("gguf-split", p, -1, keyItem(gguf.KeySplitTensorsCount), "missing or not an int32")
		}
	}
	if total >= 0 && total != count {
		r.add("gguf-split", gguf.SplitPath(prefix, 0, n), -1, keyItem(gguf.KeySplitTensorsCount), "is %d, but the shards hold %d tensors", total, count)
	}
	return nil
}

// ggufSpecialIDs are the tokenizer.ggml.*_token_id keys llama.cpp reads.
var ggufSpecialIDs = []string{"bos", "eos", "eot", "eom", "unknown", "separator", "padding", "cls", "mask",
	"prefix", "suffix", "middle", "fim_pre", "fim_suf", "fim_mid", "fim_pad", "fim_rep", "fim_sep"}

// checkVocab compares the vocabulary with what llama.cpp sizes from it: it
// takes n_vocab from tokenizer.ggml.tokens, reads one score and one type per
// token, requires token_embd and output to have n_vocab rows, and ignores
// special ids past the vocabulary (with a warning).
func checkVocab(r *Report, path string, f *gguf.File, keyAt map[string]int64, entries []ggEntry) {
	v, ok := f.Metadata.Get("tokenizer.ggml.tokens")
	if !ok {
		return
	}
	toks, ok := v.Array()
	if !ok {
		return
	}
	n := int64(toks.Len())
	for _, key := range []string{"tokenizer.ggml.scores", "tokenizer.ggml.token_type"} {
		v, ok := f.Metadata.Get(key)
		if !ok {
			continue
		}
		if a, ok := v.Array(); !ok || int64(a.Len()) != n {
			r.add("gguf-vocab-arrays", path, keyAt[key], keyItem(key), "has %d entries for %d tokens: llama.cpp reads one per token, past the end of the array",
				a.Len(), n)
		}
	}
	for _, e := range entries {
		switch e.info.Name {
		case "token_embd.weight", "output.weight":
		default:
			continue
		}
		if len(e.info.Shape) == 2 && e.info.Shape[0] != n {
			r.add("gguf-vocab-rows", path, e.at, tensorItem(e.info.Name), "has %d rows for the %d tokens of tokenizer.ggml.tokens: llama.cpp refuses the shape (a vocab_size past the tokenizer needs [PAD] tokens, as convert_hf_to_gguf.py adds)",
				e.info.Shape[0], n)
		}
	}
	for _, kind := range ggufSpecialIDs {
		key := "tokenizer.ggml." + kind + "_token_id"
		v, ok := f.Metadata.Get(key)
		if !ok {
			continue
		}
		if id, ok := v.Int(); ok && (id < 0 || id >= n) {
			r.add("gguf-special-id", path, keyAt[key], keyItem(key), "is %d, outside the %d tokens: llama.cpp ignores it", id, n)
		}
	}
}
