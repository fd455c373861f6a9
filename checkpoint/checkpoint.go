package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/tfconv/tfconv/internal/pyjson"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/formats/native"
	"github.com/tfconv/tfconv/formats/pytorch"
	"github.com/tfconv/tfconv/formats/safetensors"
	"github.com/tfconv/tfconv/internal/opencount"
	"github.com/tfconv/tfconv/sniff"
	"github.com/tfconv/tfconv/tensor"
)

// Format names a container format.
type Format string

// The formats tfconv reads.
const (
	Safetensors Format = "safetensors"
	GGUF        Format = "gguf"
	Native      Format = "native"
	// PyTorch is a torch.save checkpoint (pytorch_model.bin), read without
	// executing its pickle.
	PyTorch Format = "pytorch"
)

// HuggingFace reports whether the checkpoint's tensors carry Hugging Face
// names and layouts: a safetensors or PyTorch checkpoint, or a native file
// made from one.
func (c *Checkpoint) HuggingFace() bool {
	return c.Source == Safetensors || c.Source == PyTorch
}

// MaxAuxSize caps the side files (config.json, tokenizer files) read into
// memory; the largest real tokenizer.json files are around 30 MB.
const MaxAuxSize = 256 << 20

// SideFiles are the Hugging Face files kept beside the weights that tfconv
// carries along: model config and every tokenizer source it understands.
var SideFiles = []string{
	"config.json",
	"generation_config.json",
	"tokenizer.json",
	"tokenizer_config.json",
	"special_tokens_map.json",
	"added_tokens.json",
	"tokenizer.model",
	"tiktoken.model",
	"hy.tiktoken",
	"vocab.json",
	"merges.txt",
	"vocab.txt",
}

// File is one file of a checkpoint.
type File struct {
	Path string
	Size int64
}

// Checkpoint is an opened checkpoint.
type Checkpoint struct {
	Path   string // as given to Open
	Format Format
	// Source is the format the data originally came from: for a native file
	// the format it was converted from (may be ""), otherwise Format.
	Source   Format
	Files    []File          // data files in order (shards, splits)
	Metadata tensor.Metadata // GGUF KVs, safetensors __metadata__, native metadata
	// SourceInfo holds container facts that are not metadata, keyed as the
	// native format keys them ("gguf.version").
	SourceInfo tensor.Metadata
	Tensors    []*Tensor // stable order: file order, shard by shard
	// LoRAConfig is set when the checkpoint is a PEFT LoRA adapter (a
	// directory with adapter_config.json); Tensors are then the adapter's
	// lora_A/lora_B factors, paired by LoRA.
	LoRAConfig *LoRAConfig
	// HubRepo and HubCommit are set for a checkpoint read from the Hugging
	// Face Hub: the repository's URL (ENDPOINT/ORG/REPO) and the commit
	// every file was read at (the revision asked for, resolved once when
	// the first file was opened).
	HubRepo, HubCommit string
	// Lints are what a GGUF reader accepted but ggml refuses or never
	// writes (a tensor with a 0 dimension, an array of arrays), every
	// shard's in order; check.GGUFLint words them as check does.
	Lints []*gguf.Problem

	dir string                     // HF directory holding side files, or ""
	aux map[string]*native.AuxFile // side files embedded in a native file
	// auxOverride replaces side files whose content the checkpoint changes
	// as it presents them (a GPTQ/AWQ config.json without its
	// quantization_config: unpackQuantized).
	auxOverride map[string][]byte
	byName      map[string]*Tensor
	closers     []io.Closer
	remote      *remote   // set when read over HTTP: the file given (side files are read beside it)
	remotes     []*remote // every file read over HTTP (shards), remote first
	// remoteSides: side files are read beside the remote file (a
	// safetensors file's folder holds config.json and the tokenizer).
	remoteSides bool
	srcCheck    *SourceCheck // the check the tensors report to (CheckSources)
}

