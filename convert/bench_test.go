package convert

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/tfconv/tfconv/synth"
	"github.com/tfconv/tfconv/tensor"
)

// BenchmarkConvertLarge converts a TinyLlama-1.1B-shaped f32 checkpoint
// (22 layers, hidden 2048, 32/4 heads, FFN 5632, vocab 32000: 4.4 GB of
// random weights from package synth) to f16 GGUF with the tfconv binary,
// and copies the same files with cp, reporting both rates and the
// converter's peak RSS (getrusage of the child). It needs ~11 GB of disk
// and runs only with TFCONV_BENCH_LARGE=1 (TFCONV_BENCH_DIR picks the
// folder, default the system temp dir), so go test -bench . stays small.
//
//	TFCONV_BENCH_LARGE=1 go test ./convert -run '^$' -bench ConvertLarge -benchtime 1x
func BenchmarkConvertLarge(b *testing.B) {
	if os.Getenv("TFCONV_BENCH_LARGE") != "1" {
		b.Skip("set TFCONV_BENCH_LARGE=1 to run (writes ~11 GB)")
	}
	dir, err := os.MkdirTemp(os.Getenv("TFCONV_BENCH_DIR"), "tfconv-bench-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	shape, ok := synth.Lookup("tinyllama-1.1b")
	if !ok {
		b.Fatal("synth has no tinyllama-1.1b shape")
	}
	src := filepath.Join(dir, "hf")
	if err := synth.WriteHF(src, shape, tensor.F32, 1); err != nil {
		b.Fatal(err)
	}
	var srcBytes, largest int64
	files, _ := filepath.Glob(filepath.Join(src, "*.safetensors"))
	for _, f := range files {
		st, _ := os.Stat(f)
		srcBytes += st.Size()
	}
	ts, _ := synth.HFTensors(shape, tensor.F32)
	for _, t := range ts {
		n, _ := t.DType.ShapeBytes(t.Shape)
		largest = max(largest, n)
	}
	bin := filepath.Join(dir, "tfconv")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/tfconv/tfconv/cmd/tfconv").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	// Drop nothing from the page cache (we cannot without root); both runs
	// read the same warm-or-cold files, cp first so it sees no advantage.
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cpDir := filepath.Join(dir, "cp")
		os.RemoveAll(cpDir)
		os.Mkdir(cpDir, 0o755)
		args := append([]string{}, files...)
		args = append(args, cpDir)
		t0 := time.Now()
		if out, err := exec.Command("cp", args...).CombinedOutput(); err != nil {
			b.Fatalf("cp: %v\n%s", err, out)
		}
		exec.Command("sync").Run()
		cpSecs := time.Since(t0).Seconds()
		os.RemoveAll(cpDir)

		out := filepath.Join(dir, "out.gguf")
		os.Remove(out)
		cmd := exec.Command(bin, "convert", "--outtype", "f16", src, out)
		t0 = time.Now()
		if o, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("convert: %v\n%s", err, o)
		}
		convSecs := time.Since(t0).Seconds()
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		rss := ru.Maxrss * 1024 // KiB on Linux
		b.ReportMetric(float64(srcBytes)/1e9/convSecs, "convert-GB/s")
		b.ReportMetric(float64(srcBytes)/1e9/cpSecs, "cp-GB/s")
		b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MiB")
		b.ReportMetric(float64(largest)/(1<<20), "largest-tensor-MiB")
		b.Logf("source %.2f GB; convert %.1fs (%.2f GB/s), cp %.1fs (%.2f GB/s); convert peak RSS %.0f MiB, largest tensor %.0f MiB",
			float64(srcBytes)/1e9, convSecs, float64(srcBytes)/1e9/convSecs, cpSecs, float64(srcBytes)/1e9/cpSecs,
			float64(rss)/(1<<20), float64(largest)/(1<<20))
		os.Remove(out)
	}
}
