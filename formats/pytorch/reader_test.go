package pytorch

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

const testdata = "../../testdata/pytorch"

// expectedTensor is one entry of testdata/pytorch/expected.json: what torch
// 1.13 gives for the tensor (gen.py).
type expectedTensor struct {
	Name  string  `json:"name"`
	DType string  `json:"dtype"`
	Shape []int64 `json:"shape"`
	Data  string  `json:"data"` // base64 of t.contiguous().numpy().tobytes()
}

type expectedFile struct {
	Torch   string           `json:"torch"`
	Tensors []expectedTensor `json:"tensors"`
	Floats  []expectedTensor `json:"floats"`
	Params  []expectedTensor `json:"params"`
	Hostile []string         `json:"hostile"`
	Marker  string           `json:"marker"`
}

func loadExpected(t testing.TB) expectedFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testdata, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var e expectedFile
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	if len(e.Tensors) == 0 || len(e.Hostile) == 0 {
		t.Fatal("expected.json lists no tensors or no hostile files")
	}
	return e
}

// compare holds f's tensors to want: same names in the same order, same
// dtype and shape, and byte-identical data.
func compare(t *testing.T, f *File, want []expectedTensor) {
	t.Helper()
	if len(f.Tensors) != len(want) {
		t.Fatalf("%d tensors, want %d", len(f.Tensors), len(want))
	}
	for i, w := range want {
		got := &f.Tensors[i]
		if got.Name != w.Name {
			t.Errorf("tensor %d is %q, want %q", i, got.Name, w.Name)
			continue
		}
		if got.DType.String() != w.DType || !got.Shape.Equal(tensor.Shape(w.Shape)) {
			t.Errorf("%s: %s %v, want %s %v", w.Name, got.DType, got.Shape, w.DType, w.Shape)
		}
		data, err := base64.StdEncoding.DecodeString(w.Data)
		if err != nil {
			t.Fatal(err)
		}
		if got.Size != int64(len(data)) {
			t.Errorf("%s: size %d, want %d", w.Name, got.Size, len(data))
		}
		b, err := io.ReadAll(got.Open())
		if err != nil {
			t.Errorf("%s: %v", w.Name, err)
			continue
		}
		if !bytes.Equal(b, data) {
			t.Errorf("%s: bytes differ from torch's:\n got %x\nwant %x", w.Name, b, data)
		}
		// A second reader is independent of the first.
		part := make([]byte, len(data)/2)
		if _, err := got.Open().ReadAt(part, int64(len(data)-len(part))); err != nil && len(part) > 0 {
			t.Errorf("%s: ReadAt: %v", w.Name, err)
		} else if !bytes.Equal(part, data[len(data)-len(part):]) {
			t.Errorf("%s: ReadAt of the second half differs", w.Name)
		}
	}
}

// Every fixture torch wrote reads back byte for byte as torch gives it:
// every dtype, the tied pair, the views with offsets and strides.
func TestFixtures(t *testing.T) {
	e := loadExpected(t)
	for _, c := range []struct {
		path      string
		container Container
		prefix    string
	}{
		{"zip/pytorch_model.bin", Zip, "pytorch_model/"},
		{"archive.bin", Zip, "archive/"},
		{"legacy.bin", Legacy, ""},
	} {
		t.Run(c.path, func(t *testing.T) {
			f, err := Open(filepath.Join(testdata, c.path))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if f.Container != c.container || f.Prefix != c.prefix {
				t.Errorf("container %s prefix %q, want %s %q", f.Container, f.Prefix, c.container, c.prefix)
			}
			compare(t, f, e.Tensors)
			emb, _ := f.Tensor("emb.weight")
			head, _ := f.Tensor("lm_head.weight")
			if emb == nil || head == nil || emb.Storage != head.Storage || emb.Offset != head.Offset {
				t.Errorf("tied weights do not share a storage: %+v %+v", emb, head)
			}
			for name, contiguous := range map[string]bool{"base": true, "base_t": false, "base_row": true, "strided": false, "scalar": true, "empty": true} {
				tt, ok := f.Tensor(name)
				if !ok {
					t.Fatalf("no tensor %q", name)
				}
				if tt.Contiguous != contiguous {
					t.Errorf("%s: contiguous %v, want %v (strides %v)", name, tt.Contiguous, contiguous, tt.Strides)
				}
			}
			if row, _ := f.Tensor("base_row"); row.StorageOffset != 5 {
				t.Errorf("base_row: storage offset %d, want 5", row.StorageOffset)
			}
			refused, err := Scan(f.closer.(io.ReaderAt), f.Size, f.Name)
			if err != nil || len(refused) != 0 {
				t.Errorf("Scan: %v, %v", refused, err)
			}
		})
	}
}

