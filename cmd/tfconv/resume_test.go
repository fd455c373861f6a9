package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// finishedShards counts the shards of dir/prefix-*-of-*.gguf in place.
func finishedShards(dir, prefix string) int {
	m, _ := filepath.Glob(filepath.Join(dir, prefix+"-*-of-*.gguf"))
	return len(m)
}

// TestResumeAfterSIGKILL kills a split conversion of a synthetic GPT-2 of
// 4 layers (128 MiB of safetensors into 13 shards of 7 MB) with SIGKILL at
// three points — while the first shard is being written, after 3 shards,
// after 9 — and reruns it with --resume: the finished shards are kept (their sha256
// checked against the record), writing restarts at the first unfinished
// one, and the set is byte-identical to an uninterrupted run's, with no
// record or temporary left. Without --resume the rerun is refused naming
// it; a resume with another plan is refused naming what differs.
func TestResumeAfterSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 128 MiB checkpoint and converts it four times")
	}
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "g")
	if res := runBinary(t, bin, "synth", "--like", "gpt2-124m", "--layers", "4", src, "--to", "safetensors"); res.code != 0 {
		t.Fatalf("synth: exit %d: %s", res.code, res.stderr)
	}
	args := func(dst string, extra ...string) []string {
		return append([]string{"convert", src, dst, "--outtype", "f16", "--split-max-size", "7M"}, extra...)
	}
	wholeDir := filepath.Join(dir, "whole")
	os.Mkdir(wholeDir, 0o755)
	if res := runBinary(t, bin, args(filepath.Join(wholeDir, "w.gguf"))...); res.code != 0 {
		t.Fatalf("uninterrupted: exit %d: %s", res.code, res.stderr)
	}
	whole := shardSums(t, wholeDir, "w")
	if len(whole) < 12 {
		t.Fatalf("%d shards, want at least 12", len(whole))
	}
	for i, at := range []int{0, 3, 9} {
		out := filepath.Join(dir, "k"+string(rune('0'+i)))
		os.Mkdir(out, 0o755)
		dst := filepath.Join(out, "w.gguf")
		cmd := exec.Command(bin, args(dst)...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		reached := false
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			temps, _ := filepath.Glob(filepath.Join(out, ".w-*.tmp-*"))
			if n := finishedShards(out, "w"); n >= at && (at > 0 || len(temps) > 0) && n < len(whole) {
				reached = true
				break
			}
		}
		cmd.Process.Kill()
		cmd.Wait()
		if !reached {
			t.Fatalf("kill point %d: not reached", at)
		}
		killed := finishedShards(out, "w")
		if _, err := os.Stat(dst + ".tfconv-resume"); err != nil && killed > 0 {
			t.Errorf("kill point %d: %d shards in place but no record: %v", at, killed, err)
		}
		if killed > 0 {
			res := runBinary(t, bin, args(dst)...)
			if res.code == 0 || !strings.Contains(res.stderr, "--resume") {
				t.Errorf("kill point %d: a rerun without --resume: exit %d, %q", at, res.code, res.stderr)
			}
			res = runBinary(t, bin, args(dst, "--resume", "--outtype", "bf16")...)
			if res.code == 0 || !strings.Contains(res.stderr, "option outtype") {
				t.Errorf("kill point %d: a resume with another outtype: exit %d, %q", at, res.code, res.stderr)
			}
		}
		res := runBinary(t, bin, args(dst, "--resume")...)
		if res.code != 0 {
			t.Fatalf("kill point %d: resume: exit %d: %s", at, res.code, res.stderr)
		}
		if killed > 0 && !strings.Contains(res.stderr, "shards kept (sha256 verified)") {
			t.Errorf("kill point %d (%d shards in place): resume said %q", at, killed, res.stderr)
		}
		got := shardSums(t, out, "w")
		for name, sum := range whole {
			if got[name] != sum {
				t.Errorf("kill point %d (%d shards in place): %s differs from the uninterrupted run's", at, killed, name)
			}
		}
		ents, _ := os.ReadDir(out)
		if len(ents) != len(whole) {
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			t.Errorf("kill point %d: left %v", at, names)
		}
		t.Logf("kill point %d: killed with %d of %d shards in place; resumed: %s", at, killed, len(whole), strings.TrimSpace(res.stderr))
	}

	// quantize keeps its record the same way (one kill point).
	qargs := func(dst string, extra ...string) []string {
		return append([]string{"quantize", src, dst, "--type", "q8_0", "--split-max-size", "5M"}, extra...)
	}
	qWhole := filepath.Join(dir, "qwhole")
	os.Mkdir(qWhole, 0o755)
	if res := runBinary(t, bin, qargs(filepath.Join(qWhole, "q.gguf"))...); res.code != 0 {
		t.Fatalf("quantize: exit %d: %s", res.code, res.stderr)
	}
	qsums := shardSums(t, qWhole, "q")
	out := filepath.Join(dir, "qk")
	os.Mkdir(out, 0o755)
	dst := filepath.Join(out, "q.gguf")
	cmd := exec.Command(bin, qargs(dst)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline) && finishedShards(out, "q") < 2; time.Sleep(time.Millisecond) {
	}
	cmd.Process.Kill()
	cmd.Wait()
	killed := finishedShards(out, "q")
	if killed < 2 || killed == len(qsums) {
		t.Fatalf("quantize killed with %d of %d shards in place", killed, len(qsums))
	}
	res := runBinary(t, bin, qargs(dst, "--resume", "--type", "q4_0")...)
	if res.code == 0 || !strings.Contains(res.stderr, "option type") {
		t.Errorf("quantize: a resume with another type: exit %d, %q", res.code, res.stderr)
	}
	if res = runBinary(t, bin, qargs(dst, "--resume")...); res.code != 0 {
		t.Fatalf("quantize resume: exit %d: %s", res.code, res.stderr)
	}
	got := shardSums(t, out, "q")
	for name, sum := range qsums {
		if got[name] != sum {
			t.Errorf("quantize, killed with %d shards in place: %s differs from the uninterrupted run's", killed, name)
		}
	}
	if _, err := os.Stat(dst + ".tfconv-resume"); err == nil {
		t.Error("quantize: the record is left after a successful resume")
	}
	t.Logf("quantize: killed with %d of %d shards in place; resumed: %s", killed, len(qsums), strings.TrimSpace(res.stderr))
}
