package main

import (
	"fmt"
	"io"
	"strings"
)

// printReplaced says what a forced write into an existing folder did: the
// files it replaced and the stale ones of an earlier save it removed
// (nothing when both lists are empty). A replaced file output goes without
// saying; --json lists it.
func printReplaced(w io.Writer, dst string, folder bool, replaced, removed []string) error {
	if !folder {
		return nil
	}
	if len(replaced) > 0 {
		if _, err := fmt.Fprintf(w, "replaced in %s: %s\n", dst, strings.Join(replaced, ", ")); err != nil {
			return err
		}
	}
	if len(removed) > 0 {
		if _, err := fmt.Fprintf(w, "removed from %s (an earlier save's weight files this one does not have): %s\n",
			dst, strings.Join(removed, ", ")); err != nil {
			return err
		}
	}
	return nil
}
