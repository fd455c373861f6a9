package tokenizer

import (
	"encoding/json"
	"errors"
	"github.com/tfconv/tfconv/internal/fixtures"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tfconv/tfconv/tensor"
)

// o200kDir is the trimmed o200k ("harmony") tokenizer: the first 4000 ranks
// of tiktoken's o200k_base and gpt-oss's 21 added tokens after them
// (testdata/tokenizer/o200k/README.md).
var o200kDir = filepath.Join("..", "testdata", "tokenizer", "o200k")

// tiktokenCases reads a tokens.json of gen.py: texts and tiktoken 0.9.0's
// ids of them, special tokens parsed (ids) and not (ordinary).
func tiktokenCases(t *testing.T, path string) (cases []struct {
	Text     string `json:"text"`
	IDs      []int  `json:"ids"`
	Ordinary []int  `json:"ordinary"`
}, chkhsh string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Chkhsh string `json:"chkhsh"`
		Cases  []struct {
			Text     string `json:"text"`
			IDs      []int  `json:"ids"`
			Ordinary []int  `json:"ordinary"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Cases) < 30 {
		t.Fatalf("%s: %d cases", path, len(ref.Cases))
	}
	return ref.Cases, ref.Chkhsh
}

// matchesTiktoken holds tok's ids of every case to tiktoken's, special
// tokens parsed and not, and decoding to the text.
func matchesTiktoken(t *testing.T, tok *Tokenizer, path string) {
	t.Helper()
	cases, _ := tiktokenCases(t, path)
	for _, c := range cases {
		got, err := tok.Encode(c.Text, EncodeOptions{ParseSpecial: true})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.IDs) {
			t.Errorf("%q: tfconv %v, tiktoken %v", c.Text, got, c.IDs)
		}
		if got, err = tok.Encode(c.Text, EncodeOptions{}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.Ordinary) {
			t.Errorf("%q ordinary: tfconv %v, tiktoken %v", c.Text, got, c.Ordinary)
		}
		if dec, err := tok.Decode(c.Ordinary); err != nil || dec != c.Text {
			t.Errorf("decode %v = %q, %v; want %q", c.Ordinary, dec, err, c.Text)
		}
	}
}

// TestO200kTrimmedMatchesTiktoken: a trimmed o200k tokenizer.json hashes to
// no name of llama.cpp's table and splits as no llama.cpp pre-tokenizer
// does (o200k's letter classes hold combining marks; llama.cpp's gpt-4o
// rules do not), so it is refused for GGUF output, naming its regex. Read
// without a name, its own splitting and BPE give tiktoken's ids for the
// o200k pattern over the same ranks on every text: multilingual (combining
// marks, Devanagari, Khmer, Thai, CJK), numbers, white-space runs, code,
// and the harmony control tokens.
func TestO200kTrimmedMatchesTiktoken(t *testing.T) {
	t.Parallel()
	src := dirSource{dir: o200kDir}
	_, err := FromSource(src)
	var fe *tensor.FormatError
	if !errors.As(err, &fe) || !fe.Unsupported || !strings.Contains(err.Error(), `\\p{M}`) {
		t.Fatalf("trimmed o200k: %v, want a refusal naming the regex", err)
	}
	tok, _, err := readHF(src)
	if err != nil {
		t.Fatal(err)
	}
	if tok.hf == nil || tok.hf.refusal != "" || !tok.hfIgnoreMerges {
		t.Fatalf("tokenizer.json's pre-tokenizer: %+v, ignore_merges %v", tok.hf, tok.hfIgnoreMerges)
	}
	tok.pretok, tok.ignoreMerges = &preTokenizer{name: "tokenizer.json", hf: tok.hf}, tok.hfIgnoreMerges
	if tok.Len() != 4021 || tok.BOS != 4000 || tok.EOS != 4004 || tok.PAD != 4001 {
		t.Fatalf("%d tokens, bos %d, eos %d, pad %d", tok.Len(), tok.BOS, tok.EOS, tok.PAD)
	}
	matchesTiktoken(t, tok, filepath.Join(o200kDir, "tokens.json"))
}

// TestO200kHarmonyMatchesTiktoken reads gpt-oss-20b's tokenizer (the full
// o200k_harmony, shared/fixtures/tokenizers/o200k/gptoss): the converter's
// hash of its ids names it "gpt-4o" (tiktoken's ids of the check text give
// the same hash), and its ids equal tiktoken's on every text.
func TestO200kHarmonyMatchesTiktoken(t *testing.T) {
	t.Parallel()
	dir := filepath.Dir(fixtures.RequireSub(t, "tokenizers/o200k/gptoss", "gpt-oss-20b's 27 MB tokenizer.json"))
	tok, err := LoadFile(filepath.Join(dir, "gptoss"))
	if err != nil {
		t.Fatal(err)
	}
	if tok.Pre() != "gpt-4o" || tok.PreNote() != "" || tok.Len() != 201088 || tok.BOS != 199998 || tok.EOS != 200002 || tok.PAD != 199999 {
		t.Fatalf("pre %q (%s), %d tokens, bos %d, eos %d, pad %d", tok.Pre(), tok.PreNote(), tok.Len(), tok.BOS, tok.EOS, tok.PAD)
	}
	_, chk := tiktokenCases(t, filepath.Join(dir, "tokens-full.json"))
	if h, err := tok.ChkHash(); err != nil || h != chk || preForHash(h) != "gpt-4o" {
		t.Errorf("hash %s (%v), tiktoken's %s", h, err, chk)
	}
	matchesTiktoken(t, tok, filepath.Join(dir, "tokens-full.json"))
}

// TestHarmonyChatTemplate renders gpt-oss-20b's chat template (harmony: a
// system message built with strftime_now, the developer message, channels)
// for a system + user conversation through the path generate --chat takes,
// from the Hugging Face folder (chat_template.jinja) and from the
// converter's GGUF (tokenizer.chat_template): the text is transformers'
// rendering of that template (testdata/chat/expected.json, whose
// openai-gpt-oss-120b.jinja is byte-identical to gpt-oss-20b's), and both
// give the same ids, the harmony tokens as single control tokens.
func TestHarmonyChatTemplate(t *testing.T) {
	t.Parallel()
	dir := filepath.Dir(fixtures.RequireSub(t, "tokenizers/o200k/gptoss", "gpt-oss-20b's tokenizer, beside the converter's GGUF of it"))
	chat := filepath.Join("..", "testdata", "chat")
	tpl, err := os.ReadFile(filepath.Join(chat, "templates", "openai-gpt-oss-120b.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	var convs []struct {
		Name     string    `json:"name"`
		Messages []Message `json:"messages"`
	}
	var want struct {
		Meta struct {
			Clock string `json:"clock"`
		} `json:"meta"`
		Renderings []struct {
			Template     string  `json:"template"`
			Conversation string  `json:"conversation"`
			Text         *string `json:"text"`
		} `json:"renderings"`
	}
	for name, v := range map[string]any{"conversations.json": &convs, "expected.json": &want} {
		b, err := os.ReadFile(filepath.Join(chat, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
	}
	var msgs []Message
	for _, c := range convs {
		if c.Name == "system_user" {
			msgs = c.Messages
		}
	}
	var text string
	for _, r := range want.Renderings {
		if r.Template == "openai-gpt-oss-120b" && r.Conversation == "system_user" && r.Text != nil {
			text = *r.Text
		}
	}
	clock, err := time.Parse("2006-01-02T15:04:05", want.Meta.Clock)
	if err != nil || len(msgs) != 2 || text == "" {
		t.Fatalf("conversation %v, rendering %q, clock %v", msgs, text, err)
	}
	var first []int
	for _, src := range []string{filepath.Join(dir, "gptoss"), filepath.Join(dir, "gptoss-vocab-converter.gguf")} {
		tok, err := LoadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if ts := tok.ChatTemplates(); len(ts) != 1 || ts[0].Template != string(tpl) {
			t.Fatalf("%s: %d templates, not gpt-oss-20b's", src, len(ts))
		}
		got, ids, err := tok.ApplyChatTemplate(msgs, ChatOptions{AddGenerationPrompt: true, Now: func() time.Time { return clock }})
		if err != nil {
			t.Fatal(err)
		}
		if got != text {
			t.Errorf("%s: rendered\n%q\nwant (transformers)\n%q", src, got, text)
		}
		for _, id := range []int{200006, 200008, 200007} { // <|start|>, <|message|>, <|end|>
			if !slices.Contains(ids, id) {
				t.Errorf("%s: ids %v lack %d", src, ids, id)
			}
		}
		if first == nil {
			first = ids
		} else if !slices.Equal(ids, first) {
			t.Errorf("GGUF ids %v, HF ids %v", ids, first)
		}
	}
}
