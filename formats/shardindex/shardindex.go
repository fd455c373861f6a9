package shardindex

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tfconv/tfconv/tensor"
)

// MaxLen caps an index file read into memory (100 MB, as safetensors caps
// a header: the index of a checkpoint with millions of tensors).
const MaxLen = 100_000_000

// MaxDepth caps the nesting of the values an index may carry beside its
// weight_map and metadata (which tfconv skips).
const MaxDepth = 64

// Index is a parsed index file.
type Index struct {
	Metadata  map[string]any    // the "metadata" object (numbers as json.Number); informative only
	WeightMap map[string]string // tensor name -> shard file name
	Path      string            // the index file
}

// Read reads and checks the index file at path; format names the shard
// format in errors ("safetensors", "pytorch").
func Read(path, format string) (*Index, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", format, err)
	}
	defer f.Close()
	buf, err := io.ReadAll(io.LimitReader(f, MaxLen+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", format, path, err)
	}
	return Parse(buf, path, format)
}

// Parse checks an index: one JSON object, valid UTF-8, a "weight_map"
// object of strings whose values are plain file names in the index's folder
// and whose keys appear once (encoding/json would keep the last silently),
// "metadata" an object when present; other keys are skipped. Errors are
// *tensor.FormatError with the byte offset.
func Parse(buf []byte, path, format string) (*Index, error) {
	ferr := func(off int64, item, msg string) error {
		return &tensor.FormatError{Format: format, File: path, Offset: off, Item: item, Msg: msg}
	}
	if len(buf) > MaxLen {
		return nil, ferr(0, "", fmt.Sprintf("index file is larger than %d bytes", MaxLen))
	}
	if !utf8.Valid(buf) {
		i := 0
		for i < len(buf) {
			r, n := utf8.DecodeRune(buf[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return nil, ferr(int64(i), "", "index is not valid UTF-8")
	}
	d := json.NewDecoder(bytes.NewReader(buf))
	d.UseNumber()
	tok, err := d.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, ferr(0, "", "index is not a JSON object")
	}
	idx := &Index{Path: path}
	seen := map[string]bool{}
	for d.More() {
		kt, err := d.Token()
		if err != nil {
			return nil, ferr(d.InputOffset(), "", "invalid JSON: "+err.Error())
		}
		key, _ := kt.(string)
		item := "key " + strconv.Quote(key)
		if seen[key] {
			return nil, ferr(d.InputOffset(), item, "appears twice")
		}
		seen[key] = true
		switch key {
		case "weight_map":
			if err := parseWeightMap(d, idx, ferr); err != nil {
				return nil, err
			}
		case "metadata":
			off := d.InputOffset()
			var raw json.RawMessage
			if err := d.Decode(&raw); err != nil {
				return nil, ferr(off, item, "invalid JSON: "+err.Error())
			}
			md := json.NewDecoder(bytes.NewReader(raw))
			md.UseNumber()
			if err := md.Decode(&idx.Metadata); err != nil || idx.Metadata == nil {
				return nil, ferr(off, item, "want an object")
			}
		default:
			off := d.InputOffset()
			var skip json.RawMessage
			if err := d.Decode(&skip); err != nil {
				return nil, ferr(off, item, "invalid JSON: "+err.Error())
			}
			if depth(skip) > MaxDepth {
				return nil, ferr(off, item, fmt.Sprintf("JSON nested deeper than %d", MaxDepth))
			}
		}
	}
	if _, err := d.Token(); err != nil {
		return nil, ferr(d.InputOffset(), "", "invalid JSON: "+err.Error())
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, ferr(d.InputOffset(), "", "text after the JSON object")
	}
	if idx.WeightMap == nil {
		return nil, ferr(0, "", `index has no "weight_map"`)
	}
	return idx, nil
}

func parseWeightMap(d *json.Decoder, idx *Index, ferr func(int64, string, string) error) error {
	idx.WeightMap = map[string]string{}
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return ferr(d.InputOffset(), `key "weight_map"`, "want an object of strings")
	}
	for d.More() {
		off := d.InputOffset()
		nt, err := d.Token()
		if err != nil {
			return ferr(off, `key "weight_map"`, "invalid JSON: "+err.Error())
		}
		name, _ := nt.(string)
		item := "tensor " + strconv.Quote(name)
		vt, err := d.Token()
		shard, ok := vt.(string)
		if err != nil || !ok {
			return ferr(off, item, "weight_map value must be a string")
		}
		if _, dup := idx.WeightMap[name]; dup {
			return ferr(off, item, "appears twice in weight_map")
		}
		if !PlainName(shard) {
			return ferr(off, item, fmt.Sprintf("shard %q is not a plain file name in the index's folder", shard))
		}
		idx.WeightMap[name] = shard
	}
	if _, err := d.Token(); err != nil {
		return ferr(d.InputOffset(), `key "weight_map"`, "invalid JSON: "+err.Error())
	}
	return nil
}

// PlainName reports whether a shard name is a file in the index's own
// folder: not empty, no directory part or separator of any OS, no "..",
// no NUL.
func PlainName(name string) bool {
	return name != "" && name != "." && name != ".." && name == filepath.Base(name) &&
		!strings.ContainsAny(name, `/\`+"\x00") && !strings.Contains(name, "..") &&
		!filepath.IsAbs(name) && filepath.IsLocal(name)
}

// depth is the deepest nesting of arrays and objects in the JSON value raw.
func depth(raw []byte) int {
	d, most, inStr, esc := 0, 0, false, false
	for _, c := range raw {
		switch {
		case inStr && esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case inStr && c == '"':
			inStr = false
		case inStr:
		case c == '"':
			inStr = true
		case c == '[' || c == '{':
			d++
			most = max(most, d)
		case c == ']' || c == '}':
			d--
		}
	}
	return most
}

// Shards returns the distinct shard names of the weight map, sorted (the
// order transformers' names give: …-00001-of-N first).
func (idx *Index) Shards() []string {
	var out []string
	for _, s := range idx.WeightMap {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// Agreement checks that the shards hold what the weight map says: fed
// every tensor of every shard (Add), then Done.
type Agreement struct {
	idx    *Index
	format string
	owner  map[string]string // tensor -> the shard it was found in
}

// Agree starts the check of idx's shards; format names the shard format in
// errors.
func (idx *Index) Agree(format string) *Agreement {
	return &Agreement{idx: idx, format: format, owner: map[string]string{}}
}

func (a *Agreement) err(item, msg string, cause error) error {
	return &tensor.FormatError{Format: a.format, File: a.idx.Path, Offset: -1, Item: item, Msg: msg, Err: cause}
}

// MissingShard is the error for a shard the weight map names that does
// not exist (cause: the open error).
func (a *Agreement) MissingShard(shard string, cause error) error {
	return a.err("shard "+strconv.Quote(shard), "missing shard", cause)
}

// Add records that shard holds tensor name, and fails when another shard
// held it too, or the weight map does not list it there.
func (a *Agreement) Add(shard, name string) error {
	item := "tensor " + strconv.Quote(name)
	if prev, dup := a.owner[name]; dup {
		return a.err(item, fmt.Sprintf("in two shards, %s and %s", prev, shard), nil)
	}
	a.owner[name] = shard
	want, listed := a.idx.WeightMap[name]
	if !listed {
		return a.err(item, fmt.Sprintf("in shard %s but not in weight_map", shard), nil)
	}
	if want != shard {
		return a.err(item, fmt.Sprintf("in shard %s but weight_map says %s", shard, want), nil)
	}
	return nil
}

// Done fails on the first tensor (by name) the weight map lists that no
// shard held.
func (a *Agreement) Done() error {
	names := make([]string, 0, len(a.idx.WeightMap))
	for name := range a.idx.WeightMap {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if _, ok := a.owner[name]; !ok {
			return a.err("tensor "+strconv.Quote(name), "listed in weight_map for shard "+a.idx.WeightMap[name]+", which does not hold it", nil)
		}
	}
	return nil
}
