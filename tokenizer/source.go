package tokenizer

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/tensor"
)

// Source is anything that holds a tokenizer: a GGUF file's metadata, an HF
// directory's side files, a native checkpoint. The tokenizer does not care
// which container it came from.
type Source interface {
	// Metadata returns GGUF-style metadata; it may be empty.
	Metadata() tensor.Metadata
	// ReadAux returns an HF side file by base name ("tokenizer.json",
	// "tokenizer.model", "vocab.json", "merges.txt", "vocab.txt",
	// "tokenizer_config.json", "special_tokens_map.json", "config.json"),
	// or an error matching fs.ErrNotExist when there is none.
	ReadAux(name string) ([]byte, error)
}

// FromSource builds the tokenizer of src: from its tokenizer.ggml.*
// metadata when it has them, else from its HF files.
func FromSource(src Source) (*Tokenizer, error) {
	if md := src.Metadata(); HasMetadata(md) {
		return FromMetadata(md, "")
	}
	return fromHF(src)
}

// tokenizerFiles are the files that hold a vocabulary (as opposed to
// configuration).
var tokenizerFiles = []string{"tokenizer.json", "tokenizer.model", tiktokenFile, hunyuanFile, rwkvVocabFile, "vocab.json", "merges.txt", "vocab.txt"}

// dirSource reads HF files from a directory. When main is set, it is the
// one vocabulary file to use (read from mainPath) and the other vocabulary
// files of the directory are ignored.
type dirSource struct {
	dir            string
	main, mainPath string
}

func (d dirSource) Metadata() tensor.Metadata { return nil }

func (d dirSource) ReadAux(name string) ([]byte, error) {
	path := filepath.Join(d.dir, name)
	if d.main != "" {
		isVocab := false
		for _, f := range tokenizerFiles {
			isVocab = isVocab || f == name
		}
		switch {
		case name == d.main:
			path = d.mainPath
		case name == "merges.txt" && d.main == "vocab.json":
		case isVocab:
			return nil, fs.ErrNotExist
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fs.ErrNotExist
	}
	if st.Size() > maxTokenizerFile {
		return nil, fmtErr(path, "", fmt.Sprintf("%d bytes is more than the limit %d", st.Size(), maxTokenizerFile))
	}
	return io.ReadAll(io.LimitReader(f, maxTokenizerFile+1))
}

// LoadFile loads a tokenizer from a path: a GGUF file, an HF model
// directory, or one tokenizer file (tokenizer.json, tokenizer.model,
// Kimi's tiktoken.model, Hunyuan's hy.tiktoken, vocab.txt, or vocab.json with merges.txt beside it), whose directory also
// supplies tokenizer_config.json, special_tokens_map.json and config.json.
func LoadFile(path string) (*Tokenizer, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	if st.IsDir() {
		t, err := fromHF(dirSource{dir: path})
		return t, wrapPath(path, err)
	}
	base := filepath.Base(path)
	ext := strings.ToLower(filepath.Ext(base))
	if ext == ".gguf" {
		f, err := gguf.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return FromMetadata(f.Metadata, path)
	}
	main := ""
	switch {
	case base == "merges.txt":
		main = "vocab.json"
		path = filepath.Join(filepath.Dir(path), "vocab.json")
	case base == "vocab.json", base == "vocab.txt", base == "tokenizer.json", base == "tokenizer.model", base == tiktokenFile, base == hunyuanFile, base == rwkvVocabFile:
		main = base
	case ext == ".model":
		main = "tokenizer.model"
	case ext == ".json":
		main = "tokenizer.json"
	case ext == ".txt":
		main = "vocab.txt"
	default:
		return nil, fmt.Errorf("tokenizer: %s: not a tokenizer file (want .gguf, tokenizer.json, tokenizer.model, vocab.json, vocab.txt or an HF directory)", path)
	}
	t, err := fromHF(dirSource{dir: filepath.Dir(path), main: main, mainPath: path})
	return t, wrapPath(path, err)
}

// wrapPath puts the path into a FormatError that only knew the base name.
func wrapPath(path string, err error) error {
	if errors.Is(err, errNoTokenizer) {
		return fmt.Errorf("tokenizer: %s: %w", path, errNoTokenizer)
	}
	var fe *tensor.FormatError
	if errors.As(err, &fe) {
		dir := path
		if st, serr := os.Stat(path); serr == nil && !st.IsDir() {
			dir = filepath.Dir(path)
		}
		if fe.File != "" && !filepath.IsAbs(fe.File) && !strings.ContainsRune(fe.File, filepath.Separator) {
			fe.File = filepath.Join(dir, fe.File)
		}
	}
	return err
}
