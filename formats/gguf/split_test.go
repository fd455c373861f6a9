package gguf

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// writeSplit splits src into dir/model-*.gguf at maxBytes.
func writeSplit(t *testing.T, src *File, dir string, maxBytes int64) []string {
	t.Helper()
	infos := make([]tensor.Info, len(src.Tensors))
	for i, ts := range src.Tensors {
		infos[i] = ts.Info
	}
	var created []string
	create := func(name string) (io.WriteCloser, error) {
		created = append(created, name)
		return os.Create(name)
	}
	sw, err := NewSplitWriter(filepath.Join(dir, "model"), maxBytes, src.Metadata, infos, create)
	if err != nil {
		t.Fatal(err)
	}
	for i := range src.Tensors {
		w, err := sw.Next(src.Tensors[i].Name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(w, src.Tensors[i].Open()); err != nil {
			t.Fatal(err)
		}
	}
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(created, ",") != strings.Join(sw.Names(), ",") {
		t.Errorf("created %v, Names %v", created, sw.Names())
	}
	return created
}

func TestSplitRoundTrip(t *testing.T) {
	src, err := Open(filepath.Join(testdata, "llama-Q4_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dir := t.TempDir()
	const limit = 300_000
	names := writeSplit(t, src, dir, limit)

	// The grouping gguf-split --split-max-size makes: tensors in order, a new
	// shard when the 32-padded sizes would pass the limit.
	var groups []int
	cur := int64(0)
	for _, ts := range src.Tensors {
		p := (ts.Size + 31) / 32 * 32
		if len(groups) == 0 || cur+p > limit {
			groups = append(groups, 0)
			cur = 0
		}
		groups[len(groups)-1]++
		cur += p
	}
	if len(names) != len(groups) || len(names) < 3 {
		t.Fatalf("%d shards %v, want %d", len(names), names, len(groups))
	}
	for i, n := range names {
		if want := filepath.Join(dir, "model") + "-0000" + string(rune('1'+i)) + "-of-0000" + string(rune('0'+len(names))) + ".gguf"; n != want {
			t.Errorf("shard %d named %s, want %s", i, n, want)
		}
	}

	s, err := OpenSplit(names[len(names)-1]) // any shard opens the set
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if len(s.Files) != len(names) || len(s.Tensors) != len(src.Tensors) {
		t.Fatalf("%d files, %d tensors", len(s.Files), len(s.Tensors))
	}
	for i, f := range s.Files {
		if len(f.Tensors) != groups[i] {
			t.Errorf("shard %d has %d tensors, want %d", i, len(f.Tensors), groups[i])
		}
		// gguf-split c392e509's order: split.count is set again last.
		tail := tensor.Metadata{
			{Key: KeySplitNo, Value: tensor.Uint16(uint16(i))},
			{Key: KeySplitTensorsCount, Value: tensor.Int32(int32(len(src.Tensors)))},
			{Key: KeySplitCount, Value: tensor.Uint16(uint16(len(names)))},
		}
		want := tail
		if i == 0 {
			want = append(append(tensor.Metadata{}, src.Metadata...), tail...)
		}
		if !f.Metadata.Equal(want) {
			t.Errorf("shard %d metadata: %d keys, want %d", i, len(f.Metadata), len(want))
		}
	}
	if !s.Metadata.Equal(s.Files[0].Metadata) {
		t.Error("Split.Metadata is not the first shard's")
	}
	for i, ts := range s.Tensors {
		o := src.Tensors[i]
		if ts.Name != o.Name || ts.DType != o.DType || !ts.Shape.Equal(o.Shape) {
			t.Fatalf("tensor %d: %v vs %v", i, ts.Info, o.Info)
		}
		a, _ := io.ReadAll(ts.Open())
		b, _ := io.ReadAll(o.Open())
		if !bytes.Equal(a, b) {
			t.Errorf("%s: data differs", ts.Name)
		}
	}
	if _, ok := s.Tensor("output.weight"); !ok {
		t.Error("no output.weight")
	}

	// A missing shard is named, and the error is fs.ErrNotExist.
	os.Remove(names[1])
	_, err = OpenSplit(names[0])
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), names[1]) {
		t.Errorf("missing shard: %v", err)
	}
	// Shards in the wrong place: split.no disagrees with the name.
	third, err := os.ReadFile(names[2])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(names[1], third, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = OpenSplit(names[0])
	var fe *tensor.FormatError
	if !errors.As(err, &fe) || fe.Item != `key "split.no"` || fe.File != names[1] || !strings.Contains(fe.Msg, "is 2, want 1") {
		t.Errorf("misplaced shard: %v", err)
	}
}

func TestSplitSingleAndBad(t *testing.T) {
	s, err := OpenSplit(filepath.Join(testdata, "bert-Q2_K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Files) != 1 || len(s.Tensors) != 37 || s.Files[0].Architecture() != "bert" {
		t.Errorf("single: %d files %d tensors", len(s.Files), len(s.Tensors))
	}
	s.Close()

	dir := t.TempDir()
	mk := func(name string, meta tensor.Metadata, names ...string) {
		var infos []tensor.Info
		for _, n := range names {
			infos = append(infos, tensor.Info{Name: n, DType: tensor.F32, Shape: tensor.Shape{2}})
		}
		var buf bytes.Buffer
		w, err := NewWriter(&buf, meta, infos)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			bw, _ := w.Next(n)
			bw.Write(make([]byte, 8))
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644)
	}
	keys := func(no, count uint16, total int32) tensor.Metadata {
		return tensor.Metadata{{Key: KeySplitNo, Value: tensor.Uint16(no)}, {Key: KeySplitCount, Value: tensor.Uint16(count)}, {Key: KeySplitTensorsCount, Value: tensor.Int32(total)}}
	}
	check := func(name, item, msg string) {
		t.Helper()
		_, err := OpenSplit(filepath.Join(dir, name))
		var fe *tensor.FormatError
		if !errors.As(err, &fe) || fe.Item != item || !strings.Contains(fe.Msg, msg) {
			t.Errorf("%s: %v", name, err)
		}
	}
	mk("dup-00001-of-00002.gguf", keys(0, 2, 2), "a")
	mk("dup-00002-of-00002.gguf", keys(1, 2, 2), "a")
	check("dup-00002-of-00002.gguf", `tensor "a"`, "also in")

	mk("cnt-00001-of-00002.gguf", keys(0, 2, 3), "a")
	mk("cnt-00002-of-00002.gguf", keys(1, 2, 3), "b")
	check("cnt-00001-of-00002.gguf", `key "split.tensors.count"`, "is 3, but the shards hold 2")

	mk("n-00001-of-00002.gguf", keys(0, 3, 2), "a")
	mk("n-00002-of-00002.gguf", keys(1, 3, 2), "b")
	check("n-00001-of-00002.gguf", `key "split.count"`, "is 3, but the name says 2")

	mk("typ-00001-of-00001.gguf", tensor.Metadata{{Key: KeySplitNo, Value: tensor.Uint32(0)}}, "a")
	check("typ-00001-of-00001.gguf", `key "split.no"`, "is a uint32, want uint16")

	mk("plain.gguf", keys(0, 2, 2), "a")
	check("plain.gguf", `key "split.count"`, "does not end in")
}
