package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/internal/fixtures"
)

// TestChkHashMatchesConverter encodes the converter's check text with each
// of llama.cpp's BPE test vocabularies (made by its own update script from
// the real tokenizers) and looks the hash up: the name must be the
// vocabulary's own tokenizer.ggml.pre.
func TestChkHashMatchesConverter(t *testing.T) {
	dir := filepath.Join(fixtures.Require(t), "tokenizers")
	paths, _ := filepath.Glob(filepath.Join(dir, "ggml-vocab-*.gguf"))
	n := 0
	for _, p := range paths {
		f, err := gguf.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := FromMetadata(f.Metadata, p)
		f.Close()
		if err != nil {
			t.Logf("%s: %v", filepath.Base(p), err)
			continue
		}
		if tok.model != BPE {
			continue
		}
		h, err := tok.ChkHash()
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(p), err)
			continue
		}
		// A hash several models share (mpt and olmo) names each of them
		// in the table; the converter writes the last.
		var names []string
		for _, e := range chkHashes {
			if e.hash == h {
				names = append(names, e.pre)
			}
		}
		t.Logf("%s: pre %q, hash %s… → %v", filepath.Base(p), tok.pre, h[:12], names)
		if !slices.Contains(names, tok.pre) && !(tok.pre == "" && names == nil) {
			t.Errorf("%s: hash %s names %v, the vocabulary says %q", filepath.Base(p), h, names, tok.pre)
		}
		n++
	}
	if n < 5 {
		t.Errorf("%d BPE vocabularies checked", n)
	}
}

// TestIdentifyPreFromTokenizerJSON writes the tokenizer.json that Falcon's
// and StarCoder's models ship (their pre_tokenizer sequences, which tfconv
// does not read directly) around llama.cpp's test vocabularies of those
// tokenizers, and checks that the pre-tokenizer is named as the converter
// names it, by the hash.
func TestIdentifyPreFromTokenizerJSON(t *testing.T) {
	dir := filepath.Join(fixtures.Require(t), "tokenizers")
	for _, c := range []struct{ vocab, pre, preTok string }{
		{"ggml-vocab-falcon.gguf", "falcon", `{"type":"Sequence","pretokenizers":[{"type":"Punctuation","behavior":"Contiguous"},` +
			`{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true},{"type":"Digits","individual_digits":false},` +
			`{"type":"Split","pattern":{"Regex":"[0-9][0-9][0-9]"},"behavior":"Isolated","invert":false}]}`},
		{"ggml-vocab-starcoder.gguf", "starcoder", `{"type":"Sequence","pretokenizers":[{"type":"Digits","individual_digits":true},` +
			`{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true}]}`},
	} {
		f, err := gguf.Open(filepath.Join(dir, c.vocab))
		if err != nil {
			t.Fatal(err)
		}
		ref, err := FromMetadata(f.Metadata, c.vocab)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		vocab := map[string]int{}
		for i, s := range ref.tokens {
			vocab[s] = i
		}
		var added []map[string]any
		for i, ty := range ref.types {
			if ty == TypeControl {
				added = append(added, map[string]any{"id": i, "content": ref.tokens[i], "special": true})
			}
		}
		tj := map[string]any{"added_tokens": added, "pre_tokenizer": json.RawMessage(c.preTok),
			"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": ref.merges}}
		b, err := json.Marshal(tj)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := FromSource(memSource{files: map[string][]byte{"tokenizer.json": b}})
		if err != nil {
			t.Fatalf("%s: %v", c.vocab, err)
		}
		if tok.Pre() != c.pre {
			t.Errorf("%s: pre %q, want %q", c.vocab, tok.Pre(), c.pre)
		}
	}
}

// TestChkHashesAreTheReferences reads the converter's own table (llama.cpp
// d32676d7's get_vocab_base_pre, copied unchanged into testdata/tokenizer)
// and wants chkHashes to be it: every hash, its name, in its order.
func TestChkHashesAreTheReferences(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "testdata", "tokenizer", "get_vocab_base_pre-d32676d7.py"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`if chkhsh == "([0-9a-f]{64})":\n\s*# ref: \S+\n\s*res = "([^"]+)"`)
	ms := re.FindAllStringSubmatch(string(b), -1)
	if n := strings.Count(string(b), `chkhsh == "`); len(ms) != n || n < 90 {
		t.Fatalf("%d entries read of %d in the file", len(ms), n)
	}
	if len(ms) != len(chkHashes) {
		t.Errorf("table has %d entries, the reference %d", len(chkHashes), len(ms))
	}
	for i, m := range ms {
		if i < len(chkHashes) && (chkHashes[i].hash != m[1] || chkHashes[i].pre != m[2]) {
			t.Errorf("entry %d: %s %q, the reference %s %q", i, chkHashes[i].hash, chkHashes[i].pre, m[1], m[2])
		}
	}
}
