package checkpoint

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"

	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/formats/safetensors"
	"github.com/tfconv/tfconv/formats/shardindex"
	"github.com/tfconv/tfconv/internal/httprange"
	"github.com/tfconv/tfconv/sniff"
	"github.com/tfconv/tfconv/tensor"
)

// IsRemote reports whether path names a checkpoint over HTTP: an http(s)
// URL, or hf://ORG/REPO[@REV][/FILE] on the Hugging Face Hub.
func IsRemote(path string) bool { return httprange.IsRemote(path) }

// remote is a file read over HTTP.
type remote = httprange.Reader

// openRemote opens a checkpoint over HTTP, reading only what its headers
// need: a GGUF file or split set (any shard's URL), a safetensors file, a
// model.safetensors.index.json and its shards, or a Hub repository
// (hf://ORG/REPO[@REV]: its model.safetensors, else its index).
func openRemote(path string) (*Checkpoint, error) {
	u, display, err := httprange.Locate(path, safetensors.FolderNames)
	if err != nil {
		return nil, err
	}
	c, err := openRemoteURL(display, u)
	if err != nil {
		return nil, err
	}
	for _, r := range c.remotes {
		c.closers = append(c.closers, r)
	}
	if repo, commit, ok := c.remotes[0].Hub(); ok {
		c.HubRepo, c.HubCommit = repo, commit
	}
	return c, nil
}

// openRemoteURL opens the checkpoint at u, named path in what it reports.
func openRemoteURL(path, u string) (*Checkpoint, error) {
	if _, _, _, ok := gguf.ParseSplitName(u); ok {
		return openRemoteSplit(path, u)
	}
	r, err := httprange.Open(u)
	if err != nil {
		return nil, err
	}
	head := make([]byte, min(sniff.HeadLen, r.Size()))
	if _, err := r.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	kind := sniff.Format(head, u)
	if err := sniff.NotCheckpoint(kind, head, path); err != nil {
		return nil, err
	}
	switch kind {
	case sniff.GGUF:
		f, err := gguf.NewFile(r, r.Size())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		c := &Checkpoint{Path: path, Format: GGUF, Source: GGUF, Metadata: f.Metadata, SourceInfo: ggufInfo(f),
			Files: []File{{Path: path, Size: r.Size()}}, remote: r, remotes: []*remote{r}, Lints: f.Lints}
		for _, p := range c.Lints {
			p.File = path
		}
		for i := range f.Tensors {
			t := &f.Tensors[i]
			c.add(remoteTensor(t.Info, path, r))
		}
		return c, nil
	case sniff.SafetensorsIndex, sniff.PyTorchIndex:
		return openRemoteIndex(path, r)
	}
	f, err := safetensors.NewFile(r, r.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c := &Checkpoint{Path: path, Format: Safetensors, Source: Safetensors, Metadata: f.Metadata,
		Files: []File{{Path: path, Size: r.Size()}}, remote: r, remotes: []*remote{r}, remoteSides: true}
	for i := range f.Tensors {
		c.add(remoteTensor(f.Tensors[i].Info, path, r))
	}
	if err := c.unpackQuantized(); err != nil {
		return nil, err
	}
	return c, nil
}

// remoteTensor is a tensor of the remote file r at info.Offset, read
// through a window of r (read-ahead stops at the tensor's end); Open's
// reader is an io.WriterTo that hands a writer r's cached blocks.
func remoteTensor(info tensor.Info, file string, r *remote) *Tensor {
	section := func() *io.SectionReader { return r.Window(info.Offset, info.Size) }
	return &Tensor{Info: info, File: file, open: func() io.Reader { return r.Stream(info.Offset, info.Size) }, section: section}
}

// openRemoteSplit opens a GGUF split set over HTTP from any shard's URL:
// the same checks as a local set (gguf.OpenSplitWith), each shard's header
// read with range requests.
func openRemoteSplit(path, u string) (*Checkpoint, error) {
	var remotes []*remote
	s, err := gguf.OpenSplitWith(u, func(p string) (*gguf.File, error) {
		r, err := httprange.Open(p)
		if err != nil {
			return nil, err
		}
		f, err := gguf.NewFile(r, r.Size())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		remotes = append(remotes, r)
		return f, nil
	})
	if err != nil {
		return nil, err
	}
	c := &Checkpoint{Path: path, Format: GGUF, Source: GGUF, Metadata: s.Metadata, SourceInfo: ggufInfo(s.Files[0]),
		remote: remotes[0], remotes: remotes}
	for fi, f := range s.Files {
		c.Files = append(c.Files, File{Path: remotes[fi].URL(), Size: remotes[fi].Size()})
		for _, p := range f.Lints {
			p.File = remotes[fi].URL()
			c.Lints = append(c.Lints, p)
		}
		for i := range f.Tensors {
			c.add(remoteTensor(f.Tensors[i].Info, remotes[fi].URL(), remotes[fi]))
		}
	}
	return c, nil
}

// openRemoteIndex opens a safetensors shard index read over HTTP (whole:
// it is small) and the shards it lists from beside it. A PyTorch index is
// refused: listing a pickle's tensors needs the whole pickle.
func openRemoteIndex(path string, r *remote) (*Checkpoint, error) {
	if strings.HasSuffix(r.URL(), ".bin.index.json") {
		return nil, tensor.Unsupported("checkpoint: %s: a PyTorch shard index; remote PyTorch checkpoints are not read (their tensor list is inside each whole pickle)", path)
	}
	if r.Size() > shardindex.MaxLen {
		return nil, &tensor.FormatError{Format: "safetensors", File: path, Offset: 0, Msg: fmt.Sprintf("index file is larger than %d bytes", shardindex.MaxLen)}
	}
	buf := make([]byte, r.Size())
	if _, err := r.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	idx, err := shardindex.Parse(buf, path, "safetensors")
	if err != nil {
		return nil, err
	}
	base := r.URL()[:strings.LastIndexByte(r.URL(), '/')+1]
	remotes := []*remote{r}
	shardURL := map[*safetensors.File]string{}
	s, err := safetensors.OpenShards(idx, func(shard string) (*safetensors.File, error) {
		u := base + url.PathEscape(shard)
		sr, err := httprange.Open(u)
		if err != nil {
			return nil, err
		}
		f, err := safetensors.NewFile(sr, sr.Size())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", u, err)
		}
		remotes = append(remotes, sr)
		shardURL[f] = u
		return f, nil
	})
	if err != nil {
		return nil, err
	}
	c := &Checkpoint{Path: path, Format: Safetensors, Source: Safetensors, remote: r, remotes: remotes, remoteSides: true}
	for i, f := range s.Files {
		if i == 0 {
			c.Metadata = f.Metadata
		}
		c.Files = append(c.Files, File{Path: shardURL[f], Size: remotes[i+1].Size()})
		for j := range f.Tensors {
			c.add(remoteTensor(f.Tensors[j].Info, shardURL[f], remotes[i+1]))
		}
	}
	if err := c.unpackQuantized(); err != nil {
		return nil, err
	}
	return c, nil
}

