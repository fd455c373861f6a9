package gguf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// editFixture is llama.cpp's Q4_0 quantization of the Qwen2-MoE fixture
// (see testdata/arch/README): 37 tensors, a 28288-byte header.
const editFixture = "../../testdata/arch/qwen2moe/gguf/qwen2moe-q4_0.gguf"

// copyFixture copies editFixture into a fresh folder and returns its path
// and bytes.
func copyFixture(t *testing.T) (string, []byte) {
	t.Helper()
	b, err := os.ReadFile(editFixture)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "m.gguf")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, b
}

// tensorBytes returns every tensor's data, read directly (not hashed), so
// that the check does not rest on Edit's own comparison.
func tensorBytes(t *testing.T, path string) (map[string][]byte, *File) {
	t.Helper()
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	m := map[string][]byte{}
	for i := range f.Tensors {
		b, err := io.ReadAll(f.Tensors[i].Open())
		if err != nil {
			t.Fatal(err)
		}
		m[f.Tensors[i].Name] = b
	}
	return m, f
}

func sameTensors(t *testing.T, a, b string) int {
	t.Helper()
	ma, fa := tensorBytes(t, a)
	mb, fb := tensorBytes(t, b)
	if len(fa.Tensors) != len(fb.Tensors) {
		t.Fatalf("%d tensors, then %d", len(fa.Tensors), len(fb.Tensors))
	}
	for i, ta := range fa.Tensors {
		tb := fb.Tensors[i]
		if ta.Name != tb.Name || ta.DType != tb.DType || !ta.Shape.Equal(tb.Shape) || !bytes.Equal(ma[ta.Name], mb[ta.Name]) {
			t.Fatalf("tensor %d %q differs after the edit", i, ta.Name)
		}
	}
	return len(fa.Tensors)
}

func mustEdit(t *testing.T, path string, opts EditOptions) *EditReport {
	t.Helper()
	rep, err := Edit(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.TensorDataEqual || rep.Tensors != 37 {
		t.Fatalf("report: %+v", rep)
	}
	return rep
}

func set(s ...string) []Assignment {
	var out []Assignment
	for _, x := range s {
		a, err := ParseAssignment(x)
		if err != nil {
			panic(err)
		}
		out = append(out, a)
	}
	return out
}

// TestEditSetKeepsType: an existing uint32 stays a uint32 with the new
// value, the key keeps its place, and the report holds old and new.
func TestEditSetKeepsType(t *testing.T) {
	p, _ := copyFixture(t)
	orig := filepath.Join(t.TempDir(), "orig.gguf")
	b, _ := os.ReadFile(p)
	os.WriteFile(orig, b, 0o644)
	rep := mustEdit(t, p, EditOptions{Set: set("qwen2moe.context_length=256")})
	if len(rep.Set) != 1 || rep.Set[0].Type != "uint32" || rep.Set[0].Old == nil || rep.Set[0].Old.Any() != uint32(128) || rep.Set[0].New.Any() != uint32(256) {
		t.Fatalf("changes: %+v", rep.Set)
	}
	_, f := tensorBytes(t, p)
	v, _ := f.Metadata.Get("qwen2moe.context_length")
	if v.Kind() != tensor.KindUint32 || v.Any() != uint32(256) {
		t.Fatalf("read back %v (%s)", v, v.Kind())
	}
	_, g := tensorBytes(t, orig)
	for i := range g.Metadata {
		if g.Metadata[i].Key != f.Metadata[i].Key {
			t.Fatalf("key order changed at %d: %q, then %q", i, g.Metadata[i].Key, f.Metadata[i].Key)
		}
	}
	sameTensors(t, orig, p)
}

// TestEditNewKeyAndDelete: a new key takes the type after the colon (string
// without one), and a deleted key is gone; the header shrank by a few bytes
// here, so the file was rewritten with new offsets and the same tensor data.
func TestEditNewKeyAndDelete(t *testing.T) {
	p, _ := copyFixture(t)
	out := filepath.Join(filepath.Dir(p), "out.gguf")
	mustEdit(t, p, EditOptions{Set: set("my.i16=-7:int16", "my.s=a:b", "my.f=0.5:float64", "my.b=true:bool"), Delete: []string{"general.size_label"}, Out: out})
	_, f := tensorBytes(t, out)
	want := map[string]tensor.Value{"my.i16": tensor.Int16(-7), "my.s": tensor.String("a:b"), "my.f": tensor.Float64(0.5), "my.b": tensor.Bool(true)}
	for k, w := range want {
		if v, ok := f.Metadata.Get(k); !ok || !v.Equal(w) {
			t.Errorf("%s = %v (%s), want %v (%s)", k, v, v.Kind(), w, w.Kind())
		}
	}
	if _, ok := f.Metadata.Get("general.size_label"); ok {
		t.Error("general.size_label still there")
	}
	sameTensors(t, editFixture, out)
}

// TestEditArrays: arrays are set as JSON arrays, typed by the existing key
// or by array[ELEM]; elements are range-checked like scalars; the tensors
// stay byte-equal.
func TestEditArrays(t *testing.T) {
	p, _ := copyFixture(t)
	mustEdit(t, p, EditOptions{Set: set(
		`general.tags=["text-generation", "tiny"]:array[string]`,
		`test.layers=[0, 3, 65535]:array[uint16]`,
		`test.scales=[0.5, -1e-6, 3]:array[float32]`,
		`test.flags=[true, false]:array[bool]`,
		`test.empty=[]:array[int64]`,
	)})
	_, f := tensorBytes(t, p)
	for k, want := range map[string]tensor.Value{
		"general.tags": tensor.ArrayOf([]string{"text-generation", "tiny"}),
		"test.layers":  tensor.ArrayOf([]uint16{0, 3, 65535}),
		"test.scales":  tensor.ArrayOf([]float32{0.5, -1e-6, 3}),
		"test.flags":   tensor.ArrayOf([]bool{true, false}),
		"test.empty":   tensor.ArrayOf([]int64{}),
	} {
		got, ok := f.Metadata.Get(k)
		if !ok || fmt.Sprint(got.Any()) != fmt.Sprint(want.Any()) {
			t.Errorf("%s = %v, want %v", k, got.Any(), want.Any())
		}
	}
	// An existing array keeps its element type (general.tags is now array[string]).
	mustEdit(t, p, EditOptions{Set: set(`general.tags=["x"]`)})
	_, f = tensorBytes(t, p)
	if v, _ := f.Metadata.Get("general.tags"); fmt.Sprint(v.Any()) != "{string [x]}" {
		t.Errorf("general.tags = %v", v.Any())
	}
	for _, tc := range []struct{ set, want string }{
		{`test.layers=[1, 65536]`, "element 1"},
		{`general.tags=[1, 2]`, "element 0"},
		{`test.layers=[1]:array[int32]`, "an edit keeps the type"},
		{`test.layers=1, 2`, "not a JSON array"},
		{`general.architecture=["llama"]:array[string]`, "an edit keeps the type"},
	} {
		if _, err := Edit(p, EditOptions{Set: set(tc.set)}); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.set, err, tc.want)
		}
	}
}

