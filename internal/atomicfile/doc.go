// Package atomicfile creates outputs that appear whole or not at all: data
// goes to a temporary file (or folder, for outputs that are folders) in the
// destination's folder, which is synced and renamed over the destination
// only on Commit. It also refuses to write over an input (compared by file
// identity, so symlinks and hard links are caught) or over an existing file
// unless forced. An existing destination folder is never removed: a forced
// Dir replaces only the files it holds (and the stale ones SetStale names),
// and keeps every other file there.
//
// Every temporary is named after its destination and the process writing
// it: ".<dst>.tmp-<pid>-<random>". A signal handler removes the pending
// ones (RemoveTemps); those a killed process left are found by the next
// Create for the same destination (see sweepStale).
package atomicfile
