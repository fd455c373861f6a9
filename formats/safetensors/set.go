package safetensors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tfconv/tfconv/tensor"
)

// Conventional file names of a Hugging Face checkpoint folder.
const (
	SingleName = "model.safetensors"
	IndexName  = "model" + IndexSuffix
)

// maxIndexLen caps the index file read into memory. Real indexes are a few
// megabytes even for models with tens of thousands of tensors.
const maxIndexLen = MaxHeaderLen

// Set is a checkpoint: one safetensors file, or the shards listed by an
// index file.
type Set struct {
	Dir     string
	Index   *Index    // nil for a single-file checkpoint
	Files   []*File   // shards in index order (model-00001-of-N first)
	Tensors []*Tensor // every tensor of every shard; order: shard order, then data-offset order

	byName map[string]*Tensor
}

// Index is a parsed model.safetensors.index.json.
type Index struct {
	Metadata  map[string]any    // the "metadata" object (numbers as json.Number); informative only
	WeightMap map[string]string // tensor name -> shard file name
	Path      string            // the index file
}

// OpenSet opens a checkpoint. path is a .safetensors file, an index .json
// file, or a directory holding model.safetensors or (failing that)
// model.safetensors.index.json, the order in which transformers looks.
func OpenSet(path string) (*Set, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	if st.IsDir() {
		single := filepath.Join(path, SingleName)
		if _, err := os.Stat(single); err == nil {
			return openSingle(single)
		}
		index := filepath.Join(path, IndexName)
		if _, err := os.Stat(index); err == nil {
			return openIndexed(index)
		}
		return nil, fmt.Errorf("safetensors: %s: no %s or %s: %w", path, SingleName, IndexName, fs.ErrNotExist)
	}
	if strings.HasSuffix(path, ".json") {
		return openIndexed(path)
	}
	return openSingle(path)
}

func openSingle(path string) (*Set, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	s := &Set{Dir: filepath.Dir(path), Files: []*File{f}, byName: map[string]*Tensor{}}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		s.Tensors = append(s.Tensors, t)
		s.byName[t.Name] = t
	}
	return s, nil
}

func openIndexed(path string) (_ *Set, err error) {
	idx, err := readIndex(path)
	if err != nil {
		return nil, err
	}
	s := &Set{Dir: filepath.Dir(path), Index: idx, byName: map[string]*Tensor{}}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	ierr := func(item, msg string, cause error) error {
		return &tensor.FormatError{Format: "safetensors", File: path, Offset: -1, Item: item, Msg: msg, Err: cause}
	}
	seen := map[string]bool{}
	var shards []string
	for _, shard := range idx.WeightMap {
		if !seen[shard] {
			seen[shard] = true
			shards = append(shards, shard)
		}
	}
	slices.Sort(shards)
	owner := map[string]string{} // tensor -> shard it was found in
	for _, shard := range shards {
		f, err := Open(filepath.Join(s.Dir, shard))
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) && errors.Is(err, fs.ErrNotExist) {
				return nil, ierr("shard "+strconv.Quote(shard), "missing shard", pe)
			}
			// The shard's own error names its file.
			return nil, err
		}
		s.Files = append(s.Files, f)
		for i := range f.Tensors {
			t := &f.Tensors[i]
			if prev, dup := owner[t.Name]; dup {
				return nil, ierr(tensorItem(t.Name), fmt.Sprintf("in two shards, %s and %s", prev, shard), nil)
			}
			owner[t.Name] = shard
			want, listed := idx.WeightMap[t.Name]
			if !listed {
				return nil, ierr(tensorItem(t.Name), fmt.Sprintf("in shard %s but not in weight_map", shard), nil)
			}
			if want != shard {
				return nil, ierr(tensorItem(t.Name), fmt.Sprintf("in shard %s but weight_map says %s", shard, want), nil)
			}
			s.Tensors = append(s.Tensors, t)
			s.byName[t.Name] = t
		}
	}
	for _, name := range sortedKeys(idx.WeightMap) {
		if _, ok := s.byName[name]; !ok {
			return nil, ierr(tensorItem(name), "listed in weight_map for shard "+idx.WeightMap[name]+", which does not hold it", nil)
		}
	}
	return s, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// readIndex reads and checks an index file: a JSON object whose
// "weight_map" is a string→string object of plain shard names. Other keys
// are skipped; "metadata", if present, must be an object.
func readIndex(path string) (*Index, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	defer f.Close()
	buf, err := io.ReadAll(io.LimitReader(f, maxIndexLen+1))
	if err != nil {
		return nil, fmt.Errorf("safetensors: %s: %w", path, err)
	}
	return parseIndex(buf, path)
}

func parseIndex(buf []byte, path string) (*Index, error) {
	s := &scanner{buf: buf, file: path}
	if len(buf) > maxIndexLen {
		return nil, s.errAt(0, "", fmt.Sprintf("index file is larger than %d bytes", maxIndexLen))
	}
	if i := firstInvalidUTF8(buf); i >= 0 {
		return nil, s.errAt(i, "", "index is not valid UTF-8")
	}
	idx := &Index{Path: path}
	haveMap := false
	err := s.object("", "an object", keyItem, func(key string, _ int) error {
		switch key {
		case "weight_map":
			haveMap = true
			idx.WeightMap = map[string]string{}
			return s.stringMap(keyItem("weight_map"), "an object of strings", tensorItem, func(k, v string) {
				idx.WeightMap[k] = v
			})
		case "metadata":
			start := s.pos
			if s.peek() != '{' {
				return s.errAt(s.pos, keyItem("metadata"), "want an object, found "+s.describe())
			}
			if err := s.skip(keyItem("metadata"), 1); err != nil {
				return err
			}
			d := json.NewDecoder(bytes.NewReader(buf[start:s.pos]))
			d.UseNumber()
			if err := d.Decode(&idx.Metadata); err != nil {
				return s.errAt(start, keyItem("metadata"), "invalid JSON: "+err.Error())
			}
			return nil
		}
		return s.skip(keyItem(key), 1)
	})
	if err != nil {
		return nil, err
	}
	if err := s.end(); err != nil {
		return nil, err
	}
	if !haveMap {
		return nil, s.errAt(0, "", `index has no "weight_map"`)
	}
	for _, name := range sortedKeys(idx.WeightMap) {
		if shard := idx.WeightMap[name]; !plainName(shard) {
			return nil, &tensor.FormatError{Format: "safetensors", File: path, Offset: -1, Item: tensorItem(name),
				Msg: fmt.Sprintf("shard %q is not a plain file name in the index's folder", shard)}
		}
	}
	return idx, nil
}

// Tensor returns the tensor with the given name from whichever shard holds
// it.
func (s *Set) Tensor(name string) (*Tensor, bool) {
	t, ok := s.byName[name]
	return t, ok
}

// Close closes every file of the set.
func (s *Set) Close() error {
	var errs []error
	for _, f := range s.Files {
		if err := f.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
