package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/formats/safetensors"
	"github.com/tfconv/tfconv/formats/shardindex"
	"github.com/tfconv/tfconv/tensor"
)

// IsRemote reports whether path names a checkpoint over HTTP: an http(s)
// URL, or hf://ORG/REPO[@REV]/FILE on the Hugging Face Hub.
func IsRemote(path string) bool {
	return strings.HasPrefix(path, "https://") || strings.HasPrefix(path, "http://") || strings.HasPrefix(path, "hf://")
}

// hubURL turns hf://ORG/REPO[@REV][/FILE] into the Hub's resolve URL; for
// a bare repository (no FILE) it returns the folder URL, ending in "/", and
// bare is true.
func hubURL(path string) (u string, bare bool, err error) {
	rest := strings.TrimPrefix(path, "hf://")
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" || (len(parts) == 3 && parts[2] == "") {
		return "", false, fmt.Errorf("checkpoint: %s: want hf://ORG/REPO[@REV][/FILE]", path)
	}
	repo, rev := parts[1], "main"
	if i := strings.IndexByte(repo, '@'); i >= 0 {
		repo, rev = repo[:i], repo[i+1:]
	}
	base := hubEndpoint() + "/" + url.PathEscape(parts[0]) + "/" + url.PathEscape(repo) + "/resolve/" + url.PathEscape(rev) + "/"
	if len(parts) == 2 {
		return base, true, nil
	}
	return base + parts[2], false, nil
}

// hubEndpoint is the Hub's address: HF_ENDPOINT (as huggingface_hub reads
// it: a mirror or a private Hub) or https://huggingface.co.
func hubEndpoint() string {
	if e := strings.TrimSuffix(os.Getenv("HF_ENDPOINT"), "/"); e != "" {
		return e
	}
	return "https://huggingface.co"
}

// hubHost reports whether host is the Hub's: huggingface.co and its
// subdomains, or HF_ENDPOINT's host. Only these get HF_TOKEN.
func hubHost(host string) bool {
	if host == "huggingface.co" || strings.HasSuffix(host, ".huggingface.co") {
		return true
	}
	if e := os.Getenv("HF_ENDPOINT"); e != "" {
		if u, err := url.Parse(e); err == nil && u.Hostname() != "" && u.Hostname() == host {
			return true
		}
	}
	return false
}

// Remote reading: blocks of remoteBlock bytes, fetched on demand with HTTP
// range requests and kept (a header is read in many small pieces), at most
// remoteCache bytes of them; each request is retried remoteTries times with
// doubling waits.
const (
	remoteBlock = 64 << 10
	remoteCache = 64 << 20
	remoteTries = 3
)

// remoteTimeout bounds each request, headers and body (a variable so that
// the slow-server test need not wait 30 s).
var remoteTimeout = 30 * time.Second

// remote is an io.ReaderAt over an HTTP resource read with range requests.
type remote struct {
	url    string
	size   int64
	client *http.Client
	token  string // sent only to the Hub's own host

	mu      sync.Mutex
	blocks  map[int64][]byte
	fetched int64
	sides   map[string][]byte // side files fetched, nil for absent ones
}

func newRemote(rawURL string) (*remote, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("checkpoint: %s: not an http(s) URL", rawURL)
	}
	r := &remote{url: rawURL, client: &http.Client{Timeout: remoteTimeout}, blocks: map[int64][]byte{}}
	if hubHost(u.Hostname()) {
		r.token = os.Getenv("HF_TOKEN")
	}
	// The first block gives the size (Content-Range) and proves the server
	// honours ranges.
	if _, err := r.block(0); err != nil {
		return nil, err
	}
	return r, nil
}

// Fetched is the number of body bytes received so far.
func (r *remote) Fetched() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fetched
}

