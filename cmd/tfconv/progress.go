package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/tfconv/tfconv/internal/output"
)

// addProgressFlag binds --progress, the same flag on every command that can
// take more than a moment.
func addProgressFlag(cmd *cobra.Command, p *bool) {
	cmd.Flags().BoolVar(p, "progress", false, "show progress on stderr even when it is not a terminal")
}

// progressOut is where a command's progress line goes (internal/progress):
// stderr when it is a terminal or --progress was given, else nowhere.
func (a *app) progressOut(force bool) io.Writer {
	if force || output.IsTerminal(a.err) {
		return a.err
	}
	return nil
}