// TestEditChatTemplate sets tokenizer.chat_template from a file, newlines
// and all.
func TestEditChatTemplate(t *testing.T) {
	p, _ := copyFixture(t)
	tplPath := filepath.Join(t.TempDir(), "t.jinja")
	tpl := "{% for m in messages %}\n{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
	os.WriteFile(tplPath, []byte(tpl), 0o644)
	s, err := ReadChatTemplate(tplPath)
	if err != nil {
		t.Fatal(err)
	}
	mustEdit(t, p, EditOptions{Set: []Assignment{{Key: KeyChatTemplate, Value: s, Type: "string"}}})
	_, f := tensorBytes(t, p)
	if got, _ := f.Metadata.Str(KeyChatTemplate); got != tpl {
		t.Fatalf("chat template %q", got)
	}
	os.WriteFile(tplPath, []byte{0xff, 0xfe}, 0o644)
	if _, err := ReadChatTemplate(tplPath); !errors.Is(err, ErrRefused) {
		t.Fatalf("non-UTF-8 template: %v", err)
	}
}

// TestEditGrowsHeader: a 4000-byte name pushes the header past its padding,
// so every data offset moves; the output is rewritten (not in place), is
// the size the report says, and every tensor byte is equal. --in-place is
// refused for the same edit and leaves the file alone.
func TestEditGrowsHeader(t *testing.T) {
	p, before := copyFixture(t)
	name := "general.name=" + strings.Repeat("n", 4000)
	_, err := Edit(p, EditOptions{Set: set(name), InPlace: true})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "--in-place") {
		t.Fatalf("in-place growth: %v", err)
	}
	if now, _ := os.ReadFile(p); !bytes.Equal(now, before) {
		t.Fatal("a refused in-place edit changed the file")
	}
	out := filepath.Join(filepath.Dir(p), "grown.gguf")
	rep := mustEdit(t, p, EditOptions{Set: set(name), Out: out})
	st, _ := os.Stat(out)
	if rep.NewHeaderBytes <= rep.OldHeaderBytes || rep.BytesWritten != st.Size() || rep.InPlace {
		t.Fatalf("report %+v, file %d bytes", rep, st.Size())
	}
	if n := sameTensors(t, p, out); n != 37 {
		t.Fatalf("%d tensors", n)
	}
	t.Logf("header %d -> %d bytes, %d bytes written, 37 tensors equal", rep.OldHeaderBytes, rep.NewHeaderBytes, rep.BytesWritten)
}

