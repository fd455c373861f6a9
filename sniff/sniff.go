// Package sniff decides a checkpoint file's format from its first bytes, the
// one place every command that opens a checkpoint (through checkpoint.Open)
// and check make that decision. Each format package owns its own magic
// (gguf.Sniff, native.Magic, pytorch.Sniff, imatrixdat.Sniff); this package
// only orders them, and says what a file that is no checkpoint is instead
// (NotCheckpoint): an HTML page saved under a model's name, a text file, an
// empty file, a JSON file, an importance matrix. It is the floor between the
// format packages, which never import each other, and checkpoint and check,
// which import it.
package sniff

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/formats/imatrixdat"
	"github.com/tfconv/tfconv/formats/native"
	"github.com/tfconv/tfconv/formats/pytorch"
	"github.com/tfconv/tfconv/tensor"
)

// HeadLen is how many leading bytes Format needs to decide: enough to tell
// text from binary and to find an index's "weight_map".
const HeadLen = 512

// Kind is a file format as Format decides it.
type Kind int

// The kinds Format returns. The ones from Empty on are not checkpoints:
// NotCheckpoint says what they are.
const (
	Safetensors      Kind = iota // a safetensors file (or binary bytes nothing else claims that could start one)
	GGUF                         // "GGUF", or the byte-swapped "FUGG"
	Native                       // tfconv's native format
	PyTorch                      // a torch.save file, zip or legacy
	SafetensorsIndex             // a JSON object: model.safetensors.index.json
	PyTorchIndex                 // a JSON object named *.bin.index.json
	Empty                        // a file of 0 bytes
	HTML                         // an HTML (or XML) page
	GitLFSPointer                // a Git LFS pointer file in place of the file it points to
	Text                         // other UTF-8 text
	JSON                         // JSON that is not a shard index
	ImatrixDat                   // llama.cpp's legacy importance matrix (imatrix.dat)
	Unknown                      // binary bytes that start no supported format
)

// Checkpoint reports whether files of kind k hold (or index) tensors.
func (k Kind) Checkpoint() bool { return k < Empty }

// Format returns the format of the file at path whose first bytes (up to
// HeadLen) are head. Only a JSON object goes by its name as well: one ending
// in .bin.index.json lists PyTorch shards, and one whose name does not end
// in index.json must show its "weight_map" within head to be an index.
func Format(head []byte, path string) Kind {
	switch {
	case len(head) == 0:
		return Empty
	case gguf.Sniff(head):
		return GGUF
	case bytes.HasPrefix(head, []byte(native.Magic)):
		return Native
	case pytorch.Sniff(head):
		return PyTorch
	case imatrixdat.Sniff(head):
		return ImatrixDat
	}
	text := bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")), " \t\r\n")
	switch {
	case bytes.HasPrefix(text, []byte("{")):
		switch {
		case strings.HasSuffix(path, ".bin.index.json"):
			return PyTorchIndex
		case strings.HasSuffix(path, "index.json"), bytes.Contains(head, []byte(`"weight_map"`)):
			return SafetensorsIndex
		}
		return JSON
	case isText(head) && bytes.HasPrefix(text, []byte("<")):
		return HTML
	case bytes.HasPrefix(head, []byte("version https://git-lfs.github.com/spec/")):
		return GitLFSPointer
	case isText(head) && bytes.HasPrefix(text, []byte("[")):
		return JSON
	case isText(head):
		return Text
	}
	// A safetensors file starts with its header length, at most 100 MB, so
	// bytes 4..7 are zero; the header's '{' follows. Binary bytes with
	// neither start something else.
	if len(head) >= 9 && binary.LittleEndian.Uint32(head[4:]) != 0 && head[8] != '{' {
		return Unknown
	}
	return Safetensors
}

