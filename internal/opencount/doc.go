// Package opencount counts, per path, how many times checkpoint.Open has
// opened a checkpoint in this process. It exists so that a test can hold a
// pipeline to opening each input once (verify loads a model and keeps what
// it read rather than reopening the file to ask again); nothing else reads
// it, and it counts only once a test calls Start.
package opencount