// Tensor is one tensor of a checkpoint.
type Tensor struct {
	tensor.Info
	File  string          // path of the file that holds the data
	Attrs tensor.Metadata // per-tensor attributes (native files only)
	// NVFP4, on the float32 weight of an NVFP4 layer (compressed-tensors,
	// ModelOpt), is the layer as stored, for a block pass-through.
	NVFP4 *NVFP4Layer
	// MXFP4, on the weight of an MLX mxfp4 layer, is the layer as stored,
	// for a block pass-through (MXFP4Blocks).
	MXFP4 *MXFP4Layer
	// ExactQ4, on the weight of a 4-bit integer layer with groups of 32
	// along its rows and no act-order, is the GGUF type whose blocks can
	// hold its values exactly (quant.EncodeExact checks each block):
	// Q4_0 for a symmetric layer (compressed-tensors' pack-quantized
	// W4A16, GPTQ with sym), q·s with q in [−8, 7], wherever s is an f16
	// value; Q4_1 for one with zero points (AWQ, asymmetric GPTQ),
	// (q − z)·s, wherever s and −z·s are. tensor.Invalid: neither.
	ExactQ4 tensor.DType
	// Exact, when set, is the same weight as float32 values without
	// rounding, where the tensor itself presents them rounded to the
	// scales' type as the quantizer's own code computes them (GPTQ and
	// AWQ in float16): what an exact pass-through encodes.
	Exact *Tensor

	open    func() io.Reader
	section func() *io.SectionReader
	inFile  bool // the bytes are File's, at Info.Offset, as stored
}

// MemTensor is a tensor held in memory rather than in a file: one a
// conversion computes (Llama 3's rope_freqs) and then reads like any other.
func MemTensor(info tensor.Info, data []byte) *Tensor {
	info.Size = int64(len(data))
	return &Tensor{Info: info, File: "(generated)",
		open:    func() io.Reader { return bytes.NewReader(data) },
		section: func() *io.SectionReader { return io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data))) }}
}

// LazyTensor is a tensor whose bytes are computed when it is opened (a
// merged LoRA weight, a dequantized GPTQ/AWQ/FP8 weight, a converted
// tensor): compute runs once per Open and must return info.Size bytes.
// Memory: one tensor while it is read.
func LazyTensor(info tensor.Info, file string, compute func() ([]byte, error)) *Tensor {
	run := func() ([]byte, error) {
		b, err := compute()
		if err == nil && int64(len(b)) != info.Size {
			err = fmt.Errorf("checkpoint: tensor %q: computed %d bytes, want %d", info.Name, len(b), info.Size)
		}
		return b, err
	}
	return &Tensor{Info: info, File: file,
		open: func() io.Reader { return &lazyReader{open: func() io.Reader { return computedReader(run) }} },
		section: func() *io.SectionReader {
			b, err := run()
			if err != nil {
				return io.NewSectionReader(errReader{err}, 0, info.Size)
			}
			return io.NewSectionReader(bytes.NewReader(b), 0, int64(len(b)))
		}}
}

// StreamTensor is a tensor whose bytes are produced as they are read: each
// Open calls open for a fresh reader of exactly info.Size bytes (a
// conversion that streams, convert.Source). Section, for random access,
// reads the whole tensor into memory first.
func StreamTensor(info tensor.Info, file string, open func() io.Reader) *Tensor {
	readAll := func() ([]byte, error) {
		b := make([]byte, info.Size)
		if _, err := io.ReadFull(open(), b); err != nil {
			return nil, fmt.Errorf("checkpoint: tensor %q: %w", info.Name, err)
		}
		return b, nil
	}
	return &Tensor{Info: info, File: file,
		open: func() io.Reader { return &lazyReader{open: open} },
		section: func() *io.SectionReader {
			b, err := readAll()
			if err != nil {
				return io.NewSectionReader(errReader{err}, 0, info.Size)
			}
			return io.NewSectionReader(bytes.NewReader(b), 0, int64(len(b)))
		}}
}

func computedReader(run func() ([]byte, error)) io.Reader {
	b, err := run()
	if err != nil {
		return errReader{err}
	}
	return bytes.NewReader(b)
}

// errReader fails every read with err.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error)          { return 0, e.err }
func (e errReader) ReadAt([]byte, int64) (int, error) { return 0, e.err }

// Open returns a reader over the tensor's bytes. For formats with checksums
// (native) the reader verifies them and fails at the end on a mismatch.
func (t *Tensor) Open() io.Reader { return t.open() }

// Section returns the raw bytes without verification, for random access.
func (t *Tensor) Section() *io.SectionReader { return t.section() }

