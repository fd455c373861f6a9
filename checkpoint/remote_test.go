package checkpoint

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// serveFile serves path with range support (http.ServeContent), and the
// files beside it under their own names.
func serveFile(t *testing.T, path string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := path
		if name := filepath.Base(r.URL.Path); name != filepath.Base(path) {
			p = filepath.Join(filepath.Dir(path), name)
			if _, err := os.Stat(p); err != nil {
				http.NotFound(w, r)
				return
			}
		}
		f, err := os.Open(p)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		defer f.Close()
		http.ServeContent(w, r, filepath.Base(p), time.Time{}, f)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestRemoteMatchesLocal opens fixtures over HTTP and requires the same
// summary as the local file, fetched with range requests.
func TestRemoteMatchesLocal(t *testing.T) {
	for _, p := range []string{"../testdata/arch/qwen2/gguf/qwen2-f32.gguf", "../testdata/arch/qwen2/hf/model.safetensors"} {
		local, err := Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer local.Close()
		ls, err := Summarize(local)
		if err != nil {
			t.Fatal(err)
		}
		srv := serveFile(t, p)
		rc, err := Open(srv.URL + "/" + filepath.Base(p))
		if err != nil {
			t.Fatal(err)
		}
		rs, err := Summarize(rc)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(ls)
		b, _ := json.Marshal(rs)
		if string(a) != string(b) {
			t.Errorf("%s: remote summary\n%s\nlocal\n%s", p, b, a)
		}
		if la, ra := strings.Join(local.AuxNames(), ","), strings.Join(rc.AuxNames(), ","); la != ra {
			t.Errorf("%s: side files %q over HTTP, %q locally", p, ra, la)
		}
		n, ok := rc.Fetched()
		if !ok || n <= 0 || n > rs.FileSize {
			t.Errorf("%s: fetched %d (%v) of %d", p, n, ok, rs.FileSize)
		}
		// Tensor data reads through the same ranges.
		tt := rc.Tensors[len(rc.Tensors)-1]
		got, err := tt.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		lc, _ := Open(p)
		lt, _ := lc.Tensor(tt.Name)
		want, _ := lt.ReadAll()
		lc.Close()
		if string(got) != string(want) {
			t.Errorf("%s: tensor %q differs over HTTP", p, tt.Name)
		}
		rc.Close()
	}
}

// TestRemoteLargeHeaderOnly serves a 70B-shaped sparse safetensors file
// (140 GB) and requires its header read in well under 1% of the bytes.
func TestRemoteLargeHeaderOnly(t *testing.T) {
	dir := t.TempDir()
	hdr := map[string]any{}
	var off int64
	for i := 0; i < 80; i++ {
		for _, n := range []string{"q", "k", "v", "o"} {
			size := int64(8192 * 8192 * 2)
			hdr[fmt.Sprintf("model.layers.%d.self_attn.%s_proj.weight", i, n)] = map[string]any{"dtype": "BF16", "shape": []int64{8192, 8192}, "data_offsets": []int64{off, off + size}}
			off += size
		}
	}
	js, _ := json.Marshal(hdr)
	for len(js)%8 != 0 {
		js = append(js, ' ')
	}
	p := filepath.Join(dir, "big.safetensors")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(js))))
	f.Write(js)
	if err := f.Truncate(8 + int64(len(js)) + off); err != nil {
		t.Fatal(err)
	}
	f.Close()
	srv := serveFile(t, p)
	c, err := Open(srv.URL + "/big.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := Summarize(c)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := c.Fetched()
	t.Logf("fetched %d of %d bytes (%.5f%%)", n, s.FileSize, 100*float64(n)/float64(s.FileSize))
	if s.Tensors != 320 || n*1000 > s.FileSize {
		t.Errorf("%d tensors, fetched %d of %d bytes", s.Tensors, n, s.FileSize)
	}
}

// TestRemoteRefusals: a server that ignores Range, one that cuts its
// answers short, and one that is missing the file each give a clear error.
func TestRemoteRefusals(t *testing.T) {
	p := "../testdata/arch/qwen2/gguf/qwen2-f32.gguf"
	whole := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, &http.Request{Method: "GET", URL: r.URL, Header: http.Header{}}, p) // Range dropped
	}))
	defer whole.Close()
	short := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Range", "bytes 0-65535/1000000")
		w.WriteHeader(http.StatusPartialContent)
		w.Write(make([]byte, 100))
	}))
	defer short.Close()
	missing := serveFile(t, "../testdata/arch/no-such-file.gguf")
	missing.Config.Handler = http.NotFoundHandler()
	for _, tc := range []struct{ url, want string }{
		{whole.URL + "/m.gguf", "ignores Range"},
		{short.URL + "/m.gguf", "100 bytes received"},
		{missing.URL + "/m.gguf", "404"},
		{"hf://only-org", "want hf://ORG/REPO"},
	} {
		_, err := Open(tc.url)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.url, err, tc.want)
		}
	}
	if u, bare, err := hubURL("hf://org/repo@v1.0/sub/model.gguf"); err != nil || bare || u != "https://huggingface.co/org/repo/resolve/v1.0/sub/model.gguf" {
		t.Errorf("hubURL: %q, %v, %v", u, bare, err)
	}
	if u, bare, err := hubURL("hf://org/repo"); err != nil || !bare || u != "https://huggingface.co/org/repo/resolve/main/" {
		t.Errorf("hubURL of a bare repository: %q, %v, %v", u, bare, err)
	}
	t.Setenv("HF_ENDPOINT", "https://hf-mirror.example/")
	if u, _, err := hubURL("hf://org/repo/m.gguf"); err != nil || u != "https://hf-mirror.example/org/repo/resolve/main/m.gguf" {
		t.Errorf("hubURL with HF_ENDPOINT: %q, %v", u, err)
	}
	if !hubHost("hf-mirror.example") || !hubHost("cdn-lfs.huggingface.co") || hubHost("example.com") || hubHost("huggingface.co.evil.example") {
		t.Error("hubHost: HF_TOKEN would go to the wrong hosts")
	}
}

// TestRemoteSlowServer: a server that stalls is given up on after the
// timeout and the retries, with an error saying so, not waited on forever.
func TestRemoteSlowServer(t *testing.T) {
	defer func(d time.Duration) { remoteTimeout = d }(remoteTimeout)
	remoteTimeout = 100 * time.Millisecond
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
	if n := requests.Load(); n != remoteTries {
		t.Errorf("%d requests, want %d (the retries)", n, remoteTries)
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
