package safetensors

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

func TestPlanShards(t *testing.T) {
	f32 := func(name string, n int64) tensor.Info {
		return tensor.Info{Name: name, DType: tensor.F32, Shape: tensor.Shape{n}}
	}
	// Sizes in bytes: a 40, b 40, c 400 (over the limit), d 20, e 100 (at the
	// limit, but not with d), f 0.
	ts := []tensor.Info{f32("a", 10), f32("b", 10), f32("c", 100), f32("d", 5), f32("e", 25), f32("f", 0)}
	p, err := PlanShards("model", 100, ts)
	if err != nil {
		t.Fatal(err)
	}
	wantFiles := []string{"model-00001-of-00004.safetensors", "model-00002-of-00004.safetensors", "model-00003-of-00004.safetensors", "model-00004-of-00004.safetensors"}
	if !slices.Equal(p.Files, wantFiles) {
		t.Errorf("files %q, want %q", p.Files, wantFiles)
	}
	want := map[string]int{"a": 0, "b": 0, "c": 1, "d": 2, "e": 3, "f": 3}
	for n, s := range want {
		if p.Assign[n] != s {
			t.Errorf("%s in shard %d, want %d", n, p.Assign[n], s)
		}
	}
	// Everything fits: one file, named like a single checkpoint.
	p, err = PlanShards("model", 1<<20, ts)
	if err != nil || !slices.Equal(p.Files, []string{"model.safetensors"}) || p.Assign["e"] != 0 {
		t.Errorf("one shard: %+v, %v", p, err)
	}
	// Exactly at the limit stays in one shard.
	p, _ = PlanShards("model", 80, ts[:2])
	if len(p.Files) != 1 {
		t.Errorf("40+40 bytes at limit 80: %d shards", len(p.Files))
	}
	for _, base := range []string{"", "../model", "a/b", "/abs", ".."} {
		if _, err := PlanShards(base, 100, ts); err == nil {
			t.Errorf("base %q accepted", base)
		}
	}
	if _, err := PlanShards("model", 0, ts); err == nil {
		t.Error("max shard size 0 accepted")
	}
}

