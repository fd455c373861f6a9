package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tfconv/tfconv/formats/gguf"
)

// TestPlanMatchesRun: tfconv plan's files are the real run's, names and
// sizes exact to the byte, each file's tensors in order with their types
// and sizes; with --part the shards marked written are the ones the part
// writes, and disk_bytes their sum.
func TestPlanMatchesRun(t *testing.T) {
	t.Parallel()
	src := "../../testdata/arch/llama3/hf"
	for _, tc := range []struct {
		run  []string // the run's flags
		plan []string // plan's flags for it
	}{
		{[]string{"convert", "--outtype", "f16"}, []string{"--outtype", "f16"}},
		{[]string{"convert", "--outtype", "bf16", "--split-max-size", "20K"}, []string{"--outtype", "bf16", "--split-max-size", "20K"}},
		{[]string{"convert", "--outtype", "q8_0", "--split-max-size", "20K", "--part", "2/3"}, []string{"--outtype", "q8_0", "--split-max-size", "20K", "--part", "2/3"}},
		{[]string{"quantize", "--type", "q4_k_m"}, []string{"--type", "q4_k_m"}},
		{[]string{"quantize", "--type", "q8_0", "--split-max-size", "10K"}, []string{"--type", "q8_0", "--split-max-size", "10K"}},
		{[]string{"quantize", "--type", "q4_k_m", "--split-max-size", "10K", "--part", "3/4"}, []string{"--type", "q4_k_m", "--split-max-size", "10K", "--part", "3/4"}},
	} {
		dir := t.TempDir()
		dst := filepath.Join(dir, "out.gguf")
		out := mustRun(t, append([]string{"plan", src, dst, "--json"}, tc.plan...)...)
		var p struct {
			Command string `json:"command"`
			Shards  []struct {
				Name    string `json:"name"`
				Bytes   int64  `json:"bytes"`
				Write   bool   `json:"write"`
				Tensors []struct {
					Name  string `json:"name"`
					Type  string `json:"type"`
					Bytes int64  `json:"bytes"`
				} `json:"tensors"`
			} `json:"shards"`
			DiskBytes    int64 `json:"disk_bytes"`
			PeakRAMBytes int64 `json:"peak_ram_bytes"`
			Seconds      float64
		}
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatalf("%v: %v\n%s", tc.plan, err, out)
		}
		if p.Command != tc.run[0] || p.PeakRAMBytes <= 0 {
			t.Errorf("%v: command %q, peak RAM %d", tc.plan, p.Command, p.PeakRAMBytes)
		}
		runOut := mustRun(t, append([]string{tc.run[0], src, dst, "--json"}, tc.run[1:]...)...)
		var rep struct {
			Tensors []json.RawMessage `json:"tensors"`
		}
		if err := json.Unmarshal([]byte(runOut), &rep); err != nil {
			t.Fatalf("%v: %v", tc.run, err)
		}
		planned := 0
		for _, sh := range p.Shards {
			if sh.Write {
				planned += len(sh.Tensors)
			}
		}
		if len(rep.Tensors) != planned {
			t.Errorf("%v: the report lists %d tensors, the files written hold %d", tc.run, len(rep.Tensors), planned)
		}
		ents, _ := os.ReadDir(dir)
		var disk int64
		written := 0
		for _, sh := range p.Shards {
			st, err := os.Stat(sh.Name)
			if !sh.Write {
				if err == nil {
					t.Errorf("%v: %s written, the plan says another part writes it", tc.plan, sh.Name)
				}
				continue
			}
			written++
			if err != nil {
				t.Errorf("%v: planned %s not written: %v", tc.plan, sh.Name, err)
				continue
			}
			disk += st.Size()
			if st.Size() != sh.Bytes {
				t.Errorf("%v: %s is %d bytes, planned %d", tc.plan, sh.Name, st.Size(), sh.Bytes)
			}
			f, err := gguf.Open(sh.Name)
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Tensors) != len(sh.Tensors) {
				t.Errorf("%v: %s has %d tensors, planned %d", tc.plan, sh.Name, len(f.Tensors), len(sh.Tensors))
			}
			for i := range min(len(f.Tensors), len(sh.Tensors)) {
				got, want := f.Tensors[i], sh.Tensors[i]
				if got.Name != want.Name || !strings.EqualFold(got.DType.String(), want.Type) || got.Size != want.Bytes {
					t.Errorf("%v: %s tensor %d: %s %v %d bytes, planned %s %s %d", tc.plan, sh.Name, i, got.Name, got.DType, got.Size, want.Name, want.Type, want.Bytes)
				}
			}
			f.Close()
		}
		if len(ents) != written || disk != p.DiskBytes {
			t.Errorf("%v: %d files of %d bytes written, planned %d of %d", tc.plan, len(ents), disk, written, p.DiskBytes)
		}
	}
	code, _, errOut := run(t, "plan", src, "--type", "q8_0", "--outtype", "f16")
	if code == 0 || !strings.Contains(errOut, "give one") {
		t.Errorf("--type with --outtype: exit %d, %q", code, errOut)
	}
}

