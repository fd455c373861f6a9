package checkpoint

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/tfconv/tfconv/internal/fixtures"
)

// sharedFixtures returns shared/fixtures beside the clone, or "".
func sharedFixtures() string { return fixtures.Dir() }

// inputs lists the shipped testdata files matching pattern, plus the ones in
// shared/fixtures matching sharedPattern when that folder is present.
func inputs(t *testing.T, pattern, sharedPattern string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("..", "testdata", pattern))
	if len(files) == 0 {
		t.Fatalf("no testdata matches %s", pattern)
	}
	if sf := sharedFixtures(); sf != "" {
		more, _ := filepath.Glob(filepath.Join(sf, sharedPattern))
		files = append(files, more...)
	} else {
		t.Logf("shared/fixtures absent: %d shipped files only", len(files))
	}
	return files
}

// viaNative repackages path into a native file in dir, twice, checks the two
// are byte-identical, and reopens it.
func viaNative(t *testing.T, path, dir string) *Checkpoint {
	t.Helper()
	src, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var a, b bytes.Buffer
	if err := WriteNative(&a, src); err != nil {
		t.Fatal(err)
	}
	if err := WriteNative(&b, src); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("writing the same checkpoint twice gave different native files")
	}
	out := filepath.Join(dir, "x.tfn")
	if err := os.WriteFile(out, a.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := Open(out)
	if err != nil {
		t.Fatal(err)
	}
	if n.Format != Native || n.Source != src.Source || !n.Metadata.Equal(src.Metadata) || len(n.Tensors) != len(src.Tensors) {
		t.Fatalf("native copy: format %s source %s, %d tensors, metadata equal %v", n.Format, n.Source, len(n.Tensors), n.Metadata.Equal(src.Metadata))
	}
	for i, x := range n.Tensors {
		y := src.Tensors[i]
		if x.Name != y.Name || x.DType != y.DType || !x.Shape.Equal(y.Shape) || x.Size != y.Size {
			t.Fatalf("tensor %d: %s %s %v vs %s %s %v", i, x.Name, x.DType, x.Shape, y.Name, y.DType, y.Shape)
		}
	}
	return n
}

// A safetensors file written by transformers goes into native and back out
// byte for byte: data, header, __metadata__ and order.
func TestSafetensorsNativeSafetensors(t *testing.T) {
	for _, path := range inputs(t, "safetensors/*/model.safetensors", "*/*/model.safetensors") {
		t.Run(path, func(t *testing.T) {
			orig, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			n := viaNative(t, path, t.TempDir())
			defer n.Close()
			// The side files travel inside the native file.
			if cfg, err := os.ReadFile(filepath.Join(filepath.Dir(path), "config.json")); err == nil {
				got, err := n.ReadAux("config.json")
				if err != nil || !bytes.Equal(got, cfg) {
					t.Errorf("config.json not carried: %v", err)
				}
			}
			var back bytes.Buffer
			if err := WriteSafetensors(&back, n); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(back.Bytes(), orig) {
				t.Errorf("safetensors -> native -> safetensors differs (%d vs %d bytes)", back.Len(), len(orig))
			}
		})
	}
}

// A GGUF file written by llama.cpp goes into native and back out byte for
// byte: KVs in order, tensor infos, alignment, padding and data.
func TestGGUFNativeGGUF(t *testing.T) {
	for _, path := range inputs(t, "gguf/*.gguf", "*/*/gguf/*.gguf") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			orig, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			n := viaNative(t, path, t.TempDir())
			defer n.Close()
			if err := WriteSafetensors(&bytes.Buffer{}, n); err == nil {
				t.Error("GGUF metadata was written into safetensors without conversion")
			}
			var back bytes.Buffer
			if err := WriteGGUF(&back, n); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(back.Bytes(), orig) {
				t.Errorf("GGUF -> native -> GGUF differs (%d vs %d bytes)", back.Len(), len(orig))
			}
		})
	}
}

// inspect sees the same checkpoint whatever the container.
func TestSummaryThroughNative(t *testing.T) {
	for _, path := range []string{"../testdata/safetensors/llama", "../testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf"} {
		c, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Summarize(c)
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		n := viaNative(t, path, t.TempDir())
		got, err := Summarize(n)
		n.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got.Architecture != want.Architecture || got.Params != want.Params || got.Layers != want.Layers ||
			got.Hidden != want.Hidden || got.Vocab != want.Vocab || got.Context != want.Context || got.KVHeads != want.KVHeads ||
			got.Source != want.Format || got.Format != Native {
			t.Errorf("%s: native summary %+v, source summary %+v", path, got, want)
		}
	}
}
