package httprange

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

// tokenFlag is the token SetToken gave (a command's --token), which
// takes HF_TOKEN's place.
var tokenFlag atomic.Pointer[string]

// SetToken makes tok the token sent to the Hub in place of HF_TOKEN (an
// empty tok leaves HF_TOKEN in force) until restore is called: a command's
// --token, for the length of its run. It is process-wide, as HF_TOKEN is.
func SetToken(tok string) (restore func()) {
	if tok == "" {
		return func() {}
	}
	old := tokenFlag.Swap(&tok)
	return func() { tokenFlag.Store(old) }
}

// token is the token for the Hub: SetToken's, or HF_TOKEN.
func token() string {
	if t := tokenFlag.Load(); t != nil {
		return *t
	}
	return os.Getenv("HF_TOKEN")
}

// hubHost reports whether host is the Hub's: huggingface.co and its
// subdomains, or HF_ENDPOINT's host. Only these get the token (HF_TOKEN
// or --token).
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

// hubFile splits a Hub resolve URL, ENDPOINT/ORG/REPO/resolve/REV/FILE, on
// the endpoint's host (ok false for any other URL).
func hubFile(u *url.URL) (repoURL, rev, file string, ok bool) {
	if !hubHost(u.Hostname()) {
		return "", "", "", false
	}
	parts := strings.SplitN(strings.TrimPrefix(u.EscapedPath(), "/"), "/", 5)
	if len(parts) < 5 || parts[2] != "resolve" || parts[0] == "" || parts[1] == "" || parts[3] == "" || parts[4] == "" {
		return "", "", "", false
	}
	return u.Scheme + "://" + u.Host + "/" + parts[0] + "/" + parts[1], parts[3], parts[4], true
}

// Remote reading. Blocks of blockSize bytes are the unit kept (a header is
// read in many small pieces); a read that misses fetches the run of missing
// blocks in one range request of at most spanBlocks blocks, and a read that
// follows the one before also starts requests for the next ReadAhead spans,
// Parallel of them at a time, so that the network overlaps decoding. All
// readers together keep at most CacheSize bytes of blocks. Each request is
// retried Tries times, with doubling waits (or the server's Retry-After),
// resuming a body cut short where it stopped.
const (
	blockSize  = 64 << 10
	spanBlocks = 64 // 4 MiB a request
	Tries      = 5
)

var (
	// CacheSize bounds the blocks kept, over every open Reader.
	CacheSize int64 = 256 << 20
	// ReadAhead is how many spans a sequential reader requests ahead of
	// its reads; Parallel how many requests a Reader has in flight.
	ReadAhead = 12
	Parallel  = 4
	// Timeout is how long a request may go without receiving a byte
	// (headers or body) before it counts as stalled (a variable so that
	// the slow-server test need not wait 30 s).
	Timeout = 30 * time.Second
	// Backoff is the first wait before a retry; it doubles each time.
	Backoff = 200 * time.Millisecond
	// MaxRetryAfter caps the wait a server's Retry-After asks for.
	MaxRetryAfter = 2 * time.Minute
)

var transport = func() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 32
	return t
}()

// Reader is an io.ReaderAt over an HTTP resource read with range requests.
//
// For a file on the Hub it also checks the bytes: Open asks the Hub for the
// file's commit (X-Repo-Commit, then reads the file at that commit) and,
// for a file stored with LFS, its sha256 (X-Linked-Etag); the bytes are
// hashed in file order as they arrive, and once the whole file has been
// hashed a mismatch becomes the error of every read. A server whose ETag
// for the file changes between requests is an error as well.
type Reader struct {
	url    string
	size   int64
	client *http.Client
	token  string // sent only to the Hub's own host

	repoURL, commit string // on the Hub: ENDPOINT/ORG/REPO and the commit read
	sha256          string // the published sha256 (lowercase hex), or ""

	mu       sync.Mutex
	blocks   map[int64]block
	pending  map[int64]chan struct{} // blocks being fetched, closed when they land
	inflight int                     // read-ahead requests running
	next     int64                   // the block after the last read's end
	run      int64                   // bytes read in sequence up to next
	fetched  int64
	etag     string
	sides    map[string][]byte // side files fetched, nil for absent ones
	h        hash.Hash
	hashed   int64        // bytes [0, hashed) went into h
	hashing  bool         // a caller of advance or Verify is hashing
	hashDone *sync.Cond   // signalled (on mu) when hashing ends
	touched  atomic.Bool  // a Window (a tensor's bytes) was read
	err      error        // sticky: a checksum mismatch or a changed file
	use      atomic.Int64 // when a consumer last asked for a block (useClock), for the shared cache's eviction
	closed   bool
}

