package checkpoint

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/internal/fixtures"
	"github.com/tfconv/tfconv/tensor"
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
}

// sparseWriter writes into a file, turning all-zero writes into seeks, so
// that tests can make large sparse files through the real writers.
type sparseWriter struct{ f *os.File }

func (w sparseWriter) Write(p []byte) (int, error) {
	for _, b := range p {
		if b != 0 {
			return w.f.Write(p)
		}
	}
	_, err := w.f.Seek(int64(len(p)), io.SeekCurrent)
	return len(p), err
}

func (w sparseWriter) Close() error {
	// A trailing hole needs the size set explicitly.
	off, err := w.f.Seek(0, io.SeekCurrent)
	if err == nil {
		err = w.f.Truncate(off)
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// TestRemoteLargeSets: a 70B-shaped sharded safetensors checkpoint (4
// shards, 43 GB) and a GGUF split set (4 shards, 4 GiB), sparse files served
// over HTTP, open from the index's and a shard's URL reading well under 1%
// of their bytes.
func TestRemoteLargeSets(t *testing.T) {
	dir := t.TempDir()
	// Safetensors: 80 layers × 4 projections of 8192² bf16, 20 layers a shard.
	shards := make([][]fixtures.SparseTensor, 4)
	for i := range 80 {
		for _, n := range []string{"q", "k", "v", "o"} {
			shards[i/20] = append(shards[i/20], fixtures.SparseTensor{Name: fmt.Sprintf("model.layers.%d.self_attn.%s_proj.weight", i, n), Shape: []int64{8192, 8192}})
		}
	}
	if _, err := fixtures.WriteSparseSafetensors(dir, shards); err != nil {
		t.Fatal(err)
	}
	// GGUF: 32 f16 tensors of 8192×8192 (128 MiB), 1 GiB a shard.
	var infos []tensor.Info
	for i := 0; i < 32; i++ {
		infos = append(infos, tensor.Info{Name: fmt.Sprintf("blk.%d.attn_q.weight", i), DType: tensor.F16, Shape: tensor.Shape{8192, 8192}})
	}
	meta := tensor.Metadata{{Key: "general.architecture", Value: tensor.String("llama")}}
	sw, err := gguf.NewSplitWriter(filepath.Join(dir, "big"), 1<<30, meta, infos, func(name string) (io.WriteCloser, error) {
		f, err := os.Create(name)
		return sparseWriter{f}, err
	})
	if err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 1<<20)
	for _, info := range infos {
		w, err := sw.Next(info.Name)
		if err != nil {
			t.Fatal(err)
		}
		for n := 0; n < 8192*8192*2; n += len(zeros) {
			w.Write(zeros)
		}
	}
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	srv := serveFile(t, filepath.Join(dir, "model.safetensors.index.json"))
	for _, tc := range []struct {
		name            string
		tensors, shards int
	}{{"model.safetensors.index.json", 320, 4}, {"big-00003-of-00004.gguf", 32, 4}} {
		c, err := Open(srv.URL + "/" + tc.name)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Summarize(c)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := c.Fetched()
		t.Logf("%s: fetched %d of %d bytes (%.5f%%) in %d files", tc.name, n, s.FileSize, 100*float64(n)/float64(s.FileSize), s.Files)
		if s.Tensors != tc.tensors || s.Files != tc.shards || n*100 > s.FileSize {
			t.Errorf("%s: %d tensors in %d files, fetched %d of %d bytes", tc.name, s.Tensors, s.Files, n, s.FileSize)
		}
		c.Close()
	}
}
