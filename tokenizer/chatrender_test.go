package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestChatTemplateRenders renders the real chat templates of
// testdata/chat/templates (Llama 3.1 and 3.2, Qwen2.5, Qwen3, Mistral Nemo
// (Tekken) and Small 3.2, Gemma 2, Phi-3.5, DeepSeek-R1 and V3.1, SmolLM3,
// gpt-oss, GLM-4.6, Granite 3.3) over testdata/chat/conversations.json and
// compares each text byte for byte with what transformers v4.57.6's
// render_jinja_template produced under jinja2 (testdata/chat/gen.py wrote
// expected.json; a template's raise_exception must fail here too, with its
// message).
func TestChatTemplateRenders(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "testdata", "chat")
	var convs []struct {
		Name                string    `json:"name"`
		AddGenerationPrompt bool      `json:"add_generation_prompt"`
		Messages            []Message `json:"messages"`
	}
	var special map[string]map[string]any
	var want struct {
		Meta struct {
			Clock string `json:"clock"`
		} `json:"meta"`
		Renderings []struct {
			Template     string  `json:"template"`
			Conversation string  `json:"conversation"`
			Text         *string `json:"text"`
			Error        *string `json:"error"`
		} `json:"renderings"`
	}
	for name, v := range map[string]any{"conversations.json": &convs, "special_tokens.json": &special, "expected.json": &want} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	clock, err := time.Parse("2006-01-02T15:04:05", want.Meta.Clock)
	if err != nil {
		t.Fatal(err)
	}
	if len(special) < 10 || len(want.Renderings) != len(special)*len(convs) {
		t.Fatalf("%d templates, %d renderings for %d conversations", len(special), len(want.Renderings), len(convs))
	}
	for _, w := range want.Renderings {
		t.Run(w.Template+"/"+w.Conversation, func(t *testing.T) {
			tpl, err := os.ReadFile(filepath.Join(dir, "templates", w.Template+".jinja"))
			if err != nil {
				t.Fatal(err)
			}
			var msgs []Message
			agp := false
			for _, c := range convs {
				if c.Name == w.Conversation {
					msgs, agp = c.Messages, c.AddGenerationPrompt
				}
			}
			got, err := RenderChat(string(tpl), msgs, special[w.Template], ChatOptions{AddGenerationPrompt: agp, Now: func() time.Time { return clock }})
			switch {
			case w.Error != nil:
				if err == nil || !strings.Contains(err.Error(), *w.Error) {
					t.Errorf("got %q, %v; want the error %q", got, err, *w.Error)
				}
			case err != nil:
				t.Errorf("error %v; want\n%q", err, *w.Text)
			case got != *w.Text:
				t.Errorf("rendered\n%q\nwant (transformers)\n%q", got, *w.Text)
			}
		})
	}
}

// TestStrftime: the directives chat templates use, as Python prints them.
func TestStrftime(t *testing.T) {
	t.Parallel()
	tm := time.Date(2026, 3, 4, 15, 6, 7, 0, time.UTC)
	for f, want := range map[string]string{
		"%d %b %Y":            "04 Mar 2026",
		"%B %d, %Y":           "March 04, 2026",
		"%Y-%m-%d":            "2026-03-04",
		"%A %a %H:%M:%S %p":   "Wednesday Wed 15:06:07 PM",
		"%I%% %y %j Mon 2006": "03% 26 063 Mon 2006",
	} {
		if got := strftime(tm, f); got != want {
			t.Errorf("strftime(%q) = %q, want %q", f, got, want)
		}
	}
}

