package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Dir is a pending output folder (a Hugging Face checkpoint, say): it is
// filled in a temporary folder beside the destination, registered like a
// temporary file so that RemoveTemps deletes it, and renamed into place on
// Commit.
type Dir struct {
	path, tmp string
	force     bool
	done      bool
}

// CreateDir prepares to write the folder path; fill the folder Name
// returns, then Commit. An existing path is replaced on Commit only when
// force is set. Temporaries an earlier run to path left behind are swept
// first (sweepStale).
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

// Name is the temporary folder to fill.
func (d *Dir) Name() string { return d.tmp }

// Commit renames the temporary folder to the destination, replacing an
// existing one when forced. The files in it must be synced already. The
// swap holds the registry's lock, so a signal handler never sees the
// destination moved aside and not yet replaced.
func (d *Dir) Commit() error {
	if d.done {
		return errors.New("atomicfile: already committed or aborted")
	}
	d.done = true
	syncDir(d.tmp)
	old, err := d.swap()
	if err != nil {
		RemoveTempDir(d.tmp)
		return err
	}
	if old != "" {
		RemoveTempDir(old)
	}
	dir, _ := split(d.path)
	syncDir(dir)
	return nil
}

// swap renames the temporary folder into place under the lock and returns
// the folder the previous destination was moved to ("" when there was
// none), registered for removal.
func (d *Dir) swap() (old string, err error) {
	live.Lock()
	defer live.Unlock()
	if live.closed {
		return "", errExiting
	}
	_, err = os.Lstat(d.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.Rename(d.tmp, d.path); err != nil {
			return "", err
		}
	case err != nil:
		return "", err
	case !d.force:
		return "", fmt.Errorf("%s: %w", d.path, ErrExists)
	default:
		dir, base := split(d.path)
		old, err = os.MkdirTemp(dir, tempPattern(base, "old"))
		if err != nil {
			return "", err
		}
		if err := os.Remove(old); err != nil {
			return "", err
		}
		if err := os.Rename(d.path, old); err != nil {
			return "", err
		}
		if err := os.Rename(d.tmp, d.path); err != nil {
			os.Rename(old, d.path)
			return "", err
		}
		live.dirs[old] = struct{}{}
	}
	delete(live.dirs, d.tmp)
	return old, nil
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
