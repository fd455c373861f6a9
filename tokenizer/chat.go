package tokenizer

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/tensor"
)

// GGUF keys of chat templates: the default template (formats/gguf owns its
// name), the named ones ("tokenizer.chat_template.<name>") and the list of
// those names.
const (
	keyChatTemplate  = gguf.KeyChatTemplate
	keyChatTemplates = "tokenizer.chat_templates"
)

// ChatTemplate is one Jinja chat template; Name is "" for the default
// (tokenizer_config.json's chat_template as a plain string, or the entry
// named "default" of its list form).
type ChatTemplate struct {
	Name     string `json:"name"`
	Template string `json:"template"`
}

// ChatTemplates returns the tokenizer's chat templates, the default first.
func (t *Tokenizer) ChatTemplates() []ChatTemplate { return append([]ChatTemplate(nil), t.chat...) }

// parseChatTemplate reads tokenizer_config.json's chat_template: a string,
// or a list of {"name", "template"} objects. gguf-py keeps only letters and
// digits in names (others become "_"), and "default" is the default.
func parseChatTemplate(raw json.RawMessage) []ChatTemplate {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []ChatTemplate{{Template: s}}
	}
	var list []struct {
		Name     string  `json:"name"`
		Template *string `json:"template"`
	}
	if json.Unmarshal(raw, &list) != nil {
		return nil // gguf-py ignores a chat_template of another type
	}
	var out []ChatTemplate
	for _, e := range list {
		name := sanitizeTemplateName(e.Name)
		if name == "" || e.Template == nil {
			continue
		}
		if name == "default" {
			name = ""
		}
		out = append(out, ChatTemplate{Name: name, Template: *e.Template})
	}
	sortTemplates(out)
	return out
}

func sanitizeTemplateName(name string) string {
	return strings.Map(func(r rune) rune {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return r
		}
		return '_'
	}, name)
}

// sortTemplates puts the default first and the named ones by name (gguf-py
// keeps their names in a set, so its order is not reproducible; ours is).
func sortTemplates(ts []ChatTemplate) {
	sort.SliceStable(ts, func(i, j int) bool {
		if (ts[i].Name == "") != (ts[j].Name == "") {
			return ts[i].Name == ""
		}
		return ts[i].Name < ts[j].Name
	})
}

// chatMetadata appends the templates as gguf-py's add_chat_template writes
// them: each named template under its key, the list of names, then the
// default.
func (t *Tokenizer) chatMetadata(md *tensor.Metadata) {
	var names []string
	for _, c := range t.chat {
		if c.Name != "" {
			md.Set(keyChatTemplate+"."+c.Name, tensor.String(c.Template))
			names = append(names, c.Name)
		}
	}
	if names != nil {
		md.Set(keyChatTemplates, tensor.ArrayOf(names))
	}
	for _, c := range t.chat {
		if c.Name == "" {
			md.Set(keyChatTemplate, tensor.String(c.Template))
		}
	}
}

// chatFromMetadata reads the templates back from GGUF metadata.
func chatFromMetadata(md tensor.Metadata) []ChatTemplate {
	var out []ChatTemplate
	for _, kv := range md {
		if name, ok := strings.CutPrefix(kv.Key, keyChatTemplate+"."); ok {
			if s, ok := kv.Value.Str(); ok {
				out = append(out, ChatTemplate{Name: name, Template: s})
			}
		}
	}
	if s, ok := md.Str(keyChatTemplate); ok {
		out = append(out, ChatTemplate{Template: s})
	}
	sortTemplates(out)
	return out
}

// chatConfigValue is tokenizer_config.json's chat_template for the
// templates: a plain string when there is only the default, else the list
// form with the default named "default".
func chatConfigValue(ts []ChatTemplate) any {
	if len(ts) == 1 && ts[0].Name == "" {
		return ts[0].Template
	}
	var list []map[string]string
	for _, c := range ts {
		name := c.Name
		if name == "" {
			name = "default"
		}
		list = append(list, map[string]string{"name": name, "template": c.Template})
	}
	return list
}
