package safetensors

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"

	"github.com/tfconv/tfconv/formats/shardindex"
	"github.com/tfconv/tfconv/tensor"
)

// IndexSuffix is appended to the base name to name a sharded checkpoint's
// index (model.safetensors.index.json).
const IndexSuffix = ".safetensors.index.json"

// ShardPlan says which file each tensor goes to.
type ShardPlan struct {
	Files  []string       // shard file names, in order
	Assign map[string]int // tensor name -> index into Files
}

// PlanShards splits tensors, kept in the given order, into shards of at most
// maxShardBytes data bytes (the header is not counted, as in transformers).
// A tensor larger than the limit gets a shard of its own. With one shard the
// file is base+".safetensors"; with n it is base-0000i-of-0000n.safetensors.
func PlanShards(base string, maxShardBytes int64, tensors []tensor.Info) (ShardPlan, error) {
	if err := checkBase(base); err != nil {
		return ShardPlan{}, err
	}
	if maxShardBytes <= 0 {
		return ShardPlan{}, fmt.Errorf("safetensors: max shard size %d is not positive", maxShardBytes)
	}
	assign := make(map[string]int, len(tensors))
	shard, used, count := 0, int64(0), 0 // count: tensors in the current shard
	for _, t := range tensors {
		size, err := t.DType.ShapeBytes(t.Shape)
		if err != nil {
			return ShardPlan{}, fmt.Errorf("safetensors: tensor %q: %w", t.Name, err)
		}
		if _, dup := assign[t.Name]; dup {
			return ShardPlan{}, fmt.Errorf("safetensors: tensor %q: declared twice", t.Name)
		}
		if count > 0 && size > maxShardBytes-used {
			shard, used, count = shard+1, 0, 0
		}
		assign[t.Name] = shard
		used += size
		count++
		if size > maxShardBytes {
			// Alone in its shard: the next tensor starts a new one.
			used = maxShardBytes
		}
	}
	n := shard + 1
	plan := ShardPlan{Assign: assign}
	if n == 1 {
		plan.Files = []string{base + ".safetensors"}
		return plan, nil
	}
	for i := range n {
		plan.Files = append(plan.Files, fmt.Sprintf("%s-%05d-of-%05d.safetensors", base, i+1, n))
	}
	return plan, nil
}

// checkBase rejects base names that would put files outside the caller's
// folder.
func checkBase(base string) error {
	if base == "" || !shardindex.PlainName(base) {
		return fmt.Errorf("safetensors: base name %q is not a plain file name", base)
	}
	return nil
}

// ShardedWriter streams a checkpoint split into shards. Files are made by
// the create callback, so the caller decides where they go and can make them
// atomic (temporary file, sync, rename on Close).
type ShardedWriter struct {
	create  func(name string) (io.WriteCloser, error)
	base    string
	plan    ShardPlan
	tensors []tensor.Info   // declared order
	shards  [][]tensor.Info // per shard, in declared order
	meta    tensor.Metadata
	total   int64

	next  int            // index into tensors of the next Next
	cur   int            // open shard, -1 before the first
	wc    io.WriteCloser // the open shard's file
	w     *Writer
	err   error
	close bool
}

// NewShardedWriter plans the shards (see PlanShards) and checks every
// tensor and the metadata, which each shard's header carries. Nothing is
// created until the first Next.
func NewShardedWriter(create func(name string) (io.WriteCloser, error), base string, maxShardBytes int64, tensors []tensor.Info, meta tensor.Metadata) (*ShardedWriter, error) {
	plan, err := PlanShards(base, maxShardBytes, tensors)
	if err != nil {
		return nil, err
	}
	sw := &ShardedWriter{create: create, base: base, plan: plan, tensors: slices.Clone(tensors), meta: meta, cur: -1}
	sw.shards = make([][]tensor.Info, len(plan.Files))
	for _, t := range tensors {
		i := plan.Assign[t.Name]
		sw.shards[i] = append(sw.shards[i], t)
		size, _ := t.DType.ShapeBytes(t.Shape) // checked by PlanShards
		if sw.total, err = tensor.AddInt64(sw.total, size); err != nil {
			return nil, fmt.Errorf("safetensors: total size: %w", err)
		}
	}
	// Validate every shard's header now rather than halfway through writing.
	for i, ts := range sw.shards {
		if _, _, err := encodeHeader(ts, meta); err != nil {
			return nil, fmt.Errorf("safetensors: shard %s: %w", plan.Files[i], err)
		}
	}
	return sw, nil
}

// Plan returns the shard plan.
func (w *ShardedWriter) Plan() ShardPlan { return w.plan }

// Next starts the body of the named tensor, which must be the next one in
// the declared order; it finishes the previous shard when the tensor belongs
// to a new one.
func (w *ShardedWriter) Next(name string) (io.Writer, error) {
	if w.err != nil {
		return nil, w.err
	}
	if w.close {
		return nil, errors.New("safetensors: sharded writer is closed")
	}
	if w.next >= len(w.tensors) {
		return nil, w.fail(fmt.Errorf("safetensors: Next(%q): all %d declared tensors were already written", name, len(w.tensors)))
	}
	if want := w.tensors[w.next].Name; want != name {
		return nil, w.fail(fmt.Errorf("safetensors: Next(%q): the next declared tensor is %q", name, want))
	}
	if s := w.plan.Assign[name]; s != w.cur {
		if err := w.finishShard(); err != nil {
			return nil, err
		}
		if err := w.openShard(s); err != nil {
			return nil, err
		}
	}
	w.next++
	body, err := w.w.Next(name)
	if err != nil {
		return nil, w.fail(err)
	}
	return body, nil
}

