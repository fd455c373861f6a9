// Command tfconv reads, converts, quantizes, inspects and verifies transformer
// checkpoints (safetensors, GGUF and tfconv's native format).
package main

import "os"

func main() { os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr)) }
