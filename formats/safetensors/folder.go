package safetensors

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/tfconv/tfconv/internal/atomicfile"
	"github.com/tfconv/tfconv/tensor"
)

// WeightsBase is the base name of a checkpoint folder's weight files
// (model.safetensors, model-00001-of-00002.safetensors, its index), as
// transformers names them.
const WeightsBase = "model"

// WriteFolder writes a checkpoint folder at dst: the side files (base name
// → contents: config.json, tokenizer files, …) and the tensors infos, as
// WeightsBase.safetensors or, above maxShardBytes, shards with their index
// (ShardedWriter), every shard's header carrying meta. fill writes the
// tensor bodies through next, one per tensor in the order of infos.
//
// The files are built in a temporary folder beside dst and moved into place
// (atomicfile.CreateDir), so they appear whole or not at all, on SIGINT
// too. An existing dst that is not empty is written into only with force,
// and then only the files written here are replaced, and an earlier save's
// weight files that this one does not write (IsSetFile: other shard counts,
// the index or the single file) are removed; every other file and subfolder
// stays. The result names the files replaced and removed.
func WriteFolder(dst string, force bool, files map[string][]byte, infos []tensor.Info, maxShardBytes int64, meta tensor.Metadata,
	fill func(next func(name string) (io.Writer, error)) error) (res atomicfile.DirResult, err error) {
	d, err := atomicfile.CreateDir(dst, force)
	if err != nil {
		return res, err
	}
	defer d.Abort()
	d.SetStale(func(name string) bool { return IsSetFile(WeightsBase, name) })
	create := createIn(d.Name())
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if IsSetFile(WeightsBase, name) {
			return res, fmt.Errorf("safetensors: side file %q has a weight file's name", name)
		}
		w, err := create(name)
		if err != nil {
			return res, err
		}
		if _, err := w.Write(files[name]); err != nil {
			w.Close()
			return res, err
		}
		if err := w.Close(); err != nil {
			return res, err
		}
	}
	sw, err := NewShardedWriter(create, WeightsBase, maxShardBytes, infos, meta)
	if err != nil {
		return res, err
	}
	if err := fill(sw.Next); err != nil {
		sw.Close()
		return res, err
	}
	if err := sw.Close(); err != nil {
		return res, err
	}
	if err := d.Commit(); err != nil {
		return res, err
	}
	return d.Result(), nil
}

// syncFile syncs before closing so that the files moved into place are
// complete.
type syncFile struct {
	*os.File
	bw *bufio.Writer
}

func (f *syncFile) Write(p []byte) (int, error) { return f.bw.Write(p) }

func (f *syncFile) Close() error {
	err := f.bw.Flush()
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	return err
}

// createIn creates the files of the folder dir, refusing a name that is not
// a plain file name.
func createIn(dir string) func(name string) (io.WriteCloser, error) {
	return func(name string) (io.WriteCloser, error) {
		if name != filepath.Base(name) || name == "." || name == ".." {
			return nil, fmt.Errorf("safetensors: refusing to create %q outside the output folder", name)
		}
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return nil, err
		}
		return &syncFile{File: f, bw: bufio.NewWriterSize(f, 1<<20)}, nil
	}
}
