package httprange

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tfconv/tfconv/hubtest"
	"github.com/tfconv/tfconv/tensor"
)

// TestHub: hf:// addresses, HF_ENDPOINT, and which hosts get HF_TOKEN.
func TestHub(t *testing.T) {
	if u, bare, err := HubURL("hf://org/repo@v1.0/sub/model.gguf"); err != nil || bare || u != "https://huggingface.co/org/repo/resolve/v1.0/sub/model.gguf" {
		t.Errorf("hubURL: %q, %v, %v", u, bare, err)
	}
	if u, bare, err := HubURL("hf://org/repo"); err != nil || !bare || u != "https://huggingface.co/org/repo/resolve/main/" {
		t.Errorf("hubURL of a bare repository: %q, %v, %v", u, bare, err)
	}
	t.Setenv("HF_ENDPOINT", "https://hf-mirror.example/")
	if u, _, err := HubURL("hf://org/repo/m.gguf"); err != nil || u != "https://hf-mirror.example/org/repo/resolve/main/m.gguf" {
		t.Errorf("hubURL with HF_ENDPOINT: %q, %v", u, err)
	}
	if !hubHost("hf-mirror.example") || !hubHost("cdn-lfs.huggingface.co") || hubHost("example.com") || hubHost("huggingface.co.evil.example") {
		t.Error("hubHost: HF_TOKEN would go to the wrong hosts")
	}
}

// TestRemoteSlowServer: a server that stalls is given up on after the
// timeout and the retries, with an error saying so, not waited on forever.
func TestRemoteSlowServer(t *testing.T) {
	defer func(d time.Duration) { Timeout = d }(Timeout)
	Timeout = 100 * time.Millisecond
	var requests atomic.Int32
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	start := time.Now()
	_, err := Open(slow.URL + "/m.gguf")
	if err == nil || !strings.Contains(err.Error(), "Timeout") {
		t.Fatalf("stalled server: %v", err)
	}
	if n := requests.Load(); n != Tries {
		t.Errorf("%d requests, want %d (the retries)", n, Tries)
	}
	// 3 timeouts and the 200 + 400 ms backoff, with room for a loaded machine.
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("gave up after %v", d)
	}
}

// FuzzContentRange: any header value parses to a consistent range or an
// error, never a panic.
func FuzzContentRange(f *testing.F) {
	for _, s := range []string{"bytes 0-65535/1000000", "bytes 10-9/20", "bytes */100", "bytes 0-0/1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		total, first, last, err := contentRange(s)
		if err == nil && (first < 0 || last < first || total <= last) {
			t.Fatalf("%q: %d-%d/%d accepted", s, first, last, total)
		}
	})
}

// serveHubFile serves one generated 8 MiB safetensors file as org/m on a test
// Hub, HF_ENDPOINT set to it.
func serveHubFile(t *testing.T) (*hubtest.Server, *hubtest.Repo, string) {
	t.Helper()
	repo, err := hubtest.NewRepo("org/m", &hubtest.File{Name: "m.safetensors", Tensors: []hubtest.Tensor{
		{Name: "a", DType: tensor.F8_E4M3, Shape: tensor.Shape{1024, 4096}},
		{Name: "b", DType: tensor.BF16, Shape: tensor.Shape{1024, 2048}},
		{Name: "c", DType: tensor.F32, Shape: tensor.Shape{1000}}}})
	if err != nil {
		t.Fatal(err)
	}
	s := hubtest.Start(repo)
	t.Cleanup(s.Close)
	t.Setenv("HF_ENDPOINT", s.URL)
	return s, repo, s.URL + "/org/m/resolve/main/m.safetensors"
}

