package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tfconv/tfconv/internal/atomicfile"
	"github.com/tfconv/tfconv/internal/progress"
)

// Exit codes shared by every command (documented in the README).
const (
	exitOK    = 0 // success
	exitFound = 1 // a check ran and found a difference or regression
	exitError = 2 // usage or input error
)

// version is set at build time with -ldflags "-X main.version=v1.2.3"; when
// empty the module version from the build info is used.
var version = ""

// revision, revisionTime and revisionModified ("true": the tree had
// changes) are the VCS stamp set at build time (-X main.revision=SHA …) by
// scripts/release.sh, for builds go cannot stamp itself (from a git
// worktree, or with GOFLAGS=-buildvcs=false); go's own stamp wins.
var revision, revisionTime, revisionModified = "", "", ""

// errFound is returned (wrapped) by commands that checked something and found
// a difference; Main turns it into exit code 1.
var errFound = errors.New("difference found")

// foundError is errFound with a message of its own (check's "error
// findings"), for Main's exit code 1.
type foundError string

func (e foundError) Error() string { return string(e) }
func (foundError) Unwrap() error   { return errFound }

// app carries what every command needs: where to print.
type app struct {
	out io.Writer // results
	err io.Writer // progress, warnings, errors
}

// Main runs tfconv with the given arguments and returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	stderr = progress.NewLine(stderr) // a message ends any progress line first
	defer handleSignals(stderr)()
	defer atomicfile.SetWarn(func(msg string) { fmt.Fprintln(stderr, "tfconv: warning:", msg) })()
	a := &app{out: stdout, err: stderr}
	root := newRootCmd(a)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteC()
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errFound):
		if msg := err.Error(); msg != errFound.Error() {
			fmt.Fprintln(stderr, "tfconv:", msg)
		}
		return exitFound
	default:
		fmt.Fprintln(stderr, "tfconv:", errorText(cmd, root, err))
		return exitError
	}
}

// errorText is err as the user reads it: prefixed with the command that
// failed (unless it already starts so), and with a path error said as
// "PATH: no such file or directory" rather than the system call's
// "stat PATH: no such file or directory". errors.Is still sees the error
// itself; only its printed text changes.
func errorText(cmd, root *cobra.Command, err error) string {
	msg := err.Error()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		if i := strings.LastIndex(msg, pe.Error()); i >= 0 {
			head, plain := msg[:i], pe.Path+": "+pe.Err.Error()
			if strings.HasSuffix(head, pe.Path+": ") {
				plain = pe.Err.Error()
			}
			msg = head + plain + msg[i+len(pe.Error()):]
		}
	}
	if cmd != nil && cmd != root && !strings.HasPrefix(msg, cmd.Name()+":") {
		msg = cmd.Name() + ": " + msg
	}
	return msg
}

func versionString() string {
	bi, _ := debug.ReadBuildInfo()
	if revision != "" && bi != nil {
		stamped := false
		for _, s := range bi.Settings {
			stamped = stamped || s.Key == "vcs.revision"
		}
		if !stamped {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: "vcs.revision", Value: revision},
				debug.BuildSetting{Key: "vcs.time", Value: revisionTime},
				debug.BuildSetting{Key: "vcs.modified", Value: revisionModified})
		}
	}
	return versionText(version, bi)
}

// versionText is --version's text: the version (set by -ldflags, else the
// module's, else "(devel)"), the VCS revision the binary was built from
// with "+dirty" when the tree had changes (go build stamps vcs.revision and
// vcs.modified), the Go version and the platform. bi may be nil.
func versionText(v string, bi *debug.BuildInfo) string {
	if v == "" {
		v = "(devel)"
		if bi != nil && bi.Main.Version != "" {
			v = bi.Main.Version
		}
	}
	rev, dirty, when := "", false, ""
	if bi != nil {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			case "vcs.time":
				when = s.Value
			}
		}
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if dirty {
			rev += "+dirty"
		}
		if when != "" {
			rev += " " + when
		}
		v += " revision " + rev
	}
	return fmt.Sprintf("%s (%s %s/%s)", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "tfconv",
		Short: "Convert, quantize, inspect and verify transformer checkpoints",
		Long: `tfconv moves transformer checkpoints between safetensors, GGUF and its native
format, quantizes them, summarizes them and proves they still compute the same thing.

Exit codes: 0 success, 1 a check found a difference, 2 usage or input error.`,
		Version:       versionString(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("tfconv {{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w (see 'tfconv %s --help')", err, c.Name())
	})
	root.AddCommand(
		newCmdInspect(a),
		newCmdConvert(a),
		newCmdMergeLoRA(a),
		newCmdQuantize(a),
		newCmdPlan(a),
		newCmdSynth(a),
		newCmdTokenize(a),
		newCmdCheck(a),
		newCmdRun(a), newCmdGenerate(a), newCmdBench(a),
		newCmdVerify(a),
		newCmdDiff(a),
		newCmdPerplexity(a),
		newCmdImatrix(a),
		newCmdEdit(a),
		newCmdCard(a),
	)
	setExamples(root)
	return root
}

// exactArgs is cobra.ExactArgs with a message that names the command's usage.
func exactArgs(n int) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != n {
			return fmt.Errorf("%s: expected %d argument(s), got %d (usage: %s)", c.Name(), n, len(args), c.UseLine())
		}
		return nil
	}
}

// rangeArgs is cobra.RangeArgs with a message that names the command's usage.
func rangeArgs(lo, hi int) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) < lo || len(args) > hi {
			return fmt.Errorf("%s: expected %d to %d arguments, got %d (usage: %s)", c.Name(), lo, hi, len(args), c.UseLine())
		}
		return nil
	}
}
