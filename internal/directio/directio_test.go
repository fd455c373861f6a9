package directio

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"unsafe"
)

// TestScan reads ranges of files of awkward sizes, with O_DIRECT (where the
// test's folder takes it) and without, and checks that the pieces are
// consecutive and are the file's bytes.
func TestScan(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	dir := t.TempDir()
	sizes := []int{1, Align - 1, Align, Align + 3, BufSize - 5, BufSize, 2*BufSize + Align + 17}
	for _, buffered := range []bool{false, true} {
		scanBuffered = buffered
		for _, n := range sizes {
			data := make([]byte, n)
			for i := range data {
				data[i] = byte(r.Uint32())
			}
			path := filepath.Join(dir, "f.bin")
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, rg := range [][2]int{{0, n}, {1, n}, {n / 3, n - n/5}, {n - 1, n}, {Align + 1, n}} {
				from, to := rg[0], rg[1]
				if from >= to {
					continue
				}
				var got []byte
				next := int64(from)
				err := Scan(path, int64(from), int64(to), func(off int64, p []byte) error {
					if off != next {
						t.Fatalf("piece at %d, want %d", off, next)
					}
					got = append(got, p...)
					next += int64(len(p))
					return nil
				})
				if err != nil {
					t.Fatalf("size %d [%d, %d) buffered=%v: %v", n, from, to, buffered, err)
				}
				if !bytes.Equal(got, data[from:to]) {
					t.Fatalf("size %d [%d, %d) buffered=%v: %d bytes, not the file's", n, from, to, buffered, len(got))
				}
			}
		}
	}
	scanBuffered = false
}

func TestScanPastEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.bin")
	if err := os.WriteFile(path, make([]byte, 5000), 0o644); err != nil {
		t.Fatal(err)
	}
	err := Scan(path, 100, 6000, func(int64, []byte) error { return nil })
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("range past the end: %v, want ErrUnexpectedEOF", err)
	}
	stop := errors.New("stop")
	if err := Scan(path, 0, 5000, func(int64, []byte) error { return stop }); err != stop {
		t.Fatalf("fn's error: got %v", err)
	}
	if err := Scan(filepath.Join(t.TempDir(), "missing"), 0, 1, nil); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

func TestWriteAligned(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.bin")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	direct := Set(f, true)
	b := Buf(2 * Align)
	for i := range b {
		b[i] = byte(i * 7)
	}
	if direct, err = Write(f, b, direct); err != nil {
		t.Fatal(err)
	}
	// An unaligned length fails with O_DIRECT and is written the ordinary
	// way instead.
	if direct, err = Write(f, b[:100], direct); err != nil {
		t.Fatal(err)
	}
	if direct {
		t.Fatal("O_DIRECT still set after an unaligned write")
	}
	got, _ := os.ReadFile(path)
	if want := append(append([]byte{}, b...), b[:100]...); !bytes.Equal(got, want) {
		t.Fatalf("file has %d bytes, not the %d written", len(got), len(want))
	}
}

// TestKeptBuffers: buffers given back are handed out again, at most keptMax
// are kept, and scans that stop early (fn's error, the file's end) give
// back only buffers nothing reads into any more: scans after them, each
// reusing the kept buffers, still see exactly the file's bytes.
func TestKeptBuffers(t *testing.T) {
	kept.Lock()
	saved := kept.bufs
	kept.bufs = nil
	kept.Unlock()
	t.Cleanup(func() { kept.Lock(); kept.bufs = saved; kept.Unlock() })

	a := GetBuf()
	if len(a) != BufSize || uintptr(unsafe.Pointer(&a[0]))%Align != 0 {
		t.Fatalf("GetBuf: %d bytes at %#x", len(a), uintptr(unsafe.Pointer(&a[0])))
	}
	PutBuf(a[:10])
	if b := GetBuf(); &b[0] != &a[0] || len(b) != BufSize {
		t.Fatal("a buffer given back is not handed out again, whole")
	}
	PutBuf(make([]byte, 100)) // not GetBuf's: ignored
	for range keptMax + 3 {
		PutBuf(Buf(BufSize))
	}
	if n := len(kept.bufs); n != keptMax {
		t.Fatalf("%d buffers kept, want %d", n, keptMax)
	}

	r := rand.New(rand.NewPCG(3, 4))
	data := make([]byte, 3*BufSize+Align+5)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	path := filepath.Join(t.TempDir(), "f.bin")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop")
	for i := range 6 {
		switch i % 3 {
		case 0: // stopped by fn after its first piece, the reader ahead
			if err := Scan(path, 0, int64(len(data)), func(int64, []byte) error { return stop }); err != stop {
				t.Fatalf("fn's error: got %v", err)
			}
		case 1: // past the end
			if err := Scan(path, 5, int64(len(data))+1, func(int64, []byte) error { return nil }); !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("past the end: %v", err)
			}
		}
		var got []byte
		if err := Scan(path, 1, int64(len(data)), func(_ int64, p []byte) error { got = append(got, p...); return nil }); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data[1:]) {
			t.Fatalf("scan %d after an early stop: not the file's bytes", i)
		}
		if n := len(kept.bufs); n > keptMax {
			t.Fatalf("%d buffers kept", n)
		}
	}
}

// BenchmarkScan reads the file SCAN_FILE names through Scan, as the
// self-check reads an output back (skipped without it): MB/s is the
// device's rate, O_DIRECT.
func BenchmarkScan(b *testing.B) {
	path := os.Getenv("SCAN_FILE")
	if path == "" {
		b.Skip("SCAN_FILE names no file")
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
	for b.Loop() {
		if err := Scan(path, 0, fi.Size(), func(int64, []byte) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}