// Extent reports where t's bytes are stored: File, from byte off, t.Size
// bytes, when t is read straight from a local file (ok is false for a
// computed, in-memory or remote tensor).
func (t *Tensor) Extent() (file string, off int64, ok bool) {
	return t.File, t.Offset, t.inFile
}

// ReadAll reads the whole tensor (verified where the format allows).
func (t *Tensor) ReadAll() ([]byte, error) {
	b := make([]byte, t.Size)
	if _, err := io.ReadFull(t.Open(), b); err != nil {
		return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	return b, nil
}

// Tensor returns the tensor with the given name.
func (c *Checkpoint) Tensor(name string) (*Tensor, bool) {
	t, ok := c.byName[name]
	return t, ok
}

// Size is the total size in bytes of the checkpoint's data files.
func (c *Checkpoint) Size() int64 {
	var n int64
	for _, f := range c.Files {
		n += f.Size
	}
	return n
}

// Close closes every file the checkpoint opened.
func (c *Checkpoint) Close() error {
	var first error
	for _, cl := range c.closers {
		if err := cl.Close(); err != nil && first == nil {
			first = err
		}
	}
	c.closers = nil
	return first
}

// Sides is a checkpoint seen as its metadata and side files: what a
// tokenizer is read from (it satisfies tokenizer.Source).
type Sides struct{ c *Checkpoint }

// Sides returns c's metadata and side files.
func (c *Checkpoint) Sides() Sides { return Sides{c} }

// Metadata returns the checkpoint's metadata.
func (s Sides) Metadata() tensor.Metadata { return s.c.Metadata }

// ReadAux reads a side file (Checkpoint.ReadAux).
func (s Sides) ReadAux(name string) ([]byte, error) { return s.c.ReadAux(name) }

// ReadAux returns a Hugging Face side file ("config.json", "tokenizer.model",
// ...) by base name: from the checkpoint's directory, or embedded in a native
// file. It returns an error matching fs.ErrNotExist when there is none.
func (c *Checkpoint) ReadAux(name string) ([]byte, error) {
	if name == "" || name != filepath.Base(name) || name == "." || name == ".." {
		return nil, fmt.Errorf("checkpoint: %q is not a side file name", name)
	}
	if b, ok := c.auxOverride[name]; ok {
		return bytes.Clone(b), nil
	}
	if a, ok := c.aux[name]; ok {
		return a.ReadAll()
	}
	if c.remote != nil && c.remoteSides {
		return c.remote.Sibling(name)
	}
	if c.dir == "" {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	p := filepath.Join(c.dir, name)
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("checkpoint: %s is not a regular file", p)
	}
	if st.Size() > MaxAuxSize {
		return nil, fmt.Errorf("checkpoint: %s is %d bytes, above the %d-byte limit for side files", p, st.Size(), MaxAuxSize)
	}
	return os.ReadFile(p)
}

// AuxNames lists the side files the checkpoint has, in SideFiles order
// followed by any other embedded names.
func (c *Checkpoint) AuxNames() []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range SideFiles {
		_, over := c.auxOverride[n]
		if _, ok := c.aux[n]; ok || over {
			out = append(out, n)
			seen[n] = true
			continue
		}
		if c.remote != nil && c.remoteSides {
			if _, err := c.remote.Sibling(n); err == nil {
				out = append(out, n)
				seen[n] = true
			}
			continue
		}
		if c.dir != "" {
			if st, err := os.Stat(filepath.Join(c.dir, n)); err == nil && st.Mode().IsRegular() {
				out = append(out, n)
				seen[n] = true
			}
		}
	}
	for n := range c.aux {
		if !seen[n] {
			out = append(out, n)
		}
	}
	return out
}

// Config returns the parsed config.json, or nil when the checkpoint has none.
// A text model nested beside another (text_config) is read over the top
// level (textModelConfig); RawConfig is the file as written.
func (c *Checkpoint) Config() (map[string]any, error) {
	m, err := c.RawConfig()
	if m == nil || err != nil {
		return nil, err
	}
	return textModelConfig(m), nil
}

