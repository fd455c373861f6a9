package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/formats/gguf"
)

// editInput is llama.cpp's Q4_0 of the Qwen2-MoE fixture: 37 tensors.
const editInput = "../../testdata/arch/qwen2moe/gguf/qwen2moe-q4_0.gguf"

func copyEditInput(t *testing.T) (string, []byte) {
	t.Helper()
	b, err := os.ReadFile(editInput)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "m.gguf")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, b
}

// dataSection returns the bytes of a GGUF file from its data section on.
func dataSection(t *testing.T, path string) []byte {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, _ := os.ReadFile(path)
	return b[f.DataOffset:]
}

// TestEditCommand: set an existing key, add a typed key, delete a key and
// set the chat template from a file in one run that replaces FILE; the text
// output names each change and the tensor check; the data section is the
// same bytes.
func TestEditCommand(t *testing.T) {
	p, before := copyEditInput(t)
	tpl := filepath.Join(t.TempDir(), "chat.jinja")
	os.WriteFile(tpl, []byte("{{ bos_token }}{% for m in messages %}{{ m.content }}\n{% endfor %}"), 0o644)
	code, out, stderr := run(t, "edit", p, "--set", "qwen2moe.context_length=4096", "--set", "my.flag=true:bool",
		"--delete", "general.size_label", "--chat-template-file", tpl)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"set qwen2moe.context_length (uint32): 128 -> 4096",
		"set my.flag (bool): (new) -> true",
		"deleted general.size_label",
		"set tokenizer.chat_template (string): (new)",
		"tensors unchanged: 37, data hash equal",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	f, err := gguf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n, _ := f.Metadata.Int("qwen2moe.context_length"); n != 4096 {
		t.Errorf("context_length %d", n)
	}
	if s, _ := f.Metadata.Str(gguf.KeyChatTemplate); !strings.HasSuffix(s, "{% endfor %}") {
		t.Errorf("chat template %q", s)
	}
	orig, _ := gguf.NewFile(bytes.NewReader(before), int64(len(before)))
	if !bytes.Equal(before[orig.DataOffset:], dataSection(t, p)) {
		t.Error("data section changed")
	}
}

// TestEditJSON: --json carries the documented fields; a header-growing
// edit to --out reports the new size and tensor_data_equal.
func TestEditJSON(t *testing.T) {
	p, before := copyEditInput(t)
	dst := filepath.Join(filepath.Dir(p), "out.gguf")
	code, out, stderr := run(t, "edit", p, "--set", "general.name="+strings.Repeat("x", 5000), "--out", dst, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep struct {
		Path    string `json:"path"`
		Out     string `json:"out"`
		InPlace bool   `json:"in_place"`
		Set     []struct {
			Key, Type string
			Old, New  any
		} `json:"set"`
		Deleted         []string `json:"deleted"`
		Tensors         int      `json:"tensors"`
		TensorDataEqual bool     `json:"tensor_data_equal"`
		OldHeader       int64    `json:"old_header_bytes"`
		NewHeader       int64    `json:"new_header_bytes"`
		BytesWritten    int64    `json:"bytes_written"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	st, _ := os.Stat(dst)
	if rep.Path != p || rep.Out != dst || rep.InPlace || rep.Tensors != 37 || !rep.TensorDataEqual ||
		len(rep.Set) != 1 || rep.Set[0].Key != "general.name" || rep.Set[0].Type != "string" || rep.Set[0].Old != "Hf" ||
		rep.Deleted == nil || rep.NewHeader <= rep.OldHeader || rep.BytesWritten != st.Size() {
		t.Fatalf("report %+v", rep)
	}
	if now, _ := os.ReadFile(p); !bytes.Equal(now, before) {
		t.Fatal("--out changed the input")
	}
	if !bytes.Equal(dataSection(t, p), dataSection(t, dst)) {
		t.Fatal("tensor data differs")
	}
}

// TestEditRefusedExit2: refusals exit 2 with a message naming the key, and
// leave FILE byte-identical.
func TestEditRefusedExit2(t *testing.T) {
	p, before := copyEditInput(t)
	other := filepath.Join(filepath.Dir(p), "exists.gguf")
	os.WriteFile(other, []byte("x"), 0o644)
	st := filepath.Join(filepath.Dir(p), "m.safetensors")
	os.WriteFile(st, []byte("\x02\x00\x00\x00\x00\x00\x00\x00{}"), 0o644)
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--set", "general.alignment=64"}, `"general.alignment"`},
		{[]string{"--set", "split.count=3:uint16"}, `"split.count"`},
		{[]string{"--set", "qwen2moe.context_length=1.5"}, "not a uint32"},
		{[]string{"--set", "qwen2moe.context_length=1:string"}, "is a uint32"},
		{[]string{"--delete", "general.architecture"}, "general.architecture"},
		{[]string{"--delete", "missing.key"}, "not present"},
		{[]string{"--set", "a=[1,2]:array[nope]"}, "array"},
		{[]string{"--set", "general.name=x", "--out", other}, "--force"},
		{[]string{"--set", "general.name=" + strings.Repeat("y", 300), "--in-place"}, "--in-place"},
		{[]string{}, "nothing to edit"},
	} {
		code, _, stderr := run(t, append([]string{"edit", p}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.msg) || !strings.HasPrefix(stderr, "tfconv: edit: gguf: ") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.msg)
		}
		if now, _ := os.ReadFile(p); !bytes.Equal(now, before) {
			t.Fatalf("%v changed the file", c.args)
		}
	}
	if b, _ := os.ReadFile(other); string(b) != "x" {
		t.Fatal("existing --out replaced without --force")
	}
	if code, _, stderr := run(t, "edit", st, "--set", "a=b"); code != 2 || !strings.Contains(stderr, "GGUF only") {
		t.Errorf("safetensors: exit %d %q", code, stderr)
	}
	if code, _, stderr := run(t, "edit", p, "--set", "general.name=z", "--out", other, "--force"); code != 0 {
		t.Errorf("--force: exit %d %q", code, stderr)
	}
}

// TestEditFileSizeLimit runs the binary under ulimit -f, so that writing
// the output fails midway (EFBIG): the edit exits 2, FILE is byte-identical
// and no temporary file is left beside it.
func TestEditFileSizeLimit(t *testing.T) {
	bin := buildBinary(t)
	p, before := copyEditInput(t)
	// 64 KiB (in 512-byte blocks) is past the 28 KiB header and short of
	// the 195 KiB file, so the failure comes while bodies are copied.
	cmd := exec.Command("sh", "-c", `ulimit -f 128; exec "$0" "$@"`, bin, "edit", p, "--set", "general.name=limited")
	var errb strings.Builder
	cmd.Stderr = &errb
	cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(errb.String(), "file too large") {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if now, _ := os.ReadFile(p); !bytes.Equal(now, before) {
		t.Fatal("a failed edit changed the input")
	}
	if tmps := tempsIn(t, filepath.Dir(p)); len(tmps) != 0 {
		t.Fatalf("temporary files left: %v", tmps)
	}
}
