package main

import (
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/tfconv/tfconv/synth"
)

// readmeSections splits the README's command reference into one section per
// command: the text from a "### `tfconv NAME …`" heading to the next
// heading of that level or above, keyed by NAME.
func readmeSections(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	head := regexp.MustCompile("^### `tfconv ([a-z][a-z0-9-]*)")
	sections := map[string]string{}
	name := ""
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if strings.HasPrefix(line, "## ") || strings.HasPrefix(line, "### ") {
			name = ""
			if m := head.FindStringSubmatch(line); m != nil {
				name = m[1]
			}
		}
		if name != "" {
			sections[name] += line
		}
	}
	return sections
}

// TestREADMECommandReference keeps the README's command reference in step
// with the CLI: every command has a section, and every flag of a command
// (its own and the ones it inherits) is named in that section, so a flag
// added to the code without a word in the README fails here.
func TestREADMECommandReference(t *testing.T) {
	t.Parallel()
	sections := readmeSections(t)
	root := newRootCmd(&app{out: io.Discard, err: io.Discard})
	for _, cmd := range root.Commands() {
		if cmd.Hidden || cmd.Name() == "help" || cmd.Name() == "completion" {
			continue
		}
		text, ok := sections[cmd.Name()]
		if !ok {
			t.Errorf("README.md has no \"### `tfconv %s …`\" section", cmd.Name())
			continue
		}
		checkFlags := func(fs *pflag.FlagSet) {
			fs.VisitAll(func(f *pflag.Flag) {
				if f.Hidden || f.Name == "help" {
					return
				}
				if !mentionsFlag(text, "--"+f.Name) {
					t.Errorf("README.md's section on %s does not mention --%s", cmd.Name(), f.Name)
				}
			})
		}
		checkFlags(cmd.LocalFlags())
		checkFlags(cmd.InheritedFlags())
	}
	var _ *cobra.Command = root
}

// mentionsFlag reports whether text names flag as a whole word (so --type
// is not found inside --tensor-type).
func mentionsFlag(text, flag string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], flag)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(flag)
		before := j == 0 || !isFlagChar(text[j-1])
		after := end == len(text) || !isFlagChar(text[end])
		if before && after {
			return true
		}
		i = end
	}
}

func isFlagChar(c byte) bool {
	return c == '-' || c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// TestREADMESynthShapes: the README's synth section names every shape
// synth.Shapes() offers (the list there is written by hand).
func TestREADMESynthShapes(t *testing.T) {
	sec := readmeSections(t)["synth"]
	for _, s := range synth.Shapes() {
		if !strings.Contains(sec, "`"+s.Name+"`") {
			t.Errorf("README's synth section does not name the shape %q", s.Name)
		}
	}
}