// A dict of nn.Parameter objects pickles through _rebuild_parameter.
func TestParameters(t *testing.T) {
	e := loadExpected(t)
	f, err := Open(filepath.Join(testdata, "params.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	compare(t, f, e.Params)
}

// The float-only file, and the same tensors sharded with an index: opened
// as a file, a directory or the index, the set lists them in order.
func TestSets(t *testing.T) {
	e := loadExpected(t)
	for _, p := range []string{"floats", "floats/pytorch_model.bin", "sharded", "sharded/pytorch_model.bin.index.json"} {
		t.Run(p, func(t *testing.T) {
			s, err := OpenSet(filepath.Join(testdata, p))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if sharded := strings.HasPrefix(p, "sharded"); (s.Index != nil) != sharded || sharded && len(s.Files) != 2 {
				t.Errorf("index %v, %d files", s.Index != nil, len(s.Files))
			}
			f := &File{}
			for _, tt := range s.Tensors {
				f.Tensors = append(f.Tensors, *tt)
				if got, ok := s.Tensor(tt.Name); !ok || got != tt {
					t.Errorf("Tensor(%q) = %v, %v", tt.Name, got, ok)
				}
				if s.FileOf(tt) == nil {
					t.Errorf("%s: no file", tt.Name)
				}
			}
			compare(t, f, e.Floats)
		})
	}
}

// Index files are read strictly: a repeated name, a shard outside the
// folder, a missing shard and a tensor in the wrong shard are errors.
func TestIndexErrors(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"pytorch_model-00001-of-00002.bin", "pytorch_model-00002-of-00002.bin"} {
		b, err := os.ReadFile(filepath.Join(testdata, "sharded", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	idx, err := ReadIndex(filepath.Join(testdata, "sharded", IndexName))
	if err != nil {
		t.Fatal(err)
	}
	good, _ := json.Marshal(map[string]any{"weight_map": idx.WeightMap})
	moved := map[string]string{}
	for k, v := range idx.WeightMap {
		moved[k] = v
	}
	moved["h16"] = "pytorch_model-00002-of-00002.bin"
	wrongShard, _ := json.Marshal(map[string]any{"weight_map": moved})
	for _, c := range []struct{ name, index, want string }{
		{"good", string(good), ""},
		{"dup", `{"weight_map":{"a":"x.bin","a":"x.bin"}}`, `tensor "a": appears twice in weight_map`},
		{"escape", `{"weight_map":{"a":"../x.bin"}}`, "not a plain file name"},
		{"missing", `{"weight_map":{"a":"nope.bin"}}`, `shard "nope.bin": missing shard`},
		{"no map", `{"metadata":{}}`, `no "weight_map"`},
		{"not json", `{"weight_map":{"a":"x.bin"`, "invalid JSON"},
		{"trailing", `{"weight_map":{}} {}`, "text after"},
		{"wrong shard", string(wrongShard), `tensor "h16": in shard pytorch_model-00001-of-00002.bin but weight_map says pytorch_model-00002-of-00002.bin`},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, IndexName)
			if err := os.WriteFile(p, []byte(c.index), 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := OpenSet(p)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				s.Close()
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, tensor.ErrFormat) {
				t.Errorf("error %v, want ErrFormat with %q", err, c.want)
			}
			// A missing shard is also fs.ErrNotExist, naming the file
			// (as for safetensors: both open sets with shardindex.OpenSet).
			if c.name == "missing" && (!errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), filepath.Join(dir, "nope.bin"))) {
				t.Errorf("missing shard: %v is not fs.ErrNotExist naming the file", err)
			}
		})
	}
}