// TestApplyChatTemplateGGUF: a tokenizer read back from the GGUF metadata
// of an HF one gives the template the same special tokens and the chat the
// same ids, and ApplyChatTemplate adds no BOS though the tokenizer adds one
// to plain text (apply_chat_template encodes with add_special_tokens=False).
func TestApplyChatTemplateGGUF(t *testing.T) {
	t.Parallel()
	hf, err := LoadFile("../testdata/arch/mistral/hf")
	if err != nil {
		t.Fatal(err)
	}
	gg, err := FromMetadata(hf.GGUFMetadata(), "m.gguf")
	if err != nil {
		t.Fatal(err)
	}
	msgs := []Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"}}
	want := map[string]any{"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}
	var first []int
	for i, tk := range []*Tokenizer{hf, gg} {
		if got := tk.SpecialTokens(); len(got) != len(want) || got["bos_token"] != want["bos_token"] || got["eos_token"] != want["eos_token"] || got["unk_token"] != want["unk_token"] {
			t.Errorf("source %d: special tokens %v, want %v", i, got, want)
		}
		text, ids, err := tk.ApplyChatTemplate(msgs, ChatOptions{AddGenerationPrompt: true})
		if err != nil {
			t.Fatal(err)
		}
		if text != "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n" {
			t.Errorf("source %d: rendered %q", i, text)
		}
		if !tk.AddBOS || ids[0] == tk.BOS {
			t.Errorf("source %d: ids %v begin with BOS %d", i, ids, tk.BOS)
		}
		if first == nil {
			first = ids
		} else if !slices.Equal(ids, first) {
			t.Errorf("GGUF ids %v, HF ids %v", ids, first)
		}
	}
}

// TestChatTemplateFiles: a template saved beside tokenizer_config.json
// (chat_template.jinja, as transformers 4.43+ saves it, or a processor's
// chat_template.json) is the tokenizer's when tokenizer_config.json has
// none, as gguf-py reads it.
func TestChatTemplateFiles(t *testing.T) {
	t.Parallel()
	const tpl = "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}{{ eos_token }}"
	src := "../testdata/arch/mistral/hf"
	for _, side := range []struct{ name, body string }{
		{"chat_template.jinja", tpl},
		{"chat_template.json", `{"chat_template": ` + strconvQuote(tpl) + `}`},
	} {
		dir := t.TempDir()
		for _, f := range []string{"tokenizer.model", "special_tokens_map.json", "config.json"} {
			b, err := os.ReadFile(filepath.Join(src, f))
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, f), b, 0o644)
		}
		var cfg map[string]any
		b, _ := os.ReadFile(filepath.Join(src, "tokenizer_config.json"))
		json.Unmarshal(b, &cfg)
		delete(cfg, "chat_template")
		b, _ = json.Marshal(cfg)
		os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), b, 0o644)
		os.WriteFile(filepath.Join(dir, side.name), []byte(side.body), 0o644)
		tk, err := LoadFile(dir)
		if err != nil {
			t.Fatal(err)
		}
		text, _, err := tk.ApplyChatTemplate([]Message{{Role: "user", Content: "Hi"}}, ChatOptions{})
		if err != nil || text != "[user] Hi\n</s>" {
			t.Errorf("%s: rendered %q, %v", side.name, text, err)
		}
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestSpecialTokensAdditional: additional_special_tokens (strings or
// AddedToken objects) reach the template as a list of strings, as
// special_tokens_map gives them.
func TestSpecialTokensAdditional(t *testing.T) {
	t.Parallel()
	src := "../testdata/arch/mistral/hf"
	dir := t.TempDir()
	for _, f := range []string{"tokenizer.model", "tokenizer_config.json", "config.json"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, f), b, 0o644)
	}
	os.WriteFile(filepath.Join(dir, "special_tokens_map.json"), []byte(`{"bos_token": "<s>", "eos_token": "</s>",
		"additional_special_tokens": ["<start_of_turn>", {"content": "<end_of_turn>", "special": true}]}`), 0o644)
	tk, err := LoadFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := RenderChat("{{ additional_special_tokens | join('|') }} {{ bos_token }}{{ eos_token }}", nil, tk.SpecialTokens(), ChatOptions{})
	if err != nil || got != "<start_of_turn>|<end_of_turn> <s></s>" {
		t.Errorf("rendered %q, %v", got, err)
	}
	plain, _ := LoadFile(src)
	if _, ok := plain.SpecialTokens()["additional_special_tokens"]; ok {
		t.Errorf("additional_special_tokens set without a list in the files: %v", plain.SpecialTokens())
	}
}

// TestChatRange: range() is Python's, and refuses more than jinja2's
// sandbox allows (MAX_RANGE), so a template from a model file cannot make
// us allocate without bound.
func TestChatRange(t *testing.T) {
	t.Parallel()
	for tpl, want := range map[string]string{
		"{% for i in range(3) %}{{ i }}{% endfor %}":          "012",
		"{% for i in range(5, 0, -2) %}{{ i }}{% endfor %}":   "531",
		"{% for i in range(2, 9, 3) %}{{ i }}{% endfor %}":    "258",
		"{% for i in range(4, 2) %}{{ i }}{% endfor %}.":      ".",
		"{{ range(100000) | length }}":                        "100000",
		"{% for i in range(-1, -4, -1) %}{{ i }}{% endfor %}": "-1-2-3",
	} {
		got, err := RenderChat(tpl, nil, nil, ChatOptions{})
		if err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", tpl, got, err, want)
		}
	}
	for _, tpl := range []string{"{{ range(100001) | length }}", "{{ range(0, 10000000000000, 1) | length }}", "{{ range(1, 2, 0) }}"} {
		if got, err := RenderChat(tpl, nil, nil, ChatOptions{}); err == nil {
			t.Errorf("%s: %q, want an error", tpl, got)
		}
	}
}