// TestHubVerify: a file read from the Hub is pinned to the commit the
// branch names, and its bytes are checked against the published sha256
// whatever order they are read in, each byte fetched once; a corrupt byte
// is caught even when the reads skip it (Verify fetches the gaps), and is
// the error of every read after it.
func TestHubVerify(t *testing.T) {
	s, repo, u := serveHubFile(t)
	f := repo.Files["m.safetensors"]
	r, err := Open(u)
	if err != nil {
		t.Fatal(err)
	}
	if _, commit, _ := r.Hub(); commit != repo.Commit || !strings.Contains(r.URL(), "/resolve/"+repo.Commit+"/") {
		t.Errorf("commit %q, URL %s: want the file at %s", commit, r.URL(), repo.Commit)
	}
	if r.SHA256() != f.SHA256() {
		t.Errorf("sha256 %q, want %q", r.SHA256(), f.SHA256())
	}
	// Back to front, in 1 MiB pieces: nothing is hashed until the start
	// arrives, then everything at once.
	want := make([]byte, f.Size())
	f.ReadAt(want, 0)
	got := make([]byte, f.Size())
	for off := (f.Size() - 1) / (1 << 20) * (1 << 20); off >= 0; off -= 1 << 20 {
		end := min(off+1<<20, f.Size())
		if _, err := r.ReadAt(got[off:end], off); err != nil && err != io.EOF {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the bytes read differ from the file's")
	}
	if err := r.Verify(); err != nil {
		t.Fatal(err)
	}
	if n := r.Fetched(); n != f.Size() {
		t.Errorf("fetched %d bytes of a %d-byte file", n, f.Size())
	}
	for _, l := range s.Log() {
		if strings.Contains(l, "/resolve/main/") && !strings.HasPrefix(l, "HEAD") {
			t.Errorf("read at the branch, not the commit: %s", l)
		}
	}
	// A corrupt byte the reads never touch.
	s.SetFaults(hubtest.Faults{Corrupt: "m.safetensors", CorruptByte: 5 << 20})
	r, err = Open(u)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadAt(got[:1<<20], 0); err != nil {
		t.Fatal(err)
	}
	err = r.Verify()
	if err == nil || !strings.Contains(err.Error(), "checksum mismatch") || !strings.Contains(err.Error(), "m.safetensors") {
		t.Fatalf("corrupt file: %v", err)
	}
	if _, err2 := r.ReadAt(got[:10], 0); err2 == nil {
		t.Error("a read after the mismatch succeeded")
	}
}

// TestRetryAfter: 429 with Retry-After is waited out as the server asks,
// 500s are retried, and then the read succeeds.
func TestRetryAfter(t *testing.T) {
	s, _, u := serveHubFile(t)
	r, err := Open(u)
	if err != nil {
		t.Fatal(err)
	}
	s.SetFaults(hubtest.Faults{TooMany: 1, RetryAfter: 1, Status500: 1})
	start := time.Now()
	if _, err := r.ReadAt(make([]byte, 100), 3<<20); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < time.Second {
		t.Errorf("retried after %v, before the Retry-After of 1 s", d)
	}
	if err := r.Verify(); err != nil {
		t.Fatal(err)
	}
}

// FuzzRetryAfter: any Retry-After gives a wait within [0, MaxRetryAfter].
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"1", "120", "-5", "Wed, 21 Oct 2015 07:28:00 GMT", "x", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d := retryAfter(s); d < 0 || d > MaxRetryAfter {
			t.Fatalf("%q: %v", s, d)
		}
	})
}

