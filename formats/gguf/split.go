package gguf

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/tfconv/tfconv/tensor"
)

// The keys llama.cpp's gguf-split writes into every shard, with the types its
// loader (llama-model-loader.cpp) insists on.
const (
	KeySplitNo           = "split.no"            // uint16: this shard's index, from 0
	KeySplitCount        = "split.count"         // uint16: number of shards
	KeySplitTensorsCount = "split.tensors.count" // int32: tensors in all shards together
)

// splitName matches llama_split_path's "%s-%05d-of-%05d.gguf"; the counts are
// uint16, so five digits always suffice.
var splitName = regexp.MustCompile(`^(.*)-([0-9]{5})-of-([0-9]{5})\.gguf$`)

// ParseSplitName reports whether path names a shard of a split set
// (<prefix>-00002-of-00003.gguf) and returns the prefix, the shard number
// (from 1) and the count as written.
func ParseSplitName(path string) (prefix string, no, count int, ok bool) {
	m := splitName.FindStringSubmatch(path)
	if m == nil {
		return "", 0, 0, false
	}
	no, _ = strconv.Atoi(m[2])
	count, _ = strconv.Atoi(m[3])
	return m[1], no, count, true
}

// SplitPath returns the name of shard i (from 0) of n, as llama.cpp names it.
func SplitPath(prefix string, i, n int) string {
	return fmt.Sprintf("%s-%05d-of-%05d.gguf", prefix, i+1, n)
}

// Split is a model stored as one or more GGUF shards.
type Split struct {
	Files    []*File         // shards in order
	Tensors  []*Tensor       // every shard's tensors, in shard then file order
	Metadata tensor.Metadata // the first shard's metadata, which holds the model's keys
}

// OpenSplit opens a split set given the path of any of its shards
// (<prefix>-00002-of-00003.gguf), or a plain single file. It checks each
// shard's split.no and split.count, the total split.tensors.count, and that no
// tensor appears twice; missing shards are all named in one error that
// matches fs.ErrNotExist.
func OpenSplit(path string) (*Split, error) {
	return OpenSplitWith(path, Open)
}

// OpenSplitWith is OpenSplit with the shards opened by open (given each
// shard's path, built from path as SplitPath does), for shards that are not
// local files (over HTTP). An open error matching fs.ErrNotExist counts the
// shard as missing; other errors are returned as they are.
func OpenSplitWith(path string, open func(path string) (*File, error)) (*Split, error) {
	m := splitName.FindStringSubmatch(path)
	if m == nil {
		f, err := open(path)
		if err != nil {
			return nil, err
		}
		if n, ok := f.Metadata.Int(KeySplitCount); ok && n > 1 {
			f.Close()
			return nil, &tensor.FormatError{Format: "gguf", File: path, Offset: -1, Item: "key " + strconv.Quote(KeySplitCount),
				Msg: fmt.Sprintf("file is shard of a set of %d, but its name does not end in -NNNNN-of-NNNNN.gguf", n)}
		}
		s := &Split{Files: []*File{f}, Metadata: f.Metadata}
		for i := range f.Tensors {
			s.Tensors = append(s.Tensors, &f.Tensors[i])
		}
		return s, nil
	}
	prefix := m[1]
	n, _ := strconv.Atoi(m[3])
	if i, _ := strconv.Atoi(m[2]); n < 1 || i < 1 || i > n {
		return nil, fmt.Errorf("gguf: %s: shard number %d of %d is out of range", path, i, n)
	}
	s := &Split{}
	var missing []string
	for i := 0; i < n; i++ {
		p := SplitPath(prefix, i, n)
		f, err := open(p)
		if errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, p)
			continue
		}
		if err != nil {
			s.Close()
			return nil, err
		}
		s.Files = append(s.Files, f)
	}
	if len(missing) > 0 {
		s.Close()
		return nil, fmt.Errorf("gguf: split set %s of %d shards is missing %s: %w", SplitPath(prefix, 0, n), n, strings.Join(missing, ", "), fs.ErrNotExist)
	}
	seen := map[string]string{}
	total := int64(-1)
	for i, f := range s.Files {
		p := SplitPath(prefix, i, n)
		bad := func(key, format string, args ...any) error {
			s.Close()
			return &tensor.FormatError{Format: "gguf", File: p, Offset: -1, Item: "key " + strconv.Quote(key), Msg: fmt.Sprintf(format, args...)}
		}
		if no, err := splitKey[uint16](f, KeySplitNo); err != nil {
			return nil, bad(KeySplitNo, "%v", err)
		} else if int(no) != i {
			return nil, bad(KeySplitNo, "is %d, want %d for shard %d", no, i, i+1)
		}
		if cnt, err := splitKey[uint16](f, KeySplitCount); err != nil {
			return nil, bad(KeySplitCount, "%v", err)
		} else if int(cnt) != n {
			return nil, bad(KeySplitCount, "is %d, but the name says %d", cnt, n)
		}
		// llama.cpp reads the total from the first shard; gguf-split
		// writes it into all of them, and they must agree.
		if tc, err := splitKey[int32](f, KeySplitTensorsCount); err == nil {
			if total >= 0 && int64(tc) != total {
				return nil, bad(KeySplitTensorsCount, "is %d, shard 1 says %d", tc, total)
			}
			total = int64(tc)
		} else if i == 0 {
			return nil, bad(KeySplitTensorsCount, "%v", err)
		}
		for j := range f.Tensors {
			t := &f.Tensors[j]
			if prev, dup := seen[t.Name]; dup {
				s.Close()
				return nil, &tensor.FormatError{Format: "gguf", File: p, Offset: -1, Item: "tensor " + strconv.Quote(t.Name), Msg: "also in " + prev}
			}
			seen[t.Name] = p
			s.Tensors = append(s.Tensors, t)
		}
	}
	if int64(len(s.Tensors)) != total {
		s.Close()
		return nil, &tensor.FormatError{Format: "gguf", File: SplitPath(prefix, 0, n), Offset: -1, Item: "key " + strconv.Quote(KeySplitTensorsCount),
			Msg: fmt.Sprintf("is %d, but the shards hold %d tensors", total, len(s.Tensors))}
	}
	s.Metadata = s.Files[0].Metadata
	return s, nil
}

