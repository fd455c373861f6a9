package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// addressSpaceLimit is the ulimit -v of the test (KiB): 1 GiB, under which
// a cgo-linked build (pflag imports net, which links runtime/cgo when a C
// compiler is present) failed about half of its runs with
// "runtime/cgo: pthread_create failed" and a SIGABRT (issue 14). The
// README's build is cgo-free and static.
const addressSpaceLimit = 1 << 20

// runLimited runs bin under the address-space limit.
func runLimited(t *testing.T, bin string, args ...string) (code int, stderr string) {
	t.Helper()
	cmd := exec.Command("sh", append([]string{"-c", `ulimit -v ` + itoa(addressSpaceLimit) + `; exec "$0" "$@"`, bin}, args...)...)
	var errb strings.Builder
	cmd.Stderr = &errb
	err := cmd.Run()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("%v: %v", args, err)
		}
	}
	return cmd.ProcessState.ExitCode(), errb.String()
}

// crashed reports a runtime abort rather than a command's own failure.
func crashed(stderr string) bool {
	for _, s := range []string{"pthread_create", "SIGABRT", "fatal error:", "runtime: ", "goroutine 1 ["} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

// TestUlimitCheapPaths runs every command's cheap path, ten times each,
// under a 1 GiB address-space limit: none may abort, each exits as it does
// without the limit.
func TestUlimitCheapPaths(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary ~200 times")
	}
	bin := buildBinary(t)
	tmp := t.TempDir()
	gguf := "../../testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf"
	cases := []struct {
		args []string
		code int
	}{
		{[]string{"inspect", gguf}, 0},
		{[]string{"inspect", convertSample, "--json"}, 0},
		{[]string{"check", gguf}, 0},
		{[]string{"tokenize", gguf, "Hello world"}, 0},
		{[]string{"convert", convertSample, filepath.Join(tmp, "o.gguf"), "--force"}, 0},
		{[]string{"diff", gguf, gguf}, 0},
		{[]string{"run", gguf, "--tokens", "1,15,250"}, 0},
		{[]string{"inspect", filepath.Join(tmp, "missing.gguf")}, 2},
	}
	for _, c := range rootCommandNames(t) {
		cases = append(cases, struct {
			args []string
			code int
		}{[]string{c, "--help"}, 0})
	}
	for _, c := range cases {
		for i := 0; i < 10; i++ {
			code, stderr := runLimited(t, bin, c.args...)
			if crashed(stderr) || code != c.code {
				t.Fatalf("%v (run %d) under ulimit -v %d: exit %d (want %d)\n%s", c.args, i, addressSpaceLimit, code, c.code, stderr)
			}
		}
	}
}

// TestUlimitMalformedCorpus runs inspect over every file of the malformed
// corpus under the limit, with the verdict's exit code.
func TestUlimitMalformedCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary once per corpus file")
	}
	verdicts := loadVerdicts(t)
	bin := buildBinary(t)
	n := 0
	for name, v := range verdicts {
		want, ok := v.Exit["inspect"]
		if !ok {
			continue
		}
		n++
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			code, stderr := runLimited(t, bin, "inspect", filepath.Join(malformedDir, name))
			if crashed(stderr) || code != want {
				t.Errorf("inspect %s under ulimit -v %d: exit %d (want %d)\n%s", name, addressSpaceLimit, code, want, stderr)
			}
		})
	}
	if n < 100 {
		t.Fatalf("inspect ran on %d corpus files, want the whole corpus", n)
	}
}

// rootCommandNames lists tfconv's commands from the command tree itself.
func rootCommandNames(t *testing.T) []string {
	t.Helper()
	var names []string
	for _, c := range newRootCmd(&app{}).Commands() {
		if !c.Hidden && c.Name() != "help" && c.Name() != "completion" {
			names = append(names, c.Name())
		}
	}
	if len(names) < 12 {
		t.Fatalf("%d commands", len(names))
	}
	return names
}