// TestEvictKeepsUnhashed: when the cache is full, blocks the hash has
// passed go before blocks read out of file order that it has not reached
// (dropping one of those costs a second fetch when Verify hashes it): a
// file read half out of order, then another file read through, then the
// first's start, is fetched once, each byte, but for the block its header
// was read from at Open (hashed, so dropped first), read again with the
// first tensor: at most blockSize bytes more a file.
func TestEvictKeepsUnhashed(t *testing.T) {
	defer func(n int64) { CacheSize = n }(CacheSize)
	CacheSize = 12 << 20
	files := make([]*hubtest.File, 2)
	for i := range files {
		files[i] = &hubtest.File{Name: fmt.Sprintf("m%d.safetensors", i), Tensors: []hubtest.Tensor{
			{Name: "a", DType: tensor.F8_E4M3, Shape: tensor.Shape{1024, 4096}},
			{Name: "b", DType: tensor.BF16, Shape: tensor.Shape{1024, 2048}}}}
	}
	repo, err := hubtest.NewRepo("org/two", files...)
	if err != nil {
		t.Fatal(err)
	}
	s := hubtest.Start(repo)
	t.Cleanup(s.Close)
	t.Setenv("HF_ENDPOINT", s.URL)
	open := func(name string) *Reader {
		r, err := Open(s.URL + "/org/two/resolve/main/" + name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	a, b := open("m0.safetensors"), open("m1.safetensors")
	read := func(r *Reader, from, to int64) {
		buf := make([]byte, 1<<20)
		for off := from; off < to; off += int64(len(buf)) {
			if _, err := r.ReadAt(buf[:min(int64(len(buf)), to-off)], off); err != nil && err != io.EOF {
				t.Fatal(err)
			}
		}
	}
	read(a, 4<<20, a.Size()) // unhashed: the hash waits at the start
	read(b, 0, b.Size())     // fills the cache past CacheSize
	read(a, 0, 4<<20)
	for _, r := range []*Reader{a, b} {
		if err := r.Verify(); err != nil {
			t.Fatal(err)
		}
		if r.Fetched() < r.Size() || r.Fetched() > r.Size()+blockSize {
			t.Errorf("%s: fetched %d bytes of a %d-byte file", r.URL(), r.Fetched(), r.Size())
		}
	}
	t.Logf("served: %v", s.Served())
}

// TestStream: a Stream's WriteTo hands the writer the file's bytes from
// the cache's blocks, the same bytes as its Read and as ReadAt, each byte
// fetched once, with a cache small enough that range buffers go back to
// the pool and are reused while the streams run (a buffer reused while a
// block of it was still in use would show as wrong bytes or a checksum
// mismatch).
func TestStream(t *testing.T) {
	defer func(n int64) { CacheSize = n }(CacheSize)
	CacheSize = 3 * spanBytes
	_, repo, u := serveHubFile(t)
	f := repo.Files["m.safetensors"]
	want := make([]byte, f.Size())
	f.ReadAt(want, 0)
	r, err := Open(u)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// Two consumers: the first 5 MiB and a piece at an odd offset by
	// WriteTo, the rest by Read in small pieces.
	var got bytes.Buffer
	for _, w := range [][2]int64{{0, 5 << 20}, {5 << 20, 12345}} {
		n, err := io.Copy(&got, r.Stream(w[0], w[1])) // WriteTo
		if err != nil || n != w[1] {
			t.Fatalf("WriteTo of [%d, +%d): %d bytes, %v", w[0], w[1], n, err)
		}
	}
	off := int64(got.Len())
	if _, err := io.CopyBuffer(&got, struct{ io.Reader }{r.Stream(off, f.Size()-off)}, make([]byte, 5000)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatal("the bytes streamed differ from the file's")
	}
	if err := r.Verify(); err != nil {
		t.Fatal(err)
	}
	if n := r.Fetched(); n != f.Size() {
		t.Errorf("fetched %d bytes of a %d-byte file", n, f.Size())
	}
}

// TestStreamCorrupt: a corrupt byte in a file read by WriteTo is caught:
// the error of a read once the hash has passed it (a read-ahead may hand
// over the last block before its hash finishes), and of Verify in any case.
func TestStreamCorrupt(t *testing.T) {
	s, repo, u := serveHubFile(t)
	f := repo.Files["m.safetensors"]
	s.SetFaults(hubtest.Faults{Corrupt: "m.safetensors", CorruptByte: 1 << 20})
	r, err := Open(u)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n, err := io.Copy(io.Discard, r.Stream(0, f.Size()))
	if err != nil && !strings.Contains(err.Error(), "checksum mismatch") {
		t.Fatalf("corrupt file: %d bytes, %v", n, err)
	}
	if err := r.Verify(); err == nil || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Fatalf("Verify of a corrupt file: %v", err)
	}
	if _, err := io.Copy(io.Discard, r.Stream(0, 100)); err == nil {
		t.Error("a WriteTo after the mismatch succeeded")
	}
}
