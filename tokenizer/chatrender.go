package tokenizer

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ardanlabs/jinja"
)

// Message is one turn of a conversation, as apply_chat_template takes it.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ChatOptions controls RenderChat.
type ChatOptions struct {
	// AddGenerationPrompt ends the text with the header of an assistant
	// turn (apply_chat_template's add_generation_prompt).
	AddGenerationPrompt bool
	// Now is strftime_now's clock; nil is time.Now.
	Now func() time.Time
}

// ErrNoChatTemplate: the tokenizer carries no chat template.
var ErrNoChatTemplate = errors.New("tokenizer: the checkpoint has no chat template (chat_template in tokenizer_config.json, chat_template.jinja, tokenizer.chat_template in a GGUF)")

// RenderChat renders a Jinja chat template over messages as transformers'
// apply_chat_template(..., tokenize=False) does (v4.57,
// utils/chat_template_utils.py): jinja2's sandbox with trim_blocks and
// lstrip_blocks, the loopcontrols extension, raise_exception,
// strftime_now, tojson without ASCII escaping, and as variables messages,
// tools (None), documents (None), add_generation_prompt and the special
// tokens (bos_token, eos_token, …, as special_tokens_map gives them: only
// the ones that are set). The jinja package implements that environment;
// strftime_now is ours so that its clock can be set.
func RenderChat(template string, messages []Message, special map[string]any, opts ChatOptions) (string, error) {
	tpl, err := jinja.Compile(template)
	if err != nil {
		return "", fmt.Errorf("tokenizer: chat template: %w", err)
	}
	msgs := make([]jinja.Value, len(messages))
	for i, m := range messages {
		d := jinja.NewDict()
		d.AsDict().Set("role", jinja.NewString(m.Role))
		d.AsDict().Set("content", jinja.NewString(m.Content))
		msgs[i] = d
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	vars := map[string]jinja.Value{}
	for k, v := range special {
		vars[k] = jinja.FromGoValue(v)
	}
	vars["messages"] = jinja.NewList(msgs)
	vars["tools"] = jinja.None()
	vars["documents"] = jinja.None()
	vars["add_generation_prompt"] = jinja.NewBool(opts.AddGenerationPrompt)
	vars["strftime_now"] = jinja.NewCallable("strftime_now", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 || !args[0].IsString() {
			return jinja.Undefined(), errors.New("strftime_now takes one format string")
		}
		return jinja.NewString(strftime(now(), args[0].AsString())), nil
	})
	vars["range"] = jinja.NewCallable("range", sandboxRange)
	s, err := tpl.RenderValues(vars)
	if err != nil {
		return "", fmt.Errorf("tokenizer: chat template: %w", err)
	}
	return s, nil
}

// maxRange is jinja2's sandbox.MAX_RANGE: transformers renders in the
// sandbox, whose range() refuses more items, and a template read from a
// model file must not make us allocate without bound.
const maxRange = 100000

// sandboxRange is Python's range(stop) / range(start, stop[, step]) with
// the sandbox's limit on its length.
func sandboxRange(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	var n [3]int64
	for i, a := range args {
		if i == 3 || !a.IsInt() {
			return jinja.Undefined(), errors.New("range takes one to three integers")
		}
		n[i] = a.AsInt()
	}
	start, stop, step := int64(0), n[0], int64(1)
	switch len(args) {
	case 0:
		return jinja.Undefined(), errors.New("range takes one to three integers")
	case 2:
		start, stop = n[0], n[1]
	case 3:
		start, stop, step = n[0], n[1], n[2]
	}
	if step == 0 {
		return jinja.Undefined(), errors.New("range() arg 3 must not be zero")
	}
	var count int64
	switch {
	case step > 0 && stop > start:
		count = (stop - start + step - 1) / step
	case step < 0 && stop < start:
		count = (start - stop - step - 1) / -step
	}
	if count > maxRange || count < 0 {
		return jinja.Undefined(), fmt.Errorf("range too big: the sandbox blocks ranges larger than %d", maxRange)
	}
	items := make([]jinja.Value, count)
	for i := range items {
		items[i] = jinja.NewInt(start + int64(i)*step)
	}
	return jinja.NewList(items), nil
}

