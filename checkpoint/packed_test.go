package checkpoint

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/formats/safetensors"
	"github.com/tfconv/tfconv/tensor"
)

// The fixtures in testdata/gptq are made by AutoGPTQ's and AutoAWQ's own
// packing code; dequant.safetensors holds each layer's weight as their own
// dequantization computes it (testdata/gptq/README.md).
var packedCases = []struct {
	dir          string
	method       string
	bits, layers int64
}{
	{"gptq-4bit-actorder", "gptq", 4, 14},
	{"gptq-8bit-sym", "gptq", 8, 14},
	{"gptq-2bit", "gptq", 2, 14},
	{"awq-4bit", "awq", 4, 14},
}

func TestPackedMatchesReferenceDequantization(t *testing.T) {
	for _, tc := range packedCases {
		t.Run(tc.dir, func(t *testing.T) {
			dir := filepath.Join("..", "testdata", "gptq", tc.dir)
			c, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if m, _ := c.SourceInfo.Str(SourceInfoQuantMethod); m != tc.method {
				t.Errorf("method %q, want %q", m, tc.method)
			}
			if b, _ := c.SourceInfo.Int(SourceInfoQuantBits); b != tc.bits {
				t.Errorf("bits %d, want %d", b, tc.bits)
			}
			if n, _ := c.SourceInfo.Int(SourceInfoQuantLayers); n != tc.layers {
				t.Errorf("%d packed layers, want %d", n, tc.layers)
			}
			for _, x := range c.Tensors {
				for _, s := range []string{".qweight", ".qzeros", ".scales", ".g_idx"} {
					if strings.HasSuffix(x.Name, s) {
						t.Errorf("packed part %q still listed", x.Name)
					}
				}
			}
			ref, err := Open(filepath.Join(dir, "dequant.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			defer ref.Close()
			if len(ref.Tensors) != int(tc.layers) {
				t.Fatalf("reference holds %d tensors", len(ref.Tensors))
			}
			for _, r := range ref.Tensors {
				got, ok := c.Tensor(r.Name)
				if !ok {
					t.Fatalf("no tensor %q", r.Name)
				}
				if got.DType != tensor.F16 || !got.Shape.Equal(r.Shape) {
					t.Fatalf("%s: %v %v, reference %v %v", r.Name, got.DType, got.Shape, r.DType, r.Shape)
				}
				want, _ := r.ReadAll()
				b, err := got.ReadAll()
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(b, want) {
					t.Errorf("%s: dequantized weight differs from the project's own dequantization", r.Name)
				}
				sec := make([]byte, got.Size)
				if _, err := got.Section().ReadAt(sec, 0); err != nil || !bytes.Equal(sec, want) {
					t.Errorf("%s: Section differs (%v)", r.Name, err)
				}
			}
			cfg, err := c.Config()
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := cfg["quantization_config"]; ok {
				t.Error("config.json still has quantization_config: a converted copy would be loaded as packed")
			}
			if cfg["model_type"] != "llama" {
				t.Errorf("config.json lost its keys: model_type %v", cfg["model_type"])
			}
		})
	}
}

// The act-order fixture really permutes its groups: g_idx is not k/group.
func TestPackedActOrderFixtureIsPermuted(t *testing.T) {
	c, err := Open(filepath.Join("..", "testdata", "gptq", "gptq-4bit-actorder", "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Opened as one file its folder's config.json still applies: the
	// packed parts are gone. Read the raw g_idx through the reader instead.
	s, err := safetensors.OpenSet(filepath.Join("..", "testdata", "gptq", "gptq-4bit-actorder", "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, x := range s.Tensors {
		if !strings.HasSuffix(x.Name, ".g_idx") {
			continue
		}
		b, err := io.ReadAll(x.Open())
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k < len(b)/4; k++ {
			if g := binary.LittleEndian.Uint32(b[4*k:]); int(g) != k/32 {
				return // permuted
			}
		}
	}
	t.Fatal("no g_idx in the act-order fixture is permuted")
}

// rewriteFixture copies a fixture into a temporary directory, passing each
// tensor through edit (which may change its data or drop it by returning
// nil) and config.json through editCfg.
func rewriteFixture(t *testing.T, name string, edit func(info *tensor.Info, data []byte) []byte, editCfg func(string) string) string {
	t.Helper()
	src := filepath.Join("..", "testdata", "gptq", name)
	dst := t.TempDir()
	cfg, err := os.ReadFile(filepath.Join(src, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if editCfg != nil {
		cfg = []byte(editCfg(string(cfg)))
	}
	if err := os.WriteFile(filepath.Join(dst, "config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := safetensors.OpenSet(filepath.Join(src, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var infos []tensor.Info
	var datas [][]byte
	for _, x := range s.Tensors {
		b, err := io.ReadAll(x.Open())
		if err != nil {
			t.Fatal(err)
		}
		info := x.Info
		if edit != nil {
			if b = edit(&info, b); b == nil {
				continue
			}
		}
		infos = append(infos, info)
		datas = append(datas, b)
	}
	var buf bytes.Buffer
	w, err := safetensors.NewWriter(&buf, infos, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, info := range infos {
		tw, err := w.Next(info.Name)
		if err != nil {
			t.Fatal(err)
		}
		tw.Write(datas[i])
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dst, "model.safetensors"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestPackedRefusals(t *testing.T) {
	const layer = "model.layers.1.mlp.up_proj"
	for _, tc := range []struct {
		name, fixture string
		edit          func(info *tensor.Info, data []byte) []byte
		cfg           func(string) string
		want          []string
		atRead        bool // the error comes when the tensor is read
		unsupported   bool
	}{
		{name: "3 bits", fixture: "gptq-4bit-actorder", cfg: func(s string) string { return strings.Replace(s, `"bits": 4`, `"bits": 3`, 1) },
			want: []string{"3 bits"}, unsupported: true},
		{name: "marlin", fixture: "gptq-4bit-actorder",
			cfg: func(s string) string {
				return strings.Replace(s, `"bits": 4`, `"bits": 4, "checkpoint_format": "marlin"`, 1)
			},
			want: []string{"checkpoint_format", "marlin"}, unsupported: true},
		{name: "gemv", fixture: "awq-4bit", cfg: func(s string) string { return strings.Replace(s, `"version": "gemm"`, `"version": "gemv"`, 1) },
			want: []string{"AWQ version", "gemv"}, unsupported: true},
		{name: "group size disagrees", fixture: "gptq-8bit-sym", cfg: func(s string) string { return strings.Replace(s, `"group_size": 32`, `"group_size": 16`, 1) },
			want: []string{".qzeros", "group size 16"}},
		{name: "no qzeros", fixture: "awq-4bit",
			edit: func(info *tensor.Info, b []byte) []byte {
				if info.Name == layer+".qzeros" {
					return nil
				}
				return b
			},
			want: []string{layer, `no tensor "` + layer + `.qzeros"`}},
		{name: "scales not float", fixture: "gptq-2bit",
			edit: func(info *tensor.Info, b []byte) []byte {
				if info.Name == layer+".scales" {
					info.DType = tensor.I16
				}
				return b
			},
			want: []string{layer + ".scales", "I16"}},
		{name: "g_idx out of range", fixture: "gptq-4bit-actorder", atRead: true,
			edit: func(info *tensor.Info, b []byte) []byte {
				if info.Name == layer+".g_idx" {
					binary.LittleEndian.PutUint32(b[4*5:], 99)
				}
				return b
			},
			want: []string{layer + ".g_idx", "entry 5 is 99", "offset "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := rewriteFixture(t, tc.fixture, tc.edit, tc.cfg)
			c, err := Open(dir)
			if tc.atRead {
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				x, _ := c.Tensor(layer + ".weight")
				_, err = x.ReadAll()
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if got := errors.Is(err, tensor.ErrUnsupported); got != tc.unsupported {
				t.Errorf("errors.Is(ErrUnsupported) = %v", got)
			}
		})
	}
}
