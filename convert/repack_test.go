package convert_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/convert"
	"github.com/tfconv/tfconv/internal/fixtures"
)

// repackInputs lists the shipped testdata files matching pattern, plus the
// ones in shared/fixtures matching sharedPattern when that folder is present.
func repackInputs(t *testing.T, pattern, sharedPattern string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("..", "testdata", pattern))
	if len(files) == 0 {
		t.Fatalf("no testdata matches %s", pattern)
	}
	if sf := fixtures.Dir(); sf != "" {
		more, _ := filepath.Glob(filepath.Join(sf, sharedPattern))
		files = append(files, more...)
	}
	return files
}

// toNative converts path to a native file in dir with convert (twice: the
// two files must be equal) and returns the file's path.
func toNative(t *testing.T, path, dir string) string {
	t.Helper()
	var out [2][]byte
	for i := range out {
		dst := filepath.Join(dir, []string{"a.tfn", "b.tfn"}[i])
		if _, err := convert.Run(path, dst, convert.Options{To: convert.Native}); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(dst)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	if !bytes.Equal(out[0], out[1]) {
		t.Fatal("converting the same checkpoint twice gave different native files")
	}
	src, err := checkpoint.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	n, err := checkpoint.Open(filepath.Join(dir, "a.tfn"))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if n.Format != checkpoint.Native || n.Source != src.Source || !n.Metadata.Equal(src.Metadata) || len(n.Tensors) != len(src.Tensors) {
		t.Fatalf("native copy: format %s source %s, %d tensors, metadata equal %v", n.Format, n.Source, len(n.Tensors), n.Metadata.Equal(src.Metadata))
	}
	for i, x := range n.Tensors {
		y := src.Tensors[i]
		if x.Name != y.Name || x.DType != y.DType || !x.Shape.Equal(y.Shape) || x.Size != y.Size {
			t.Fatalf("tensor %d: %s %s %v vs %s %s %v", i, x.Name, x.DType, x.Shape, y.Name, y.DType, y.Shape)
		}
	}
	return filepath.Join(dir, "a.tfn")
}

// A safetensors file written by transformers goes into native and back out
// byte for byte: data, header, __metadata__ and order; the side files travel
// inside the native file.
func TestSafetensorsNativeSafetensors(t *testing.T) {
	for _, path := range repackInputs(t, "safetensors/*/model.safetensors", "*/*/model.safetensors") {
		t.Run(path, func(t *testing.T) {
			orig, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			tfn := toNative(t, path, dir)
			back := filepath.Join(dir, "back")
			if _, err := convert.Run(tfn, back, convert.Options{To: convert.Safetensors, OutType: convert.OutAuto}); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(back, "model.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, orig) {
				t.Errorf("safetensors -> native -> safetensors differs (%d vs %d bytes)", len(got), len(orig))
			}
			if cfg, err := os.ReadFile(filepath.Join(filepath.Dir(path), "config.json")); err == nil {
				got, err := os.ReadFile(filepath.Join(back, "config.json"))
				if err != nil || !bytes.Equal(got, cfg) {
					t.Errorf("config.json not carried: %v", err)
				}
			}
		})
	}
}

// A GGUF file written by llama.cpp goes into native and back out byte for
// byte: KVs in order, tensor infos, alignment, padding and data.
func TestGGUFNativeGGUF(t *testing.T) {
	for _, path := range repackInputs(t, "gguf/*.gguf", "*/*/gguf/*.gguf") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			orig, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			tfn := toNative(t, path, dir)
			back := filepath.Join(dir, "back.gguf")
			if _, err := convert.Run(tfn, back, convert.Options{To: convert.GGUF, OutType: convert.OutAuto}); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(back)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, orig) {
				t.Errorf("GGUF -> native -> GGUF differs (%d vs %d bytes)", len(got), len(orig))
			}
		})
	}
}

// inspect sees the same checkpoint whatever the container.
func TestSummaryThroughNative(t *testing.T) {
	for _, path := range []string{"../testdata/safetensors/llama", "../testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf"} {
		c, err := checkpoint.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		want, err := checkpoint.Summarize(c)
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		n, err := checkpoint.Open(toNative(t, path, t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		got, err := checkpoint.Summarize(n)
		n.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got.Architecture != want.Architecture || got.Params != want.Params || got.Layers != want.Layers ||
			got.Hidden != want.Hidden || got.Vocab != want.Vocab || got.Context != want.Context || got.KVHeads != want.KVHeads ||
			got.Source != want.Format || got.Format != checkpoint.Native {
			t.Errorf("%s: native summary %+v, source summary %+v", path, got, want)
		}
	}
}
