package main

import (
	"fmt"
	"io"
	"strings"
)

// printReplaced says what a forced write did to an existing DST: the files
// it replaced and the stale ones of an earlier save it removed (nothing when
// both lists are empty).
func printReplaced(w io.Writer, dst string, replaced, removed []string) error {
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
