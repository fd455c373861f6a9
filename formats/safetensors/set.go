package safetensors

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tfconv/tfconv/formats/shardindex"
)

// Conventional file names of a Hugging Face checkpoint folder.
const (
	SingleName = "model.safetensors"
	IndexName  = "model" + IndexSuffix
	// AdapterName holds a PEFT adapter's weights (beside adapter_config.json).
	AdapterName = "adapter_model.safetensors"
)

// FolderNames are the files a folder's checkpoint is looked for in, in the
// order transformers looks: the single file, then the index.
var FolderNames = []string{SingleName, IndexName}

// Set is a checkpoint: one safetensors file, or the shards listed by an
// index file.
type Set struct {
	Dir     string
	Index   *Index    // nil for a single-file checkpoint
	Files   []*File   // shards in index order (model-00001-of-N first)
	Tensors []*Tensor // every tensor of every shard; order: shard order, then data-offset order

	byName map[string]*Tensor
}

// Index is a parsed shard index (model.safetensors.index.json).
type Index = shardindex.Index

// OpenSet opens a checkpoint. path is a .safetensors file, an index .json
// file, or a directory holding model.safetensors or (failing that)
// model.safetensors.index.json, the order in which transformers looks.
func OpenSet(path string) (*Set, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	if st.IsDir() {
		for _, name := range FolderNames {
			p := filepath.Join(path, name)
			if _, err := os.Stat(p); err == nil {
				if name == IndexName {
					return openIndexed(p)
				}
				return openSingle(p)
			}
		}
		return nil, fmt.Errorf("safetensors: %s: no %s: %w", path, strings.Join(FolderNames, " or "), fs.ErrNotExist)
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

func openIndexed(path string) (*Set, error) {
	idx, err := shardindex.Read(path, "safetensors")
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	s, err := OpenShards(idx, func(shard string) (*File, error) { return Open(filepath.Join(dir, shard)) })
	if err != nil {
		return nil, err
	}
	s.Dir = dir
	return s, nil
}

// OpenShards opens the shards idx lists, each with open (given its name in
// the weight map; local files or HTTP), and checks that they hold what the
// weight map says. An open error matching fs.ErrNotExist is a missing
// shard; others are returned as they are (a shard's own error names its
// file). Dir is left empty.
func OpenShards(idx *Index, open func(shard string) (*File, error)) (_ *Set, err error) {
	s := &Set{Index: idx, byName: map[string]*Tensor{}}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	agree := idx.Agree("safetensors")
	for _, shard := range idx.Shards() {
		f, err := open(shard)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				var pe *fs.PathError
				if errors.As(err, &pe) {
					return nil, agree.MissingShard(shard, pe)
				}
				return nil, agree.MissingShard(shard, err)
			}
			return nil, err
		}
		s.Files = append(s.Files, f)
		for i := range f.Tensors {
			t := &f.Tensors[i]
			if err := agree.Add(shard, t.Name); err != nil {
				return nil, err
			}
			s.Tensors = append(s.Tensors, t)
			s.byName[t.Name] = t
		}
	}
	if err := agree.Done(); err != nil {
		return nil, err
	}
	return s, nil
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
