package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestInspectURL runs inspect on a GGUF and a safetensors file served over
// HTTP with range requests: the --json is the local file's but for the
// paths, and stderr says how few bytes were fetched.
func TestInspectURL(t *testing.T) {
	root := "../../testdata/arch/qwen2"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(r.URL.Path, "/")))
		f, err := os.Open(p)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		defer f.Close()
		http.ServeContent(w, r, filepath.Base(p), time.Time{}, f)
	}))
	defer srv.Close()
	for _, rel := range []string{"gguf/qwen2-f32.gguf", "hf/model.safetensors"} {
		code, local, _ := run(t, "inspect", "--json", filepath.Join(root, rel))
		if code != 0 {
			t.Fatalf("local inspect: exit %d", code)
		}
		url := srv.URL + "/" + rel
		code, remote, stderr := run(t, "inspect", "--json", url)
		if code != 0 {
			t.Fatalf("inspect %s: exit %d: %s", url, code, stderr)
		}
		norm := func(s, path string) map[string]any {
			var m map[string]any
			if err := json.Unmarshal([]byte(s), &m); err != nil {
				t.Fatal(err)
			}
			delete(m, "path")
			for _, x := range m["tensors"].([]any) {
				delete(x.(map[string]any), "file")
			}
			return m
		}
		a, _ := json.Marshal(norm(local, ""))
		b, _ := json.Marshal(norm(remote, url))
		if string(a) != string(b) {
			t.Errorf("%s: --json over HTTP differs from the local file's", rel)
		}
		if !strings.Contains(stderr, "fetched") || !strings.Contains(stderr, "range requests") {
			t.Errorf("%s: stderr does not say what was fetched: %q", rel, stderr)
		}
	}
}