// Fetched reports, for a checkpoint read over HTTP, how many bytes have
// been received so far, over every file (ok false for a local one).
func (c *Checkpoint) Fetched() (n int64, ok bool) {
	if len(c.remotes) == 0 {
		return 0, false
	}
	for _, r := range c.remotes {
		n += r.Fetched()
	}
	return n, true
}

// VerifySources checks every file read over HTTP whose tensor bytes the
// run read (httprange.Reader.Touched) against the sha256 the Hub publishes
// for it, fetching and hashing whatever part of it the run has not read
// (nil for a local checkpoint, and for files the Hub publishes no sha256
// for). Files the run took nothing from are not fetched: no output depends
// on them. A run calls it once it has read every tensor it needs, before it
// commits its output: SourceCheck.
func (c *Checkpoint) VerifySources() error {
	for _, r := range c.remotes {
		if !r.Touched() {
			continue
		}
		if err := r.Verify(); err != nil {
			return err
		}
	}
	return nil
}

// ErrSourceMismatch marks an error of a remote source whose bytes do not
// match the sha256 the Hub publishes, or that changed while it was read:
// output made from it, shards already renamed into place too, must go.
var ErrSourceMismatch = httprange.ErrMismatch

// Remote reports whether c is read over HTTP.
func (c *Checkpoint) Remote() bool { return len(c.remotes) > 0 }

// CheckSources makes every tensor of c report to one SourceCheck of c's
// files (nil, and c unchanged, for a local c): for a run that reads c's
// own tensors. The check is c's SourceCheck from then on.
func (c *Checkpoint) CheckSources() *SourceCheck {
	chk := c.NewSourceCheck()
	if chk == nil {
		return nil
	}
	for i, t := range c.Tensors {
		v := chk.Wrap(t.Name, t)
		c.Tensors[i] = v
		if c.byName[t.Name] == t {
			c.byName[t.Name] = v
		}
	}
	c.srcCheck = chk
	return chk
}