// Every hostile file is an error that names the file and an offset, of
// class ErrFormat or ErrUnsupported, and nothing it names runs.
func TestHostile(t *testing.T) {
	e := loadExpected(t)
	os.Remove(e.Marker)
	want := map[string]string{
		"posix-system.bin":        `data.pkl offset 2: global "posix.system" is not allowed`,
		"os-system.bin":           `data.pkl offset 2: global "os.system" is not allowed`,
		"legacy-posix-system.bin": `offset 139: global "posix.system" is not allowed`,
		"builtins-eval.bin":       `global "builtins.eval" is not allowed`,
		"stack-global.bin":        `data.pkl offset 14: global "os.system" is not allowed`,
		"many-globals.bin":        `global "posix.system" is not allowed`,
		"recursion-bomb.bin":      "stack deeper than",
		"memo-nesting.bin":        "holds a list, not a state dict",
		"self-cycle.bin":          "holds a list, not a state dict",
		"long4-huge.bin":          "LONG of 2147483647 bytes",
		"unicode8-huge.bin":       "string of 4611686018427387904 bytes",
		"truncated.bin":           "zip archive",
		"storage-short.bin":       `tensor "h16": storage "0": record is 3 bytes, the storage needs 10`,
		"compressed.bin":          "compressed",
		"legacy-truncated.bin":    "run past the end",
	}
	if len(want) != len(e.Hostile) {
		t.Errorf("%d hostile files in expected.json, %d here", len(e.Hostile), len(want))
	}
	for _, name := range e.Hostile {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(testdata, "hostile", name)
			f, err := Open(p)
			if err == nil {
				f.Close()
				t.Fatal("opened")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "pytorch: "+p+": offset ") {
				t.Errorf("error %q does not start with the package, the file and an offset", msg)
			}
			if w, ok := want[name]; !ok || !strings.Contains(msg, w) {
				t.Errorf("error %q lacks %q", msg, w)
			}
			if !errors.Is(err, tensor.ErrFormat) && !errors.Is(err, tensor.ErrUnsupported) {
				t.Errorf("error %v is neither ErrFormat nor ErrUnsupported", err)
			}
			var fe *tensor.FormatError
			if !errors.As(err, &fe) || fe.Offset < 0 {
				t.Errorf("error %v is not a FormatError with an offset", err)
			}
		})
	}
	if _, err := os.Stat(e.Marker); err == nil {
		t.Fatalf("%s exists: a hostile payload ran", e.Marker)
	}
}

// Scan lists every disallowed global, not only the first.
func TestScanAllGlobals(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testdata, "hostile", "many-globals.bin"))
	if err != nil {
		t.Fatal(err)
	}
	refused, err := Scan(bytes.NewReader(b), int64(len(b)), "many-globals.bin")
	if err == nil || !strings.Contains(err.Error(), `global "posix.system" is not allowed`) {
		t.Errorf("Scan error %v, want the strict reader's", err)
	}
	var got []string
	for _, g := range refused {
		got = append(got, g.Module+"."+g.Name)
		if g.Offset != g.PickleOffset+46 {
			// data.pkl's bytes start 46 bytes into the archive (a 30-byte
			// local header and its 16-byte name).
			t.Errorf("%s: offset %d, pickle offset %d", g.Name, g.Offset, g.PickleOffset)
		}
	}
	if want := "posix.system builtins.exec subprocess.Popen"; strings.Join(got, " ") != want {
		t.Errorf("refused %q, want %q", got, want)
	}
}

