// Package openfile opens a named file for the readers built, as the
// standard library's are, on NewFile(r io.ReaderAt, size int64): it hands
// the parser the file and its size, closes the file again when parsing
// fails, and otherwise leaves it open for the reader's Close. Every format
// package's Open goes through it, so that rule is written once.
package openfile
