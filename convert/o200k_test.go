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

// o200kRecord is testdata/tokenizer/o200k/converter-keys.json: the
// tokenizer keys of llama.cpp d32676d7's --vocab-only GGUF of gpt-oss-20b's
// tokenizer, each array (and the chat template) as its length and the
// sha256 of its JSON, so that a
// clone without the 13 MB GGUF still holds what it must equal.
var o200kRecord = filepath.Join("..", "testdata", "tokenizer", "o200k", "converter-keys.json")

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

// TestO200kHarmonyMatchesConverter converts gpt-oss-20b's tokenizer (the
// full o200k_harmony tokenizer.json, its tokenizer_config.json and chat
// template, shared/fixtures/tokenizers/o200k/gptoss) --vocab-only: every
// key and value equals llama.cpp d32676d7's own --vocab-only GGUF of that
// folder (pre gpt-4o, 201088 tokens, the merges, types, special ids and
// chat template), in its order but for general.quantization_version's place,
// and the converter's file still holds the record kept in testdata.
func TestO200kHarmonyMatchesConverter(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(fixtures.Require(t), "tokenizers", "o200k")
	want := filepath.Join(dir, "gptoss-vocab-converter.gguf")
	out := filepath.Join(t.TempDir(), "gptoss.gguf")
	rep, err := Run(filepath.Join(dir, "gptoss"), out, Options{OutType: OutF32, VocabOnly: true})
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
	if pre, _ := a.Metadata.Str("tokenizer.ggml.pre"); pre != "gpt-4o" {
		t.Errorf("pre %q", pre)
	}
	rec := tokenizerRecord(t, b.Metadata)
	got, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *update {
		if err := os.WriteFile(o200kRecord, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	kept, err := os.ReadFile(o200kRecord)
	if err != nil {
		t.Fatal(err)
	}
	if string(kept) != string(got) {
		t.Errorf("%s is not the converter's GGUF's record (-update rewrites it)", o200kRecord)
	}
}
