package convert_test

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/tfconv/tfconv/convert"
	"github.com/tfconv/tfconv/quantize"
)

// A GGUF quantized to safetensors streams through convert's Hugging Face
// view: nothing but DST appears beside it (no scratch folder, at any point:
// the folder is watched while the quantization runs), and the output is,
// file for file, what the scratch-folder path of main 5d100f8 wrote (its
// SHA-256 over the sorted file names and contents, recorded here). llama3
// has its Q/K rows permuted back, gemma its norms' +1 undone, bert a
// WordPiece tokenizer rebuilt.
func TestQuantizeGGUFToSafetensorsStreams(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ src, typ, want string }{
		{"../testdata/arch/llama3/gguf/llama3-f32.gguf", "f16", "64263a69def0f6a694d9430ed7d923a125581e09649434c1c95264e4d79c76bf"},
		{"../testdata/arch/gemma/gguf/gemma-f32.gguf", "bf16", "8b3634bf05b3415cbaa0804d77f3dc851553de5dd7f87728ea95aae05ce1db53"},
		{"../testdata/quantize/bert-f32.gguf", "int8", "87c581e24b012292f7fc0a3e09efb493dd0251f2cd3385f6322841d2e725c0cc"},
	} {
		dir := t.TempDir()
		dst := filepath.Join(dir, "out")
		target, err := quantize.ParseTarget(tc.typ)
		if err != nil {
			t.Fatal(err)
		}
		// At every progress call (the output's own temporary folder is
		// open then) at most one entry besides DST: that folder.
		most, calls := 0, 0
		o := convert.QuantizeOptions{Options: quantize.Options{Target: target}, Format: quantize.Safetensors}
		o.Progress = func(int, int, string) {
			calls++
			ents, _ := os.ReadDir(dir)
			most = max(most, len(ents))
		}
		if _, err := convert.Quantize(tc.src, dst, o); err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		if calls == 0 || most != 1 {
			t.Errorf("%s: %d entries beside DST at once while quantizing (%d progress calls), want 1", tc.src, most, calls)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 || ents[0].Name() != "out" {
			t.Errorf("%s: left beside DST: %v", tc.src, ents)
		}
		h := sha256.New()
		ents, err := os.ReadDir(dst)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents { // ReadDir sorts by name
			b, err := os.ReadFile(filepath.Join(dst, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(h, "%s %d\n", e.Name(), len(b))
			h.Write(b)
		}
		if got := fmt.Sprintf("%x", h.Sum(nil)); got != tc.want {
			t.Errorf("%s --type %s: output SHA-256 %s, want %s", tc.src, tc.typ, got, tc.want)
		}
	}
}