// ProcessorConfig returns preprocessor_config.json with
// processor_config.json's entries over it (each file's nested
// media_proc_cfg or image_processor object's entries over its own), as
// llama.cpp's converter merges them for a projector; empty when neither
// file exists.
func (c *Checkpoint) ProcessorConfig() (map[string]any, error) {
	out := map[string]any{}
	for _, f := range []struct{ name, nested string }{{"preprocessor_config.json", "media_proc_cfg"}, {"processor_config.json", "image_processor"}} {
		b, err := c.ReadAux(f.name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var m map[string]any
		d := json.NewDecoder(bytes.NewReader(pyjson.Standard(b)))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			return nil, fmt.Errorf("checkpoint: %s: %w", f.name, err)
		}
		for k, v := range m {
			out[k] = v
		}
		if n, ok := m[f.nested].(map[string]any); ok {
			for k, v := range n {
				out[k] = v
			}
		}
	}
	return out, nil
}

// RawConfig returns config.json as written, or nil when there is none.
func (c *Checkpoint) RawConfig() (map[string]any, error) {
	b, err := c.ReadAux("config.json")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m map[string]any
	// transformers writes Python's Infinity (Mamba-2's time_step_limit).
	d := json.NewDecoder(bytes.NewReader(pyjson.Standard(b)))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("checkpoint: config.json: %w", err)
	}
	return m, nil
}

// textModelConfig reads the config.json of a model with a text model
// nested beside another (Llama4ForConditionalGeneration, Mistral 3: its
// text_config object) as the text model's, the way llama.cpp's converter
// reads it: text_config's entries over the top level's. architectures
// stays the top level's (the class of the checkpoint). The original
// InternVL layout's llm_config is its text_config (the converter renames
// it so).
func textModelConfig(m map[string]any) map[string]any {
	tc, ok := m["text_config"].(map[string]any)
	if !ok {
		tc, ok = m["llm_config"].(map[string]any)
	}
	if !ok {
		return m
	}
	out := make(map[string]any, len(m)+len(tc))
	for k, v := range m {
		out[k] = v
	}
	for k, v := range tc {
		if k != "architectures" {
			out[k] = v
		}
	}
	return out
}

// Open opens the checkpoint at path: a directory (Hugging Face layout, or a
// PEFT LoRA adapter: adapter_config.json with adapter_model.safetensors or
// .bin, LoRAConfig set), a
// model.safetensors.index.json or pytorch_model.bin.index.json, a
// .safetensors file, a PyTorch .bin file (zip or legacy), a GGUF file (any
// shard of a split set opens the whole set) or a native file. The format is
// decided from the file's first bytes, not its name; only an index file (a
// JSON object) goes by its name: one ending in .bin.index.json lists PyTorch
// shards. A file that is no checkpoint (empty, an HTML page, text, JSON, an
// imatrix) is refused with an error saying what it is (sniff.NotCheckpoint).
func Open(path string) (*Checkpoint, error) {
	opencount.Note(path)
	if IsRemote(path) {
		return openRemote(path)
	}
	c, err := openLocal(path)
	if err != nil {
		return nil, explain(err)
	}
	return c, nil
}

// explain turns a format error about a file that is no checkpoint at all
// (a folder's model.safetensors or an index's shard that is an HTML page,
// empty, text) into what internal/sniff says the file is.
func explain(err error) error {
	var fe *tensor.FormatError
	if !errors.As(err, &fe) || fe.File == "" {
		return err
	}
	if k, serr := sniff.File(fe.File); serr != nil && !k.Checkpoint() {
		return serr
	}
	return err
}

func openLocal(path string) (*Checkpoint, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return openDir(path)
	}
	if filepath.Base(path) == LoRAConfigName {
		return openLoRA(filepath.Dir(path))
	}
	kind, err := sniff.File(path)
	if err != nil {
		return nil, err
	}
	switch kind {
	case sniff.GGUF:
		return openGGUF(path)
	case sniff.Native:
		return openNative(path)
	case sniff.PyTorch:
		return openPyTorch(path, "")
	case sniff.PyTorchIndex:
		return openPyTorch(path, filepath.Dir(path))
	case sniff.SafetensorsIndex:
		return openSafetensors(path, filepath.Dir(path))
	default:
		return openSafetensors(path, "")
	}
}