// block returns block i (the bytes from i·remoteBlock), fetching it once.
func (r *remote) block(i int64) ([]byte, error) {
	r.mu.Lock()
	if b, ok := r.blocks[i]; ok {
		r.mu.Unlock()
		return b, nil
	}
	r.mu.Unlock()
	start := i * remoteBlock
	end := start + remoteBlock - 1
	if r.size > 0 {
		end = min(end, r.size-1)
	}
	var b []byte
	var err error
	wait := 200 * time.Millisecond
	for try := 0; try < remoteTries; try++ {
		if try > 0 {
			time.Sleep(wait)
			wait *= 2
		}
		var retry bool
		if b, retry, err = r.get(start, end); err == nil || !retry {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.blocks)*remoteBlock >= remoteCache {
		clear(r.blocks)
	}
	r.blocks[i] = b
	r.fetched += int64(len(b))
	return b, nil
}

// get fetches bytes [start, end]; retry says whether trying again may help.
func (r *remote) get(start, end int64) (_ []byte, retry bool, _ error) {
	req, err := http.NewRequest(http.MethodGet, r.url, nil)
	if err != nil {
		return nil, false, fmt.Errorf("checkpoint: %s: %w", r.url, err)
	}
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", start, end))
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, true, fmt.Errorf("checkpoint: %s: %w", r.url, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
		return nil, false, fmt.Errorf("checkpoint: %s: the server ignores Range requests (it answered 200 with the whole file); tfconv reads only the headers of a remote checkpoint", r.url)
	case resp.StatusCode >= 500:
		return nil, true, fmt.Errorf("checkpoint: %s: %s", r.url, resp.Status)
	case resp.StatusCode == http.StatusNotFound:
		return nil, false, fmt.Errorf("checkpoint: %s: %s: %w", r.url, resp.Status, fs.ErrNotExist)
	case resp.StatusCode != http.StatusPartialContent:
		return nil, false, fmt.Errorf("checkpoint: %s: %s", r.url, resp.Status)
	}
	total, first, last, err := contentRange(resp.Header.Get("Content-Range"))
	if err != nil || first != start || last > end {
		return nil, false, fmt.Errorf("checkpoint: %s: Content-Range %q does not answer bytes=%d-%d", r.url, resp.Header.Get("Content-Range"), start, end)
	}
	if r.size == 0 {
		r.size = total
	} else if total != r.size {
		return nil, false, fmt.Errorf("checkpoint: %s: the file changed size (%d, then %d bytes)", r.url, r.size, total)
	}
	want := last - first + 1
	b, err := io.ReadAll(io.LimitReader(resp.Body, want+1))
	if err != nil {
		return nil, true, fmt.Errorf("checkpoint: %s: bytes %d-%d: %w", r.url, first, last, err)
	}
	if int64(len(b)) != want {
		return nil, true, fmt.Errorf("checkpoint: %s: bytes %d-%d: %d bytes received, %d announced", r.url, first, last, len(b), want)
	}
	return b, false, nil
}

// contentRange parses "bytes FIRST-LAST/TOTAL".
func contentRange(s string) (total, first, last int64, err error) {
	bad := errors.New("bad Content-Range")
	rest, ok := strings.CutPrefix(s, "bytes ")
	if !ok {
		return 0, 0, 0, bad
	}
	rng, tot, ok := strings.Cut(rest, "/")
	a, b, ok2 := strings.Cut(rng, "-")
	if !ok || !ok2 {
		return 0, 0, 0, bad
	}
	first, err1 := strconv.ParseInt(a, 10, 64)
	last, err2 := strconv.ParseInt(b, 10, 64)
	total, err3 := strconv.ParseInt(tot, 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || first < 0 || last < first || total <= last {
		return 0, 0, 0, bad
	}
	return total, first, last, nil
}

// ReadAt reads through the block cache.
func (r *remote) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("checkpoint: %s: negative offset", r.url)
	}
	n := 0
	for n < len(p) {
		pos := off + int64(n)
		if pos >= r.size {
			return n, io.EOF
		}
		b, err := r.block(pos / remoteBlock)
		if err != nil {
			return n, err
		}
		k := copy(p[n:], b[pos%remoteBlock:])
		if k == 0 {
			return n, io.ErrUnexpectedEOF
		}
		n += k
	}
	return n, nil
}

// openRemote opens a checkpoint over HTTP, reading only what its headers
// need: a GGUF file or split set (any shard's URL), a safetensors file, a
// model.safetensors.index.json and its shards, or a Hub repository
// (hf://ORG/REPO[@REV]: its model.safetensors, else its index).
func openRemote(path string) (*Checkpoint, error) {
	if !strings.HasPrefix(path, "hf://") {
		return openRemoteURL(path, path)
	}
	u, bare, err := hubURL(path)
	if err != nil {
		return nil, err
	}
	if !bare {
		return openRemoteURL(path, u)
	}
	// transformers' order: the single file, then the index.
	c, err := openRemoteURL(strings.TrimSuffix(path, "/")+"/"+safetensors.SingleName, u+safetensors.SingleName)
	if !errors.Is(err, fs.ErrNotExist) {
		return c, err
	}
	c, err = openRemoteURL(strings.TrimSuffix(path, "/")+"/"+safetensors.IndexName, u+safetensors.IndexName)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("checkpoint: %s has no %s or %s (name a file: hf://ORG/REPO/FILE): %w", path, safetensors.SingleName, safetensors.IndexName, err)
	}
	return c, err
}

