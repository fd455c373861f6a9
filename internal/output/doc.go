// Package output prints command results the way every tfconv command does:
// boxed tables when stdout is a terminal, plain tab-separated columns when it
// is piped (so that cut/awk/grep work), and indented JSON for --json.
package output