// cache accounts the blocks every Reader keeps.
var cache struct {
	sync.Mutex
	readers map[*Reader]bool
	bytes   int64
}

// useClock orders the readers' uses (Reader.use).
var useClock atomic.Int64

func Open(rawURL string) (*Reader, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("httprange: %s: not an http(s) URL", rawURL)
	}
	r := &Reader{url: rawURL, client: &http.Client{Transport: transport}, blocks: map[int64]block{},
		pending: map[int64]chan struct{}{}}
	r.hashDone = sync.NewCond(&r.mu)
	if hubHost(u.Hostname()) {
		r.token = token()
	}
	if repoURL, _, file, ok := hubFile(u); ok {
		if err := r.resolve(repoURL, file); err != nil {
			return nil, err
		}
	}
	// The first block gives the size (Content-Range) and proves the server
	// honours ranges.
	_, s, err := r.block(0, 1)
	if err != nil {
		return nil, err
	}
	s.release()
	cache.Lock()
	if cache.readers == nil {
		cache.readers = map[*Reader]bool{}
	}
	cache.readers[r] = true
	cache.Unlock()
	return r, nil
}

// resolve asks the Hub for the file's metadata as huggingface_hub does
// (a HEAD request of its resolve URL, following only the Hub's own
// relative redirects, a renamed repository's): the commit the revision
// names (X-Repo-Commit), after which r reads the file at that commit, and
// for an LFS file its sha256 (X-Linked-Etag).
func (r *Reader) resolve(repoURL, file string) error {
	noFollow := &http.Client{Transport: transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	target := r.url
	var resp *http.Response
	for hops := 0; ; hops++ {
		var err error
		resp, err = r.retry(func() (*http.Response, bool, time.Duration, error) {
			return r.send(noFollow, http.MethodHead, target, "")
		})
		if err != nil {
			return err
		}
		resp.Body.Close()
		loc := resp.Header.Get("Location")
		if resp.StatusCode < 300 || resp.StatusCode > 399 || loc == "" || strings.Contains(loc, "://") || hops == 5 {
			break
		}
		next, err := url.Parse(target)
		if err == nil {
			next, err = next.Parse(loc)
		}
		if err != nil {
			return fmt.Errorf("httprange: %s: redirect to %q: %w", r.url, loc, err)
		}
		target = next.String()
		u, _ := url.Parse(target)
		if repoURL, _, file, _ = hubFile(u); repoURL == "" {
			return fmt.Errorf("httprange: %s: redirected to %s, not a file of the Hub", r.url, target)
		}
		r.url = target
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("httprange: %s: %s: %w", r.url, resp.Status, fs.ErrNotExist)
	case resp.StatusCode >= 400:
		return fmt.Errorf("httprange: %s: %s", r.url, resp.Status)
	}
	r.repoURL = repoURL
	if c := resp.Header.Get("X-Repo-Commit"); c != "" {
		if !isHex(c, 40) {
			return fmt.Errorf("httprange: %s: X-Repo-Commit %q is not a commit", r.url, c)
		}
		r.commit = c
		r.url = repoURL + "/resolve/" + c + "/" + file
	}
	if e := unquote(resp.Header.Get("X-Linked-Etag")); isHex(e, 64) {
		r.sha256 = strings.ToLower(e)
		r.h = sha256.New()
	}
	return nil
}

// Hub reports, for a file read from the Hub, its repository's URL
// (ENDPOINT/ORG/REPO) and the commit read (empty when the Hub did not say).
func (r *Reader) Hub() (repoURL, commit string, ok bool) {
	return r.repoURL, r.commit, r.repoURL != ""
}

// SHA256 is the sha256 the Hub publishes for the file, or "".
func (r *Reader) SHA256() string { return r.sha256 }

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// unquote strips an ETag's weak marker and quotes.
func unquote(e string) string {
	return strings.Trim(strings.TrimPrefix(e, "W/"), `"`)
}

// Fetched is the number of body bytes received so far.
func (r *Reader) Fetched() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fetched
}