// fixtureInfos reads a fixture's tensors and returns them with a function
// that gives each tensor's bytes.
func fixtureInfos(t *testing.T, dir string) (*File, []tensor.Info) {
	t.Helper()
	f, err := Open(filepath.Join(testdata, dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	var infos []tensor.Info
	for _, tt := range f.Tensors {
		infos = append(infos, tt.Info)
	}
	return f, infos
}

// dirCreate makes files in dir for a ShardedWriter.
func dirCreate(dir string, made *[]string) func(string) (io.WriteCloser, error) {
	return func(name string) (io.WriteCloser, error) {
		*made = append(*made, name)
		return os.Create(filepath.Join(dir, name))
	}
}

// TestShardedRoundTrip splits a real checkpoint into shards, opens them with
// OpenSet and checks every tensor's bytes against the original.
func TestShardedRoundTrip(t *testing.T) {
	src, infos := fixtureInfos(t, "llama")
	dir := t.TempDir()
	var made []string
	const limit = 200_000 // embed_tokens and lm_head (256000 bytes each) exceed it
	w, err := NewShardedWriter(dirCreate(dir, &made), "model", limit, infos, src.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	plan := w.Plan()
	if len(plan.Files) < 3 {
		t.Fatalf("only %d shards", len(plan.Files))
	}
	for i := range src.Tensors {
		tt := &src.Tensors[i]
		bw, err := w.Next(tt.Name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(bw, tt.Open()); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if want := append(slices.Clone(plan.Files), IndexName); !slices.Equal(made, want) {
		t.Errorf("created %q, want %q", made, want)
	}

	// The index as transformers writes it.
	idxBytes, err := os.ReadFile(filepath.Join(dir, IndexName))
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, ti := range infos {
		total += ti.Size
	}
	var idx struct {
		Metadata  map[string]int64  `json:"metadata"`
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(idxBytes, &idx); err != nil {
		t.Fatal(err)
	}
	if idx.Metadata["total_size"] != total || len(idx.WeightMap) != len(infos) {
		t.Errorf("index metadata %v with %d entries, want total_size %d and %d", idx.Metadata, len(idx.WeightMap), total, len(infos))
	}
	if !strings.HasPrefix(string(idxBytes), "{\n  \"metadata\": {\n    \"total_size\": ") ||
		!strings.Contains(string(idxBytes), "\n  \"weight_map\": {\n    \"lm_head.weight\": \"model-00001-of-") ||
		!strings.HasSuffix(string(idxBytes), "\"\n  }\n}\n") {
		t.Errorf("index is not formatted as json.dumps(indent=2, sort_keys=True):\n%s", idxBytes)
	}

	for _, path := range []string{dir, filepath.Join(dir, IndexName)} {
		s, err := OpenSet(path)
		if err != nil {
			t.Fatal(err)
		}
		if s.Index == nil || len(s.Files) != len(plan.Files) || len(s.Tensors) != len(infos) {
			t.Fatalf("OpenSet(%s): index %v, %d files, %d tensors", path, s.Index != nil, len(s.Files), len(s.Tensors))
		}
		if total, _ := s.Index.Metadata["total_size"].(json.Number); total.String() == "" {
			t.Errorf("index metadata %v", s.Index.Metadata)
		}
		for i, f := range s.Files {
			if filepath.Base(f.Name) != plan.Files[i] {
				t.Errorf("file %d is %s, want %s", i, f.Name, plan.Files[i])
			}
			if !f.Metadata.Equal(src.Metadata) {
				t.Errorf("%s metadata %v", f.Name, f.Metadata)
			}
		}
		// Set order: shard order, then data order; here also the source's order.
		for i, tt := range s.Tensors {
			if tt.Name != infos[i].Name {
				t.Fatalf("Tensors[%d] = %s, want %s", i, tt.Name, infos[i].Name)
			}
			orig := &src.Tensors[i]
			a, _ := io.ReadAll(tt.Open())
			b, _ := io.ReadAll(orig.Open())
			if !bytes.Equal(a, b) || tt.DType != orig.DType || !tt.Shape.Equal(orig.Shape) {
				t.Errorf("%s differs after sharding", tt.Name)
			}
			if got, ok := s.Tensor(tt.Name); !ok || got != tt {
				t.Errorf("Set.Tensor(%s)", tt.Name)
			}
		}
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestShardedSingle: when everything fits, the one file is model.safetensors
// and no index is written; it is then byte-identical to the source.
func TestShardedSingle(t *testing.T) {
	src, infos := fixtureInfos(t, "bert-bfloat16")
	dir := t.TempDir()
	var made []string
	w, err := NewShardedWriter(dirCreate(dir, &made), "model", 1<<30, infos, src.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	for i := range src.Tensors {
		bw, _ := w.Next(src.Tensors[i].Name)
		io.Copy(bw, src.Tensors[i].Open())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(made, []string{SingleName}) {
		t.Errorf("created %q", made)
	}
	got, _ := os.ReadFile(filepath.Join(dir, SingleName))
	want, _ := os.ReadFile(filepath.Join(testdata, "bert-bfloat16", "model.safetensors"))
	if !bytes.Equal(got, want) {
		t.Error("single shard differs from the source file")
	}
	s, err := OpenSet(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Index != nil || len(s.Files) != 1 || len(s.Tensors) != len(infos) || s.Dir != dir {
		t.Errorf("OpenSet of a single file: %+v", s)
	}
}

func TestShardedWriterErrors(t *testing.T) {
	_, infos := fixtureInfos(t, "llama-float16")
	dir := t.TempDir()
	var made []string
	w, err := NewShardedWriter(dirCreate(dir, &made), "model", 100_000, infos, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Next(infos[1].Name); err == nil {
		t.Error("out-of-order Next accepted")
	}
	if err := w.Close(); err == nil {
		t.Error("Close after a failure succeeded")
	}
	w, _ = NewShardedWriter(dirCreate(dir, &made), "model", 100_000, infos, nil)
	bw, _ := w.Next(infos[0].Name)
	bw.Write(make([]byte, infos[0].Size))
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), "not written") {
		t.Errorf("Close with tensors missing: %v", err)
	}
	if _, err := NewShardedWriter(dirCreate(dir, &made), "model", 100_000, infos, tensor.Metadata{{Key: "x", Value: tensor.Int32(1)}}); err == nil {
		t.Error("non-string metadata accepted")
	}
}

// writeSet writes a small sharded checkpoint by hand: files maps shard names
// to their tensors (each U8 [1]), and index is the index's JSON.
func writeSet(t *testing.T, files map[string][]string, index string) string {
	t.Helper()
	dir := t.TempDir()
	for name, tensors := range files {
		var infos []tensor.Info
		for _, n := range tensors {
			infos = append(infos, tensor.Info{Name: n, DType: tensor.U8, Shape: tensor.Shape{1}})
		}
		var b bytes.Buffer
		w, err := NewWriter(&b, infos, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range tensors {
			bw, _ := w.Next(n)
			bw.Write([]byte{1})
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, IndexName), []byte(index), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestIndexErrors(t *testing.T) {
	two := map[string][]string{"s1.safetensors": {"a", "b"}, "s2.safetensors": {"c"}}
	tests := []struct {
		name  string
		files map[string][]string
		index string
		msg   string
		item  string
	}{
		{"missing shard", two, `{"weight_map":{"a":"s1.safetensors","b":"s1.safetensors","c":"s3.safetensors"}}`, "missing shard", `shard "s3.safetensors"`},
		{"not in weight_map", two, `{"weight_map":{"a":"s1.safetensors","c":"s2.safetensors"}}`, "not in weight_map", `tensor "b"`},
		{"wrong shard", two, `{"weight_map":{"a":"s1.safetensors","b":"s2.safetensors","c":"s2.safetensors"}}`, "weight_map says s2.safetensors", `tensor "b"`},
		{"listed but absent", two, `{"weight_map":{"a":"s1.safetensors","b":"s1.safetensors","c":"s2.safetensors","d":"s2.safetensors"}}`, "does not hold it", `tensor "d"`},
		{"in two shards", map[string][]string{"s1.safetensors": {"a"}, "s2.safetensors": {"a"}}, `{"weight_map":{"a":"s1.safetensors","x":"s2.safetensors"}}`, "in two shards", `tensor "a"`},
		{"traversal", two, `{"weight_map":{"a":"../s1.safetensors"}}`, "not a plain file name", `tensor "a"`},
		{"absolute", two, `{"weight_map":{"a":"/tmp/s1.safetensors"}}`, "not a plain file name", `tensor "a"`},
		{"dotdot", two, `{"weight_map":{"a":".."}}`, "not a plain file name", `tensor "a"`},
		{"non-string value", two, `{"weight_map":{"a":1}}`, "value must be a string", `tensor "a"`},
		{"weight_map not object", two, `{"weight_map":["a"]}`, "want an object of strings", `key "weight_map"`},
		{"duplicate entry", two, `{"weight_map":{"a":"s1.safetensors","a":"s2.safetensors"}}`, "appears twice", `tensor "a"`},
		{"duplicate weight_map", two, `{"weight_map":{},"weight_map":{}}`, "appears twice", `key "weight_map"`},
		{"no weight_map", two, `{"metadata":{"total_size":3}}`, `no "weight_map"`, ""},
		{"metadata not object", two, `{"metadata":3,"weight_map":{}}`, "want an object", `key "metadata"`},
		{"bad JSON", two, `{"weight_map":{"a":"s1.safetensors"}`, "invalid JSON", ""},
		{"deep nesting", two, `{"x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `,"weight_map":{}}`, "nested deeper", ""},
		{"shard is corrupt", map[string][]string{"s1.safetensors": {"a"}}, `{"weight_map":{"a":"s1.safetensors","b":"bad.safetensors"}}`, "header does not start", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeSet(t, tc.files, tc.index)
			os.WriteFile(filepath.Join(dir, "bad.safetensors"), []byte("\x02\x00\x00\x00\x00\x00\x00\x00[]"), 0o644)
			s, err := OpenSet(dir)
			if err == nil {
				s.Close()
				t.Fatal("accepted")
			}
			t.Log(err)
			if !errors.Is(err, tensor.ErrFormat) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %v: want ErrFormat saying %q", err, tc.msg)
			}
			var fe *tensor.FormatError
			if tc.item != "" && (!errors.As(err, &fe) || fe.Item != tc.item) {
				t.Errorf("error %v: want Item %s", err, tc.item)
			}
		})
	}
	// A missing shard is also fs.ErrNotExist.
	dir := writeSet(t, two, `{"weight_map":{"a":"s9.safetensors"}}`)
	if _, err := OpenSet(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing shard: %v is not fs.ErrNotExist", err)
	}
}

func TestOpenSetAccepted(t *testing.T) {
	two := map[string][]string{"s1.safetensors": {"b", "a"}, "s2.safetensors": {"c"}}
	// Unknown keys are skipped; total_size is informative even when wrong.
	dir := writeSet(t, two, `{"metadata":{"total_size":999,"format":"pt"},"extra":[1,{"x":null}],"weight_map":{"c":"s2.safetensors","a":"s1.safetensors","b":"s1.safetensors"}}`)
	s, err := OpenSet(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var names []string
	for _, tt := range s.Tensors {
		names = append(names, tt.Name)
	}
	// Shard order, then each shard's data order (b was written before a).
	if !slices.Equal(names, []string{"b", "a", "c"}) {
		t.Errorf("tensors %q", names)
	}
	if s.Index.Metadata["format"] != "pt" || s.Index.Metadata["total_size"] != json.Number("999") {
		t.Errorf("index metadata %v", s.Index.Metadata)
	}
	if s.Index.Path != filepath.Join(dir, IndexName) || s.Dir != dir {
		t.Errorf("Path %s Dir %s", s.Index.Path, s.Dir)
	}
	if _, err := OpenSet(t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("empty dir: %v", err)
	}
	// A single file given directly.
	one, err := OpenSet(filepath.Join(testdata, "t5", "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	if one.Index != nil || len(one.Tensors) != 47 {
		t.Errorf("single file: index %v, %d tensors", one.Index, len(one.Tensors))
	}
}

func TestIndexEscaping(t *testing.T) {
	// Python's json.dumps with ensure_ascii escapes every non-ASCII
	// character, lower-case, with surrogate pairs above the BMP.
	got := string(appendPythonJSONString(nil, "é\"\\\n\x01\x7f😀/"))
	want := `"\u00e9\"\\\n\u0001\u007f\ud83d\ude00/"`
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
