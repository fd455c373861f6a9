package httprange

import (
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
)

// IsRemote reports whether path names a checkpoint over HTTP: an http(s)
// URL, or hf://ORG/REPO[@REV]/FILE on the Hugging Face Hub.
func IsRemote(path string) bool {
	return strings.HasPrefix(path, "https://") || strings.HasPrefix(path, "http://") || strings.HasPrefix(path, "hf://")
}

// HubURL turns hf://ORG/REPO[@REV][/FILE] into the Hub's resolve URL; for
// a bare repository (no FILE) it returns the folder URL, ending in "/", and
// bare is true.
func HubURL(path string) (u string, bare bool, err error) {
	rest := strings.TrimPrefix(path, "hf://")
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" || (len(parts) == 3 && parts[2] == "") {
		return "", false, fmt.Errorf("httprange: %s: want hf://ORG/REPO[@REV][/FILE]", path)
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

// Locate returns the URL path names: an http(s) URL as it is, an
// hf://ORG/REPO[@REV]/FILE as the Hub's resolve URL, and for a bare
// hf://ORG/REPO the first of names that exists in the repository (probed
// with a range request), with display, the hf:// path of that file. None
// existing is an error matching fs.ErrNotExist that names them all.
func Locate(path string, names []string) (u, display string, err error) {
	if !strings.HasPrefix(path, "hf://") {
		return path, path, nil
	}
	u, bare, err := HubURL(path)
	if err != nil || !bare {
		return u, path, err
	}
	for _, name := range names {
		if _, err := Open(u + name); !errors.Is(err, fs.ErrNotExist) {
			return u + name, strings.TrimSuffix(path, "/") + "/" + name, err
		}
	}
	return "", "", fmt.Errorf("httprange: %s has no %s (name a file: hf://ORG/REPO/FILE): %w", path, strings.Join(names, " or "), fs.ErrNotExist)
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

// Remote reading: blocks of blockSize bytes, fetched on demand with HTTP
// range requests and kept (a header is read in many small pieces), at most
// cacheSize bytes of them; each request is retried Tries times with
// doubling waits.
const (
	blockSize = 64 << 10
	cacheSize = 64 << 20
	Tries     = 3
)

// Timeout bounds each request, headers and body (a variable so that
// the slow-server test need not wait 30 s).
var Timeout = 30 * time.Second

// Reader is an io.ReaderAt over an HTTP resource read with range requests.
type Reader struct {
	url    string
	size   int64
	client *http.Client
	token  string // sent only to the Hub's own host

	mu      sync.Mutex
	blocks  map[int64][]byte
	fetched int64
	sides   map[string][]byte // side files fetched, nil for absent ones
}

func Open(rawURL string) (*Reader, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("httprange: %s: not an http(s) URL", rawURL)
	}
	r := &Reader{url: rawURL, client: &http.Client{Timeout: Timeout}, blocks: map[int64][]byte{}}
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
func (r *Reader) Fetched() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fetched
}

// block returns block i (the bytes from i·blockSize), fetching it once.
func (r *Reader) block(i int64) ([]byte, error) {
	r.mu.Lock()
	if b, ok := r.blocks[i]; ok {
		r.mu.Unlock()
		return b, nil
	}
	r.mu.Unlock()
	start := i * blockSize
	end := start + blockSize - 1
	if r.size > 0 {
		end = min(end, r.size-1)
	}
	var b []byte
	var err error
	wait := 200 * time.Millisecond
	for try := 0; try < Tries; try++ {
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
	if len(r.blocks)*blockSize >= cacheSize {
		clear(r.blocks)
	}
	r.blocks[i] = b
	r.fetched += int64(len(b))
	return b, nil
}

// get fetches bytes [start, end]; retry says whether trying again may help.
func (r *Reader) get(start, end int64) (_ []byte, retry bool, _ error) {
	req, err := http.NewRequest(http.MethodGet, r.url, nil)
	if err != nil {
		return nil, false, fmt.Errorf("httprange: %s: %w", r.url, err)
	}
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", start, end))
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, true, fmt.Errorf("httprange: %s: %w", r.url, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK && start == 0 && resp.ContentLength == 0:
		return []byte{}, false, nil // an empty file, which some servers answer whole rather than with 416
	case resp.StatusCode == http.StatusOK:
		return nil, false, fmt.Errorf("httprange: %s: the server ignores Range requests (it answered 200 with the whole file); tfconv reads only the headers of a remote checkpoint", r.url)
	case resp.StatusCode >= 500:
		return nil, true, fmt.Errorf("httprange: %s: %s", r.url, resp.Status)
	case resp.StatusCode == http.StatusNotFound:
		return nil, false, fmt.Errorf("httprange: %s: %s: %w", r.url, resp.Status, fs.ErrNotExist)
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && start == 0 && resp.Header.Get("Content-Range") == "bytes */0":
		return []byte{}, false, nil // an empty file: no range of it exists (its size stays 0)
	case resp.StatusCode != http.StatusPartialContent:
		return nil, false, fmt.Errorf("httprange: %s: %s", r.url, resp.Status)
	}
	total, first, last, err := contentRange(resp.Header.Get("Content-Range"))
	if err != nil || first != start || last > end {
		return nil, false, fmt.Errorf("httprange: %s: Content-Range %q does not answer bytes=%d-%d", r.url, resp.Header.Get("Content-Range"), start, end)
	}
	if r.size == 0 {
		r.size = total
	} else if total != r.size {
		return nil, false, fmt.Errorf("httprange: %s: the file changed size (%d, then %d bytes)", r.url, r.size, total)
	}
	want := last - first + 1
	b, err := io.ReadAll(io.LimitReader(resp.Body, want+1))
	if err != nil {
		return nil, true, fmt.Errorf("httprange: %s: bytes %d-%d: %w", r.url, first, last, err)
	}
	if int64(len(b)) != want {
		return nil, true, fmt.Errorf("httprange: %s: bytes %d-%d: %d bytes received, %d announced", r.url, first, last, len(b), want)
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
func (r *Reader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("httprange: %s: negative offset", r.url)
	}
	n := 0
	for n < len(p) {
		pos := off + int64(n)
		if pos >= r.size {
			return n, io.EOF
		}
		b, err := r.block(pos / blockSize)
		if err != nil {
			return n, err
		}
		k := copy(p[n:], b[pos%blockSize:])
		if k == 0 {
			return n, io.ErrUnexpectedEOF
		}
		n += k
	}
	return n, nil
}

// Sibling fetches a side file from the remote file's folder (whole, at most
// MaxSibling bytes), once; an absent one is an error matching
// fs.ErrNotExist.
func (r *Reader) Sibling(name string) ([]byte, error) {
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
		return nil, fmt.Errorf("httprange: %s: %w", u, err)
	}
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("httprange: %s: %w", u, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		b = nil
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("httprange: %s: %s", u, resp.Status)
	default:
		if b, err = io.ReadAll(io.LimitReader(resp.Body, MaxSibling+1)); err != nil {
			return nil, fmt.Errorf("httprange: %s: %w", u, err)
		}
		if len(b) > MaxSibling {
			return nil, fmt.Errorf("httprange: %s: above the %d-byte limit for side files", u, MaxSibling)
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

// MaxSibling caps a side file fetched whole (Sibling).
const MaxSibling = 256 << 20

// URL is the address read.
func (r *Reader) URL() string { return r.url }

// Size is the resource's length in bytes.
func (r *Reader) Size() int64 { return r.size }
