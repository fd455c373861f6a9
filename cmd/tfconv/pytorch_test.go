package main

import (
	"archive/zip"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/tensor"
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

// binFromSafetensors writes the tensors of a safetensors checkpoint as
// torch.save writes a state dict (zip format, one storage per tensor), with
// every other matrix stored transposed and read through a strided view, so
// that the reader's gathering path feeds convert too.
func binFromSafetensors(t *testing.T, src string) []byte {
	t.Helper()
	c, err := checkpoint.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	storage := map[tensor.DType]string{tensor.F32: "FloatStorage", tensor.F16: "HalfStorage", tensor.BF16: "BFloat16Storage"}
	var pkl bytes.Buffer
	str := func(s string) {
		pkl.WriteByte('X')
		binary.Write(&pkl, binary.LittleEndian, uint32(len(s)))
		pkl.WriteString(s)
	}
	i64 := func(v int64) {
		pkl.WriteString("\x8a\x08") // LONG1 of 8 bytes
		binary.Write(&pkl, binary.LittleEndian, v)
	}
	tuple := func(vs []int64) {
		pkl.WriteByte('(')
		for _, v := range vs {
			i64(v)
		}
		pkl.WriteByte('t')
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	pkl.WriteString("\x80\x02ccollections\nOrderedDict\n)R(")
	for i, tt := range c.Tensors {
		data, err := tt.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		key := strconv.Itoa(i)
		shape, stride := []int64(tt.Shape), make([]int64, len(tt.Shape))
		for d, n := len(shape)-1, int64(1); d >= 0; d-- {
			stride[d], n = n, n*shape[d]
		}
		if len(shape) == 2 && i%2 == 0 {
			// Store the transpose; the view reads it back as the original.
			rows, cols, es := shape[0], shape[1], tt.DType.BlockBytes()
			tr := make([]byte, len(data))
			for r := int64(0); r < rows; r++ {
				for c := int64(0); c < cols; c++ {
					copy(tr[(c*rows+r)*es:(c*rows+r+1)*es], data[(r*cols+c)*es:])
				}
			}
			data, stride = tr, []int64{1, rows}
		}
		str(tt.Name)
		pkl.WriteString("ctorch._utils\n_rebuild_tensor_v2\n((")
		str("storage")
		pkl.WriteString("ctorch\n" + storage[tt.DType] + "\n")
		str(key)
		str("cpu")
		i64(tt.NumElements())
		pkl.WriteString("tQ")
		i64(0)
		tuple(shape)
		tuple(stride)
		pkl.WriteString("\x89ccollections\nOrderedDict\n)RtR")
		w, err := zw.CreateHeader(&zip.FileHeader{Name: "archive/data/" + key, Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
	}
	pkl.WriteString("u.")
	w, _ := zw.CreateHeader(&zip.FileHeader{Name: "archive/data.pkl", Method: zip.Store})
	w.Write(pkl.Bytes())
	zw.Close()
	return buf.Bytes()
}

// A .bin checkpoint converts to the same GGUF, byte for byte, as the same
// weights in safetensors: convert sees no difference between the readers.
func TestConvertPyTorchSameAsSafetensors(t *testing.T) {
	for _, m := range []string{"gpt2-float16", "llama", "bert-bfloat16"} {
		t.Run(m, func(t *testing.T) {
			src := filepath.Join("../../testdata/safetensors", m)
			dir := t.TempDir()
			bin := filepath.Join(dir, m) // general.name comes from the folder name
			if err := os.Mkdir(bin, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(bin, "pytorch_model.bin"), binFromSafetensors(t, src), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := os.ReadFile(filepath.Join(src, "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(bin, "config.json"), cfg, 0o644); err != nil {
				t.Fatal(err)
			}
			var outs [2][]byte
			for i, in := range []string{src, bin} {
				dst := filepath.Join(dir, itoa(i)+".gguf")
				if code, _, stderr := run(t, "convert", in, dst); code != exitOK {
					t.Fatalf("convert %s: exit %d: %s", in, code, stderr)
				}
				if outs[i], err = os.ReadFile(dst); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(outs[0], outs[1]) {
				t.Errorf("the GGUF from the .bin differs from the one from safetensors (%d vs %d bytes)", len(outs[1]), len(outs[0]))
			}
		})
	}
}

// The hostile files, and pickles that reach the object, memo and string
// caps, cost every command of the built binary under the malformed
// corpus's limits (64 MB peak RSS, a second), as an exit 2 (check: 1).
func TestPyTorchHostileLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	e := loadPyTorchExpected(t)
	os.Remove(e.Marker)
	dir := t.TempDir()
	var paths []string
	for _, name := range e.Hostile {
		paths = append(paths, filepath.Join(pytorchDir, "hostile", name))
	}
	var many, memo, strs bytes.Buffer
	many.WriteString("\x80\x02]")
	for range 600 { // 600,000 list items: past MaxObjects
		many.WriteString("(" + strings.Repeat("N", 1000) + "e")
	}
	memo.WriteString("\x80\x02N")
	for i := range 300_000 { // past MaxMemo
		memo.WriteString("r")
		binary.Write(&memo, binary.LittleEndian, uint32(i))
	}
	strs.WriteString("\x80\x02]")
	for range 20 { // 20 strings of 1 MiB: past MaxStringBytes
		strs.WriteString("X\x00\x00\x10\x00" + strings.Repeat("x", 1<<20) + "a")
	}
	for name, pkl := range map[string][]byte{"objects.bin": many.Bytes(), "memo.bin": memo.Bytes(), "strings.bin": strs.Bytes()} {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		w, _ := zw.CreateHeader(&zip.FileHeader{Name: "archive/data.pkl", Method: zip.Store})
		w.Write(append(pkl, '.'))
		zw.Close()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	bin := buildBinary(t)
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			for _, args := range [][]string{
				{"inspect", p},
				{"convert", p, filepath.Join(t.TempDir(), "x.gguf")},
				{"check", p},
			} {
				res := runBinary(t, bin, args...)
				if res.wall > corpusMaxWall {
					res = runBinary(t, bin, args...) // one retry for a loaded machine
				}
				want := exitError
				if args[0] == "check" {
					want = exitFound
				}
				if res.code != want || !strings.Contains(res.stderr, p) {
					t.Errorf("%s: exit %d, want %d: %.300s", args[0], res.code, want, res.stderr)
				}
				t.Logf("%s: peak RSS %d MB, %v", args[0], res.maxRSS>>20, res.wall.Round(time.Millisecond))
				if res.maxRSS >= corpusMaxRSSBytes || res.wall > corpusMaxWall {
					t.Errorf("%s: peak RSS %d MB, %v (limits %d MB, %v)", args[0], res.maxRSS>>20, res.wall, corpusMaxRSSBytes>>20, corpusMaxWall)
				}
			}
		})
	}
	if _, err := os.Stat(e.Marker); err == nil {
		t.Fatalf("%s exists: a hostile payload ran", e.Marker)
	}
}