// Close drops the blocks r keeps; reads after it still work.
func (r *Reader) Close() error {
	r.mu.Lock()
	n := int64(0)
	for _, b := range r.blocks {
		n += int64(len(b.b))
		b.s.release()
	}
	clear(r.blocks)
	r.closed = true
	r.mu.Unlock()
	cache.Lock()
	cache.bytes -= n
	delete(cache.readers, r)
	cache.Unlock()
	return nil
}

// stallBody is a response body whose reads keep the stall timer off.
type stallBody struct {
	io.ReadCloser
	timer   *time.Timer
	stalled *atomic.Bool
	cancel  context.CancelFunc
}

func (b *stallBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.timer.Reset(Timeout)
	}
	if err != nil && b.stalled.Load() {
		err = fmt.Errorf("stalled: nothing received for %v (httprange.Timeout): %w", Timeout, err)
	}
	return n, err
}

func (b *stallBody) Close() error {
	b.timer.Stop()
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// send sends one request; retry says whether trying again may help and
// after how long the server asks to wait. A timer cancels the request when
// no byte arrives for Timeout, headers or body.
func (r *Reader) send(client *http.Client, method, u, rng string) (*http.Response, bool, time.Duration, error) {
	ctx, cancel := context.WithCancel(context.Background())
	stalled := new(atomic.Bool)
	timer := time.AfterFunc(Timeout, func() { stalled.Store(true); cancel() })
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		timer.Stop()
		cancel()
		return nil, false, 0, fmt.Errorf("httprange: %s: %w", u, err)
	}
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	if r.token != "" {
		// Go's client forwards it on a redirect only to the same host or
		// its subdomains (the Hub's CDN hosts, *.huggingface.co).
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := client.Do(req)
	if err != nil {
		timer.Stop()
		cancel()
		if stalled.Load() {
			return nil, true, 0, fmt.Errorf("httprange: %s: stalled: no answer for %v (httprange.Timeout)", u, Timeout)
		}
		return nil, true, 0, fmt.Errorf("httprange: %s: %w", u, err)
	}
	timer.Reset(Timeout)
	resp.Body = &stallBody{ReadCloser: resp.Body, timer: timer, stalled: stalled, cancel: cancel}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
		resp.Body.Close()
		return nil, true, retryAfter(resp.Header.Get("Retry-After")), fmt.Errorf("httprange: %s: %s", u, resp.Status)
	}
	return resp, false, 0, nil
}

// retryAfter parses Retry-After: seconds or an HTTP date.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		// Compared in seconds: a large count would overflow the
		// Duration product.
		if int64(s) > int64(MaxRetryAfter/time.Second) {
			return MaxRetryAfter
		}
		return min(time.Duration(s)*time.Second, MaxRetryAfter)
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(time.Until(t), 0), MaxRetryAfter)
	}
	return 0
}

// retry runs attempt up to Tries times, waiting Backoff, doubled each time,
// or longer when the server says so, between attempts that may help.
func (r *Reader) retry(attempt func() (*http.Response, bool, time.Duration, error)) (*http.Response, error) {
	wait := Backoff
	var err error
	for try := 0; try < Tries; try++ {
		var resp *http.Response
		var again bool
		var after time.Duration
		if resp, again, after, err = attempt(); err == nil {
			return resp, nil
		}
		if !again {
			return nil, err
		}
		if try < Tries-1 {
			time.Sleep(max(wait, after))
			wait *= 2
		}
	}
	return nil, fmt.Errorf("%w (gave up after %d tries)", err, Tries)
}

// ErrMismatch marks the error of a file whose bytes do not match the
// sha256 the Hub publishes for it, or that changed while being read: what
// was made from it must not be kept.
var ErrMismatch = errors.New("not the file the Hub publishes")

// errNoRange marks a server that ignores Range.
var errNoRange = errors.New("the server ignores Range requests (it answered 200 with the whole file); tfconv reads only the headers of a remote checkpoint")

// span is the buffer one range request was read into, shared by the
// blocks cut from it. Its memory goes back to spanPool for the next request
// once nothing refers to it: no block the cache keeps, no caller reading
// one (block, advance, WriteTo). Reusing it spares each request a fresh
// buffer that the kernel would first have to fault in and zero.
type span struct {
	buf  []byte
	refs atomic.Int32
}

// block is one kept block: its bytes, within the span they arrived in.
type block struct {
	b []byte
	s *span
}

