// Package httprange reads a file over HTTP with range requests, as an
// io.ReaderAt: blocks fetched on demand, retried with backoff, and kept; and
// the Hugging Face Hub's addressing (hf://ORG/REPO[@REV][/FILE],
// HF_ENDPOINT, HF_TOKEN sent only to the Hub). checkpoint and check both
// read remote files through it.
package httprange