// openRemoteURL opens the checkpoint at u, named path in what it reports.
func openRemoteURL(path, u string) (*Checkpoint, error) {
	if _, _, _, ok := gguf.ParseSplitName(u); ok {
		return openRemoteSplit(path, u)
	}
	r, err := newRemote(u)
	if err != nil {
		return nil, err
	}
	head := make([]byte, 16)
	if _, err := r.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	switch {
	case bytes.HasPrefix(head, []byte("GGUF")):
		f, err := gguf.NewFile(r, r.size)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		c := &Checkpoint{Path: path, Format: GGUF, Source: GGUF, Metadata: f.Metadata, SourceInfo: ggufInfo(f),
			Files: []File{{Path: path, Size: r.size}}, remote: r, remotes: []*remote{r}}
		for i := range f.Tensors {
			t := &f.Tensors[i]
			c.add(&Tensor{Info: t.Info, File: path, open: func() io.Reader { return t.Open() }, section: t.Open})
		}
		return c, nil
	case bytes.HasPrefix(bytes.TrimLeft(head, " \t\r\n"), []byte("{")):
		return openRemoteIndex(path, r)
	}
	f, err := safetensors.NewFile(r, r.size)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c := &Checkpoint{Path: path, Format: Safetensors, Source: Safetensors, Metadata: f.Metadata,
		Files: []File{{Path: path, Size: r.size}}, remote: r, remotes: []*remote{r}, remoteSides: true}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		c.add(&Tensor{Info: t.Info, File: path, open: func() io.Reader { return t.Open() }, section: t.Open})
	}
	if err := c.unpackQuantized(); err != nil {
		return nil, err
	}
	return c, nil
}

// openRemoteSplit opens a GGUF split set over HTTP from any shard's URL:
// the same checks as a local set (gguf.OpenSplitWith), each shard's header
// read with range requests.
func openRemoteSplit(path, u string) (*Checkpoint, error) {
	var remotes []*remote
	s, err := gguf.OpenSplitWith(u, func(p string) (*gguf.File, error) {
		r, err := newRemote(p)
		if err != nil {
			return nil, err
		}
		f, err := gguf.NewFile(r, r.size)
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
		c.Files = append(c.Files, File{Path: remotes[fi].url, Size: remotes[fi].size})
		for i := range f.Tensors {
			t := &f.Tensors[i]
			c.add(&Tensor{Info: t.Info, File: remotes[fi].url, open: func() io.Reader { return t.Open() }, section: t.Open})
		}
	}
	return c, nil
}

// openRemoteIndex opens a safetensors shard index read over HTTP (whole:
// it is small) and the shards it lists from beside it. A PyTorch index is
// refused: listing a pickle's tensors needs the whole pickle.
func openRemoteIndex(path string, r *remote) (*Checkpoint, error) {
	if strings.HasSuffix(r.url, ".bin.index.json") {
		return nil, tensor.Unsupported("checkpoint: %s: a PyTorch shard index; remote PyTorch checkpoints are not read (their tensor list is inside each whole pickle)", path)
	}
	if r.size > shardindex.MaxLen {
		return nil, &tensor.FormatError{Format: "safetensors", File: path, Offset: 0, Msg: fmt.Sprintf("index file is larger than %d bytes", shardindex.MaxLen)}
	}
	buf := make([]byte, r.size)
	if _, err := r.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	idx, err := shardindex.Parse(buf, path, "safetensors")
	if err != nil {
		return nil, err
	}
	base := r.url[:strings.LastIndexByte(r.url, '/')+1]
	remotes := []*remote{r}
	shardURL := map[*safetensors.File]string{}
	s, err := safetensors.OpenShards(idx, func(shard string) (*safetensors.File, error) {
		u := base + url.PathEscape(shard)
		sr, err := newRemote(u)
		if err != nil {
			return nil, err
		}
		f, err := safetensors.NewFile(sr, sr.size)
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
		c.Files = append(c.Files, File{Path: shardURL[f], Size: remotes[i+1].size})
		for j := range f.Tensors {
			t := &f.Tensors[j]
			c.add(&Tensor{Info: t.Info, File: shardURL[f], open: func() io.Reader { return t.Open() }, section: t.Open})
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

// sibling fetches a side file from the remote file's folder (whole, at most
// MaxAuxSize bytes), once; an absent one is an error matching
// fs.ErrNotExist.
func (r *remote) sibling(name string) ([]byte, error) {
	r.mu.Lock()
	b, seen := r.sides[name]
	r.mu.Unlock()
	notExist := &fs.PathError{Op: "get", Path: name, Err: fs.ErrNotExist}
	if seen {
		if b == nil {
			return nil, notExist
		}
		return b, nil
	}
	u := r.url[:strings.LastIndexByte(r.url, '/')+1] + url.PathEscape(name)
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %s: %w", u, err)
	}
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %s: %w", u, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		b = nil
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("checkpoint: %s: %s", u, resp.Status)
	default:
		if b, err = io.ReadAll(io.LimitReader(resp.Body, MaxAuxSize+1)); err != nil {
			return nil, fmt.Errorf("checkpoint: %s: %w", u, err)
		}
		if len(b) > MaxAuxSize {
			return nil, fmt.Errorf("checkpoint: %s: above the %d-byte limit for side files", u, MaxAuxSize)
		}
	}
	r.mu.Lock()
	if r.sides == nil {
		r.sides = map[string][]byte{}
	}
	r.sides[name] = b
	r.fetched += int64(len(b))
	r.mu.Unlock()
	if b == nil {
		return nil, notExist
	}
	return b, nil
}