// spanBytes is the size of a full range request's buffer.
const spanBytes = spanBlocks * blockSize

var spanPool = sync.Pool{New: func() any { return new([spanBytes]byte) }}

// newSpan returns a span for n bytes (empty, with room for n), held once.
// Buffers for requests of more than half a span come from spanPool; a
// header's small reads get their own.
func newSpan(n int64) *span {
	s := &span{}
	if n > spanBytes/2 && n <= spanBytes {
		s.buf = spanPool.Get().(*[spanBytes]byte)[:0]
	} else {
		s.buf = make([]byte, 0, n)
	}
	s.refs.Store(1)
	return s
}

// hold adds a reference to s.
func (s *span) hold() { s.refs.Add(1) }

// release drops a reference; the last returns a pooled buffer.
func (s *span) release() {
	if s.refs.Add(-1) == 0 && cap(s.buf) == spanBytes {
		spanPool.Put((*[spanBytes]byte)(s.buf[:spanBytes]))
		s.buf = nil
	}
}

// fetch returns bytes [start, end] in a span held once for the caller,
// resuming a body cut short from where it stopped; a try counts only when
// it brought nothing.
func (r *Reader) fetch(start, end int64) (*span, error) {
	s := newSpan(end - start + 1)
	buf := s.buf
	wait := Backoff
	var err, cut error
	for try := 0; try < Tries; {
		n := len(buf)
		var retry bool
		var after time.Duration
		buf, retry, after, err = r.get(buf, start+int64(len(buf)), end)
		if err == nil {
			if cap(buf) != cap(s.buf) {
				// get grew it: a new buffer, not the pool's.
				s.release()
				s = &span{}
				s.refs.Store(1)
			}
			s.buf = buf
			return s, nil
		}
		if !retry {
			s.release()
			if cut != nil {
				return nil, fmt.Errorf("%v; resuming: %w", cut, err)
			}
			return nil, err
		}
		if len(buf) > n {
			try, wait, cut = 0, Backoff, err // progress: the range resumes
			continue
		}
		if try++; try < Tries {
			time.Sleep(max(wait, after))
			wait *= 2
		}
	}
	s.release()
	return nil, fmt.Errorf("%w (gave up after %d tries)", err, Tries)
}

// get appends bytes [start, end] to buf (as many as arrived, on an error
// too); retry says whether trying again may help.
func (r *Reader) get(buf []byte, start, end int64) (_ []byte, retry bool, after time.Duration, _ error) {
	resp, retry, after, err := r.send(r.client, http.MethodGet, r.url, fmt.Sprintf("bytes=%d-%d", start, end))
	if err != nil {
		return buf, retry, after, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK && start == 0 && resp.ContentLength == 0:
		return buf, false, 0, nil // an empty file, which some servers answer whole rather than with 416
	case resp.StatusCode == http.StatusOK:
		return buf, false, 0, fmt.Errorf("httprange: %s: %w", r.url, errNoRange)
	case resp.StatusCode == http.StatusNotFound:
		return buf, false, 0, fmt.Errorf("httprange: %s: %s: %w", r.url, resp.Status, fs.ErrNotExist)
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && start == 0 && resp.Header.Get("Content-Range") == "bytes */0":
		return buf, false, 0, nil // an empty file: no range of it exists (its size stays 0)
	case resp.StatusCode != http.StatusPartialContent:
		return buf, false, 0, fmt.Errorf("httprange: %s: %s", r.url, resp.Status)
	}
	total, first, last, err := contentRange(resp.Header.Get("Content-Range"))
	if err != nil || first != start || last > end {
		return buf, false, 0, fmt.Errorf("httprange: %s: Content-Range %q does not answer bytes=%d-%d", r.url, resp.Header.Get("Content-Range"), start, end)
	}
	r.mu.Lock()
	size, etag := r.size, r.etag
	if size == 0 {
		r.size, r.etag = total, resp.Header.Get("ETag")
	}
	r.mu.Unlock()
	if size != 0 && total != size {
		return buf, false, 0, r.fail(fmt.Errorf("httprange: %s: the file changed while being read (%d bytes, then %d): %w", r.url, size, total, ErrMismatch))
	}
	if e := resp.Header.Get("ETag"); size != 0 && e != etag {
		return buf, false, 0, r.fail(fmt.Errorf("httprange: %s: the file changed while being read (ETag %s, then %s): %w", r.url, etag, e, ErrMismatch))
	}
	want := last - first + 1
	n := len(buf)
	if int64(cap(buf)-n) < want {
		buf = append(buf[:n:n], make([]byte, want)...)[:n]
	}
	k, err := io.ReadFull(resp.Body, buf[n:n+int(want)])
	buf = buf[:n+k]
	got := int64(k)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err == nil {
		// Nothing may follow the announced bytes.
		var extra [1]byte
		if m, _ := resp.Body.Read(extra[:]); m > 0 {
			return buf[:n], false, 0, fmt.Errorf("httprange: %s: bytes %d-%d: more bytes received than announced", r.url, first, last)
		}
	}
	if err != nil {
		return buf, true, 0, fmt.Errorf("httprange: %s: bytes %d-%d: the body was cut short (%d bytes received, %d announced): %w", r.url, first, last, got, want, err)
	}
	if got != want {
		return buf, true, 0, fmt.Errorf("httprange: %s: bytes %d-%d: %d bytes received, %d announced", r.url, first, last, got, want)
	}
	if last < end && last+1 < total {
		return buf, true, 0, fmt.Errorf("httprange: %s: bytes %d-%d: the server sent only up to %d", r.url, start, end, last)
	}
	return buf, false, 0, nil
}

