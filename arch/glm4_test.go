package arch

import (
	"errors"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// TestSpecialTokensByText: GLM-4's converter takes eot from the added token
// <|user|> (and eos, unk, bos from <|endoftext|>) only for the kinds the
// tokenizer files leave unset, and adds them after the tokenizer's own ids;
// a tokenizer without the token is refused naming it.
func TestSpecialTokensByText(t *testing.T) {
	tokens := tensor.ArrayOf([]string{"a", "b", "<|endoftext|>", "<|user|>"})
	md := tensor.Metadata{
		{Key: "tokenizer.ggml.tokens", Value: tokens},
		{Key: "tokenizer.ggml.bos_token_id", Value: tensor.Uint32(0)},
		{Key: "tokenizer.ggml.eos_token_id", Value: tensor.Uint32(2)},
		{Key: "tokenizer.ggml.add_bos_token", Value: tensor.Bool(false)},
	}
	out, err := Glm4.Vocab.Apply(md, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range out {
		keys = append(keys, strings.TrimPrefix(kv.Key, "tokenizer.ggml."))
	}
	want := "tokens bos_token_id eos_token_id eot_token_id unknown_token_id add_bos_token"
	if got := strings.Join(keys, " "); got != want {
		t.Errorf("keys %s, want %s", got, want)
	}
	for key, id := range map[string]int64{"bos": 0, "eos": 2, "eot": 3, "unknown": 2} {
		if v, _ := out.Int("tokenizer.ggml." + key + "_token_id"); v != id {
			t.Errorf("%s = %d, want %d", key, v, id)
		}
	}

	md[0].Value = tensor.ArrayOf([]string{"a", "b", "<|endoftext|>"})
	_, err = Glm4.Vocab.Apply(md, nil, nil)
	if !errors.Is(err, tensor.ErrUnsupported) || !strings.Contains(err.Error(), "<|user|>") {
		t.Errorf("err = %v, want a refusal naming <|user|>", err)
	}
}