// Unit checks of the pickle machine on hand-written pickles.
func TestPickleMachine(t *testing.T) {
	p2 := "\x80\x02"
	cases := []struct {
		name, pkl string
		want      string // "" for success
	}{
		{"empty dict", p2 + "}.", ""},
		{"dict op", p2 + "(X\x01\x00\x00\x00aK\x01d.", ""},
		{"int text", p2 + "I12\n.", ""},
		{"int text bad", p2 + "I1x\n.", "INT"},
		{"float", p2 + "G\x3f\xf0\x00\x00\x00\x00\x00\x00.", ""},
		{"memoize", "\x80\x04]\x940h\x00.", ""},
		{"frame", "\x80\x04\x95\x03\x00\x00\x00\x00\x00\x00\x00}\x94.", ""},
		{"frame past end", "\x80\x04\x95\xff\x00\x00\x00\x00\x00\x00\x00}.", "frame of 255 bytes"},
		{"protocol 1", "\x80\x01}.", "protocol 1"},
		{"no stop", p2 + "}", "without STOP"},
		{"underflow", p2 + "0.", "stack underflow"},
		{"left on stack", p2 + "}}.", "values left"},
		{"mark bomb", p2 + strings.Repeat("(", MaxMarks+1), "open MARKs"},
		{"memo miss", p2 + "h\x05.", "memo key 5"},
		{"unknown opcode", p2 + "\xff.", "opcode 0xff"},
		{"unhashable key", p2 + "}]K\x01s.", "dict key of type a list"},
		{"setitem on list", p2 + "]K\x01K\x02s.", "not a dict"},
		{"append on dict", p2 + "}K\x01a.", "not a list"},
		{"reduce non-global", p2 + "K\x01)R.", "not a global"},
		{"reduce disallowed", p2 + "cbuiltins\ngetattr\n)R.", `global "builtins.getattr" is not allowed`},
		{"ordered dict args", p2 + "ccollections\nOrderedDict\nK\x01\x85R.", "OrderedDict called with 1 arguments"},
		{"newobj ordered dict", p2 + "ccollections\nOrderedDict\n)\x81.", ""},
		{"newobj storage", p2 + "ctorch\nFloatStorage\n)\x81.", "NEWOBJ on global"},
		{"build on list", p2 + "]}b.", "BUILD on a list"},
		{"stack global ints", "\x80\x04K\x01K\x02\x93.", "not two strings"},
		{"persid without loader", p2 + "K\x01Q.", "persistent id"},
		{"bad utf8", p2 + "X\x01\x00\x00\x00\xff.", "UTF-8"},
		{"long1 negative", p2 + "\x8a\x01\xff.", ""},
		{"rebuild on int", p2 + "ctorch._utils\n_rebuild_tensor_v2\n(K\x00K\x00)))\x89NtR.", "not a storage"},
		{"global no newline", p2 + "c" + strings.Repeat("a", 300), "no newline"},
		{"truncated binint", p2 + "J\x01\x00", "ends inside"},
		{"stack bomb", p2 + strings.Repeat("N", MaxStack+1) + ".", "stack deeper"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := &unpickler{buf: []byte(c.pkl)}
			_, err := u.run()
			switch {
			case c.want == "" && err != nil:
				t.Errorf("error %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("error %v, want one with %q", err, c.want)
			}
		})
	}
	u := &unpickler{buf: []byte(p2 + "\x8a\x02\x00\xff\x8a\x09\x01\x00\x00\x00\x00\x00\x00\x00\x00\x86.")}
	v, err := u.run()
	if err != nil {
		t.Fatal(err)
	}
	if tup := v.(pyTuple); tup[0] != int64(-256) || len(tup[1].(pyLong)) != 9 {
		t.Errorf("LONG1 values %v", tup)
	}
}