// strftime formats t as Python's datetime.strftime does in the C locale,
// for the directives chat templates use; other directives are kept as
// written, as glibc does with unknown ones.
func strftime(t time.Time, format string) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 == len(format) {
			b.WriteByte(c)
			continue
		}
		i++
		switch format[i] {
		case 'Y':
			b.WriteString(strconv.Itoa(t.Year()))
		case 'y':
			fmt.Fprintf(&b, "%02d", t.Year()%100)
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'e':
			fmt.Fprintf(&b, "%2d", t.Day())
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'I':
			fmt.Fprintf(&b, "%02d", (t.Hour()+11)%12+1)
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'p':
			b.WriteString(map[bool]string{false: "AM", true: "PM"}[t.Hour() >= 12])
		case 'B':
			b.WriteString(t.Month().String())
		case 'b', 'h':
			b.WriteString(t.Month().String()[:3])
		case 'A':
			b.WriteString(t.Weekday().String())
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		case 'w':
			b.WriteString(strconv.Itoa(int(t.Weekday())))
		case 'F':
			b.WriteString(t.Format("2006-01-02"))
		case 'T':
			b.WriteString(t.Format("15:04:05"))
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(format[i])
		}
	}
	return b.String()
}

// SpecialTokens returns the special tokens the way transformers'
// special_tokens_map hands them to a chat template: the text of each one
// the tokenizer has (bos_token, eos_token, unk_token, sep_token,
// pad_token, cls_token, mask_token), absent ones left out, and
// additional_special_tokens, the list of strings an HF source names (a GGUF
// does not record it).
func (t *Tokenizer) SpecialTokens() map[string]any {
	out := map[string]any{}
	for _, sk := range specialKinds {
		id := *t.specialID(sk.kind)
		if id < 0 || id >= len(t.tokens) {
			continue
		}
		if text := t.tokenText(id); text != "" {
			out[sk.kind+"_token"] = text
		}
	}
	if len(t.additional) > 0 {
		list := make([]any, len(t.additional))
		for i, s := range t.additional {
			list[i] = s
		}
		out["additional_special_tokens"] = list
	}
	return out
}

// tokenText is the text a token stands for: special and user-defined
// tokens as written, others decoded.
func (t *Tokenizer) tokenText(id int) string {
	switch t.types[id] {
	case TypeControl, TypeUserDefined, TypeUnknown:
		return t.tokens[id]
	}
	if t.model == BPE {
		return byteDecode(t.tokens[id])
	}
	return strings.ReplaceAll(t.tokens[id], "▁", " ")
}

// ApplyChatTemplate renders the tokenizer's default chat template over
// messages (RenderChat, with the tokenizer's special tokens) and encodes
// the text as apply_chat_template(tokenize=True) does: special tokens in
// the text are parsed, and none is added (add_special_tokens=False; the
// template writes BOS itself when the model wants one).
func (t *Tokenizer) ApplyChatTemplate(messages []Message, opts ChatOptions) (string, []int, error) {
	if len(t.chat) == 0 {
		return "", nil, ErrNoChatTemplate
	}
	if t.chat[0].Name != "" {
		var names []string
		for _, c := range t.chat {
			names = append(names, c.Name)
		}
		// transformers' get_chat_template refuses this too.
		return "", nil, fmt.Errorf("tokenizer: the checkpoint's chat templates (%s) include no default one", strings.Join(names, ", "))
	}
	text, err := RenderChat(t.chat[0].Template, messages, t.SpecialTokens(), opts)
	if err != nil {
		return "", nil, err
	}
	ids, err := t.Encode(text, EncodeOptions{ParseSpecial: true})
	if err != nil {
		return "", nil, err
	}
	return text, ids, nil
}
