package convert

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/hubtest"
)

// TestRemoteCopy: a checkpoint converted from the Hub with its tensors
// copied unchanged (the qwen2 fixture, f32 → --outtype f32: the remote
// reader's blocks written straight into the output, Stream's WriteTo)
// gives the local conversion's tensors, byte for byte; a byte of the
// served file flipped fails the run on the source check, with no output.
func TestRemoteCopy(t *testing.T) {
	dir := "../testdata/arch/qwen2/hf"
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []*hubtest.File
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, &hubtest.File{Name: e.Name(), Data: b, LFS: strings.HasSuffix(e.Name(), ".safetensors")})
	}
	repo, err := hubtest.NewRepo("org/qwen2", files...)
	if err != nil {
		t.Fatal(err)
	}
	s := hubtest.Start(repo)
	t.Cleanup(s.Close)
	t.Setenv("HF_ENDPOINT", s.URL)
	t.Setenv("HF_TOKEN", "")
	out := t.TempDir()
	local, remote := filepath.Join(out, "local.gguf"), filepath.Join(out, "remote.gguf")
	if _, err := Run(dir, local, Options{OutType: "f32"}); err != nil {
		t.Fatal(err)
	}
	if _, err := Run("hf://org/qwen2", remote, Options{OutType: "f32"}); err != nil {
		t.Fatal(err)
	}
	a, err := checkpoint.Open(local)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := checkpoint.Open(remote)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if len(a.Tensors) != len(b.Tensors) || len(a.Tensors) == 0 {
		t.Fatalf("%d tensors from the Hub, %d locally", len(b.Tensors), len(a.Tensors))
	}
	for i, ta := range a.Tensors {
		tb := b.Tensors[i]
		x, err := ta.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		y, err := tb.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if ta.Name != tb.Name || ta.DType != tb.DType || !bytes.Equal(x, y) {
			t.Errorf("tensor %d: %s %v from the Hub, %s %v locally, bytes equal %v", i, tb.Name, tb.DType, ta.Name, ta.DType, bytes.Equal(x, y))
		}
	}

	st, err := os.Stat(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	s.SetFaults(hubtest.Faults{Corrupt: "model.safetensors", CorruptByte: st.Size() - 100})
	bad := filepath.Join(out, "bad.gguf")
	if _, err := Run("hf://org/qwen2", bad, Options{OutType: "f32"}); !errors.Is(err, checkpoint.ErrSourceMismatch) {
		t.Fatalf("a corrupt source: %v", err)
	}
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Errorf("a corrupt source left %s: %v", bad, err)
	}
}