// fail records err as the Reader's sticky error and returns it.
func (r *Reader) fail(err error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
	return r.err
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

// nblocks is the number of blocks of the file.
func (r *Reader) nblocks() int64 { return (r.size + blockSize - 1) / blockSize }

// block returns block i (the bytes from i·blockSize), fetching it, with the
// run of missing blocks after it before block lim (the reader's window:
// a small tensor read out of order fetches no bytes of its neighbours),
// when it is neither kept nor on its way. The span the bytes are in is
// held for the caller, who releases it when done with them.
func (r *Reader) block(i, lim int64) ([]byte, *span, error) {
	r.use.Store(useClock.Add(1))
	for {
		r.mu.Lock()
		if r.err != nil {
			err := r.err
			r.mu.Unlock()
			return nil, nil, err
		}
		if b, ok := r.blocks[i]; ok {
			b.s.hold()
			r.mu.Unlock()
			return b.b, b.s, nil
		}
		if ch, ok := r.pending[i]; ok {
			r.mu.Unlock()
			<-ch
			r.mu.Lock()
			b, ok := r.blocks[i]
			if ok {
				b.s.hold()
			}
			r.mu.Unlock()
			if ok {
				return b.b, b.s, nil
			}
			continue // the read-ahead failed or was evicted: fetch it here
		}
		n := int64(1)
		for r.size > 0 && n < spanBlocks && i+n < min(r.nblocks(), lim) {
			if _, ok := r.blocks[i+n]; ok {
				break
			}
			if _, ok := r.pending[i+n]; ok {
				break
			}
			n++
		}
		ch := r.claim(i, n)
		r.mu.Unlock()
		// The bytes loaded, not the cache's: the cache may have
		// dropped them again already.
		s, err := r.load(i, n, ch, false)
		if err != nil {
			return nil, nil, err
		}
		return s.buf[:min(blockSize, len(s.buf))], s, nil
	}
}

// claim marks blocks [i, i+n) as on their way (r.mu held).
func (r *Reader) claim(i, n int64) chan struct{} {
	ch := make(chan struct{})
	for k := i; k < i+n; k++ {
		r.pending[k] = ch
	}
	return ch
}

// load fetches blocks [i, i+n) claimed with ch, keeps them and returns
// the span they are in, held for the caller. A read-ahead (ahead) gives
// its request slot back once the bytes are kept, before it hashes: the
// hash, which may take up the runs other requests landed, does not hold
// back the next request.
func (r *Reader) load(i, n int64, ch chan struct{}, ahead bool) (*span, error) {
	start := i * blockSize
	end := start + n*blockSize - 1
	if r.size > 0 {
		end = min(end, r.size-1)
	}
	s, err := r.fetch(start, end)
	r.mu.Lock()
	for k := i; k < i+n; k++ {
		delete(r.pending, k)
	}
	close(ch)
	if ahead {
		r.inflight--
	}
	if err != nil {
		r.mu.Unlock()
		return nil, err
	}
	b := s.buf
	r.fetched += int64(len(b))
	var added int64
	for k := int64(0); k*blockSize < int64(len(b)) || (k == 0 && len(b) == 0); k++ {
		blk := b[k*blockSize : min((k+1)*blockSize, int64(len(b)))]
		if _, ok := r.blocks[i+k]; !ok && !r.closed {
			s.hold()
			r.blocks[i+k] = block{blk, s}
			added += int64(len(blk))
		}
	}
	r.mu.Unlock()
	// Hashed first, so that evict may drop what the hash has passed.
	err = r.advance()
	evict(r, added, i, i+n)
	if err != nil {
		s.release()
		return nil, err
	}
	return s, nil
}

// advance hashes the kept blocks that extend the hashed prefix and, once
// the whole file is hashed, compares the sum with the published one. One
// caller hashes at a time, outside r.mu, so that reads go on meanwhile (a
// caller that finds another hashing returns: that one hashes what it kept).
func (r *Reader) advance() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil || r.h == nil || r.hashing {
		return r.err
	}
	r.hashing = true
	defer func() { r.hashing = false; r.hashDone.Broadcast() }()
	var run []block
	for r.hashed < r.size {
		run = run[:0]
		n := int64(0)
		for i := (r.hashed + n) / blockSize; r.hashed+n < r.size && len(run) < spanBlocks; i = (r.hashed + n) / blockSize {
			b, ok := r.blocks[i]
			if !ok {
				break
			}
			b.s.hold()
			run = append(run, b)
			n += int64(len(b.b))
		}
		if len(run) == 0 {
			return nil
		}
		r.mu.Unlock()
		for _, b := range run {
			r.h.Write(b.b)
			b.s.release()
		}
		r.mu.Lock()
		r.hashed += n
	}
	return r.check()
}