// TestEditInPlace: an edit that keeps the padded header size is written
// into the header bytes only; everything after the header is the same bytes.
func TestEditInPlace(t *testing.T) {
	p, before := copyFixture(t)
	rep := mustEdit(t, p, EditOptions{Set: set("general.name=Qq"), InPlace: true}) // "Hf" -> "Qq"
	after, _ := os.ReadFile(p)
	if !rep.InPlace || rep.BytesWritten != rep.OldHeaderBytes || len(after) != len(before) {
		t.Fatalf("report %+v", rep)
	}
	if !bytes.Equal(after[rep.OldHeaderBytes:], before[rep.OldHeaderBytes:]) {
		t.Fatal("data section changed")
	}
	if bytes.Equal(after, before) {
		t.Fatal("nothing written")
	}
}

// TestEditRefused: each edit that would make the file inconsistent, or
// asks for what cannot be done, is refused with ErrRefused and leaves the
// file byte-identical.
func TestEditRefused(t *testing.T) {
	cases := []struct {
		name string
		opts EditOptions
		msg  string
	}{
		{"alignment", EditOptions{Set: set("general.alignment=64")}, "general.alignment"},
		{"alignment typed", EditOptions{Set: set("general.alignment=64:uint32")}, "general.alignment"},
		{"delete alignment", EditOptions{Delete: []string{"general.alignment"}}, "general.alignment"},
		{"split.count", EditOptions{Set: set("split.count=2:uint16")}, "split"},
		{"delete split", EditOptions{Delete: []string{"split.no"}}, "split"},
		{"wrong type", EditOptions{Set: set("qwen2moe.context_length=256:int32")}, "is a uint32"},
		{"bad value", EditOptions{Set: set("qwen2moe.context_length=abc")}, "not a uint32"},
		{"out of range", EditOptions{Set: set("qwen2moe.context_length=4294967296")}, "not a uint32"},
		{"negative unsigned", EditOptions{Set: set("my.x=-1:uint8")}, "not a uint8"},
		{"bad bool", EditOptions{Set: set("tokenizer.ggml.add_bos_token=yes")}, "not a bool"},
		{"array key", EditOptions{Set: set("tokenizer.ggml.tokens=x")}, "array"},
		{"delete missing", EditOptions{Delete: []string{"no.such.key"}}, "not present"},
		{"delete architecture", EditOptions{Delete: []string{"general.architecture"}}, "general.architecture"},
		{"twice", EditOptions{Set: set("general.name=a"), Delete: []string{"general.name"}}, "twice"},
		{"nothing", EditOptions{}, "nothing to edit"},
		{"in-place and out", EditOptions{Set: set("general.name=a"), InPlace: true, Out: "x.gguf"}, "exclude"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, before := copyFixture(t)
			_, err := Edit(p, c.opts)
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.msg) || !strings.HasPrefix(err.Error(), "gguf: ") {
				t.Fatalf("got %v, want ErrRefused mentioning %q", err, c.msg)
			}
			if now, _ := os.ReadFile(p); !bytes.Equal(now, before) {
				t.Fatal("refused edit changed the file")
			}
			if ents, _ := os.ReadDir(filepath.Dir(p)); len(ents) != 1 {
				t.Fatalf("files left: %v", ents)
			}
		})
	}
	if a, err := ParseAssignment("x=[1,2]:array[int32]"); err != nil || a.Type != "array[int32]" || a.Value != "[1,2]" {
		t.Fatalf("array assignment: %+v, %v", a, err)
	}
	for _, bad := range []string{"x=[1]:array[nope]", "x=[[1]]:array[array]", "x=[1]:array"} {
		if _, err := ParseAssignment(bad); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "array") {
			t.Errorf("%s: %v", bad, err)
		}
	}
	if _, err := ParseAssignment("novalue"); !errors.Is(err, ErrRefused) {
		t.Fatalf("no '=': %v", err)
	}
}