// Close finishes the last shard and, when there is more than one, writes
// the index file base+".safetensors.index.json".
func (w *ShardedWriter) Close() error {
	if w.close {
		return w.err
	}
	w.close = true
	if w.err != nil {
		if w.wc != nil {
			w.wc.Close()
			w.wc = nil
		}
		return w.err
	}
	if w.next < len(w.tensors) {
		err := w.fail(fmt.Errorf("safetensors: Close: %d of %d declared tensors were not written, the first being %q", len(w.tensors)-w.next, len(w.tensors), w.tensors[w.next].Name))
		if w.wc != nil {
			w.wc.Close()
			w.wc = nil
		}
		return err
	}
	if w.cur < 0 {
		// No tensors at all: still write the one (empty) file.
		if err := w.openShard(0); err != nil {
			return err
		}
	}
	if err := w.finishShard(); err != nil {
		return err
	}
	if len(w.plan.Files) == 1 {
		return nil
	}
	name := w.base + IndexSuffix
	f, err := w.create(name)
	if err != nil {
		return w.fail(fmt.Errorf("safetensors: creating %s: %w", name, err))
	}
	_, err = f.Write(w.indexJSON())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return w.fail(fmt.Errorf("safetensors: writing %s: %w", name, err))
	}
	return nil
}

func (w *ShardedWriter) fail(err error) error {
	if w.err == nil {
		w.err = err
	}
	return w.err
}

func (w *ShardedWriter) openShard(i int) error {
	name := w.plan.Files[i]
	wc, err := w.create(name)
	if err != nil {
		return w.fail(fmt.Errorf("safetensors: creating %s: %w", name, err))
	}
	sw, err := NewWriter(wc, w.shards[i], w.meta)
	if err != nil {
		wc.Close()
		return w.fail(fmt.Errorf("safetensors: %s: %w", name, err))
	}
	w.cur, w.wc, w.w = i, wc, sw
	return nil
}

func (w *ShardedWriter) finishShard() error {
	if w.wc == nil {
		return nil
	}
	err := w.w.Close()
	if cerr := w.wc.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("safetensors: closing %s: %w", w.plan.Files[w.cur], cerr)
	}
	w.wc, w.w = nil, nil
	if err != nil {
		return w.fail(err)
	}
	return nil
}

// indexJSON renders the index as transformers writes it:
// json.dumps(index, indent=2, sort_keys=True) + "\n", with Python's default
// ensure_ascii escaping.
func (w *ShardedWriter) indexJSON() []byte {
	names := make([]string, 0, len(w.tensors))
	for _, t := range w.tensors {
		names = append(names, t.Name)
	}
	slices.Sort(names) // byte order of UTF-8 is code point order, as Python sorts
	b := []byte("{\n  \"metadata\": {\n    \"total_size\": ")
	b = strconv.AppendInt(b, w.total, 10)
	b = append(b, "\n  },\n  \"weight_map\": {"...)
	for i, n := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n    "...)
		b = appendPythonJSONString(b, n)
		b = append(b, ": "...)
		b = appendPythonJSONString(b, w.plan.Files[w.plan.Assign[n]])
	}
	if len(names) > 0 {
		b = append(b, "\n  "...)
	}
	b = append(b, "}\n}\n"...)
	return b
}

// appendPythonJSONString escapes s as Python's json module does with
// ensure_ascii=True: short escapes for \" \\ \n \r \t \b \f, and \uxxxx
// (lower-case hex, surrogate pairs above U+FFFF) for every other byte
// outside ' '..'~'.
func appendPythonJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	u4 := func(b []byte, r rune) []byte {
		return append(b, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
	}
	b = append(b, '"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r == '\n':
			b = append(b, '\\', 'n')
		case r == '\r':
			b = append(b, '\\', 'r')
		case r == '\t':
			b = append(b, '\\', 't')
		case r == '\b':
			b = append(b, '\\', 'b')
		case r == '\f':
			b = append(b, '\\', 'f')
		case r >= ' ' && r <= '~':
			b = append(b, byte(r))
		case r > 0xffff:
			r -= 0x10000
			b = u4(b, 0xd800|(r>>10&0x3ff))
			b = u4(b, 0xdc00|(r&0x3ff))
		default:
			b = u4(b, r)
		}
	}
	return append(b, '"')
}

// shardName matches the shard file names PlanShards makes for some base:
// base-NNNNN-of-NNNNN.safetensors.
var shardName = regexp.MustCompile(`^(.+)-[0-9]{5}-of-[0-9]{5}\.safetensors$`)

// IsSetFile reports whether name is a file of a checkpoint saved under base
// with any number of shards: base.safetensors, its index
// (base+IndexSuffix), or a shard base-NNNNN-of-NNNNN.safetensors. A folder
// being written again holds one checkpoint, so such a file that the new save
// does not write is stale: transformers' save_pretrained removes the stale
// shards of that pattern; the single file and the index are stale too, as a
// loader prefers base.safetensors to the index.
func IsSetFile(base, name string) bool {
	if name == base+".safetensors" || name == base+IndexSuffix {
		return true
	}
	m := shardName.FindStringSubmatch(name)
	return m != nil && m[1] == base
}