func openDir(dir string) (*Checkpoint, error) {
	c, err := openSafetensors(dir, dir)
	if err == nil {
		return c, nil
	}
	if errors.Is(err, fs.ErrNotExist) && isLoRADir(dir) {
		return openLoRA(dir)
	}
	if errors.Is(err, fs.ErrNotExist) {
		// Without safetensors weights, transformers loads the pickle ones.
		for _, name := range []string{pytorch.SingleName, pytorch.IndexName} {
			if _, e := os.Stat(filepath.Join(dir, name)); e == nil {
				return openPyTorch(filepath.Join(dir, name), dir)
			}
		}
		// Say what we did find, for the common mistakes.
		matches, _ := filepath.Glob(filepath.Join(dir, "*.gguf"))
		if len(matches) > 0 {
			return nil, fmt.Errorf("checkpoint: %s has no safetensors or PyTorch weights; it holds GGUF files (open one of them, e.g. %s)", dir, matches[0])
		}
		return nil, fmt.Errorf("checkpoint: %s has no model.safetensors, model.safetensors.index.json, %s or %s: %w",
			dir, pytorch.SingleName, pytorch.IndexName, err)
	}
	return nil, err
}

// OpenStored is Open, except that a safetensors checkpoint's tensors are
// listed as stored: quantized layers (GPTQ, AWQ, FP8 with scales, MLX) are
// not presented dequantized, and config.json keeps its quantization. A
// writer re-reads its output this way, byte for byte.
func OpenStored(path string) (*Checkpoint, error) {
	if IsRemote(path) {
		return Open(path)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		if c, err := openSafetensorsStored(path, path); err == nil {
			return c, nil
		}
		return Open(path)
	}
	if kind, err := sniff.File(path); err == nil && (kind == sniff.SafetensorsIndex || kind == sniff.Safetensors) {
		return openSafetensorsStored(path, filepath.Dir(path))
	}
	return Open(path)
}

