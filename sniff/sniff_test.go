package sniff

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

func TestFormat(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		head, path string
		want       Kind
	}{
		{"GGUF\x03\x00\x00\x00", "m.gguf", GGUF},
		{"FUGG\x00\x00\x00\x03", "m.gguf", GGUF},
		{"\x89TFN\r\n\x1a\n\x01", "m.tfn", Native},
		{"PK\x03\x04rest", "pytorch_model.bin", PyTorch},
		{"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19", "old.bin", PyTorch},
		{"\x80\x02\x8a\x0a\x6c\xfc", "short.bin", Safetensors}, // a cut magic is not torch's
		{" \n{\"metadata\"", "model.safetensors.index.json", SafetensorsIndex},
		{"{\"weight_map\"", "pytorch_model.bin.index.json", PyTorchIndex},
		{"{\"metadata\": {}, \"weight_map\": {}}", "renamed.json", SafetensorsIndex},
		{"\x10\x00\x00\x00\x00\x00\x00\x00{\"a\"", "model.safetensors", Safetensors},
		{"\xff\xff\xff\xff\xff\xff\xff\xff{\"a\"", "hlen-max.safetensors", Safetensors}, // a header length check refuses
		{"", "empty", Empty},
		{"<!DOCTYPE html>\n<html>", "model.gguf", HTML},
		{"\n\n<html lang=\"en\">", "model.safetensors", HTML},
		{"version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 1\n", "model.safetensors", GitLFSPointer},
		{"hello, world\nsecond line ünïcode\n", "notes.txt", Text},
		{"{\"architectures\": [\"LlamaForCausalLM\"]}", "config.json", JSON},
		{"[1, 2, 3]", "list.json", JSON},
		{"\x1c\x00\x00\x00\x13\x00\x00\x00blk.0.attn_k.weight", "imatrix.dat", ImatrixDat},
		{"\xa6\x64\xf2\xac\x1f\xb6\x0c\xe0\x01\x02", "random.bin", Unknown},
	} {
		if got := Format([]byte(c.head), c.path); got != c.want {
			t.Errorf("Format(%q, %q) = %d, want %d", c.head, c.path, got, c.want)
		}
	}
}

// TestNotCheckpoint: every file that is no checkpoint is refused with an
// error that names it and says what it is, through File, the one place
// checkpoint.Open, check, tokenize and edit decide.
func TestNotCheckpoint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	imatrix, err := os.ReadFile("../testdata/imatrix/tiny-fortunes.dat")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, body string
		want       []string
	}{
		{"page.gguf", "<!DOCTYPE html>\n<html><body>Hugging Face</body></html>\n",
			[]string{"page.gguf: not a GGUF file: it starts with '<!DO', an HTML page", "resolve/", "not the blob/ one"}},
		{"empty.gguf", "", []string{"empty.gguf: empty file (0 bytes), not a GGUF file"}},
		{"notes.safetensors", "just some notes\n", []string{"notes.safetensors: not a safetensors file: a text file (it starts with 'just')"}},
		{"lfs.safetensors", "version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 1\n", []string{"lfs.safetensors: not a safetensors file: a Git LFS pointer", "git lfs pull"}},
		{"config.json", `{"model_type": "llama"}`, []string{"config.json: not a checkpoint: a JSON file", "give the folder that holds it"}},
		{"imatrix.dat", string(imatrix), []string{"imatrix.dat: not a checkpoint: an importance matrix", "quantize --imatrix"}},
		{"random.bin", "\xa6\x64\xf2\xac\x1f\xb6\x0c\xe0\x01\x02", []string{"random.bin: not a PyTorch checkpoint: it starts with the bytes a6 64 f2 ac 1f b6 0c e0"}},
	} {
		path := filepath.Join(dir, c.name)
		if err := os.WriteFile(path, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		k, err := File(path)
		if err == nil {
			t.Errorf("%s: File = %d, nil error; want it refused", c.name, k)
			continue
		}
		if !errors.Is(err, tensor.ErrFormat) {
			t.Errorf("%s: %v is not a tensor.ErrFormat", c.name, err)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", c.name, err, w)
			}
		}
	}
	// A checkpoint is not refused.
	if k, err := File("../testdata/gguf/llama-Q4_0.gguf"); err != nil || k != GGUF {
		t.Errorf("File(llama-Q4_0.gguf) = %d, %v; want GGUF", k, err)
	}
}
