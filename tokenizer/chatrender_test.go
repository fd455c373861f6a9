package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
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
