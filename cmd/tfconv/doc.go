// Command tfconv reads, converts, quantizes, inspects and verifies transformer
// checkpoints (safetensors, GGUF, PyTorch .bin and tfconv's native format).
//
// This package is the command line only: each command is an options
// struct, a newCmdX that binds its flags, and a runX that makes one call
// into the library (checkpoint, convert, quantize, model, verify, check, …)
// and prints the result as a table, plain columns or --json. The commands
// and their flags are documented in the repository's README.md; main is
// one line that exits with the code Main returns (0 success, 1 a check
// found a difference, 2 usage error or bad input).
package main
