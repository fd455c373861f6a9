package eval

import (
	"fmt"

	"github.com/tfconv/tfconv/tokenizer"
)

// TextTokens tokenizes a text to be scored as llama-perplexity does (special
// tokens added as the tokenizer's configuration says) and returns the ids
// and the BOS id each chunk starts with, or -1 when the tokenizer adds none.
// name (the model's path) is for the error when there is no tokenizer.
func TextTokens(tok *tokenizer.Tokenizer, name, text string) ([]int, int, error) {
	if tok == nil {
		return nil, -1, fmt.Errorf("eval: %s carries no tokenizer, needed for a text", name)
	}
	ids, err := tok.Encode(text, tokenizer.EncodeOptions{AddSpecial: true})
	if err != nil {
		return nil, -1, err
	}
	bos := -1
	if tok.AddBOS && tok.BOS >= 0 {
		bos = tok.BOS
	}
	return ids, bos, nil
}
