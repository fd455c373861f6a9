package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
)

// TestCompressedTensorsWriteMatchesLibrary: testdata/ct/dense quantized to
// compressed-tensors by tfconv is, tensor for tensor and byte for byte, what
// the compressed-tensors library itself wrote from the same weights
// (testdata/ct/<scheme>), and its quantization_config is the library's
// (the library's version key aside). So the library reads it back to the
// values its own decompression gives (testdata/ct/<scheme>/dequant.safetensors,
// which TestCompressedTensorsMatchLibrary holds tfconv's reading to).
func TestCompressedTensorsWriteMatchesLibrary(t *testing.T) {
	t.Parallel()
	src := filepath.Join("..", "testdata", "ct", "dense")
	for _, tc := range []struct {
		scheme, dir string
		group       int
	}{
		{"W4A16", "w4a16", 32},
		{"w4a16_asym", "w4a16-asym", 32},
		{"W8A16", "w8a16", 0},
		{"FP8_DYNAMIC", "fp8-dynamic", 0},
	} {
		t.Run(tc.scheme, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "ct")
			rep, err := Run(src, out, Options{To: CompressedTensors, Scheme: tc.scheme, GroupSize: tc.group})
			if err != nil {
				t.Fatal(err)
			}
			if rep.SelfCheck != "ok" || len(rep.Warnings) != 0 {
				t.Fatalf("self-check %q, warnings %v", rep.SelfCheck, rep.Warnings)
			}
			got, err := checkpoint.OpenStored(out)
			if err != nil {
				t.Fatal(err)
			}
			defer got.Close()
			want, err := checkpoint.OpenStored(filepath.Join("..", "testdata", "ct", tc.dir))
			if err != nil {
				t.Fatal(err)
			}
			defer want.Close()
			if len(got.Tensors) != len(want.Tensors) {
				t.Fatalf("%d tensors, the library wrote %d", len(got.Tensors), len(want.Tensors))
			}
			for _, w := range want.Tensors {
				g, ok := got.Tensor(w.Name)
				if !ok || g.DType != w.DType || !g.Shape.Equal(w.Shape) {
					t.Fatalf("%s: %v, the library's %v %v", w.Name, g, w.DType, w.Shape)
				}
				gb, err := g.ReadAll()
				if err != nil {
					t.Fatal(err)
				}
				wb, _ := w.ReadAll()
				if !bytes.Equal(gb, wb) {
					t.Errorf("%s: differs from the library's", w.Name)
				}
			}
			qc := func(dir string) any {
				b, err := os.ReadFile(filepath.Join(dir, "config.json"))
				if err != nil {
					t.Fatal(err)
				}
				var cfg map[string]any
				if err := json.Unmarshal(b, &cfg); err != nil {
					t.Fatal(err)
				}
				q, _ := cfg["quantization_config"].(map[string]any)
				delete(q, "version")
				return q
			}
			if g, w := qc(out), qc(filepath.Join("..", "testdata", "ct", tc.dir)); !reflect.DeepEqual(g, w) {
				t.Errorf("quantization_config\n%v\nthe library's\n%v", g, w)
			}
		})
	}
}

func TestCompressedTensorsWriteRefusals(t *testing.T) {
	t.Parallel()
	src := filepath.Join("..", "testdata", "ct", "dense")
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{To: CompressedTensors}, "needs a scheme"},
		{Options{To: CompressedTensors, Scheme: "W4A4"}, `"W4A4" is not one tfconv writes`},
		{Options{To: CompressedTensors, Scheme: "W8A16", GroupSize: 32}, "has no groups"},
		{Options{To: CompressedTensors, Scheme: "W4A16", GroupSize: 48}, "does not divide a row of 64"},
		// Blocks are read, not written: the scheme names stop at what CTQuant computes.
		{Options{To: CompressedTensors, Scheme: "FP8_BLOCK"}, `"FP8_BLOCK" is not one tfconv writes (FP8_DYNAMIC, W4A16, W4A16_ASYM, W8A16)`},
	} {
		out := filepath.Join(t.TempDir(), "ct")
		_, err := Run(src, out, tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.opts, err, tc.want)
		}
		if _, serr := os.Stat(out); !errors.Is(serr, os.ErrNotExist) {
			t.Errorf("%+v: left %s behind", tc.opts, out)
		}
	}
}