// TestPlanRemote: plan reads hf://ORG/REPO (a loopback server in the Hub's
// URL layout) through the headers alone and plans the files the run over
// hf:// writes, byte sizes exact; of the weights' file it fetches the header and the
// remote reader's first read-ahead block, not the tensors (this file is
// 791 KiB; a real shard's gigabytes are never read).
func TestPlanRemote(t *testing.T) {
	root := "../../testdata/arch/llama3/hf"
	var fetched int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := strings.TrimPrefix(r.URL.Path, "/org/repo/resolve/main/")
		f, err := os.Open(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil || p == r.URL.Path {
			http.NotFound(w, r)
			return
		}
		defer f.Close()
		cw := &countingWriter{ResponseWriter: w}
		http.ServeContent(cw, r, filepath.Base(p), time.Time{}, f)
		if p == "model.safetensors" {
			atomic.AddInt64(&fetched, cw.n)
		}
	}))
	defer srv.Close()
	t.Setenv("HF_ENDPOINT", srv.URL)
	shards := func(out string) string {
		var p struct {
			Shards []struct {
				Name  string `json:"name"`
				Bytes int64  `json:"bytes"`
			} `json:"shards"`
		}
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(p.Shards)
		return string(b)
	}
	for _, tc := range []struct {
		cmd   string
		flags []string
	}{{"quantize", []string{"--type", "q4_k_m", "--split-max-size", "20K"}}, {"convert", []string{"--outtype", "bf16", "--split-max-size", "20K"}}} {
		flags := tc.flags
		atomic.StoreInt64(&fetched, 0)
		dst := filepath.Join(t.TempDir(), "out.gguf")
		remote := mustRun(t, append([]string{"plan", "hf://org/repo", dst, "--json"}, flags...)...)
		n := atomic.LoadInt64(&fetched)
		// The run over hf:// writes what was planned over hf:// (its
		// first shard holds the source's general.source.* keys, which a
		// local folder's has not).
		mustRun(t, append([]string{tc.cmd, "hf://org/repo", dst}, flags...)...)
		written := plannedShards(t, remote)
		for i, sh := range written {
			st, err := os.Stat(sh.Name)
			if err != nil {
				t.Fatalf("%v: planned %s: %v", flags, sh.Name, err)
			}
			written[i].Bytes = st.Size()
		}
		if b, _ := json.Marshal(written); string(b) != shards(remote) {
			t.Errorf("%v: over hf:// planned %s, written %s", flags, shards(remote), b)
		}
		st, _ := os.Stat(filepath.Join(root, "model.safetensors"))
		if n == 0 || n > st.Size()/2 {
			t.Errorf("%v: fetched %d bytes for a plan; the weights are %d", flags, n, st.Size())
		} else {
			t.Logf("%v: %d of the weights' %d bytes fetched", flags, n, st.Size())
		}
	}
}

// countingWriter counts the body bytes written.
type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n += int64(n)
	return n, err
}

// plannedShards are the shards of a plan --json output.
func plannedShards(t *testing.T, out string) []struct {
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
} {
	t.Helper()
	var p struct {
		Shards []struct {
			Name  string `json:"name"`
			Bytes int64  `json:"bytes"`
		} `json:"shards"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	return p.Shards
}
