package pytorch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tfconv/tfconv/formats/shardindex"
)

// Conventional file names of a Hugging Face checkpoint folder saved with
// safe_serialization=False.
const (
	SingleName = "pytorch_model.bin"
	IndexName  = "pytorch_model.bin.index.json"
	// AdapterName holds a PEFT adapter's weights saved with
	// safe_serialization=False.
	AdapterName = "adapter_model.bin"
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
	agree := idx.Agree("pytorch")
	for _, shard := range idx.Shards() {
		f, err := Open(filepath.Join(s.Dir, shard))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, agree.MissingShard(shard, nil)
			}
			return nil, err
		}
		s.Files = append(s.Files, f)
		for _, t := range f.Tensors {
			if err := agree.Add(shard, t.Name); err != nil {
				return nil, err
			}
		}
		s.add(f)
	}
	if err := agree.Done(); err != nil {
		return nil, err
	}
	return s, nil
}

// ReadIndex reads an index file (pytorch_model.bin.index.json).
func ReadIndex(path string) (*Index, error) { return shardindex.Read(path, "pytorch") }
