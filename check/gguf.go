package check

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strconv"

	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/tensor"
)

// ggufRules names the rule of each defect the GGUF walk reports.
var ggufRules = map[gguf.Code]string{
	gguf.CodeTruncated:       "gguf-truncated",
	gguf.CodeDataStart:       "gguf-truncated",
	gguf.CodeDataTruncated:   "gguf-truncated",
	gguf.CodeIO:              "io-error",
	gguf.CodeMagic:           "gguf-version",
	gguf.CodeVersion:         "gguf-version",
	gguf.CodeBigEndian:       "gguf-big-endian",
	gguf.CodeCount:           "gguf-count",
	gguf.CodeStringLength:    "gguf-string-length",
	gguf.CodeValueType:       "gguf-value-type",
	gguf.CodeBool:            "gguf-bool",
	gguf.CodeArrayDepth:      "gguf-array-depth",
	gguf.CodeNestedArray:     "gguf-nested-array",
	gguf.CodeArrayLength:     "gguf-array-length",
	gguf.CodeEmptyKey:        "gguf-empty-key",
	gguf.CodeDuplicateKey:    "gguf-duplicate-key",
	gguf.CodeAlignment:       "gguf-alignment",
	gguf.CodeTensorName:      "gguf-tensor-name",
	gguf.CodeDuplicateTensor: "dup-tensor-name",
	gguf.CodeDims:            "gguf-dims",
	gguf.CodeShape:           "gguf-shape",
	gguf.CodeZeroDim:         "gguf-zero-dim",
	gguf.CodeType:            "gguf-type",
	gguf.CodeBlockSize:       "gguf-block-size",
	gguf.CodePadding:         "gguf-padding",
}

// ggufFields renames the walk's fields the way check's messages have always
// named them.
var ggufFields = map[string]string{
	"magic": "the magic", "version": "the version", "tensor count": "the tensor count",
	"metadata count": "the metadata count", "dimension count": "the dimension count", "dimension": "a dimension",
	"tensor type": "the tensor type", "data offset": "the data offset", "bool element": "bool value",
}

// ggufMessage words a walk problem as check's findings do: where check's
// wording differs from the reader's, from the problem's numbers.
func ggufMessage(p *gguf.Problem, size int64) string {
	what := p.What
	if s, ok := ggufFields[what]; ok {
		what = s
	}
	switch p.Code {
	case gguf.CodeTruncated:
		return fmt.Sprintf("the file ends inside %s (%d bytes needed, %d left)", what, p.Need, p.Left)
	case gguf.CodeIO:
		return fmt.Sprintf("reading %s: %v", what, p.Err)
	case gguf.CodeMagic:
		return fmt.Sprintf("magic %q: a byte-swapped GGUF magic", binary.LittleEndian.AppendUint32(nil, uint32(p.N)))
	case gguf.CodeBigEndian:
		return fmt.Sprintf("version reads as %#x: a big-endian GGUF", p.N)
	case gguf.CodeVersion:
		return fmt.Sprintf("version %d: tfconv reads versions 2 and 3", p.N)
	case gguf.CodeValueType:
		return fmt.Sprintf("invalid %s %d", what, int32(p.N))
	case gguf.CodeBool:
		return fmt.Sprintf("bool value %d is neither 0 nor 1", p.N)
	case gguf.CodeArrayLength:
		if p.Need > 0 {
			return fmt.Sprintf("array of %d %s elements needs at least %d bytes each, %d bytes left", p.N, p.Elem, p.Need, p.Left)
		}
	case gguf.CodeDuplicateKey:
		return "appears twice (ggml refuses the file, gguf-py keeps the last)"
	case gguf.CodeDuplicateTensor:
		return "appears twice in the tensor infos"
	case gguf.CodeType:
		return fmt.Sprintf("ggml type id %d is not a current ggml type", p.N)
	case gguf.CodeDataStart:
		return fmt.Sprintf("the data section (header end %d padded to %d) starts past the end of the %d-byte file", p.Offset, p.Need, size)
	}
	return p.Msg
}

// ggufRule is the rule id of a walk problem.
func ggufRule(p *gguf.Problem) string {
	if rule, ok := ggufRules[p.Code]; ok {
		return rule
	}
	return "gguf-rejected"
}

// GGUFLint is check's finding for a lint the GGUF reader accepted
// (gguf.File.Lints: a tensor with a 0 dimension, an array of arrays), with
// the rule id, severity and message check reports it under, so that a
// command that opens the file without checking it (inspect) can warn in
// check's words.
func GGUFLint(p *gguf.Problem) Finding {
	rule := ggufRule(p)
	sev := Error
	if r, ok := ruleByID[rule]; ok {
		sev = r.Severity
	}
	return Finding{Rule: rule, Severity: sev, File: p.File, Offset: p.Offset, Item: p.Item, Message: ggufMessage(p, -1)}
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
	h, err := gguf.Walk(f, size, gguf.WalkOptions{Name: path, SkipArrays: true, Problem: func(p *gguf.Problem) {
		rule := ggufRule(p)
		item := p.Item
		if p.Code == gguf.CodeTruncated || p.Code == gguf.CodeIO {
			item = "" // check has always named the field, not the key or tensor
		}
		r.add(rule, path, p.Offset, item, "%s", ggufMessage(p, size))
	}})
	if res != nil {
		// The split keys are all scalars; check reads them as they are.
		res.meta = map[string]any{}
		for _, kv := range h.Metadata {
			switch kv.Value.Kind() {
			case tensor.KindBool, tensor.KindUint16, tensor.KindInt32, tensor.KindUint32:
				res.meta[kv.Key] = kv.Value.Any()
			}
		}
		for _, e := range h.Tensors {
			res.names = append(res.names, e.Name)
		}
	}
	if err != nil {
		return nil
	}
	infos := ggufLayout(r, path, f, size, h)
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
		keyAt := make(map[string]int64, len(h.Metadata))
		for i, kv := range h.Metadata {
			keyAt[kv.Key] = h.KeyOffsets[i]
		}
		checkVocab(r, path, gf, keyAt, h.Tensors)
	}
	scanAll(r, path, f, infos)
	return nil
}

