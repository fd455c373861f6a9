//go:build !linux

package directio

import (
	"errors"
	"os"
)

// errInvalid never matches: without O_DIRECT nothing is retried.
var errInvalid = errors.New("directio: no O_DIRECT on this system")

// Set reports false: files are read and written the ordinary way here.
func Set(f *os.File, on bool) bool { return false }
