package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
)

const pytorchDir = "../../testdata/pytorch"

// pytorchExpected is testdata/pytorch/expected.json: the tensors as torch
// gives them (gen.py).
type pytorchExpected struct {
	Tensors []pytorchTensor `json:"tensors"`
	Floats  []pytorchTensor `json:"floats"`
	Hostile []string        `json:"hostile"`
	Marker  string          `json:"marker"`
}

type pytorchTensor struct {
	Name  string  `json:"name"`
	DType string  `json:"dtype"`
	Shape []int64 `json:"shape"`
	Data  string  `json:"data"`
}

func loadPyTorchExpected(t *testing.T) pytorchExpected {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(pytorchDir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var e pytorchExpected
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

// sameTensors holds the checkpoint at path to want: the same tensor names
// (in the same order when ordered), dtypes, shapes and bytes.
func sameTensors(t *testing.T, path string, want []pytorchTensor, ordered bool) {
	t.Helper()
	c, err := checkpoint.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if len(c.Tensors) != len(want) {
		t.Fatalf("%s: %d tensors, want %d", path, len(c.Tensors), len(want))
	}
	for i, w := range want {
		got, ok := c.Tensor(w.Name)
		if !ok {
			t.Errorf("%s: no tensor %q", path, w.Name)
			continue
		}
		if ordered && c.Tensors[i] != got {
			t.Errorf("%s: tensor %d is %q, want %q", path, i, c.Tensors[i].Name, w.Name)
		}
		if got.DType.String() != w.DType || got.Shape.String() != shapeString(w.Shape) {
			t.Errorf("%s: %s is %s %v, want %s %v", path, w.Name, got.DType, got.Shape, w.DType, w.Shape)
		}
		data, _ := base64.StdEncoding.DecodeString(w.Data)
		b, err := io.ReadAll(got.Open())
		if err != nil {
			t.Errorf("%s: %s: %v", path, w.Name, err)
		} else if !bytes.Equal(b, data) {
			t.Errorf("%s: %s: bytes differ from torch's", path, w.Name)
		}
	}
}

func shapeString(s []int64) string {
	b, _ := json.Marshal(s)
	return strings.NewReplacer(",", " ").Replace(string(b))
}

// convert reads .bin checkpoints like any other: Hugging Face output from
// the float file, its shards (directory or index) and native output of
// every dtype from the zip and legacy files carry torch's bytes exactly.
func TestConvertPyTorch(t *testing.T) {
	e := loadPyTorchExpected(t)
	out := t.TempDir()
	for i, src := range []string{"floats/pytorch_model.bin", "floats", "sharded", "sharded/pytorch_model.bin.index.json"} {
		dst := filepath.Join(out, "hf"+itoa(i))
		code, stdout, stderr := run(t, "convert", filepath.Join(pytorchDir, src), dst)
		if code != exitOK {
			t.Fatalf("convert %s: exit %d: %s", src, code, stderr)
		}
		if !strings.Contains(stdout, "self-check: ok") {
			t.Errorf("convert %s: %q", src, stdout)
		}
		sameTensors(t, filepath.Join(dst, "model.safetensors"), e.Floats, false)
	}
	for i, src := range []string{"zip/pytorch_model.bin", "archive.bin", "legacy.bin"} {
		dst := filepath.Join(out, "n"+itoa(i)+".tfn")
		if code, _, stderr := run(t, "convert", filepath.Join(pytorchDir, src), dst); code != exitOK {
			t.Fatalf("convert %s: exit %d: %s", src, code, stderr)
		}
		sameTensors(t, dst, e.Tensors, true)
		// The native file remembers where it came from.
		code, stdout, _ := run(t, "inspect", dst)
		if code != exitOK || !strings.Contains(stdout, "(from pytorch)") {
			t.Errorf("inspect %s: exit %d: %.200s", dst, code, stdout)
		}
	}
}

// inspect lists a .bin checkpoint's tensors in the state dict's order.
func TestInspectPyTorch(t *testing.T) {
	e := loadPyTorchExpected(t)
	code, stdout, stderr := run(t, "inspect", "--json", filepath.Join(pytorchDir, "zip", "pytorch_model.bin"))
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got struct {
		Format  string `json:"format"`
		Tensors []struct {
			Name string `json:"name"`
		} `json:"tensors"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	if got.Format != "pytorch" || len(got.Tensors) != len(e.Tensors) {
		t.Fatalf("format %q, %d tensors: %.300s", got.Format, len(got.Tensors), stdout)
	}
	for i, w := range e.Tensors {
		if got.Tensors[i].Name != w.Name {
			t.Errorf("tensor %d is %q, want %q", i, got.Tensors[i].Name, w.Name)
		}
	}
}

// Every hostile file: inspect and convert exit 2 with one line naming the
// file and an offset, check exits 1 with its rule, and nothing a pickle
// names ever runs.
func TestPyTorchHostile(t *testing.T) {
	e := loadPyTorchExpected(t)
	os.Remove(e.Marker)
	rules := map[string]string{
		"posix-system.bin": "pytorch-global", "os-system.bin": "pytorch-global", "legacy-posix-system.bin": "pytorch-global",
		"builtins-eval.bin": "pytorch-global", "stack-global.bin": "pytorch-global", "many-globals.bin": "pytorch-global",
		"recursion-bomb.bin": "pytorch-pickle", "long4-huge.bin": "pytorch-pickle", "unicode8-huge.bin": "pytorch-pickle",
		"memo-nesting.bin": "pytorch-unsupported", "self-cycle.bin": "pytorch-unsupported",
		"truncated.bin": "pytorch-zip", "compressed.bin": "pytorch-compressed",
		"storage-short.bin": "pytorch-storage", "legacy-truncated.bin": "pytorch-storage",
	}
	if len(e.Hostile) != len(rules) {
		t.Errorf("%d hostile files, %d verdicts here", len(e.Hostile), len(rules))
	}
	out := t.TempDir()
	for _, name := range e.Hostile {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(pytorchDir, "hostile", name)
			for _, args := range [][]string{
				{"inspect", p},
				{"convert", p, filepath.Join(out, "x.gguf")},
				{"convert", p, filepath.Join(out, "hf")},
				{"run", p, "--tokens", "1"},
			} {
				code, stdout, stderr := run(t, args...)
				if code != exitError || stdout != "" {
					t.Errorf("%v: exit %d, stdout %q", args[0], code, stdout)
				}
				if !strings.Contains(stderr, p) || !strings.Contains(stderr, "offset ") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
					t.Errorf("%v: message %q lacks the file or an offset, or is not one line", args[0], stderr)
				}
			}
			code, stdout, _ := run(t, "check", "--json", p)
			var rep struct {
				Findings []struct{ Rule string } `json:"findings"`
			}
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != exitFound {
				t.Fatalf("check: exit %d, %v: %.300s", code, err, stdout)
			}
			found := false
			for _, f := range rep.Findings {
				found = found || f.Rule == rules[name]
			}
			if !found {
				t.Errorf("check: no %s finding: %v", rules[name], rep.Findings)
			}
		})
	}
	if _, err := os.Stat(e.Marker); err == nil {
		t.Fatalf("%s exists: a hostile payload ran", e.Marker)
	}
}