// ggufLayout checks every tensor's placement and returns those whose data can
// be scanned.
func ggufLayout(r *Report, path string, f io.ReaderAt, size int64, h *gguf.Header) []tensor.Info {
	entries, dataOff, align := h.Tensors, h.DataOffset, h.Alignment
	type placed struct {
		e          *gguf.TensorInfo
		begin, end int64 // relative to dataOff
		idx        int
	}
	var ps []placed
	var infos []tensor.Info
	var next int64 // where ggml expects the next tensor
	inOrder := true
	// A truncated file was reported once by the walk (gguf-truncated): the
	// tensors it cuts are not each out of bounds, nor is the part of one
	// that remains trailing bytes.
	truncated := h.DataEnd > size
	for i := range entries {
		e := &entries[i]
		item := tensorItem(e.Name)
		if e.Rel%uint64(align) != 0 {
			r.add("gguf-misaligned", path, e.OffsetPos, item, "data offset %d is not a multiple of the alignment %d", e.Rel, align)
		}
		if !e.Usable {
			inOrder = false
			continue
		}
		abs, err := tensor.AddInt64(dataOff, int64(min(e.Rel, 1<<63-1)))
		end, err2 := tensor.AddInt64(abs, e.Size)
		if err != nil || err2 != nil || e.Rel > 1<<62 || end > size {
			switch {
			case truncated:
			case err != nil || e.Rel > 1<<62:
				r.add("gguf-out-of-bounds", path, e.OffsetPos, item, "data offset %d in the header (from the data section at file offset %d) + %d bytes runs past the end of the %d-byte file", e.Rel, dataOff, e.Size, size)
			default:
				r.add("gguf-out-of-bounds", path, e.OffsetPos, item, "data at file offset %d + %d bytes runs past the end of the %d-byte file", abs, e.Size, size)
			}
			inOrder = false
			continue
		}
		if int64(e.Rel) != next {
			inOrder = false
		}
		padded, _ := tensor.AlignUp(e.Size, align)
		next = int64(e.Rel) + padded
		e.Offset = abs
		ps = append(ps, placed{e: e, begin: int64(e.Rel), end: int64(e.Rel) + e.Size, idx: i})
		infos = append(infos, e.Info)
	}
	byOffset := slices.Clone(ps)
	slices.SortStableFunc(byOffset, func(a, b placed) int {
		if a.begin != b.begin {
			return cmp.Compare(a.begin, b.begin)
		}
		return cmp.Compare(a.end, b.end)
	})
	var cursor int64
	var prev *gguf.TensorInfo
	holeOrOverlap := false
	for _, p := range byOffset {
		item := tensorItem(p.e.Name)
		padded, _ := tensor.AlignUp(cursor, align)
		switch {
		case p.begin < cursor:
			r.add("gguf-overlap", path, p.e.OffsetPos, item, "data at file bytes [%d,%d) overlaps tensor %q, which ends at %d", dataOff+p.begin, dataOff+p.end, prev.Name, dataOff+cursor)
			holeOrOverlap = true
		case p.begin > padded:
			after := "the start of the data section"
			if prev != nil {
				after = "tensor " + strconv.Quote(prev.Name)
			}
			r.add("gguf-hole", path, dataOff+padded, item, "file bytes [%d,%d) between %s and this tensor belong to no tensor", dataOff+padded, dataOff+p.begin, after)
			holeOrOverlap = true
		}
		if p.end >= cursor {
			cursor, prev = p.end, p.e
		}
	}
	if !inOrder && !holeOrOverlap && len(ps) == len(entries) {
		r.add("gguf-order", path, -1, "", "tensor data is not laid out in tensor-info order, each right after the previous one's padding")
	}
	end := dataOff + cursor
	if len(entries) == 0 {
		end = dataOff
	}
	if pe, err := tensor.AlignUp(end, align); err == nil && size > pe && !truncated {
		what := "the metadata"
		if prev != nil {
			what = "tensor " + strconv.Quote(prev.Name) + " and its padding"
		}
		r.checkTrailing("gguf-trailing-bytes", path, f, pe, size, what)
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
func checkVocab(r *Report, path string, f *gguf.File, keyAt map[string]int64, entries []gguf.TensorInfo) {
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
		switch e.Name {
		case "token_embd.weight", "output.weight":
		default:
			continue
		}
		if len(e.Shape) == 2 && e.Shape[0] != n {
			r.add("gguf-vocab-rows", path, e.At, tensorItem(e.Name), "has %d rows for the %d tokens of tokenizer.ggml.tokens: llama.cpp refuses the shape (a vocab_size past the tokenizer needs [PAD] tokens, as convert_hf_to_gguf.py adds)",
				e.Shape[0], n)
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
