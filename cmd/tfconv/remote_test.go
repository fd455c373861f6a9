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

// TestInspectURLShards: a sharded safetensors checkpoint (its index URL, or
// hf://ORG/REPO against HF_ENDPOINT) and a GGUF split set (any shard's URL)
// over HTTP give the --json of the same checkpoint read locally, but for
// paths; a missing shard is named.
func TestInspectURLShards(t *testing.T) {
	dir := t.TempDir()
	hf, gg := filepath.Join(dir, "hf"), filepath.Join(dir, "gguf")
	src := "../../testdata/arch/qwen2/hf"
	if code, _, stderr := run(t, "convert", src, hf, "--to", "safetensors", "--max-shard-size", "40KB"); code != 0 {
		t.Fatalf("convert: %s", stderr)
	}
	os.Mkdir(gg, 0o755)
	if code, _, stderr := run(t, "convert", src, filepath.Join(gg, "q.gguf"), "--split-max-size", "40KB"); code != 0 {
		t.Fatalf("convert: %s", stderr)
	}
	shards, _ := filepath.Glob(filepath.Join(hf, "model-*-of-*.safetensors"))
	splits, _ := filepath.Glob(filepath.Join(gg, "q-*-of-*.gguf"))
	if len(shards) < 2 || len(splits) < 2 {
		t.Fatalf("%d shards, %d splits: want several of each", len(shards), len(splits))
	}
	var requests []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests = append(requests, r.URL.Path)
		// Hub layout: /ORG/REPO/resolve/REV/FILE serves dir/FILE.
		p := strings.TrimPrefix(r.URL.Path, "/org/repo/resolve/main")
		f, err := os.Open(filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(p, "/"))))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		defer f.Close()
		http.ServeContent(w, r, filepath.Base(p), time.Time{}, f)
	}))
	defer srv.Close()
	t.Setenv("HF_ENDPOINT", srv.URL)
	norm := func(s string) string {
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "path")
		for _, x := range m["tensors"].([]any) {
			delete(x.(map[string]any), "file")
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	for _, tc := range []struct{ local, url string }{
		{filepath.Join(hf, "model.safetensors.index.json"), srv.URL + "/hf/model.safetensors.index.json"},
		{hf, "hf://org/repo/hf/model.safetensors.index.json"},
		{splits[0], srv.URL + "/gguf/" + filepath.Base(splits[1])},
	} {
		code, local, stderr := run(t, "inspect", "--json", tc.local)
		if code != 0 {
			t.Fatalf("local inspect: %s", stderr)
		}
		code, remote, stderr := run(t, "inspect", "--json", tc.url)
		if code != 0 {
			t.Fatalf("inspect %s: exit %d: %s", tc.url, code, stderr)
		}
		if norm(local) != norm(remote) {
			t.Errorf("%s: --json over HTTP differs from the local checkpoint's\n%s\n%s", tc.url, norm(remote), norm(local))
		}
	}
	// A bare repository resolves model.safetensors, then the index.
	os.Rename(filepath.Join(hf, "model.safetensors.index.json"), filepath.Join(dir, "model.safetensors.index.json"))
	for _, s := range shards {
		os.Rename(s, filepath.Join(dir, filepath.Base(s)))
	}
	requests = nil
	code, remote, stderr := run(t, "inspect", "--json", "hf://org/repo")
	if code != 0 {
		t.Fatalf("hf://org/repo: exit %d: %s", code, stderr)
	}
	var s struct {
		Files int `json:"files"`
	}
	json.Unmarshal([]byte(remote), &s)
	if s.Files != len(shards) || len(requests) == 0 || requests[0] != "/org/repo/resolve/main/model.safetensors" {
		t.Errorf("hf://org/repo: %d files, requests %v", s.Files, requests)
	}
	os.Remove(filepath.Join(dir, filepath.Base(shards[1])))
	code, _, stderr = run(t, "inspect", "hf://org/repo")
	if code == 0 || !strings.Contains(stderr, filepath.Base(shards[1])) || !strings.Contains(stderr, "missing shard") {
		t.Errorf("missing shard: exit %d: %s", code, stderr)
	}
}

// TestTokenizeURL: tokenize reads a remote GGUF's vocabulary from its header
// and a remote safetensors file's tokenizer from beside it, giving the ids
// the local files give.
func TestTokenizeURL(t *testing.T) {
	root := "../../testdata/arch/qwen2"
	srv := httptest.NewServer(http.FileServer(http.Dir(root)))
	defer srv.Close()
	for _, rel := range []string{"gguf/qwen2-f32.gguf", "hf/model.safetensors"} {
		_, local, _ := run(t, "tokenize", "--json", filepath.Join(root, rel), "Hello world, hello!")
		code, remote, stderr := run(t, "tokenize", "--json", srv.URL+"/"+rel, "Hello world, hello!")
		if code != 0 || remote != local || !strings.Contains(local, `"ids": [`) {
			t.Errorf("%s: exit %d, %q over HTTP, %q locally (%s)", rel, code, remote, local, stderr)
		}
	}
}

// TestCheckURL: check over HTTP reports, for every file of the malformed
// corpus and for the index and a split shard of remote sets, the findings it
// reports locally (with URLs for paths) and exits the same way.
func TestCheckURL(t *testing.T) {
	root := "../../testdata/malformed"
	srv := httptest.NewServer(http.FileServer(http.Dir(root)))
	defer srv.Close()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range entries {
		if e.Type().IsRegular() && e.Name() != "README.md" && e.Name() != "verdicts.json" {
			paths = append(paths, e.Name())
		}
	}
	for _, sub := range []string{"idx-missing-shard/model.safetensors.index.json", "idx-dup-across-shards/model.safetensors.index.json", "split/gguf-split-00001-of-00002.gguf"} {
		paths = append(paths, sub)
	}
	if len(paths) < 100 {
		t.Fatalf("only %d corpus files", len(paths))
	}
	for _, name := range paths {
		local := filepath.Join(root, filepath.FromSlash(name))
		lcode, lout, _ := run(t, "check", "--json", local)
		url := srv.URL + "/" + name
		rcode, rout, rerr := run(t, "check", "--json", url)
		want := strings.ReplaceAll(lout, filepath.ToSlash(filepath.Join(root, filepath.Dir(filepath.FromSlash(name))))+"/", srv.URL+"/"+pathDir(name))
		if rcode != lcode || rout != want {
			t.Errorf("%s: exit %d over HTTP, %d locally\n%s\nwant\n%s\n(stderr %s)", name, rcode, lcode, rout, want, rerr)
		}
	}
	t.Logf("%d corpus files checked over HTTP", len(paths))
}

// pathDir is the folder part of a slash path with its trailing slash ("" for none).
func pathDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i+1]
	}
	return ""
}