// SourceCheck is the check of the remote files c's tensors are read
// from (CheckSources, SetSourceCheck), nil when there is none.
func (c *Checkpoint) SourceCheck() *SourceCheck { return c.srcCheck }

// SetSourceCheck records chk as c's SourceCheck: a view (convert.Source)
// whose tensors are made from a remote checkpoint's.
func (c *Checkpoint) SetSourceCheck(chk *SourceCheck) { c.srcCheck = chk }

// SourceCheck runs a check of a run's sources (Checkpoint.VerifySources)
// once, when every tensor of the run's set has delivered its last byte,
// whatever order the run reads them in: the reader that delivers the set's
// last byte returns the check's error in place of it, so the run stops
// before it commits output made from a source that does not check out. The
// set is every tensor wrapped (Wrap), or the names given to Only, for a run
// that reads part of them (--part, --prune-layers, a quantize plan).
//
// Hashing a file needs all its bytes, so the check fetches what the run
// did not read of the files it touched, and nothing of the others.
type SourceCheck struct {
	verify func() error
	mu     sync.Mutex
	want   map[string]bool // the run's set
	read   map[string]bool // members that delivered their last byte
	ran    bool
	err    error
}

// NewSourceCheck is a SourceCheck of c's files, nil for a local c (whose
// Wrap and Only then do nothing).
func (c *Checkpoint) NewSourceCheck() *SourceCheck {
	if !c.Remote() {
		return nil
	}
	return &SourceCheck{verify: c.VerifySources, want: map[string]bool{}, read: map[string]bool{}}
}

// Wrap returns t, named name in the run's set, whose reader reports its
// last byte to the check (and fails with the check's error when it is the
// set's last). Section reads are not counted: t reads through Open.
func (s *SourceCheck) Wrap(name string, t *Tensor) *Tensor {
	if s == nil {
		return t
	}
	s.mu.Lock()
	s.want[name] = true
	s.mu.Unlock()
	v := *t
	v.open = func() io.Reader {
		return &checkedReader{r: t.Open(), left: t.Size, done: func() error { return s.delivered(name) }}
	}
	v.inFile = false
	return &v
}

// Only narrows the run's set to names (those of them wrapped), before the
// run reads any: the tensors a part or a plan reads.
func (s *SourceCheck) Only(names []string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	want := map[string]bool{}
	for _, n := range names {
		if s.want[n] {
			want[n] = true
		}
	}
	s.want = want
}

// delivered records that name's last byte was read and, when it completes
// the set, runs the check.
func (s *SourceCheck) delivered(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.want[name] {
		return s.err
	}
	s.read[name] = true
	if !s.ran && len(s.read) == len(s.want) {
		s.ran = true
		s.err = s.verify()
	}
	return s.err
}

// Ran reports whether the check has run, and its error.
func (s *SourceCheck) Ran() (bool, error) {
	if s == nil {
		return false, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ran, s.err
}

type checkedReader struct {
	r    io.Reader
	left int64
	done func() error
}

func (v *checkedReader) Read(p []byte) (int, error) {
	n, err := v.r.Read(p)
	if v.left > 0 && int64(n) >= v.left {
		if derr := v.done(); derr != nil {
			return 0, derr
		}
	}
	v.left -= int64(n)
	return n, err
}

// WriteTo passes on the underlying reader's WriteTo (a remote tensor's
// Stream: the cache's blocks, not a copy), with the same check on the
// last byte as Read.
func (v *checkedReader) WriteTo(w io.Writer) (int64, error) {
	wt, ok := v.r.(io.WriterTo)
	if !ok {
		return io.Copy(w, struct{ io.Reader }{v})
	}
	return wt.WriteTo(checkedWriter{w, v})
}

// checkedWriter is the writer a checkedReader's WriteTo hands its source:
// the bytes that complete the tensor are written only once the check
// (when it is the set's last) has passed.
type checkedWriter struct {
	w io.Writer
	v *checkedReader
}

func (c checkedWriter) Write(p []byte) (int, error) {
	if c.v.left > 0 && int64(len(p)) >= c.v.left {
		if err := c.v.done(); err != nil {
			return 0, err
		}
	}
	n, err := c.w.Write(p)
	c.v.left -= int64(n)
	return n, err
}
