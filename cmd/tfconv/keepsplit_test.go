package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/tensor"
)

// TestQuantizeKeepSplit splits testdata/quantize/mixtures-f16.gguf as
// llama.cpp's gguf-split --split-max-size 2M does (checked: every shard's
// sha256 is gguf-split's) and quantizes the set with --keep-split (Q4_K_M,
// Q8_0) and without it (Q4_K_M, one file): every output file has the name
// and the sha256 of llama-quantize c392e509's
// (testdata/quantize/keepsplit.json, gen_keepsplit.py).
func TestQuantizeKeepSplit(t *testing.T) {
	var ref struct {
		SplitMax string `json:"split_max_size"`
		Inputs   []struct {
			Name   string `json:"name"`
			SHA256 string `json:"sha256"`
		} `json:"inputs"`
		Runs []struct {
			Type      string `json:"type"`
			KeepSplit bool   `json:"keep_split"`
			Outputs   []struct {
				Name   string `json:"name"`
				SHA256 string `json:"sha256"`
			} `json:"outputs"`
		} `json:"runs"`
	}
	b, err := os.ReadFile("../../testdata/quantize/keepsplit.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	if ref.SplitMax != "2M" || len(ref.Inputs) < 2 || len(ref.Runs) != 3 {
		t.Fatalf("keepsplit.json: %+v", ref)
	}
	dir := t.TempDir()
	splitLikeGGUFSplit(t, "../../testdata/quantize/mixtures-f16.gguf", filepath.Join(dir, "in"), 2_000_000)
	for _, in := range ref.Inputs {
		if got := fileSHA256(t, filepath.Join(dir, in.Name)); got != in.SHA256 {
			t.Fatalf("input shard %s: sha256 %s, gguf-split's %s", in.Name, got, in.SHA256)
		}
	}
	first := filepath.Join(dir, ref.Inputs[0].Name)
	for i, r := range ref.Runs {
		out := filepath.Join(dir, "run"+string(rune('0'+i)))
		if err := os.Mkdir(out, 0o755); err != nil {
			t.Fatal(err)
		}
		args := []string{"quantize", first, filepath.Join(out, "out.gguf"), "--type", r.Type}
		if r.KeepSplit {
			args = append(args, "--keep-split")
		}
		if code, _, errOut := run(t, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		ents, _ := os.ReadDir(out)
		if len(ents) != len(r.Outputs) {
			t.Errorf("%s keep-split=%v: %d files, llama-quantize wrote %d", r.Type, r.KeepSplit, len(ents), len(r.Outputs))
		}
		for _, o := range r.Outputs {
			if got := fileSHA256(t, filepath.Join(out, o.Name)); got != o.SHA256 {
				t.Errorf("%s keep-split=%v: %s sha256 %s, llama-quantize's %s", r.Type, r.KeepSplit, o.Name, got, o.SHA256)
			}
		}
	}
	// An existing shard is refused before anything is written.
	out := filepath.Join(dir, "run0")
	code, _, errOut := run(t, "quantize", first, filepath.Join(out, "out.gguf"), "--type", "q8_0", "--keep-split")
	if code == 0 || !strings.Contains(errOut, "out-00001-of-0000") || !strings.Contains(errOut, "exists") {
		t.Errorf("over existing shards: exit %d, %q", code, errOut)
	}
}

// splitLikeGGUFSplit writes src's tensors and metadata as a split set
// PREFIX-0000i-of-0000n.gguf with gguf.SplitWriter (gguf-split's layout).
func splitLikeGGUFSplit(t *testing.T, src, prefix string, maxBytes int64) {
	t.Helper()
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	infos := make([]tensor.Info, len(f.Tensors))
	for i, tn := range f.Tensors {
		infos[i] = tn.Info
	}
	create := func(name string) (io.WriteCloser, error) { return os.Create(name) }
	sw, err := gguf.NewSplitWriter(prefix, maxBytes, f.Metadata, infos, create)
	if err != nil {
		t.Fatal(err)
	}
	for _, tn := range f.Tensors {
		w, err := sw.Next(tn.Name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(w, tn.Open()); err != nil {
			t.Fatal(err)
		}
	}
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
