package convert

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/internal/fixtures"
	"github.com/tfconv/tfconv/tensor"
)

// tokenizerRecord is md's tokenizer.* keys in that form.
func tokenizerRecord(t *testing.T, md tensor.Metadata) map[string]any {
	t.Helper()
	rec := map[string]any{}
	for _, kv := range md {
		if !strings.HasPrefix(kv.Key, "tokenizer.") {
			continue
		}
		b, err := json.Marshal(kv.Value)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if a, ok := kv.Value.Array(); ok {
			rec[kv.Key] = map[string]any{"len": a.Len(), "sha256": hex.EncodeToString(sum[:])}
			continue
		}
		if s, ok := kv.Value.Str(); ok && len(s) > 256 { // the chat template
			rec[kv.Key] = map[string]any{"bytes": len(s), "sha256": hex.EncodeToString(sum[:])}
			continue
		}
		rec[kv.Key] = json.RawMessage(b)
	}
	return rec
}

// bigVocabs are full tokenizers kept in shared/fixtures/tokenizers (their
// READMEs in testdata/tokenizer say where each came from): a folder of a
// family with the tokenizer, llama.cpp d32676d7's --vocab-only GGUF of it,
// and the name its hash gets. record is testdata's converter-keys.json: the
// tokenizer keys of that GGUF, each array (and a chat template) as its
// length and the sha256 of its JSON, so that a clone without the GGUF
// still holds what it must equal.
var bigVocabs = []struct{ name, dir, folder, gguf, pre string }{
	// gpt-oss-20b's own tokenizer: o200k_harmony, its chat template.
	{"o200k", "o200k", "gptoss", "gptoss-vocab-converter.gguf", "gpt-4o"},
	// Mistral Nemo's Tekken vocabulary in a Mistral 3 folder.
	{"tekken", "tekken", "mistral3", "mistral3-vocab-converter.gguf", "tekken"},
}

// TestBigVocabsMatchConverter converts each folder --vocab-only: every key
// and value equals the converter's own --vocab-only GGUF of that folder
// (tokens, types, merges, pre, special ids, add_bos, chat template), in its
// order but for general.quantization_version's place, and the converter's
// file still holds the record kept in testdata.
func TestBigVocabsMatchConverter(t *testing.T) {
	t.Parallel()
	for _, v := range bigVocabs {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Dir(fixtures.RequireSub(t, "tokenizers/"+v.dir+"/"+v.folder, "a full tokenizer beside the converter's --vocab-only GGUF of it"))
			want := filepath.Join(dir, v.gguf)
			out := filepath.Join(t.TempDir(), v.folder+".gguf")
			rep, err := Run(filepath.Join(dir, v.folder), out, Options{OutType: OutF32, VocabOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			compareGGUF(t, rep.Arch, out, want, false)
			a, err := checkpoint.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			b, err := checkpoint.Open(want)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			keys := func(md tensor.Metadata) []string {
				var ks []string
				for _, kv := range md {
					if kv.Key != "general.quantization_version" {
						ks = append(ks, kv.Key)
					}
				}
				return ks
			}
			if !slices.Equal(keys(a.Metadata), keys(b.Metadata)) {
				t.Errorf("key order\n ours %v\n want %v", keys(a.Metadata), keys(b.Metadata))
			}
			if pre, _ := a.Metadata.Str("tokenizer.ggml.pre"); pre != v.pre {
				t.Errorf("pre %q, want %q", pre, v.pre)
			}
			got, err := json.MarshalIndent(tokenizerRecord(t, b.Metadata), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			record := filepath.Join("..", "testdata", "tokenizer", v.dir, "converter-keys.json")
			if *update {
				if err := os.WriteFile(record, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			kept, err := os.ReadFile(record)
			if err != nil {
				t.Fatal(err)
			}
			if string(kept) != string(got) {
				t.Errorf("%s is not the converter's GGUF's record (-update rewrites it)", record)
			}
		})
	}
}