// TestEditOutExists: an existing OUT is refused without Force and kept;
// with Force it is replaced.
func TestEditOutExists(t *testing.T) {
	p, _ := copyFixture(t)
	out := filepath.Join(filepath.Dir(p), "out.gguf")
	os.WriteFile(out, []byte("keep me"), 0o644)
	if _, err := Edit(p, EditOptions{Set: set("general.name=x"), Out: out}); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("existing out: %v", err)
	}
	if b, _ := os.ReadFile(out); string(b) != "keep me" {
		t.Fatal("existing out replaced without Force")
	}
	mustEdit(t, p, EditOptions{Set: set("general.name=x"), Out: out, Force: true})
	sameTensors(t, p, out)
	if _, err := Edit(p, EditOptions{Set: set("general.name=x"), Out: p, Force: true}); err == nil || !strings.Contains(err.Error(), "input") {
		t.Fatalf("out = input: %v", err)
	}
}

// TestEditFailedWriteKeepsInput: when the output cannot be created the
// input is byte-identical and no temporary file is left. (A write that fails
// midway is covered by cmd/tfconv's TestEditFileSizeLimit.)
func TestEditFailedWriteKeepsInput(t *testing.T) {
	p, before := copyFixture(t)
	dir := filepath.Dir(p)
	notDir := filepath.Join(dir, "file")
	os.WriteFile(notDir, nil, 0o644)
	if _, err := Edit(p, EditOptions{Set: set("general.name=x"), Out: filepath.Join(notDir, "o.gguf")}); err == nil {
		t.Fatal("wrote under a regular file")
	}
	if os.Geteuid() != 0 { // root writes into read-only folders
		os.Chmod(dir, 0o555)
		defer os.Chmod(dir, 0o755)
		if _, err := Edit(p, EditOptions{Set: set("general.name=x")}); err == nil {
			t.Fatal("replaced a file in a read-only folder")
		}
		os.Chmod(dir, 0o755)
	}
	if now, _ := os.ReadFile(p); !bytes.Equal(now, before) {
		t.Fatal("failed edit changed the input")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Fatalf("files left: %v", ents)
	}
}

// TestEditNotGGUF: other formats are refused as unsupported.
func TestEditNotGGUF(t *testing.T) {
	p := filepath.Join(t.TempDir(), "model.safetensors")
	os.WriteFile(p, []byte("\x08\x00\x00\x00\x00\x00\x00\x00{}      "), 0o644)
	if _, err := Edit(p, EditOptions{Set: set("a=b")}); !errors.Is(err, tensor.ErrUnsupported) || !strings.Contains(err.Error(), "GGUF only") {
		t.Fatalf("safetensors: %v", err)
	}
}

// TestParseAssignment: the type suffix is taken only when it names a type.
func TestParseAssignment(t *testing.T) {
	for in, want := range map[string]Assignment{
		"a=1":             {"a", "1", ""},
		"a=1:uint8":       {"a", "1", "uint8"},
		"a=b:c":           {"a", "b:c", ""},
		"a=x:int8:string": {"a", "x:int8", "string"},
		"a=":              {"a", "", ""},
		"a==b":            {"a", "=b", ""},
		"a=http://x":      {"a", "http://x", ""},
	} {
		got, err := ParseAssignment(in)
		if err != nil || got != want {
			t.Errorf("%q: %+v, %v; want %+v", in, got, err, want)
		}
	}
}

// FuzzParseAssignment: parsing --set arguments never panics, and a value
// that parses is written and read back as the same value.
func FuzzParseAssignment(f *testing.F) {
	for _, s := range []string{"a=1:uint8", "a=-1:int64", "k=1e39:float32", "k=true:bool", "k=x:y:string", "k=[1]:array[int32]", "=x", "k=0x10:uint16"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAssignment(s)
		if err != nil {
			return
		}
		meta, changes, err := ApplyEdits(tensor.Metadata{{Key: KeyArchitecture, Value: tensor.String("llama")}}, []Assignment{a}, nil)
		if err != nil {
			return
		}
		var buf bytes.Buffer
		w, err := NewWriter(&buf, meta, nil)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		w.Close()
		g, err := NewFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if v, _ := g.Metadata.Get(a.Key); !v.Equal(changes[0].New) {
			t.Fatalf("%q: read back %v, set %v", s, v, changes[0].New)
		}
	})
}

// TestEditThroughSymlink: replacing FILE when it is a symlink edits the
// file it points to and leaves the link a link.
func TestEditThroughSymlink(t *testing.T) {
	p, _ := copyFixture(t)
	link := filepath.Join(t.TempDir(), "link.gguf")
	if err := os.Symlink(p, link); err != nil {
		t.Fatal(err)
	}
	mustEdit(t, link, EditOptions{Set: set("general.name=viaLink")})
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("link replaced: %v %v", st, err)
	}
	_, f := tensorBytes(t, p)
	if s, _ := f.Metadata.Str("general.name"); s != "viaLink" {
		t.Fatalf("target not edited: %q", s)
	}
	sameTensors(t, editFixture, p)
}
