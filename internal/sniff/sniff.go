// Package sniff decides a checkpoint file's format from its first bytes, the
// one place both checkpoint.Open and check make that decision. Each format
// package owns its own magic (gguf.Sniff, native.Magic, pytorch.Sniff); this
// package only orders them.
package sniff

import (
	"bytes"
	"strings"

	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/formats/native"
	"github.com/tfconv/tfconv/formats/pytorch"
)

// HeadLen is how many leading bytes Format needs to decide.
const HeadLen = 16

// Kind is a file format as Format decides it.
type Kind int

// The kinds Format returns.
const (
	Safetensors      Kind = iota // anything else: a safetensors file
	GGUF                         // "GGUF", or the byte-swapped "FUGG"
	Native                       // tfconv's native format
	PyTorch                      // a torch.save file, zip or legacy
	SafetensorsIndex             // a JSON object: model.safetensors.index.json
	PyTorchIndex                 // a JSON object named *.bin.index.json
)

// Format returns the format of the file at path whose first bytes (up to
// HeadLen) are head. Only a JSON index goes by its name as well: one ending
// in .bin.index.json lists PyTorch shards.
func Format(head []byte, path string) Kind {
	switch {
	case gguf.Sniff(head):
		return GGUF
	case bytes.HasPrefix(head, []byte(native.Magic)):
		return Native
	case pytorch.Sniff(head):
		return PyTorch
	case bytes.HasPrefix(bytes.TrimLeft(head, " \t\r\n"), []byte("{")):
		if strings.HasSuffix(path, ".bin.index.json") {
			return PyTorchIndex
		}
		return SafetensorsIndex
	}
	return Safetensors
}
