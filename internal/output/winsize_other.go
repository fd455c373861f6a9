//go:build !unix

package output

// windowWidth cannot ask the terminal here; TerminalWidth falls back to
// $COLUMNS.
func windowWidth(uintptr) int { return 0 }
