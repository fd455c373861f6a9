package httprange

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
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
