package card

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/internal/atomicfile"
)

// fortunes is the trained tiny-fortunes model's Q8_0 GGUF, made by
// llama-quantize (testdata/tiny-fortunes/README.md).
const fortunes = "../testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf"

func folder(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile(fortunes)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"tiny-fortunes-Q8_0.gguf": b,
		"notes.txt":               []byte("mine\n"),
		"q8.verify.json": []byte(`{"ref": "/x/tiny-fortunes-f16.gguf", "cand": "/y/tiny-fortunes-Q8_0.gguf",
			"kld": {"mean": 0.000123, "p99": 0.01}, "ppl": {"ref": 24.2849, "cand": 24.2871}}`),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestWrite(t *testing.T) {
	t.Parallel()
	dir := folder(t)
	c, err := Write(dir, Options{BaseModel: "tfconv/tiny-fortunes", License: "mit", QuantizedBy: "tfconv CI",
		Tags: []string{"fortunes"}, Verify: []string{filepath.Join(dir, "q8.verify.json")}, Version: "1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	front := `---
base_model: "tfconv/tiny-fortunes"
base_model_relation: quantized
quantized_by: "tfconv CI"
license: "mit"
library_name: gguf
pipeline_tag: text-generation
tags:
- "gguf"
- "tfconv"
- "fortunes"
- "llama"
- "base_model:quantized:tfconv/tiny-fortunes"
---
`
	if !strings.HasPrefix(text, front) {
		t.Errorf("front matter:\n%s\nwant:\n%s", text[:min(len(text), len(front)+80)], front)
	}
	// 3919104 bytes, 3.66 M parameters: 8.515 bits per weight (inspect's figure).
	row := "| [tiny-fortunes-Q8_0.gguf](./tiny-fortunes-Q8_0.gguf) | Q8_0 | 3.7 MiB | 8.51 | 0.000123 | 24.2871 |"
	if !strings.Contains(text, row) {
		t.Errorf("no row %q in\n%s", row, text)
	}
	for _, want := range []string{"from `tiny-fortunes-f16.gguf`'s", "tfconv 1.2.3",
		"tfconv convert ./tiny-fortunes MODEL-F16.gguf --outtype f16",
		"tfconv quantize MODEL-F16.gguf tiny-fortunes-Q8_0.gguf --type q8_0"} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in the card", want)
		}
	}
	if len(c.Files) != 1 || c.Files[0].Bytes != 3919104 || c.Files[0].Params != 3660032 || c.Architecture != "llama" {
		t.Errorf("card %+v", c)
	}

	// Not again without --force; with it, README.md only is replaced.
	if _, err := Write(dir, Options{}); !errors.Is(err, atomicfile.ErrExists) {
		t.Fatalf("second Write without Force: %v", err)
	}
	c, err = Write(dir, Options{Force: true})
	if err != nil || !c.Replaced {
		t.Fatalf("Write with Force: %+v, %v", c, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "notes.txt")); err != nil || string(b) != "mine\n" {
		t.Errorf("notes.txt after the card: %q, %v", b, err)
	}
	b, _ = os.ReadFile(filepath.Join(dir, "README.md"))
	if strings.Contains(string(b), "base_model") || !strings.Contains(string(b), "| Q8_0 | 3.7 MiB | 8.51 |\n") {
		t.Errorf("the card without options still has a base model or lost its row:\n%s", b)
	}
}

func TestWriteRefusals(t *testing.T) {
	t.Parallel()
	dir := folder(t)
	other := filepath.Join(dir, "other.verify.json")
	os.WriteFile(other, []byte(`{"ref": "a.gguf", "cand": "missing-Q4_0.gguf", "kld": {"mean": 0.1}}`), 0o644)
	if _, err := Write(dir, Options{Verify: []string{other}}); err == nil || !strings.Contains(err.Error(), "missing-Q4_0.gguf is not among the files") {
		t.Errorf("a report about another file: %v", err)
	}
	os.WriteFile(other, []byte(`{"ppl": 3}`), 0o644)
	if _, err := Write(dir, Options{Verify: []string{other}}); err == nil || !strings.Contains(err.Error(), "other.verify.json") {
		t.Errorf("a report that is not verify's: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "README.md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused card left README.md: %v", err)
	}
	if _, err := Write(t.TempDir(), Options{}); err == nil || !strings.Contains(err.Error(), "no model GGUF files") {
		t.Errorf("an empty folder: %v", err)
	}
}
