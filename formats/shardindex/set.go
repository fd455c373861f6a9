package shardindex

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Format is what OpenSet needs of a shard format: its name, where a
// folder's checkpoint is looked for, how one file is opened, and its
// tensors. F is the format's open file, T its tensor.
type Format[F io.Closer, T any] struct {
	Name string // "safetensors", "pytorch": error prefix and Agree's format
	// Folder lists the files a folder's checkpoint is looked for in, in
	// the order transformers looks: the single file, then the index.
	Folder []string
	Open   func(path string) (F, error)
	// FileTensors returns a file's tensors, TensorName a tensor's name.
	FileTensors func(F) []T
	TensorName  func(*T) string
}

// Set is a checkpoint of format F: one file, or the shards an index lists.
type Set[F io.Closer, T any] struct {
	Dir     string
	Index   *Index // nil for a single file
	Files   []F    // the single file, or the shards in Index.Shards order
	Tensors []*T   // shard order, then each file's own order

	byName map[string]*T
	fileOf map[*T]F
}

// OpenSet opens a checkpoint of format f: a file, an index .json file, or
// a folder holding the first of f.Folder that exists.
func OpenSet[F io.Closer, T any](path string, f Format[F, T]) (*Set[F, T], error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name, err)
	}
	if st.IsDir() {
		for _, name := range f.Folder {
			p := filepath.Join(path, name)
			if _, err := os.Stat(p); err == nil {
				return OpenSet(p, f)
			}
		}
		return nil, fmt.Errorf("%s: %s: no %s: %w", f.Name, path, strings.Join(f.Folder, " or "), fs.ErrNotExist)
	}
	if strings.HasSuffix(path, ".json") {
		idx, err := Read(path, f.Name)
		if err != nil {
			return nil, err
		}
		dir := filepath.Dir(path)
		s, err := OpenShards(idx, f, func(shard string) (F, error) { return f.Open(filepath.Join(dir, shard)) })
		if err != nil {
			return nil, err
		}
		s.Dir = dir
		return s, nil
	}
	file, err := f.Open(path)
	if err != nil {
		return nil, err
	}
	s := &Set[F, T]{Dir: filepath.Dir(path)}
	s.add(file, f)
	return s, nil
}

// OpenShards opens the shards idx lists, each with open (given its name in
// the weight map: a local file, or one read over HTTP), and checks that
// they hold what the weight map says. An open error matching
// fs.ErrNotExist is a missing shard; others are returned as they are (a
// shard's own error names its file). On error every shard opened is
// closed again. Dir is left empty.
func OpenShards[F io.Closer, T any](idx *Index, f Format[F, T], open func(shard string) (F, error)) (_ *Set[F, T], err error) {
	s := &Set[F, T]{Index: idx}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	agree := idx.Agree(f.Name)
	for _, shard := range idx.Shards() {
		file, err := open(shard)
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
		s.add(file, f)
		for _, t := range f.FileTensors(file) {
			if err := agree.Add(shard, f.TensorName(&t)); err != nil {
				return nil, err
			}
		}
	}
	if err := agree.Done(); err != nil {
		return nil, err
	}
	return s, nil
}

// add appends file and its tensors to s.
func (s *Set[F, T]) add(file F, f Format[F, T]) {
	if s.byName == nil {
		s.byName = map[string]*T{}
		s.fileOf = map[*T]F{}
	}
	s.Files = append(s.Files, file)
	ts := f.FileTensors(file)
	for i := range ts {
		t := &ts[i]
		s.Tensors = append(s.Tensors, t)
		s.byName[f.TensorName(t)] = t
		s.fileOf[t] = file
	}
}

// Tensor returns the tensor with the given name from whichever file holds
// it.
func (s *Set[F, T]) Tensor(name string) (*T, bool) {
	t, ok := s.byName[name]
	return t, ok
}

// FileOf returns the file that holds t.
func (s *Set[F, T]) FileOf(t *T) F { return s.fileOf[t] }

// Close closes every file of the set.
func (s *Set[F, T]) Close() error {
	var errs []error
	for _, f := range s.Files {
		if err := f.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
