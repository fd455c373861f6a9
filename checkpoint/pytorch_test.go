package checkpoint

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const pytorchDir = "../testdata/pytorch"

// PyTorch checkpoints open by their bytes (zip, legacy), as directories
// (pytorch_model.bin, else the index) and through an index file; a folder
// with safetensors weights prefers them, as transformers does.
func TestOpenPyTorch(t *testing.T) {
	for _, c := range []struct {
		path      string
		files     int
		container string
	}{
		{"zip/pytorch_model.bin", 1, "zip"},
		{"legacy.bin", 1, "legacy"},
		{"floats", 1, "zip"},
		{"sharded", 2, "zip"},
		{"sharded/pytorch_model.bin.index.json", 2, "zip"},
	} {
		c0, err := Open(filepath.Join(pytorchDir, c.path))
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		if c0.Format != PyTorch || c0.Source != PyTorch || !c0.HuggingFace() || len(c0.Files) != c.files {
			t.Errorf("%s: format %s source %s, %d files", c.path, c0.Format, c0.Source, len(c0.Files))
		}
		if v, _ := c0.SourceInfo.Str(SourceInfoPyTorchContainer); v != c.container {
			t.Errorf("%s: container %q", c.path, v)
		}
		for _, tt := range c0.Tensors {
			b, err := tt.ReadAll()
			if err != nil || int64(len(b)) != tt.Size {
				t.Errorf("%s: %s: %d bytes, %v", c.path, tt.Name, len(b), err)
			}
		}
		c0.Close()
	}

	dir := t.TempDir()
	bin, err := os.ReadFile(filepath.Join(pytorchDir, "floats", "pytorch_model.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pytorch_model.bin"), bin, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type":"x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c.Format != PyTorch || len(c.AuxNames()) != 1 {
		t.Errorf("format %s, side files %v", c.Format, c.AuxNames())
	}
	c.Close()
	st, err := os.ReadFile("../testdata/safetensors/llama/model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), st, 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err = Open(dir); err != nil || c.Format != Safetensors {
		t.Errorf("with both: %v, %v", c, err)
	}
	c.Close()

	_, err = Open(t.TempDir())
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "pytorch_model.bin") {
		t.Errorf("empty folder: %v", err)
	}
}
