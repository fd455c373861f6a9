package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/tfconv/tfconv/internal/atomicfile"
)

// Exit codes after a signal, as a shell reports them (128 + signal number).
const (
	exitSIGINT  = 130
	exitSIGTERM = 143
)

// handleSignals makes SIGINT and SIGTERM remove the temporary files and
// folders of pending outputs (internal/atomicfile) before exiting, so an
// interrupted write leaves neither a partial destination (it never had one)
// nor a hidden temporary beside it. It returns a function that uninstalls the
// handler, for Main's callers that are not the process (tests). The
// message goes to stderr, which ends an open progress line first.
func handleSignals(stderr io.Writer) (stop func()) {
	ch := make(chan os.Signal, 1)
	done := make(chan struct{})
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		select {
		case s := <-ch:
			n := atomicfile.RemoveTemps()
			code := exitSIGINT
			if s == syscall.SIGTERM {
				code = exitSIGTERM
			}
			fmt.Fprintf(stderr, "tfconv: %v: stopped; removed %d unfinished output(s)\n", s, n)
			os.Exit(code)
		case <-done:
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
	}
}
