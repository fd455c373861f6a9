package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/formats/native"
	"github.com/tfconv/tfconv/internal/fixtures"
	"github.com/tfconv/tfconv/tensor"
)

// buildBinary builds tfconv the way the README says (static, cgo-free)
// once per test binary, into a folder TestMain removes, and returns its
// path: the tests that need a real process (exit codes, signals, ulimit,
// peak RSS) share one build.
func buildBinary(t testing.TB) string {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "tfconv-test-bin-")
		if err != nil {
			built.err = err
			return
		}
		built.dir = dir
		bin := filepath.Join(dir, "tfconv")
		cmd := exec.Command("go", "build", "-o", bin, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		built.bin = bin
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

// built is the package's one build of the binary (buildBinary).
var built struct {
	once     sync.Once
	dir, bin string
	err      error
}

// binResult is one run of the binary.
type binResult struct {
	code           int
	stdout, stderr string
	wall           time.Duration
	maxRSS         int64 // bytes
}

// runBinary runs bin with args and measures it: wall time and peak RSS of
// the binary alone (see rssProbe for why it goes through a probe).
func runBinary(t testing.TB, bin string, args ...string) binResult {
	t.Helper()
	cmd, figures := probeCommand(t, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	res := binResult{stdout: out.String(), stderr: errb.String()}
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("%v: %v", args, err)
		}
	}
	res.code = cmd.ProcessState.ExitCode()
	if res.code == 125 && strings.HasPrefix(res.stderr, "rss probe:") {
		t.Fatalf("%v: %s", args, res.stderr)
	}
	res.maxRSS, res.wall = figures()
	return res
}

// registeredExtra returns which of the file-reading commands that other
// issues add (convert, run) the binary has, from its help.
func registeredExtra(t *testing.T, bin string) []string {
	res := runBinary(t, bin, "help")
	var out []string
	for _, c := range []string{"convert", "run"} {
		if regexp.MustCompile(`(?m)^\s+` + c + `\s`).MatchString(res.stdout) {
			out = append(out, c)
		}
	}
	if len(out) > 0 {
		t.Logf("also running: %s", strings.Join(out, ", "))
	}
	return out
}

// Size of the input the interruption tests quantize: big enough that a run
// takes a few hundred milliseconds, so that kill points land inside it.
const (
	killTensors = 8
	killRows    = 1024
	killCols    = 1024
	killRuns    = 20
)

