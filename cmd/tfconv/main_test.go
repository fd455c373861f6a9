package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/internal/fixtures"
)

// run calls Main as the shell would and returns exit code, stdout and stderr.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

// sharedFixtures returns shared/fixtures beside the clone, or skips.
func sharedFixtures(t *testing.T) string { return fixtures.Require(t) }

func TestVersionAndHelp(t *testing.T) {
	code, out, _ := run(t, "--version")
	if code != 0 || !strings.HasPrefix(out, "tfconv ") {
		t.Errorf("--version: %d %q", code, out)
	}
	code, out, _ = run(t, "help")
	if code != 0 || !strings.Contains(out, "inspect") {
		t.Errorf("help: %d %q", code, out)
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	for _, args := range [][]string{
		{"inspect"},
		{"inspect", "a", "b"},
		{"inspect", "--no-such-flag", "x"},
		{"no-such-command"},
		{"inspect", "testdata/does-not-exist.gguf"},
	} {
		code, _, errOut := run(t, args...)
		if code != exitError || !strings.HasPrefix(errOut, "tfconv: ") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
}
