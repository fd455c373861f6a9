package main

import (
	"bytes"
	"runtime"
	"runtime/debug"
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

// TestEveryCommandHasExamples keeps --help's Examples section on every
// command, a new one included, and each example an invocation of that
// command or of tfconv.
func TestEveryCommandHasExamples(t *testing.T) {
	t.Parallel()
	root := newRootCmd(&app{out: &bytes.Buffer{}, err: &bytes.Buffer{}})
	n := 0
	for _, c := range append(root.Commands(), root) {
		if c != root && !c.IsAvailableCommand() {
			continue
		}
		n++
		lines := strings.Split(strings.TrimSpace(c.Example), "\n")
		if c.Example == "" {
			t.Errorf("%s: no Example", c.Name())
			continue
		}
		if len(lines) < 2 || len(lines) > 4 {
			t.Errorf("%s: Example has %d line(s), want 2 to 4:\n%s", c.Name(), len(lines), c.Example)
			continue
		}
		for _, l := range lines {
			if !strings.HasPrefix(strings.TrimSpace(l), "tfconv ") {
				t.Errorf("%s: example %q does not start with tfconv", c.Name(), l)
			}
		}
		if c != root && !strings.Contains(c.Example, "tfconv "+c.Name()+" ") {
			t.Errorf("%s: no example runs tfconv %s", c.Name(), c.Name())
		}
	}
	if n < 16 {
		t.Errorf("%d commands walked, want tfconv and the 15 or more it has", n)
	}
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"quantize", "--help"})
	if err := root.Execute(); err != nil || !strings.Contains(out.String(), "Examples:\n  tfconv quantize ") {
		t.Errorf("quantize --help: %v\n%s", err, out.String())
	}
}

// TestVersionText: --version names the module version and the VCS revision
// the binary was built from, and says when the tree had changes.
func TestVersionText(t *testing.T) {
	t.Parallel()
	bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/tfconv/tfconv", Version: "v1.4.0"},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "4d9961d0123456789abcdef0123456789abcdef0"},
			{Key: "vcs.time", Value: "2026-11-27T20:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		}}
	got := versionText("", bi)
	want := "v1.4.0 revision 4d9961d01234+dirty 2026-11-27T20:00:00Z (" + runtime.Version()
	if !strings.HasPrefix(got, want) {
		t.Errorf("versionText = %q, want prefix %q", got, want)
	}
	bi.Settings[3].Value = "false"
	if got := versionText("v2.0.0", bi); !strings.HasPrefix(got, "v2.0.0 revision 4d9961d01234 2026-11-27T20:00:00Z (") {
		t.Errorf("versionText with -X version, clean tree = %q", got)
	}
	if got := versionText("", nil); !strings.HasPrefix(got, "(devel) (") {
		t.Errorf("versionText without build info = %q", got)
	}
}
