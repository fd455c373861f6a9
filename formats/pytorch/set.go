package pytorch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tfconv/tfconv/formats/shardindex"
	"github.com/tfconv/tfconv/tensor"
)

// Conventional file names of a Hugging Face checkpoint folder saved with
// safe_serialization=False.
const (
	SingleName = "pytorch_model.bin"
	IndexName  = "pytorch_model.bin.index.json"
)

// Set is a checkpoint: one .bin file, or the shards an index lists.
type Set struct {
	Dir     string
	Index   *Index    // nil for a single file
	Files   []*File   // shards in sorted name order (…-00001-of-N first)
	Tensors []*Tensor // shard order, then each state dict's order

	byName map[string]*Tensor
	shard  map[*Tensor]*File
}

// Index is a parsed pytorch_model.bin.index.json.
// Index is a parsed shard index (pytorch_model.bin.index.json).
type Index = shardindex.Index

// OpenSet opens a checkpoint: a .bin file, an index .json file, or a
// directory holding pytorch_model.bin or (failing that)
// pytorch_model.bin.index.json, the order in which transformers looks.
func OpenSet(path string) (*Set, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("pytorch: %w", err)
	}
	if st.IsDir() {
		for _, name := range []string{SingleName, IndexName} {
			p := filepath.Join(path, name)
			if _, err := os.Stat(p); err == nil {
				return OpenSet(p)
			}
		}
		return nil, fmt.Errorf("pytorch: %s: no %s or %s: %w", path, SingleName, IndexName, fs.ErrNotExist)
	}
	if strings.HasSuffix(path, ".json") {
		return openIndexed(path)
	}
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	s := &Set{Dir: filepath.Dir(path), Files: []*File{f}}
	s.add(f)
	return s, nil
}

func (s *Set) add(f *File) {
	if s.byName == nil {
		s.byName = map[string]*Tensor{}
		s.shard = map[*Tensor]*File{}
	}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		s.Tensors = append(s.Tensors, t)
		s.byName[t.Name] = t
		s.shard[t] = f
	}
}

// Tensor returns the tensor with the given name from whichever shard holds
// it.
func (s *Set) Tensor(name string) (*Tensor, bool) {
	t, ok := s.byName[name]
	return t, ok
}

// FileOf returns the shard that holds t.
func (s *Set) FileOf(t *Tensor) *File { return s.shard[t] }

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

func openIndexed(path string) (_ *Set, err error) {
	idx, err := ReadIndex(path)
	if err != nil {
		return nil, err
	}
	s := &Set{Dir: filepath.Dir(path), Index: idx}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	ierr := func(item, msg string) error {
		return &tensor.FormatError{Format: "pytorch", File: path, Offset: -1, Item: item, Msg: msg}
	}
	var shards []string
	for _, shard := range idx.WeightMap {
		if !slices.Contains(shards, shard) {
			shards = append(shards, shard)
		}
	}
	slices.Sort(shards)
	for _, shard := range shards {
		f, err := Open(filepath.Join(s.Dir, shard))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, ierr("shard "+strconv.Quote(shard), "missing shard")
			}
			return nil, err
		}
		s.Files = append(s.Files, f)
		for _, t := range f.Tensors {
			item := "tensor " + strconv.Quote(t.Name)
			if _, dup := s.byName[t.Name]; dup {
				return nil, ierr(item, fmt.Sprintf("in two shards, %s and %s", s.shard[s.byName[t.Name]].Name, f.Name))
			}
			want, listed := idx.WeightMap[t.Name]
			if !listed {
				return nil, ierr(item, "in shard "+shard+" but not in weight_map")
			}
			if want != shard {
				return nil, ierr(item, "in shard "+shard+" but weight_map says "+want)
			}
		}
		s.add(f)
	}
	names := make([]string, 0, len(idx.WeightMap))
	for name := range idx.WeightMap {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if _, ok := s.byName[name]; !ok {
			return nil, ierr("tensor "+strconv.Quote(name), "listed in weight_map for shard "+idx.WeightMap[name]+", which does not hold it")
		}
	}
	return s, nil
}

// ReadIndex reads an index file (pytorch_model.bin.index.json).
func ReadIndex(path string) (*Index, error) { return shardindex.Read(path, "pytorch") }
