package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/tfconv/tfconv/formats/gguf"
)

// TestChatTemplateRoundTrip: a chat template in tokenizer_config.json —
// a plain string (the qwen2 fixture's) or the list of named templates —
// becomes tokenizer.chat_template[.NAME] in the GGUF and comes back in the
// Hugging Face output byte for byte. (llama.cpp c392e509 applies the
// converted qwen2 template: testdata/arch/tools/chat_apply.cpp prints
// "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\n…".)
func TestChatTemplateRoundTrip(t *testing.T) {
	src := "../../testdata/arch/qwen2/hf"
	named := t.TempDir()
	entries, _ := os.ReadDir(src)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(src, e.Name()))
		os.WriteFile(filepath.Join(named, e.Name()), b, 0o644)
	}
	var tc map[string]any
	b, _ := os.ReadFile(filepath.Join(src, "tokenizer_config.json"))
	json.Unmarshal(b, &tc)
	plain := tc["chat_template"].(string)
	tc["chat_template"] = []any{
		map[string]any{"name": "default", "template": plain},
		map[string]any{"name": "tool_use", "template": "{{ tools }}\n" + plain},
	}
	b, _ = json.MarshalIndent(tc, "", "  ")
	os.WriteFile(filepath.Join(named, "tokenizer_config.json"), b, 0o644)

	for _, c := range []struct {
		name, dir string
		want      any
		keys      map[string]string
	}{
		{"string", src, plain, map[string]string{gguf.KeyChatTemplate: plain}},
		{"named", named, tc["chat_template"], map[string]string{gguf.KeyChatTemplate: plain, gguf.KeyChatTemplate + ".tool_use": "{{ tools }}\n" + plain}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			g := filepath.Join(dir, "m.gguf")
			if code, _, stderr := run(t, "convert", c.dir, g, "--outtype", "f32"); code != 0 {
				t.Fatalf("to GGUF: %s", stderr)
			}
			f, err := gguf.Open(g)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range c.keys {
				if got, _ := f.Metadata.Str(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			f.Close()
			back := filepath.Join(dir, "hf")
			if code, _, stderr := run(t, "convert", g, back, "--to", "safetensors"); code != 0 {
				t.Fatalf("to HF: %s", stderr)
			}
			var out map[string]any
			b, err := os.ReadFile(filepath.Join(back, "tokenizer_config.json"))
			if err != nil || json.Unmarshal(b, &out) != nil {
				t.Fatalf("tokenizer_config.json: %v", err)
			}
			w, _ := json.Marshal(c.want)
			g2, _ := json.Marshal(out["chat_template"])
			if string(w) != string(g2) {
				t.Errorf("chat_template after HF → GGUF → HF:\n%s\nwant\n%s", g2, w)
			}
		})
	}
}