// isText reports whether head reads as UTF-8 text: no NUL or other control
// bytes besides tab, newlines, form feed and escape, and valid UTF-8 (a
// sequence cut by the end of head allowed).
func isText(head []byte) bool {
	for i := 0; i < len(head); {
		c := head[i]
		if c < utf8.RuneSelf {
			if c < ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != 0x1b || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(head[i:])
		if r == utf8.RuneError && n <= 1 {
			return !utf8.FullRune(head[i:]) // cut at the end of head
		}
		i += n
	}
	return true
}

// hfSideFiles are the JSON files of a Hugging Face folder that hold no
// weights: given one of them, the user meant its folder.
var hfSideFiles = map[string]bool{"config.json": true, "generation_config.json": true, "tokenizer.json": true,
	"tokenizer_config.json": true, "special_tokens_map.json": true, "preprocessor_config.json": true}

// NotCheckpoint returns the error for a file of kind k, which is no
// checkpoint, naming path and saying what the file is instead; nil for a
// checkpoint kind. head is the file's first bytes, as Format had them. The
// error is a *tensor.FormatError (errors.Is(err, tensor.ErrFormat)).
func NotCheckpoint(k Kind, head []byte, path string) error {
	if k.Checkpoint() {
		return nil
	}
	what := "a checkpoint"
	switch strings.ToLower(filepath.Ext(path)) {
	case ".gguf":
		what = "a GGUF file"
	case ".safetensors":
		what = "a safetensors file"
	case ".bin", ".pt", ".pth":
		what = "a PyTorch checkpoint"
	case ".tfn":
		what = "a tfconv native file"
	}
	var msg string
	switch k {
	case Empty:
		msg = "empty file (0 bytes), not " + what + ": an interrupted download or copy?"
	case HTML:
		msg = fmt.Sprintf("not %s: it starts with %s, an HTML page — from the Hugging Face Hub, download the resolve/ URL (…/resolve/main/FILE), not the blob/ one, which is the web page showing the file", what, quoteStart(head))
	case GitLFSPointer:
		msg = fmt.Sprintf("not %s: a Git LFS pointer (%q…) in place of the file — run git lfs pull in the clone, or download the resolve/ URL", what, firstLine(head))
	case Text:
		msg = fmt.Sprintf("not %s: a text file (it starts with %s)", what, quoteStart(head))
	case JSON:
		msg = fmt.Sprintf("not %s: a JSON file (it starts with %s), not a shard index (no \"weight_map\")", what, quoteStart(head))
		if hfSideFiles[filepath.Base(path)] {
			msg += "; to open the model, give the folder that holds it"
		}
	case ImatrixDat:
		msg = "not " + what + ": an importance matrix in llama-imatrix's .dat format (use it with quantize --imatrix)"
	default:
		msg = fmt.Sprintf("not %s: it starts with the bytes % x, which start none of the formats tfconv reads (safetensors, GGUF, PyTorch, native)", what, head[:min(len(head), 8)])
	}
	return &tensor.FormatError{Format: "checkpoint", File: path, Offset: -1, Msg: msg}
}

// quoteStart quotes the first four characters of head, as a user would see
// them: '<!DO'.
func quoteStart(head []byte) string {
	s := strings.TrimPrefix(string(head), "\xef\xbb\xbf")
	n := 0
	for i := range s {
		if n == 4 {
			s = s[:i]
			break
		}
		n++
	}
	return "'" + strings.NewReplacer("\n", `\n`, "\r", `\r`, "\t", `\t`).Replace(s) + "'"
}

// firstLine is head up to its first newline.
func firstLine(head []byte) string {
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		head = head[:i]
	}
	return string(head)
}

// File decides the format of the regular file at path from its first bytes.
// For a file that is no checkpoint the error says what it is instead
// (NotCheckpoint).
func File(path string) (Kind, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	head := make([]byte, HeadLen)
	n, err := io.ReadFull(f, head)
	f.Close()
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return 0, fmt.Errorf("checkpoint: %s: %w", path, err)
	}
	k := Format(head[:n], path)
	return k, NotCheckpoint(k, head[:n], path)
}
