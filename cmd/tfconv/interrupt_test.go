package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hfTemps lists the temporary folders a conversion to dir/name leaves
// beside it.
func hfTemps(t *testing.T, dir, name string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "."+name+".tmp-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// startUntilTemp starts bin with args and returns once the temporary output
// folder in dir holds a model.safetensors with data in it.
func startUntilTemp(t *testing.T, bin, dir, name string, args ...string) (*exec.Cmd, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		for _, tmp := range hfTemps(t, dir, name) {
			if st, err := os.Stat(filepath.Join(tmp, "model.safetensors")); err == nil && st.Size() > 0 {
				return cmd, &errb
			}
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	t.Fatalf("%v: no partial model.safetensors appeared: %s", args, errb.String())
	return nil, nil
}

// TestInterruptHFOutput interrupts GGUF → HF conversions of a 311 MiB
// synthetic GPT-2 (about a second of writing): SIGINT removes the
// temporary folder and says so (one unfinished output); after a SIGKILL the
// next run to the same DST names the folder left behind and removes it
// (its process is gone and it is older than the run), while a folder of a
// process still running, or one it cannot tell is stale, is named and kept.
func TestInterruptHFOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 311 MiB GGUF and converts it")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "g.gguf")
	if res := runBinary(t, bin, "synth", "--like", "gpt2-124m", src, "--type", "f16"); res.code != 0 {
		t.Fatalf("synth: exit %d: %s", res.code, res.stderr)
	}
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(out, "hf")

	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		cmd, errb := startUntilTemp(t, bin, out, "hf", "convert", src, dst)
		cmd.Process.Signal(sig)
		cmd.Wait()
		want := map[syscall.Signal]int{syscall.SIGINT: exitSIGINT, syscall.SIGTERM: exitSIGTERM}[sig]
		if code := cmd.ProcessState.ExitCode(); code != want {
			t.Errorf("%v: exit %d, want %d: %s", sig, code, want, errb)
		}
		if !strings.Contains(errb.String(), "removed 1 unfinished output(s)") {
			t.Errorf("%v: stderr %q", sig, errb)
		}
		if left := hfTemps(t, out, "hf"); len(left) > 0 {
			t.Errorf("%v: temporary folders left: %v", sig, left)
		}
		if _, err := os.Stat(dst); !os.IsNotExist(err) {
			t.Errorf("%v: %s exists after the interruption", sig, dst)
		}
	}

	// SIGKILL leaves the folder; the next run names it and removes it.
	cmd, _ := startUntilTemp(t, bin, out, "hf", "convert", src, dst)
	cmd.Process.Kill()
	cmd.Wait()
	stale := hfTemps(t, out, "hf")
	if len(stale) != 1 {
		t.Fatalf("after SIGKILL: temporary folders %v, want one", stale)
	}
	// Two that are not clearly stale: one of a process still running (this
	// test), one named as before temporaries carried a process id.
	live := filepath.Join(out, ".hf.tmp-"+strconv.Itoa(os.Getpid())+"-1")
	unknown := filepath.Join(out, ".hf.tmp-805693020")
	for _, d := range []string{live, unknown} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-time.Hour)
		os.Chtimes(d, old, old)
	}
	res := runBinary(t, bin, "convert", src, dst)
	if res.code != 0 {
		t.Fatalf("convert after SIGKILL: exit %d: %s", res.code, res.stderr)
	}
	if !strings.Contains(res.stderr, "removed stale temporary output "+stale[0]) {
		t.Errorf("stale folder %s not named as removed: %q", stale[0], res.stderr)
	}
	for _, d := range []string{live, unknown} {
		if !strings.Contains(res.stderr, "kept "+d) {
			t.Errorf("%s not named as kept: %q", d, res.stderr)
		}
	}
	left := hfTemps(t, out, "hf")
	if len(left) != 2 || !slices.Contains(left, live) || !slices.Contains(left, unknown) {
		t.Errorf("temporary folders after the run: %v, want %s and %s", left, live, unknown)
	}
	// --force removes the one it cannot attribute, never the live one.
	res = runBinary(t, bin, "convert", "--force", src, dst)
	if res.code != 0 || !strings.Contains(res.stderr, "removed stale temporary output "+unknown) || !strings.Contains(res.stderr, "kept "+live) {
		t.Errorf("--force: exit %d: %q", res.code, res.stderr)
	}
	if left := hfTemps(t, out, "hf"); len(left) != 1 || left[0] != live {
		t.Errorf("temporary folders after --force: %v, want only %s", left, live)
	}

	os.Remove(live)

	// Into the existing folder, which holds the user's files too: SIGINT
	// leaves it exactly as it was; a finished --force replaces the model
	// files and keeps the user's.
	if err := os.WriteFile(filepath.Join(dst, "notes.md"), []byte("my notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dst, "sub"), 0o755)
	os.WriteFile(filepath.Join(dst, "sub", "x.txt"), []byte("x"), 0o644)
	before := listing(t, dst)
	cmd, errb := startUntilTemp(t, bin, out, "hf", "convert", "--force", src, dst)
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != exitSIGINT {
		t.Errorf("SIGINT into an existing folder: exit %d: %s", code, errb)
	}
	if got := listing(t, dst); !slices.Equal(got, before) {
		t.Errorf("SIGINT changed the existing folder:\n%v\nwant\n%v", got, before)
	}
	res = runBinary(t, bin, "convert", "--force", src, dst)
	if res.code != 0 || !strings.Contains(res.stdout, "replaced in "+dst+": config.json, generation_config.json, merges.txt, model.safetensors, special_tokens_map.json") {
		t.Errorf("--force into the folder: exit %d: %s%s", res.code, res.stdout, res.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "notes.md")); err != nil || string(b) != "my notes" {
		t.Errorf("notes.md after --force: %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "sub", "x.txt")); err != nil || string(b) != "x" {
		t.Errorf("sub/x.txt after --force: %q %v", b, err)
	}
	if left := hfTemps(t, out, "hf"); len(left) != 0 {
		t.Errorf("temporaries after the forced runs: %v", left)
	}
}

// listing names every entry under dir with its size, modification time and
// inode: what a replacement would change.
func listing(t *testing.T, dir string) []string {
	t.Helper()
	var l []string
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		var ino uint64
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			ino = st.Ino
		}
		l = append(l, fmt.Sprintf("%s %d %d %d", p, fi.Size(), fi.ModTime().UnixNano(), ino))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}
