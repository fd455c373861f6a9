package directio

import (
	"os"

	"golang.org/x/sys/unix"
)

// errInvalid is what a file system that does not take O_DIRECT reads or
// writes returns for them.
var errInvalid error = unix.EINVAL

// Set sets or clears O_DIRECT on f and reports whether it is set
// afterwards: false when the file system refuses it (tmpfs, some network
// and FUSE file systems) or when clearing it.
func Set(f *os.File, on bool) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	ok := false
	rc.Control(func(fd uintptr) {
		fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
		if err != nil {
			return
		}
		if on {
			fl |= unix.O_DIRECT
		} else {
			fl &^= unix.O_DIRECT
		}
		_, err = unix.FcntlInt(fd, unix.F_SETFL, fl)
		ok = err == nil
	})
	return ok && on
}
