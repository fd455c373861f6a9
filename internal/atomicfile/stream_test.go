package atomicfile

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/tfconv/tfconv/internal/directio"
)

// streamSizes straddle the O_DIRECT block, the buffer and two buffers.
var streamSizes = []int{0, 1, directio.Align - 1, directio.Align, directio.Align + 1, directio.BufSize - 1,
	directio.BufSize, directio.BufSize + 1, 2*directio.BufSize + 12345}

// writeStream writes data through a Stream of a new File at dst in pieces
// of random sizes (some larger than a buffer) and commits it.
func writeStream(t *testing.T, dst string, data []byte, r *rand.Rand) (direct bool) {
	t.Helper()
	f, err := Create(dst, true)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Abort()
	s := f.Stream()
	for p := data; len(p) > 0; {
		n := min(len(p), 1+r.IntN(3*directio.BufSize/2))
		if r.IntN(4) > 0 {
			n = min(len(p), 1+r.IntN(70000))
		}
		if k, err := s.Write(p[:n]); err != nil || k != n {
			t.Fatalf("Write(%d bytes) = %d, %v", n, k, err)
		}
		p = p[n:]
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	return s.direct
}

func TestStreamWritesEveryByte(t *testing.T) {
	for _, direct := range []bool{true, false} {
		t.Run(map[bool]string{true: "direct", false: "buffered"}[direct], func(t *testing.T) {
			defer func(old bool) { tryDirect = old }(tryDirect)
			tryDirect = direct
			r := rand.New(rand.NewPCG(3, uint64(len(streamSizes))))
			dir := t.TempDir()
			usedDirect := false
			for _, n := range streamSizes {
				data := make([]byte, n)
				for i := range data {
					data[i] = byte(r.Uint32())
				}
				dst := filepath.Join(dir, "out.bin")
				usedDirect = writeStream(t, dst, data, r) || usedDirect
				got, err := os.ReadFile(dst)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, data) {
					t.Fatalf("%d bytes: file has %d bytes, not the ones written", n, len(got))
				}
			}
			if !direct && usedDirect {
				t.Fatal("O_DIRECT used although turned off")
			}
			t.Logf("O_DIRECT in use: %v", usedDirect)
		})
	}
}

// TestStreamWriteError: a write the file refuses fails the stream, and
// Commit then reports it and leaves nothing behind.
func TestStreamWriteError(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "out.bin")
	f, err := Create(dst, false)
	if err != nil {
		t.Fatal(err)
	}
	s := f.Stream()
	f.File.Close() // every write now fails
	chunk := make([]byte, directio.BufSize)
	var werr error
	for i := 0; i < 4 && werr == nil; i++ {
		_, werr = s.Write(chunk)
	}
	if werr == nil {
		// The writer may not have reported yet; Close waits for it.
		werr = s.Close()
	}
	if werr == nil {
		t.Fatal("writes to a closed file succeeded")
	}
	if err := f.Commit(); err == nil {
		t.Fatal("Commit succeeded after a failed write")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("a failed stream left %d files", len(ents))
	}
	if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("destination exists after a failed stream: %v", err)
	}
}

// TestStreamAbortStopsWriter: Abort without Close ends the writer
// goroutine and removes the temporary file.
func TestStreamAbortStopsWriter(t *testing.T) {
	dir := t.TempDir()
	before := runtime.NumGoroutine()
	for range 8 {
		f, err := Create(filepath.Join(dir, "out.bin"), false)
		if err != nil {
			t.Fatal(err)
		}
		s := f.Stream()
		s.Write(make([]byte, directio.BufSize+7))
		f.Abort()
		if _, err := s.Write([]byte{1}); err == nil {
			t.Fatal("Write after Abort succeeded")
		}
	}
	// Goroutines end asynchronously only in the sense of scheduling; give
	// them a moment before counting.
	for i := 0; i < 100 && runtime.NumGoroutine() > before; i++ {
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines after 8 aborted streams, %d before", n, before)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("Abort left %d files", len(ents))
	}
}
