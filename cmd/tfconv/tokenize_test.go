package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// runTokenizeCmd runs the tokenize command directly (root.go registers it).
func runTokenizeCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := newCmdTokenize(&app{out: &out, err: &errb})
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SilenceUsage = true
	cmd.SilenceErrors = true
	err := cmd.Execute()
	return out.String(), err
}

func TestTokenizeCommand(t *testing.T) {
	llama := filepath.Join("..", "..", "testdata", "tokenizer", "interop", "llama")
	// Ids from the fixture README's cross-check table (HF LlamaTokenizer).
	out, err := runTokenizeCmd(t, llama, "--json", "Hello world")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		IDs    []int    `json:"ids"`
		Pieces []string `json:"pieces"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := []int{1, 376, 293, 414, 279, 270, 426}
	if len(got.IDs) != len(want) || len(got.Pieces) != len(want) {
		t.Fatalf("got %v %q, want ids %v", got.IDs, got.Pieces, want)
	}
	for i := range want {
		if got.IDs[i] != want[i] {
			t.Fatalf("ids %v, want %v", got.IDs, want)
		}
	}
	if got.Pieces[0] != "<s>" {
		t.Errorf("first piece %q, want <s>", got.Pieces[0])
	}

	out, err = runTokenizeCmd(t, llama, "--no-special", "Hello world")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1+6 || !strings.HasPrefix(lines[1], "376\t") {
		t.Errorf("table without BOS:\n%s", out)
	}

	out, err = runTokenizeCmd(t, llama, "--ids", "1,376,293,414,279,270,426")
	if err != nil {
		t.Fatal(err)
	}
	if out != "Hello world\n" {
		t.Errorf("decode: %q", out)
	}

	bert := filepath.Join("..", "..", "testdata", "tokenizer", "interop", "bert", "vocab.txt")
	out, err = runTokenizeCmd(t, bert, "--json", "Hello world")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(strings.Fields(out), ""), `"ids":[2,147,83,83,78,227,3]`) {
		t.Errorf("bert: %s", out)
	}

	// Hunyuan's ranks file alone (config.json beside it): the ids of its
	// class's tiktoken.Encoding (testdata/tokenizer/hunyuan/tokens.json).
	hy := filepath.Join("..", "..", "testdata", "arch", "hunyuanmoe", "hf", "hy.tiktoken")
	out, err = runTokenizeCmd(t, hy, "--json", "--parse-special", "Hello world, this is Hunyuan's tokenizer.<|eos|>")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(strings.Fields(out), ""), `"ids":[72,517,361,279,261,108,100,44,403,295,343,438,310,121,117,284,312,827,46,127960]`) {
		t.Errorf("hy.tiktoken: %s", out)
	}

	if _, err := runTokenizeCmd(t, llama); err == nil {
		t.Error("missing TEXT: no error")
	}
	if _, err := runTokenizeCmd(t, llama, "--ids", "1,x"); err == nil {
		t.Error("bad --ids: no error")
	}
	if _, err := runTokenizeCmd(t, llama, "--ids", "99999"); err == nil {
		t.Error("out-of-range id: no error")
	}
}

// A native file carries its tokenizer: the sample GGUF repackaged as .tfn
// tokenizes the fixture sentence to the ids transformers and llama.cpp gave
// (testdata/tiny-fortunes/README.md, shared/fixtures/trained/tiny-fortunes).
func TestTokenizeNative(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sample.tfn")
	if code, _, errOut := run(t, "convert", sampleGGUF, p); code != 0 {
		t.Fatalf("convert to native: exit %d: %s", code, errOut)
	}
	code, out, errOut := run(t, "tokenize", "--json", p, "She said that they would go back to the old house.")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct{ IDs []int }
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	want := []int{1, 314, 351, 864, 330, 390, 888, 716, 741, 287, 541, 302, 276, 286, 426, 296, 281, 341, 923}
	if fmt.Sprint(got.IDs) != fmt.Sprint(want) {
		t.Errorf("ids %v, want %v", got.IDs, want)
	}
}

// The empty and whitespace-only cases of llama.cpp's tokenizer vectors
// give empty lists, which --json prints as [] (issue 14: it printed null).
func TestTokenizeJSONEmptyLists(t *testing.T) {
	for _, text := range []string{"", "\n"} {
		code, out, errOut := run(t, "tokenize", "../../testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf", text, "--json", "--no-special")
		if code != 0 {
			t.Fatalf("%q: exit %d: %s", text, code, errOut)
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"ids", "pieces"} {
			if l, ok := got[k].([]any); !ok || (text == "" && len(l) != 0) {
				t.Errorf("%q: %s = %v (%T), want a list", text, k, got[k], got[k])
			}
		}
	}
}