// check compares the finished hash with the published sha256 (r.mu held).
func (r *Reader) check() error {
	if r.sha256 == "" || r.hashed != r.size || r.h == nil {
		return r.err
	}
	got := hex.EncodeToString(r.h.Sum(nil))
	r.h = nil // compared once
	if got != r.sha256 {
		r.err = fmt.Errorf("httprange: %s: checksum mismatch: the bytes served hash to sha256 %s, the Hub publishes %s for this file (corrupt in transit or at the source); nothing is written from it: %w", r.url, got, r.sha256, ErrMismatch)
	}
	return r.err
}

// Verify hashes whatever part of the file the reads have not (fetching it
// without keeping it) and compares the whole with the published sha256: the
// error a run must stop on, nil when the Hub publishes none. Bytes the reads
// delivered and the cache still keeps are hashed from the cache, so a run
// that calls Verify once it has read what it needs fetches only the bytes
// it never read (and those it read out of file order that the cache had
// to drop before the hash reached them: evict drops those last).
func (r *Reader) Verify() error {
	if r.sha256 == "" {
		return nil
	}
	for {
		if err := r.advance(); err != nil {
			return err
		}
		r.mu.Lock()
		for r.hashing {
			r.hashDone.Wait()
		}
		if r.err != nil || r.h == nil || r.hashed >= r.size {
			err := r.check()
			r.mu.Unlock()
			return err
		}
		start := r.hashed
		if _, kept := r.blocks[start/blockSize]; kept {
			r.mu.Unlock()
			continue
		}
		// Up to the next kept block (or a span), so that nothing kept is
		// fetched again.
		n := int64(1)
		for n < spanBlocks && start+n*blockSize < r.size {
			if _, kept := r.blocks[start/blockSize+n]; kept {
				break
			}
			n++
		}
		end := min(start+n*blockSize, r.size) - 1
		r.hashing = true
		r.mu.Unlock()
		s, err := r.fetch(start, end)
		r.mu.Lock()
		if err == nil {
			r.fetched += int64(len(s.buf))
			r.h.Write(s.buf)
			r.hashed += int64(len(s.buf))
			s.release()
		}
		r.hashing = false
		r.hashDone.Broadcast()
		r.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

// Touched reports whether a tensor's bytes (a Window) were read from the
// file, not only its header: the files a run's output depends on.
func (r *Reader) Touched() bool {
	return r.touched.Load()
}

// evict keeps the shared cache under CacheSize after r added n bytes.
// Blocks already hashed (or of a file with no published sha256) go first,
// down to three quarters of CacheSize: those of the readers whose
// consumers asked for a block least recently first (r among them: a
// read-ahead that lands late does not make its reader the latest used),
// each's from the lowest (a reader moves forward through its file). Blocks not yet hashed are what a run read out of file order (the
// experts of a layer stacked: gate of each, then up of each); dropping one
// costs a second fetch when Verify hashes it, so they go only when the
// cache is still full: then, as before, the least recently used readers
// drop everything and r its lowest blocks. r's blocks [lo, hi), the ones
// it has just loaded for a read, go last of all: a read that goes back to
// the start of a file the hash has passed would otherwise see the blocks it
// is about to copy dropped by its own load and fetch them again.
func evict(r *Reader, n, lo, hi int64) {
	cache.Lock()
	defer cache.Unlock()
	cache.bytes += n
	if cache.bytes <= CacheSize {
		return
	}
	all := slices.Collect(maps.Keys(cache.readers))
	uses := make(map[*Reader]int64, len(all))
	for _, o := range all {
		uses[o] = o.use.Load() // read once: the sort needs a fixed order
	}
	slices.SortFunc(all, func(a, b *Reader) int { return cmp.Compare(uses[a], uses[b]) })
	for _, o := range all {
		if cache.bytes <= CacheSize*3/4 {
			break
		}
		if o == r {
			o.dropHashed(CacheSize*3/4, lo, hi)
		} else {
			o.dropHashed(CacheSize*3/4, 0, 0)
		}
	}
	others := slices.DeleteFunc(all, func(o *Reader) bool { return o == r })
	for cache.bytes > CacheSize {
		var lru *Reader
		for _, o := range others {
			o.mu.Lock()
			has := len(o.blocks) > 0
			o.mu.Unlock()
			if has {
				lru = o
				break
			}
		}
		if lru == nil {
			break
		}
		lru.mu.Lock()
		for k, b := range lru.blocks {
			cache.bytes -= int64(len(b.b))
			delete(lru.blocks, k)
			b.s.release()
		}
		lru.mu.Unlock()
	}
	if cache.bytes <= CacheSize {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range slices.Sorted(maps.Keys(r.blocks)) {
		if cache.bytes <= CacheSize*3/4 {
			break
		}
		r.drop(k)
	}
}

// drop removes block k from r's (r.mu and cache's lock held).
func (r *Reader) drop(k int64) {
	b := r.blocks[k]
	cache.bytes -= int64(len(b.b))
	delete(r.blocks, k)
	b.s.release()
}

// dropHashed drops r's blocks that the hash has passed, from the lowest,
// but for blocks [lo, hi), while the cache holds more than target bytes
// (cache's lock held).
func (r *Reader) dropHashed(target, lo, hi int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range slices.Sorted(maps.Keys(r.blocks)) {
		if cache.bytes <= target || (r.h != nil && (k+1)*blockSize > r.hashed) {
			break
		}
		if k < lo || k >= hi {
			r.drop(k)
		}
	}
}

// readAhead starts requests for the missing spans of blocks [from, to),
// Parallel at a time (r.mu held).
func (r *Reader) readAhead(from, to int64) {
	last := min(to, r.nblocks())
	for i := from; i < last && r.inflight < Parallel; {
		if _, ok := r.blocks[i]; ok {
			i++
			continue
		}
		if _, ok := r.pending[i]; ok {
			i++
			continue
		}
		n := int64(1)
		for n < spanBlocks && i+n < last {
			_, kept := r.blocks[i+n]
			_, coming := r.pending[i+n]
			if kept || coming {
				break
			}
			n++
		}
		ch := r.claim(i, n)
		r.inflight++
		go func(i, n int64) {
			// An error shows when the block is read.
			if s, err := r.load(i, n, ch, true); err == nil {
				s.release()
			}
		}(i, n)
		i += n
	}
}

// Window is the bytes [off, off+n) of r, for one consumer (a tensor):
// its reads ahead stop at the window's end, so that a consumer that reads
// the file's tensors out of order (the experts of a layer stacked, gate of
// each, then up of each) does not fetch, and lose again to the cache, the
// tensors in between.
func (r *Reader) Window(off, n int64) *io.SectionReader {
	return io.NewSectionReader(window{r, off + n}, off, n)
}

type window struct {
	r   *Reader
	end int64
}

func (w window) ReadAt(p []byte, off int64) (int, error) {
	if !w.r.touched.Load() {
		w.r.touched.Store(true)
	}
	return w.r.readAt(p, off, w.end)
}

// ReadAt reads through the block cache. A read that continues a run of
// sequential reads of at least one span (tensor data, not a header's
// small pieces) starts requests for what follows it.
func (r *Reader) ReadAt(p []byte, off int64) (int, error) { return r.readAt(p, off, r.size) }

// readAt is ReadAt reading ahead no further than limit.
func (r *Reader) readAt(p []byte, off, limit int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("httprange: %s: negative offset", r.url)
	}
	r.note(off, int64(len(p)), limit)
	n := 0
	for n < len(p) {
		pos := off + int64(n)
		if pos >= r.size {
			return n, io.EOF
		}
		b, s, err := r.block(pos/blockSize, (limit+blockSize-1)/blockSize)
		if err != nil {
			return n, err
		}
		k := copy(p[n:], b[pos%blockSize:])
		s.release()
		if k == 0 {
			return n, io.ErrUnexpectedEOF
		}
		n += k
	}
	return n, nil
}

// note records a read of bytes [off, off+n) and, when it continues a run
// of sequential reads of at least one span (tensor data, not a header's
// small pieces), starts requests for what follows it, up to limit.
func (r *Reader) note(off, n, limit int64) {
	if n <= 0 || off >= r.size {
		return
	}
	first, end := off/blockSize, (min(off+n, r.size)-1)/blockSize
	r.mu.Lock()
	defer r.mu.Unlock()
	if first == r.next || first == r.next-1 {
		r.run += n
	} else {
		r.run = n
	}
	r.next = end + 1
	if r.run >= spanBlocks*blockSize {
		r.readAhead(first, min(end+1+int64(ReadAhead)*spanBlocks, (limit+blockSize-1)/blockSize))
	}
}

// Stream is the bytes [off, off+n) of r read once, front to back, by one
// consumer (a tensor), reading ahead no further than their end, as Window.
// It is an io.WriterTo as well: io.Copy hands the writer the cache's blocks
// themselves, with no copy into a buffer of its own between (a tensor
// copied unchanged into the output).
func (r *Reader) Stream(off, n int64) io.Reader {
	return &stream{r: r, pos: off, end: off + n}
}

type stream struct {
	r        *Reader
	pos, end int64
}

func (s *stream) Read(p []byte) (int, error) {
	if s.pos >= s.end {
		return 0, io.EOF
	}
	s.r.touched.Store(true)
	n, err := s.r.readAt(p[:min(int64(len(p)), s.end-s.pos)], s.pos, s.end)
	s.pos += int64(n)
	return n, err
}

// streamStep is how much WriteTo reports to note at a time: the size of
// the reads io.Copy would make.
const streamStep = 1 << 20

// WriteTo writes the stream's bytes to w a block at a time, straight from
// the cache.
func (s *stream) WriteTo(w io.Writer) (int64, error) {
	s.r.touched.Store(true)
	var total int64
	lim := (s.end + blockSize - 1) / blockSize
	for s.pos < s.end {
		step := min(s.end, s.pos+streamStep)
		s.r.note(s.pos, step-s.pos, s.end)
		for s.pos < step {
			if s.pos >= s.r.size {
				return total, io.ErrUnexpectedEOF
			}
			b, sp, err := s.r.block(s.pos/blockSize, lim)
			if err != nil {
				return total, err
			}
			from := s.pos % blockSize
			to := min(int64(len(b)), from+step-s.pos)
			if to <= from {
				sp.release()
				return total, io.ErrUnexpectedEOF
			}
			k, err := w.Write(b[from:to])
			sp.release()
			total += int64(k)
			s.pos += int64(k)
			if err == nil && int64(k) != to-from {
				err = io.ErrShortWrite
			}
			if err != nil {
				return total, err
			}
		}
	}
	return total, nil
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
	resp, err := r.retry(func() (*http.Response, bool, time.Duration, error) {
		return r.send(r.client, http.MethodGet, u, "")
	})
	if err != nil {
		return nil, err
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
		if resp.ContentLength >= 0 && int64(len(b)) != resp.ContentLength {
			return nil, fmt.Errorf("httprange: %s: %d bytes received, %d announced", u, len(b), resp.ContentLength)
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

// URL is the address read (on the Hub, at the commit resolved).
func (r *Reader) URL() string { return r.url }

// Size is the resource's length in bytes.
func (r *Reader) Size() int64 { return r.size }