// splitKey returns a split.* key's value, which must have type T.
func splitKey[T uint16 | int32](f *File, key string) (T, error) {
	v, ok := f.Metadata.Get(key)
	if !ok {
		return 0, errors.New("missing")
	}
	x, ok := v.Any().(T)
	if !ok {
		var zero T
		return 0, fmt.Errorf("is a %s, want %T", v.Kind(), zero)
	}
	return x, nil
}

// Tensor returns the named tensor from whichever shard holds it.
func (s *Split) Tensor(name string) (*Tensor, bool) {
	for _, t := range s.Tensors {
		if t.Name == name {
			return t, true
		}
	}
	return nil, false
}

// Close closes every shard.
func (s *Split) Close() error {
	var first error
	for _, f := range s.Files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// SplitWriter writes a model as shards of at most about maxBytes of tensor
// data each, laid out as llama.cpp's gguf-split --split-max-size does: the
// first shard carries all metadata, every shard carries split.no,
// split.tensors.count and split.count (appended in that order, after any
// split.* keys in the input are dropped), and a shard is started when the
// next tensor's data, padded to 32 bytes, would take the current one past
// maxBytes. A tensor larger than maxBytes gets a shard of its own
// (gguf-split would give up). Byte-identical to gguf-split c392e509
// (cmd/tfconv TestQuantizeKeepSplit splits with it).
//
// Shards are created through create in order, each when its first tensor is
// reached, and closed when finished, so the caller controls where they go
// (temporary files renamed on success, for example).
type SplitWriter struct {
	prefix string
	create func(name string) (io.WriteCloser, error)
	meta   tensor.Metadata
	shards [][]tensor.Info
	shard  int // index of the open shard, -1 before the first
	w      *Writer
	wc     io.WriteCloser
	next   int // index into the flat tensor order
	order  []int
	end    int // the flat index after the last tensor to write (Range)
	err    error
	// ggufSplit: gguf-split's keys (a set of one shard states them too,
	// split.count last); otherwise llama-quantize --keep-split's
	// (NewSplitWriterShards).
	ggufSplit bool
	// ranged: Range was called with shards [rangeFirst, rangeEnd).
	ranged               bool
	rangeFirst, rangeEnd int
}

// NewSplitWriter plans the shards; nothing is created until the first Next
// (or Close, for a model without tensors).
func NewSplitWriter(prefix string, maxBytes int64, meta tensor.Metadata, tensors []tensor.Info, create func(name string) (io.WriteCloser, error)) (*SplitWriter, error) {
	shards, err := PlanSplit(maxBytes, tensors)
	if err != nil {
		return nil, err
	}
	return newSplitWriter(prefix, meta, shards, create, true)
}

// PlanSplit divides tensors, in order, into the shards of a split set of at
// most about maxBytes of tensor data each, as gguf-split --split-max-size
// does: a shard is started when the next tensor's data, padded to 32 bytes,
// would take the current one past maxBytes; a tensor larger than maxBytes
// gets a shard of its own. It is the one planner of a split GGUF's layout:
// convert, quantize and tfconv plan all call it (through NewSplitWriter).
func PlanSplit(maxBytes int64, tensors []tensor.Info) ([][]tensor.Info, error) {
	if maxBytes <= 0 {
		return nil, fmt.Errorf("gguf: split size %d is not positive", maxBytes)
	}
	var shards [][]tensor.Info
	var cur []tensor.Info
	var curBytes int64
	for _, t := range tensors {
		size, err := t.DType.ShapeBytes(t.Shape)
		if err != nil {
			return nil, fmt.Errorf("gguf: tensor %q: %w", t.Name, err)
		}
		padded, err := tensor.AlignUp(size, DefaultAlignment)
		if err != nil {
			return nil, fmt.Errorf("gguf: tensor %q: %w", t.Name, err)
		}
		if len(cur) > 0 && (curBytes+padded > maxBytes || curBytes+padded < 0) {
			shards = append(shards, cur)
			cur, curBytes = nil, 0
		}
		cur = append(cur, t)
		curBytes += padded
	}
	return append(shards, cur), nil
}

// NewSplitWriterShards is NewSplitWriter with the shards given, as
// llama-quantize --keep-split writes its input's shards: shards[i] are the
// tensors of shard i, in order; a single shard is named SplitPath(prefix,
// 0, 1) but carries no split.* keys (gguf-split writes them even then).
func NewSplitWriterShards(prefix string, meta tensor.Metadata, shards [][]tensor.Info, create func(name string) (io.WriteCloser, error)) (*SplitWriter, error) {
	return newSplitWriter(prefix, meta, shards, create, false)
}

func newSplitWriter(prefix string, meta tensor.Metadata, shards [][]tensor.Info, create func(name string) (io.WriteCloser, error), ggufSplit bool) (*SplitWriter, error) {
	if len(shards) == 0 {
		shards = [][]tensor.Info{nil}
	}
	if len(shards) > math.MaxUint16 {
		return nil, fmt.Errorf("gguf: %d shards do not fit split.count", len(shards))
	}
	var order []int
	for i, sh := range shards {
		for range sh {
			order = append(order, i)
		}
	}
	if len(order) > math.MaxInt32 {
		return nil, fmt.Errorf("gguf: %d tensors do not fit split.tensors.count", len(order))
	}
	var base tensor.Metadata
	for _, kv := range meta {
		if kv.Key != KeySplitNo && kv.Key != KeySplitCount && kv.Key != KeySplitTensorsCount {
			base = append(base, kv)
		}
	}
	s := &SplitWriter{prefix: prefix, create: create, meta: base, shards: shards, shard: -1, order: order, end: len(order), ggufSplit: ggufSplit}
	// Validate every shard's header now, so that a bad input fails before
	// any file exists.
	for i := range shards {
		if _, _, _, err := encodeHeader(s.shardMeta(i, len(order)), shards[i]); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Names returns the file names of all shards, in order.
func (s *SplitWriter) Names() []string {
	out := make([]string, len(s.shards))
	for i := range out {
		out[i] = SplitPath(s.prefix, i, len(s.shards))
	}
	return out
}

// Shard is one file of a planned split set.
type Shard struct {
	Name string
	// Tensors are the shard's, with Offset (from the start of its data
	// section) and Size as the file holds them.
	Tensors []tensor.Info
	// Size is the file's size in bytes: header, padding, data.
	Size int64
	// HeaderSHA256 is the sha256 of the header (metadata and tensor
	// infos, with its padding): two plans with the same one lay out the
	// same shard.
	HeaderSHA256 [32]byte
}

// Shards returns every shard as it will be written: name, tensors and
// file size, exact to the byte.
func (s *SplitWriter) Shards() []Shard {
	out := make([]Shard, len(s.shards))
	for i := range s.shards {
		// newSplitWriter encoded every header already: no error here.
		hdr, ts, align, _ := encodeHeader(s.shardMeta(i, len(s.order)), s.shards[i])
		size := int64(len(hdr))
		for _, t := range ts {
			padded, _ := tensor.AlignUp(t.Size, align)
			size += padded
		}
		out[i] = Shard{Name: SplitPath(s.prefix, i, len(s.shards)), Tensors: ts, Size: size, HeaderSHA256: sha256.Sum256(hdr)}
	}
	return out
}

// FileSize is the size in bytes of the GGUF file NewWriter writes for meta
// and tensors, and the tensors with their offsets and sizes.
func FileSize(meta tensor.Metadata, tensors []tensor.Info) (int64, []tensor.Info, error) {
	hdr, ts, align, err := encodeHeader(meta, tensors)
	if err != nil {
		return 0, nil, err
	}
	size := int64(len(hdr))
	for _, t := range ts {
		padded, _ := tensor.AlignUp(t.Size, align)
		size += padded
	}
	return size, ts, nil
}

// Range restricts the writer to shards [first, end) (from 0): only their
// files are created, and Next takes only their tensors, in order, starting
// with the first tensor of shard first; Close checks that they were all
// written. Every shard is still laid out, named and keyed as in the whole
// set, so the files are byte-identical to the same shards of a run that
// writes them all (tfconv convert --part, --resume). Call it before Next.
func (s *SplitWriter) Range(first, end int) error {
	if first < 0 || end > len(s.shards) || first > end {
		return fmt.Errorf("gguf: shard range [%d, %d) is not within the %d shards", first, end, len(s.shards))
	}
	if s.next != 0 || s.shard >= 0 {
		return errors.New("gguf: Range after the first Next")
	}
	lo, hi := 0, 0
	for i, sh := range s.shards {
		if i < first {
			lo += len(sh)
		}
		if i < end {
			hi += len(sh)
		}
	}
	s.next, s.end = lo, hi
	s.rangeFirst, s.rangeEnd, s.ranged = first, end, true
	return nil
}

// Pending lists the tensors Next will take, in order: all of them, or
// those of the shards Range chose.
func (s *SplitWriter) Pending() []tensor.Info {
	var out []tensor.Info
	k := 0
	for _, sh := range s.shards {
		for _, t := range sh {
			if k >= s.next && k < s.end {
				out = append(out, t)
			}
			k++
		}
	}
	return out
}

func (s *SplitWriter) shardMeta(i, nTensors int) tensor.Metadata {
	var m tensor.Metadata
	if i == 0 {
		m = append(m, s.meta...)
	}
	no := tensor.KV{Key: KeySplitNo, Value: tensor.Uint16(uint16(i))}
	count := tensor.KV{Key: KeySplitCount, Value: tensor.Uint16(uint16(len(s.shards)))}
	total := tensor.KV{Key: KeySplitTensorsCount, Value: tensor.Int32(int32(nTensors))}
	if !s.ggufSplit {
		// llama-quantize --keep-split: set once each, in this order, and
		// not at all for a single shard.
		if len(s.shards) == 1 {
			return m
		}
		return append(m, no, count, total)
	}
	// gguf-split sets split.count to a placeholder between the two others
	// and sets it again once the shards are counted, which moves it last.
	return append(m, no, total, count)
}

// finishShard closes the open shard's Writer and file.
func (s *SplitWriter) finishShard() error {
	if s.w == nil {
		return nil
	}
	err := s.w.Close()
	if cerr := s.wc.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("gguf: %s: %w", SplitPath(s.prefix, s.shard, len(s.shards)), cerr)
	}
	s.w, s.wc = nil, nil
	return err
}

// openShard finishes the current shard and starts shard i.
func (s *SplitWriter) openShard(i int) error {
	if err := s.finishShard(); err != nil {
		return err
	}
	name := SplitPath(s.prefix, i, len(s.shards))
	wc, err := s.create(name)
	if err != nil {
		return fmt.Errorf("gguf: creating %s: %w", name, err)
	}
	w, err := NewWriter(wc, s.shardMeta(i, len(s.order)), s.shards[i])
	if err != nil {
		wc.Close()
		return err
	}
	s.shard, s.w, s.wc = i, w, wc
	return nil
}

// Next returns a writer for the named tensor's data, which must be the next
// one in the declared order, opening its shard when needed.
func (s *SplitWriter) Next(name string) (io.Writer, error) {
	if s.err != nil {
		return nil, s.err
	}
	if s.next >= s.end {
		return nil, fmt.Errorf("gguf: Next(%q): all %d declared tensors are written", name, s.end)
	}
	if i := s.order[s.next]; i != s.shard {
		if s.err = s.openShard(i); s.err != nil {
			return nil, s.err
		}
	}
	w, err := s.w.Next(name)
	if err != nil {
		return nil, err
	}
	s.next++
	return w, nil
}

// Close finishes and closes the last shard. It fails if a declared tensor
// was not written in full.
func (s *SplitWriter) Close() error {
	if s.err != nil {
		return s.err
	}
	if s.shard < 0 && len(s.order) == 0 && (!s.ranged || s.rangeFirst == 0 && s.rangeEnd > 0) {
		if s.err = s.openShard(0); s.err != nil {
			return s.err
		}
	}
	if s.next < s.end {
		s.finishShard()
		s.err = fmt.Errorf("gguf: Close: %d of %d tensors not written", s.end-s.next, s.end)
		return s.err
	}
	s.err = s.finishShard()
	if s.err == nil {
		s.err = errors.New("gguf: SplitWriter is closed")
		return nil
	}
	return s.err
}
