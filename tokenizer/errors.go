package tokenizer

import "github.com/tfconv/tfconv/tensor"

// fmtErr reports a defect in a tokenizer source. file is the path or source
// name ("" when unknown) and item the key or entry concerned.
func fmtErr(file, item, msg string) error {
	return &tensor.FormatError{Format: "tokenizer", File: file, Offset: -1, Item: item, Msg: msg}
}

// fmtErrAt is fmtErr with a byte offset.
func fmtErrAt(file string, off int64, item, msg string) error {
	return &tensor.FormatError{Format: "tokenizer", File: file, Offset: off, Item: item, Msg: msg}
}

// unsupportedErr reports a well-formed source that uses something this
// package does not implement (a pre-tokenizer, a model type).
func unsupportedErr(file, item, msg string) error {
	return &tensor.FormatError{Format: "tokenizer", File: file, Offset: -1, Item: item, Msg: msg, Unsupported: true}
}