// writeKillInput writes a GGUF of killTensors F32 matrices of pseudo-random
// values, with the gguf Writer.
func writeKillInput(t *testing.T, path string) {
	t.Helper()
	var infos []tensor.Info
	for i := 0; i < killTensors; i++ {
		infos = append(infos, tensor.Info{Name: "blk." + itoa(i) + ".ffn_up.weight", DType: tensor.F32, Shape: tensor.Shape{killRows, killCols}})
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	bw := bufio.NewWriter(f)
	w, err := gguf.NewWriter(bw, tensor.Metadata{{Key: "general.architecture", Value: tensor.String("llama")}}, infos)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	row := make([]byte, 4*killCols)
	for _, in := range infos {
		body, err := w.Next(in.Name)
		if err != nil {
			t.Fatal(err)
		}
		for r := 0; r < killRows; r++ {
			for c := 0; c < killCols; c++ {
				binary.LittleEndian.PutUint32(row[4*c:], math.Float32bits(float32(rng.NormFloat64())))
			}
			if _, err := body.Write(row); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
}

// checkDest asserts that dst is absent, or a complete native file whose
// every checksum verifies, and returns whether it exists.
func checkDest(t *testing.T, dst string) bool {
	t.Helper()
	if _, err := os.Stat(dst); os.IsNotExist(err) {
		return false
	}
	f, err := native.Open(dst)
	if err != nil {
		t.Fatalf("destination exists but does not open: %v", err)
	}
	defer f.Close()
	if len(f.Tensors) != killTensors {
		t.Fatalf("destination has %d tensors, want %d", len(f.Tensors), killTensors)
	}
	if err := f.Verify(); err != nil {
		t.Fatalf("destination does not verify: %v", err)
	}
	return true
}

// tempsIn lists atomicfile temporaries left in dir.
func tempsIn(t *testing.T, dir string) []string {
	m, err := filepath.Glob(filepath.Join(dir, ".*.tmp-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestInterruptedWrites kills tfconv quantize at random points: after
// SIGKILL the destination is absent or complete and valid; after SIGINT or
// SIGTERM it is the same, no temporary file is left, and the exit code is
// 130 or 143.
func TestInterruptedWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 32 MB input and runs the binary 25 times")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "in.gguf")
	writeKillInput(t, src)
	outDir := filepath.Join(dir, "out")
	if err := os.Mkdir(outDir, 0o755); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(outDir, "q.tfn")
	args := []string{"quantize", src, dst, "--type", "q8_0", "--pure", "--threads", "1"}

	// A full run, to know how long one takes.
	start := time.Now()
	if res := runBinary(t, bin, args...); res.code != 0 {
		t.Fatalf("quantize: exit %d: %s", res.code, res.stderr)
	}
	full := time.Since(start)
	checkDest(t, dst)
	t.Logf("a full run takes %v", full)

	rng := rand.New(rand.NewPCG(3, 4))
	interrupt := func(sig syscall.Signal, at time.Duration) (int, bool) {
		os.Remove(dst)
		for _, p := range tempsIn(t, outDir) {
			os.Remove(p)
		}
		cmd := exec.Command(bin, args...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if at >= 0 {
			time.Sleep(at)
		} else {
			// Signal once the temporary output exists, so that the
			// handler has something to remove.
			for deadline := time.Now().Add(10 * full); len(tempsIn(t, outDir)) == 0 && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			if len(tempsIn(t, outDir)) == 0 {
				t.Fatalf("%v: no temporary output appeared", sig)
			}
		}
		cmd.Process.Signal(sig)
		cmd.Wait()
		return cmd.ProcessState.ExitCode(), checkDest(t, dst)
	}
	complete := 0
	for i := 0; i < killRuns; i++ {
		at := time.Duration(rng.Int64N(int64(full) * 11 / 10))
		_, exists := interrupt(syscall.SIGKILL, at)
		if exists {
			complete++
		}
	}
	t.Logf("SIGKILL: %d of %d runs had finished; the others left no destination", complete, killRuns)
	for _, c := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, exitSIGINT}, {syscall.SIGTERM, exitSIGTERM}, {syscall.SIGINT, exitSIGINT}} {
		code, exists := interrupt(c.sig, -1)
		if left := tempsIn(t, outDir); len(left) > 0 {
			t.Errorf("%v: temporary files left: %v", c.sig, left)
		}
		if !exists && code != c.code {
			t.Errorf("%v: exit %d, want %d", c.sig, code, c.code)
		}
		if exists && code != 0 {
			t.Errorf("%v: exit %d with a complete destination", c.sig, code)
		}
	}
}

const (
	// inspect70BMaxRSS is issue 8's bound for inspect on this checkpoint.
	inspect70BMaxRSS = 50 << 20
	// inspect70BMaxWall is a hang guard only; the speed of inspect on this
	// checkpoint is BenchmarkInspectSparse70B's figure (target 100 ms).
	inspect70BMaxWall = 10 * time.Second
)

// writeSparse70B writes a 70B-shaped BF16 sharded checkpoint (about 138 GB
// of sparse files: real headers, data that exists only as file length).
func writeSparse70B(t testing.TB, dir string) {
	if err := fixtures.WriteSparse70B(dir); err != nil {
		t.Fatal(err)
	}
}

// TestInspectSparse70B runs the inspect binary on a 70B-shaped sharded
// checkpoint of sparse files: header work only, which must stay under 50 MB
// of RSS. Its speed is measured by BenchmarkInspectSparse70B.
func TestInspectSparse70B(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	writeSparse70B(t, dir)
	const runs = 7
	var walls []time.Duration
	var maxRSS int64
	for i := 0; i < runs; i++ {
		res := runBinary(t, bin, "inspect", dir)
		if res.code != 0 {
			t.Fatalf("inspect: exit %d: %s", res.code, res.stderr)
		}
		if !strings.Contains(res.stdout, "llama") {
			t.Fatalf("inspect output lacks the architecture: %.500s", res.stdout)
		}
		walls = append(walls, res.wall)
		maxRSS = max(maxRSS, res.maxRSS)
	}
	sort.Slice(walls, func(i, j int) bool { return walls[i] < walls[j] })
	median := walls[runs/2]
	t.Logf("inspect 70B (17 shards, 723 tensors): median %v (min %v, max %v) over %d runs, peak RSS %.1f MB",
		median, walls[0], walls[runs-1], runs, float64(maxRSS)/(1<<20))
	if maxRSS >= inspect70BMaxRSS {
		t.Errorf("peak RSS %d MB, limit %d MB", maxRSS>>20, inspect70BMaxRSS>>20)
	}
	if median > inspect70BMaxWall {
		t.Errorf("median %v, limit %v", median, inspect70BMaxWall)
	}
}

// BenchmarkInspectSparse70B times the inspect binary on the 70B-shaped
// sharded checkpoint of TestInspectSparse70B (target: 100 ms a run):
//
//	go test ./cmd/tfconv -run '^$' -bench InspectSparse70B -benchtime 7x
func BenchmarkInspectSparse70B(b *testing.B) {
	bin := buildBinary(b)
	dir := b.TempDir()
	writeSparse70B(b, dir)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if res := runBinary(b, bin, "inspect", dir); res.code != 0 {
			b.Fatalf("inspect: exit %d: %s", res.code, res.stderr)
		}
	}
}
