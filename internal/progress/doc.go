// Package progress is the one progress line every tfconv command prints on
// stderr: a label, done/total, the percentage and a rate, rewritten in
// place at most every Every, and ended with a newline by Finish.
package progress
