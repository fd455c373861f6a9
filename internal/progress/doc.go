// Package progress is the one progress line every tfconv command prints on
// stderr: a label, done/total, the percentage, a rate and the time left
// (ETA), rewritten in place at most every Every, and ended with a newline
// by Finish or by the next message written to the same Line.
package progress
