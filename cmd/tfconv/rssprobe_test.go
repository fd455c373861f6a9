package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Why a probe: Go starts a child with clone(CLONE_VM|CLONE_VFORK), so the
// child still runs on the test process's memory when it calls execve, and
// Linux carries that memory's high-water mark into the child's ru_maxrss.
// Measured straight from the test process, every child would report at least
// the test process's own peak (42.7 MB for an inspect that peaks at 9 MB
// when the whole package runs). The probe is this test binary started fresh:
// its own peak is a few MB, so the grandchild it starts and waits for reports
// its own figure.
const rssProbeEnv = "TFCONV_TEST_RSS_PROBE"

func TestMain(m *testing.M) {
	if out := os.Getenv(rssProbeEnv); out != "" {
		os.Exit(rssProbe(out, os.Args[1:]))
	}
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// rssProbe runs args with this process's standard streams, writes
// "maxrss_bytes wall_ns" to out and returns the child's exit code.
func rssProbe(out string, args []string) int {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = probeFreeEnv()
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			fmt.Fprintln(os.Stderr, "rss probe:", err)
			return 125
		}
	}
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss * 1024 // kilobytes on Linux
	}
	if err := os.WriteFile(out, []byte(fmt.Sprintf("%d %d", rss, wall.Nanoseconds())), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "rss probe:", err)
		return 125
	}
	return cmd.ProcessState.ExitCode()
}

func probeFreeEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, rssProbeEnv+"=") {
			env = append(env, kv)
		}
	}
	return env
}

// probeCommand returns a command that runs bin with args under the probe,
// and a function that reads the figures the probe wrote once it has exited.
func probeCommand(t testing.TB, bin string, args ...string) (*exec.Cmd, func() (rss int64, wall time.Duration)) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir() + "/rss"
	cmd := exec.Command(self, append([]string{bin}, args...)...)
	cmd.Env = append(probeFreeEnv(), rssProbeEnv+"="+out)
	return cmd, func() (int64, time.Duration) {
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatalf("rss probe wrote nothing for %v: %v", args, err)
		}
		f := strings.Fields(string(b))
		if len(f) != 2 {
			t.Fatalf("rss probe output %q", b)
		}
		rss, err1 := strconv.ParseInt(f[0], 10, 64)
		ns, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("rss probe output %q", b)
		}
		return rss, time.Duration(ns)
	}
}