func openSafetensors(path, dir string) (*Checkpoint, error) {
	c, err := openSafetensorsStored(path, dir)
	if err != nil {
		return nil, err
	}
	if err := c.unpackQuantized(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func openSafetensorsStored(path, dir string) (*Checkpoint, error) {
	s, err := safetensors.OpenSet(path)
	if err != nil {
		return nil, err
	}
	if dir == "" {
		// A single .safetensors file: its folder may hold the side files.
		dir = filepath.Dir(path)
	}
	c := &Checkpoint{Path: path, Format: Safetensors, Source: Safetensors, dir: dir}
	c.closers = append(c.closers, s)
	for i, f := range s.Files {
		if i == 0 {
			c.Metadata = f.Metadata
		}
		c.Files = append(c.Files, File{Path: f.Name, Size: f.Size})
	}
	for _, t := range s.Tensors {
		t := t
		c.add(&Tensor{Info: t.Info, File: shardOf(s, t),
			open:    func() io.Reader { return t.Open() },
			section: t.Open, inFile: true})
	}
	return c, nil
}

// openPyTorch opens a .bin file or a pytorch_model.bin.index.json set; dir
// is the folder of side files ("" for a single file's own folder).
func openPyTorch(path, dir string) (*Checkpoint, error) {
	s, err := pytorch.OpenSet(path)
	if err != nil {
		return nil, err
	}
	if dir == "" {
		dir = filepath.Dir(path)
	}
	c := &Checkpoint{Path: path, Format: PyTorch, Source: PyTorch, dir: dir,
		SourceInfo: tensor.Metadata{{Key: SourceInfoPyTorchContainer, Value: tensor.String(string(s.Files[0].Container))}}}
	c.closers = append(c.closers, s)
	for _, f := range s.Files {
		c.Files = append(c.Files, File{Path: f.Name, Size: f.Size})
	}
	for _, t := range s.Tensors {
		c.add(&Tensor{Info: t.Info, File: s.FileOf(t).Name,
			open:    func() io.Reader { return t.Open() },
			section: t.Open, inFile: true})
	}
	if err := c.unpackQuantized(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// SourceInfoPyTorchContainer is the SourceInfo key of a PyTorch
// checkpoint's container ("zip" or "legacy").
const SourceInfoPyTorchContainer = "pytorch.container"

func shardOf(s *safetensors.Set, t *safetensors.Tensor) string {
	if s.Index != nil {
		if name, ok := s.Index.WeightMap[t.Name]; ok {
			return filepath.Join(s.Dir, name)
		}
	}
	if len(s.Files) > 0 {
		return s.Files[0].Name
	}
	return ""
}

func openGGUF(path string) (*Checkpoint, error) {
	if _, _, _, ok := gguf.ParseSplitName(path); ok {
		s, err := gguf.OpenSplit(path)
		if err != nil {
			return nil, err
		}
		c := &Checkpoint{Path: path, Format: GGUF, Source: GGUF, Metadata: s.Metadata, SourceInfo: ggufInfo(s.Files[0])}
		c.closers = append(c.closers, s)
		for _, f := range s.Files {
			c.Files = append(c.Files, File{Path: f.Name, Size: f.Size})
			c.Lints = append(c.Lints, f.Lints...)
		}
		for fi, f := range s.Files {
			for i := range f.Tensors {
				t := &f.Tensors[i]
				c.add(&Tensor{Info: t.Info, File: s.Files[fi].Name,
					open:    func() io.Reader { return t.Open() },
					section: t.Open, inFile: true})
			}
		}
		return c, nil
	}
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	c := &Checkpoint{Path: path, Format: GGUF, Source: GGUF, Metadata: f.Metadata, SourceInfo: ggufInfo(f),
		Files: []File{{Path: path, Size: f.Size}}, Lints: f.Lints}
	c.closers = append(c.closers, f)
	for i := range f.Tensors {
		t := &f.Tensors[i]
		c.add(&Tensor{Info: t.Info, File: path,
			open:    func() io.Reader { return t.Open() },
			section: t.Open, inFile: true})
	}
	return c, nil
}

func openNative(path string) (*Checkpoint, error) {
	f, err := native.Open(path)
	if err != nil {
		return nil, err
	}
	c := &Checkpoint{Path: path, Format: Native, Source: Format(f.Source), Metadata: f.Metadata, SourceInfo: f.SourceInfo,
		Files: []File{{Path: path, Size: f.Size}}, aux: map[string]*native.AuxFile{}}
	c.closers = append(c.closers, f)
	for i := range f.Aux {
		c.aux[f.Aux[i].Name] = &f.Aux[i]
	}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		c.add(&Tensor{Info: t.Info, File: path, Attrs: t.Attrs, open: t.Open, section: t.OpenRaw, inFile: true})
	}
	return c, nil
}

// ggufInfo records the GGUF version, the one container fact of a GGUF file
// that its KVs do not carry.
func ggufInfo(f *gguf.File) tensor.Metadata {
	return tensor.Metadata{{Key: SourceInfoGGUFVersion, Value: tensor.Uint32(f.Version)}}
}

// SourceInfoGGUFVersion is the SourceInfo key of the GGUF version.
const SourceInfoGGUFVersion = "gguf.version"

func (c *Checkpoint) add(t *Tensor) {
	if c.byName == nil {
		c.byName = map[string]*Tensor{}
	}
	c.Tensors = append(c.Tensors, t)
	c.byName[t.Name] = t
}

// IsSideFile reports whether name is one of SideFiles.
func IsSideFile(name string) bool {
	for _, n := range SideFiles {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}

// Assemble makes a checkpoint of tensors computed elsewhere, as if read
// from a file of the given format at path: a conversion's output read
// without writing it (convert.Source). A GGUF one carries the version
// tfconv writes (3) in SourceInfo, as a GGUF file it wrote would.
func Assemble(path string, format Format, meta tensor.Metadata, tensors []*Tensor) *Checkpoint {
	c := &Checkpoint{Path: path, Format: format, Source: format, Metadata: meta}
	if format == GGUF {
		c.SourceInfo = tensor.Metadata{{Key: SourceInfoGGUFVersion, Value: tensor.Uint32(3)}}
	}
	for _, t := range tensors {
		c.add(t)
	}
	return c
}

// AssembleDir is Assemble for a Hugging Face directory's view: files are
// the side files (base name → contents: config.json, tokenizer files) it
// holds beside the weights, read by ReadAux and listed by AuxNames as a
// folder's would be (those of SideFiles).
func AssembleDir(path string, meta tensor.Metadata, tensors []*Tensor, files map[string][]byte) *Checkpoint {
	c := Assemble(path, Safetensors, meta, tensors)
	c.auxOverride = maps.Clone(files)
	return c
}
