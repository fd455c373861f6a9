package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// start is when this process began, as far as its outputs are concerned: a
// temporary last modified before it cannot be one this process writes.
var start = time.Now()

// warn receives the warnings about stale temporaries (SetWarn).
var warn struct {
	sync.Mutex
	f func(msg string)
}

// SetWarn sets the function that receives the warnings of this package (the
// stale temporaries found beside a destination: the ones removed and the
// ones kept), nil for none, and returns a function that restores the
// previous one.
func SetWarn(f func(msg string)) (restore func()) {
	warn.Lock()
	prev := warn.f
	warn.f = f
	warn.Unlock()
	return func() {
		warn.Lock()
		warn.f = prev
		warn.Unlock()
	}
}

func warnf(format string, args ...any) {
	warn.Lock()
	defer warn.Unlock()
	if warn.f != nil {
		warn.f(fmt.Sprintf(format, args...))
	}
}

// tempSuffix is what follows ".<dst>.tmp-" or ".<dst>.old-": "<pid>-<random>"
// as tempPattern makes them, or "<random>" as tfconv named them before they
// carried a process id.
var tempSuffix = regexp.MustCompile(`^(?:([0-9]+)-)?[0-9]+$`)

// sweepStale looks beside path for temporaries an earlier run writing path
// left behind (a process killed by SIGKILL, or a crash, runs no handler),
// names each one in a warning, and removes it when that is safe:
//
//   - named by a process that is no longer running on this machine (and not
//     one of this process's own), and not modified since this process
//     started: removed;
//   - named by a process still running: kept, whatever force says (it may
//     be writing the same destination right now);
//   - named without a process id (tfconv before this rule): removed with
//     force when not modified since this process started, else kept;
//   - ".old-" folders hold the previous destination that a forced
//     replacement moved aside; while path does not exist they are its only
//     copy, so they are kept then whatever the rest says;
//   - ".aside-" folders hold files of an existing destination folder that a
//     replacement moved aside (Dir.Commit) and was killed before it put them
//     back or deleted them: they may be the only copy, so they are always
//     kept.
//
// Failing to read the folder is not an error: the sweep only reports.
func sweepStale(path string, force bool) {
	dir, base := split(path)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	_, dstErr := os.Lstat(path)
	dstExists := dstErr == nil
	for _, e := range ents {
		name, kind, rest := e.Name(), "", ""
		for _, k := range []string{"tmp", "old", "aside"} {
			if r, ok := strings.CutPrefix(name, "."+base+"."+k+"-"); ok {
				kind, rest = k, r
			}
		}
		m := tempSuffix.FindStringSubmatch(rest)
		if kind == "" || m == nil {
			continue
		}
		full := filepath.Join(dir, name)
		if registered(full) {
			continue
		}
		pid, _ := strconv.Atoi(m[1])
		untouched := !modifiedSince(full, start)
		switch {
		case kind == "aside":
			warnf("kept %s: it holds files of %s that an interrupted replacement moved aside; move them back if you need them, or remove it", full, path)
		case kind == "old" && !dstExists:
			warnf("kept %s: it holds the previous %s, moved aside by a replacement that was interrupted; rename it back if you need it", full, path)
		case pid > 0 && pid != os.Getpid() && processAlive(pid):
			warnf("kept %s: a temporary output of process %d, which is still running", full, pid)
		case pid > 0 && untouched:
			removeStale(full, fmt.Sprintf("left by process %d, which is no longer running", pid))
		case pid == 0 && force && untouched:
			removeStale(full, "left by an earlier run; removed as --force asks")
		case pid == 0:
			warnf("kept %s: a temporary output left by an earlier run to %s (remove it, or run again with --force)", full, path)
		default:
			warnf("kept %s: a temporary output of process %d modified since this run started", full, pid)
		}
	}
}

func removeStale(path, why string) {
	if err := os.RemoveAll(path); err != nil {
		warnf("kept %s: a stale temporary output (%s) that could not be removed: %v", path, why, err)
		return
	}
	warnf("removed stale temporary output %s (%s)", path, why)
}

// registered reports whether path is a pending temporary of this process.
func registered(path string) bool {
	live.Lock()
	defer live.Unlock()
	_, f := live.names[path]
	_, d := live.dirs[path]
	return f || d
}

// modifiedSince reports whether path, or an entry of it when it is a
// folder, was modified at or after t (or cannot be read, to be safe).
func modifiedSince(path string, t time.Time) bool {
	st, err := os.Lstat(path)
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist)
	}
	if !st.ModTime().Before(t) {
		return true
	}
	if !st.IsDir() {
		return false
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return true
	}
	for _, e := range ents {
		info, err := e.Info()
		if err != nil || !info.ModTime().Before(t) {
			return true
		}
	}
	return false
}
