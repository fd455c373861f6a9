package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// live holds the temporary files of every pending File, so that a signal
// handler can remove them before the process exits (RemoveTemps).
var live = struct {
	sync.Mutex
	names map[string]struct{}
	dirs  map[string]struct{} // scratch directories from TempDir
	// closed is set by RemoveTemps: the process is exiting and no new
	// temporary file may appear after the sweep.
	closed bool
}{names: map[string]struct{}{}, dirs: map[string]struct{}{}}

// errExiting is returned by Create after RemoveTemps.
var errExiting = errors.New("atomicfile: the process is exiting")

// tempPattern is the os.CreateTemp pattern of a temporary for the
// destination base: hidden, named after it and after this process.
func tempPattern(base, kind string) string {
	return "." + base + "." + kind + "-" + strconv.Itoa(os.Getpid()) + "-*"
}

// split returns path's folder ("." when none) and base name.
func split(path string) (dir, base string) {
	dir, base = filepath.Split(filepath.Clean(path))
	if dir == "" {
		dir = "."
	}
	return dir, base
}

// createTemp creates and registers a temporary file for path under the
// lock, so that a concurrent RemoveTemps sees either no file or a
// registered one.
func createTemp(path string) (*os.File, error) {
	dir, base := split(path)
	live.Lock()
	defer live.Unlock()
	if live.closed {
		return nil, errExiting
	}
	tmp, err := os.CreateTemp(dir, tempPattern(base, "tmp"))
	if err != nil {
		return nil, err
	}
	live.names[tmp.Name()] = struct{}{}
	return tmp, nil
}

func unregister(name string) {
	live.Lock()
	delete(live.names, name)
	live.Unlock()
}

// RemoveTemps removes the temporary file or folder of every File and Dir
// not yet committed or aborted and every TempDir, and returns how many it
// removed (a folder counts once); Create fails from then on. It is
// for a signal handler that is about to exit: the destinations are untouched, and no temporary file is
// left behind. A File whose Commit is renaming at that moment either lands
// whole or not at all: the rename is atomic, and removing its temporary name
// afterwards finds nothing.
func RemoveTemps() int {
	live.Lock()
	defer live.Unlock()
	live.closed = true
	n := 0
	for name := range live.names {
		if os.Remove(name) == nil {
			n++
		}
		delete(live.names, name)
	}
	for dir := range live.dirs {
		if _, err := os.Lstat(dir); err == nil {
			// The writer may be creating a file in dir while it is
			// removed, which fails the final rmdir; another pass gets it.
			for try := 0; try < 3; try++ {
				if os.RemoveAll(dir) == nil {
					n++
					break
				}
			}
		}
		delete(live.dirs, dir)
	}
	return n
}

// mkdirTemp creates and registers a temporary folder for path.
func mkdirTemp(path string) (string, error) {
	dir, base := split(path)
	live.Lock()
	defer live.Unlock()
	if live.closed {
		return "", errExiting
	}
	name, err := os.MkdirTemp(dir, tempPattern(base, "tmp"))
	if err != nil {
		return "", err
	}
	live.dirs[name] = struct{}{}
	return name, nil
}

// TempDir creates a scratch folder beside dst for intermediate files (a
// conversion that feeds a quantization, say), named like dst's temporaries
// and registered, so that RemoveTemps deletes it with everything in it and
// a later run to dst finds it if this one is killed. Remove it with
// RemoveTempDir when done.
func TempDir(dst string) (string, error) {
	sweepStale(dst, false)
	return mkdirTemp(dst)
}

// RemoveTempDir removes a directory made by TempDir and everything in it.
func RemoveTempDir(name string) error {
	live.Lock()
	delete(live.dirs, name)
	live.Unlock()
	return os.RemoveAll(name)
}

// outputMode is the permission of a created output file.
const outputMode = 0o644

// ErrExists is returned when the destination exists and force is not set.
var ErrExists = errors.New("already exists (use --force to replace it)")

// File is a pending output file.
type File struct {
	*os.File
	path   string
	done   bool
	stream *Stream // from Stream, closed by Commit and Abort
}

// Create prepares to write path. inputs are the files the output is made
// from; path may not be any of them. Temporaries an earlier run to path
// left behind are swept first (sweepStale).
func Create(path string, force bool, inputs ...string) (*File, error) {
	if err := CheckDest(path, force, inputs...); err != nil {
		return nil, err
	}
	sweepStale(path, force)
	tmp, err := createTemp(path)
	if err != nil {
		// The temporary name means nothing to the user; the folder does.
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("%s: cannot create a file in the folder %s: %w", path, filepath.Dir(filepath.Clean(path)), err)
	}
	// CreateTemp makes the file 0600; an output is an ordinary file that
	// others may read, as os.Create (0666 less a typical umask) would make.
	if err := tmp.Chmod(outputMode); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		unregister(tmp.Name())
		return nil, err
	}
	return &File{File: tmp, path: path}, nil
}

// CheckFolder returns an error naming the folder path would be created in
// when that folder does not exist (or is not a folder).
func CheckFolder(path string) error {
	dir := filepath.Dir(filepath.Clean(path))
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("%s: the folder %s does not exist", path, dir)
	}
	return nil
}

// CheckDest returns an error when path may not be written: its folder does
// not exist (CheckFolder), it is one of the inputs, or it exists and force
// is false.
func CheckDest(path string, force bool, inputs ...string) error {
	if err := CheckFolder(path); err != nil {
		return err
	}
	dst, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, in := range inputs {
		if st, err := os.Stat(in); err == nil && os.SameFile(st, dst) {
			return fmt.Errorf("%s: refusing to overwrite the input %s", path, in)
		}
	}
	if dst.IsDir() {
		return fmt.Errorf("%s: is a directory", path)
	}
	if !force {
		return fmt.Errorf("%s: %w", path, ErrExists)
	}
	return nil
}

// Commit syncs the data and renames the temporary file to its destination.
func (f *File) Commit() error {
	if f.done {
		return errors.New("atomicfile: already committed or aborted")
	}
	f.done = true
	tmp := f.Name()
	// Unregistered only after the rename: a signal in between removes a
	// name that no longer exists, never the finished output.
	defer unregister(tmp)
	if f.stream != nil {
		if err := f.stream.Close(); err != nil {
			f.Close()
			os.Remove(tmp)
			return err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, f.path); err != nil {
		os.Remove(tmp)
		return err
	}
	syncDir(filepath.Dir(f.path)) // makes the rename itself durable
	return nil
}

// syncDir flushes a folder's entries (a rename in it, files created in it).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// Abort removes the temporary file; the destination is untouched. It is a
// no-op after Commit, so `defer f.Abort()` is the usual pattern.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	if f.stream != nil {
		f.stream.Close()
	}
	f.Close()
	os.Remove(f.Name())
	unregister(f.Name())
}
