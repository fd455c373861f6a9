package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// Dir is a pending output folder (a Hugging Face checkpoint, say): it is
// filled in a temporary folder beside the destination, registered like a
// temporary file so that RemoveTemps deletes it, and its files are moved
// into place on Commit.
//
// An existing destination folder is never removed: Commit replaces only the
// files of the same names as the new ones, and the stale files SetStale
// matches (shards of an earlier save that the new one does not write), and
// leaves every other file and subfolder as it was.
type Dir struct {
	path, tmp string
	force     bool
	done      bool
	stale     func(name string) bool
	result    DirResult
}

// DirResult says what a Commit did to an existing destination folder.
type DirResult struct {
	// Replaced lists the files of the destination that a new file of the
	// same name replaced, sorted.
	Replaced []string
	// Removed lists the stale files removed (SetStale), sorted.
	Removed []string
}

// rename is os.Rename; tests replace it to fail a move.
var rename = os.Rename

// CreateDir prepares to write the folder path; fill the folder Name
// returns, then Commit. An existing path that is not an empty folder is
// written into on Commit only when force is set. Temporaries an earlier run
// to path left behind are swept first (sweepStale).
func CreateDir(path string, force bool) (*Dir, error) {
	sweepStale(path, force)
	tmp, err := mkdirTemp(path)
	if err != nil {
		return nil, err
	}
	// MkdirTemp makes it private; an output folder is an ordinary one.
	if err := os.Chmod(tmp, 0o755); err != nil {
		RemoveTempDir(tmp)
		return nil, err
	}
	return &Dir{path: path, tmp: tmp, force: force}, nil
}

// SetStale sets which files of an existing destination belong to the kind
// of output being written although the new output has no file of that name
// (the shards of an earlier, differently split save): Commit removes them,
// so that the folder holds one checkpoint. Only plain files and symbolic
// links are ever removed, never a folder.
func (d *Dir) SetStale(match func(name string) bool) { d.stale = match }

// Name is the temporary folder to fill.
func (d *Dir) Name() string { return d.tmp }

// Result says what the Commit replaced and removed in an existing
// destination (empty when there was none).
func (d *Dir) Result() DirResult { return d.result }

// Commit moves the files of the temporary folder into the destination: a
// rename of the whole folder when the destination does not exist, else one
// rename per file, the files they replace (and the stale ones) moved aside
// first and deleted only once every new file is in place. The files in it
// must be synced already, and it holds plain files only. The moves hold the
// registry's lock, so a signal handler never sees the destination half
// replaced; a move that fails puts every file back where it was.
func (d *Dir) Commit() error {
	if d.done {
		return errors.New("atomicfile: already committed or aborted")
	}
	d.done = true
	syncDir(d.tmp)
	aside, err := d.swap()
	if err != nil {
		RemoveTempDir(d.tmp)
		return err
	}
	if aside != "" {
		RemoveTempDir(aside)
	}
	syncDir(d.path)
	dir, _ := split(d.path)
	syncDir(dir)
	return nil
}

// swap moves the new files into place under the lock and returns the
// folder the replaced files were moved to ("" when none), registered for
// removal.
func (d *Dir) swap() (aside string, err error) {
	live.Lock()
	defer live.Unlock()
	if live.closed {
		return "", errExiting
	}
	st, err := os.Lstat(d.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := rename(d.tmp, d.path); err != nil {
			return "", err
		}
		delete(live.dirs, d.tmp)
		return "", nil
	case err != nil:
		return "", err
	case st.Mode()&fs.ModeSymlink != 0:
		// A link to a folder is written through, and stays a link.
		if st, err = os.Stat(d.path); err != nil {
			return "", fmt.Errorf("%s: a symbolic link to nothing usable: %w", d.path, err)
		}
	}
	if !st.IsDir() {
		return "", fmt.Errorf("%s: exists and is not a folder", d.path)
	}
	return d.merge()
}

// merge is swap into an existing folder; the lock is held.
func (d *Dir) merge() (aside string, err error) {
	defer func() {
		if err != nil {
			d.result = DirResult{}
		}
	}()
	newEnts, err := os.ReadDir(d.tmp)
	if err != nil {
		return "", err
	}
	oldEnts, err := os.ReadDir(d.path)
	if err != nil {
		return "", err
	}
	if len(oldEnts) > 0 && !d.force {
		return "", fmt.Errorf("%s: %w", d.path, ErrExists)
	}
	var names, moveAside []string
	for _, e := range newEnts {
		names = append(names, e.Name())
	}
	old := map[string]fs.DirEntry{}
	for _, e := range oldEnts {
		old[e.Name()] = e
	}
	for _, n := range names {
		e, ok := old[n]
		if !ok {
			continue
		}
		if e.IsDir() {
			return "", fmt.Errorf("%s: holds a folder %s where the output has a file of that name; move it away", d.path, n)
		}
		d.result.Replaced = append(d.result.Replaced, n)
		moveAside = append(moveAside, n)
	}
	for _, e := range oldEnts {
		n := e.Name()
		if d.stale == nil || slices.Contains(names, n) || e.IsDir() || !d.stale(n) {
			continue
		}
		if !e.Type().IsRegular() && e.Type()&fs.ModeSymlink == 0 {
			continue
		}
		d.result.Removed = append(d.result.Removed, n)
		moveAside = append(moveAside, n)
	}
	slices.Sort(d.result.Replaced)
	slices.Sort(d.result.Removed)

	if len(moveAside) > 0 {
		dir, base := split(d.path)
		if aside, err = os.MkdirTemp(dir, tempPattern(base, "aside")); err != nil {
			return "", err
		}
	}
	// Each move is undone, last first, when a later one fails.
	type move struct{ from, to string }
	var done []move
	fail := func(err error) (string, error) {
		var lost []string
		for i := len(done) - 1; i >= 0; i-- {
			if rename(done[i].to, done[i].from) != nil {
				lost = append(lost, done[i].to)
			}
		}
		if aside != "" {
			// Empty again unless a file could not go back; then it stays,
			// unregistered (sweepStale never removes a folder of this kind).
			os.Remove(aside)
		}
		if len(lost) > 0 {
			return "", fmt.Errorf("%w; could not move back %v", err, lost)
		}
		return "", err
	}
	for _, n := range moveAside {
		m := move{filepath.Join(d.path, n), filepath.Join(aside, n)}
		if err := rename(m.from, m.to); err != nil {
			return fail(fmt.Errorf("%s: moving %s aside: %w", d.path, n, err))
		}
		done = append(done, m)
	}
	for _, n := range names {
		m := move{filepath.Join(d.tmp, n), filepath.Join(d.path, n)}
		if err := rename(m.from, m.to); err != nil {
			return fail(fmt.Errorf("%s: moving the new %s in: %w", d.path, n, err))
		}
		done = append(done, m)
	}
	if aside != "" {
		live.dirs[aside] = struct{}{}
	}
	delete(live.dirs, d.tmp)
	os.Remove(d.tmp)
	return aside, nil
}

// Abort removes the temporary folder; the destination is untouched. It is a
// no-op after Commit, so `defer d.Abort()` is the usual pattern.
func (d *Dir) Abort() {
	if d.done {
		return
	}
	d.done = true
	RemoveTempDir(d.tmp)
}
