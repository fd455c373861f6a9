// Package hubtest is a Hugging Face Hub for tests, on loopback: it serves
// repositories in the Hub's URL layout (ENDPOINT/ORG/REPO/resolve/REV/FILE)
// with the Hub's headers (X-Repo-Commit, ETag, and for an LFS file
// X-Linked-Etag and X-Linked-Size, the file's sha256 and size, with a 302
// to a CDN host that serves the bytes with Range, Content-Range and
// Accept-Ranges), and injects faults on request. A safetensors file's
// tensor bytes are generated deterministically from its name and offset as
// they are served, so a terabyte checkpoint needs no disk; its sha256 is
// computed once, by streaming the generator, when first asked for.
//
// The CDN is the same server under another host name (localhost where the
// endpoint is 127.0.0.1), as the Hub's is another host: a client that
// forwards the token on the redirect shows in Server.CDNAuth.
package hubtest

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tfconv/tfconv/formats/safetensors"
	"github.com/tfconv/tfconv/tensor"
)

// Tensor is one tensor of a generated safetensors file.
type Tensor struct {
	Name  string
	DType tensor.DType
	Shape tensor.Shape
}

// File is one file of a repository: Data as it is, or, for a safetensors
// file, Tensors whose bytes are generated.
type File struct {
	Name    string
	Data    []byte
	Tensors []Tensor
	// LFS files get X-Linked-Etag (their sha256) and a redirect to the
	// CDN; a generated file is always one.
	LFS bool

	header  []byte  // the safetensors header, length prefix included
	offsets []int64 // each tensor's data offset in the file
	size    int64
	seed    uint64
	version atomic.Int64 // bumped by ChangeFile: other bytes, another ETag
	shaMu   sync.Mutex
	sha     map[int64]string // by version
}

// Repo is a repository at one commit (its main branch).
type Repo struct {
	ID     string // ORG/NAME
	Commit string // 40 hex digits
	Files  map[string]*File
}

// NewRepo makes a repository of files; its commit is derived from its id.
func NewRepo(id string, files ...*File) (*Repo, error) {
	sum := sha1.Sum([]byte("hubtest commit " + id))
	r := &Repo{ID: id, Commit: hex.EncodeToString(sum[:]), Files: map[string]*File{}}
	for _, f := range files {
		if err := f.layout(); err != nil {
			return nil, fmt.Errorf("hubtest: %s/%s: %w", id, f.Name, err)
		}
		r.Files[f.Name] = f
	}
	return r, nil
}

// layout builds a generated file's header and offsets.
func (f *File) layout() error {
	h := sha256.Sum256([]byte(f.Name))
	f.seed = binary.LittleEndian.Uint64(h[:])
	if f.Tensors == nil {
		f.size = int64(len(f.Data))
		return nil
	}
	f.LFS = true
	infos := make([]tensor.Info, len(f.Tensors))
	for i, t := range f.Tensors {
		infos[i] = tensor.Info{Name: t.Name, DType: t.DType, Shape: t.Shape}
	}
	var hb strings.Builder
	if _, err := safetensors.NewWriter(&hb, infos, tensor.Metadata{{Key: "format", Value: tensor.String("pt")}}); err != nil {
		return err
	}
	f.header = []byte(hb.String())
	off := int64(len(f.header))
	for _, t := range f.Tensors {
		n, err := t.DType.ShapeBytes(t.Shape)
		if err != nil {
			return fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		f.offsets = append(f.offsets, off)
		off += n
	}
	f.size = off
	return nil
}

// Size is the file's length in bytes.
func (f *File) Size() int64 { return f.size }

// ReadAt generates the file's bytes [off, off+len(p)) at its current
// version.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	return f.readAt(p, off, f.version.Load())
}

func (f *File) readAt(p []byte, off, version int64) (int, error) {
	if f.Tensors == nil {
		if off >= int64(len(f.Data)) {
			return 0, io.EOF
		}
		n := copy(p, f.Data[off:])
		if n < len(p) {
			return n, io.EOF
		}
		return n, nil
	}
	n := 0
	for n < len(p) {
		pos := off + int64(n)
		if pos >= f.size {
			return n, io.EOF
		}
		if pos < int64(len(f.header)) {
			n += copy(p[n:], f.header[pos:])
			continue
		}
		// The tensor holding pos: the last whose offset is ≤ pos.
		lo, hi := 0, len(f.offsets)-1
		for lo < hi {
			mid := (lo + hi + 1) / 2
			if f.offsets[mid] <= pos {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		end := f.size
		if lo+1 < len(f.offsets) {
			end = f.offsets[lo+1]
		}
		k := int(min(int64(len(p)-n), end-pos))
		generate(p[n:n+k], f.Tensors[lo].DType, f.seed^uint64(lo)*0x9e3779b97f4a7c15^uint64(version)<<48, pos-f.offsets[lo])
		n += k
	}
	return n, nil
}

// generate fills p with the bytes of a tensor of dtype d from byte rel of
// its data: values of plausible size for the dtype (no NaN, no Inf), a
// function of seed and position only, 8 bytes from each random word.
func generate(p []byte, d tensor.DType, seed uint64, rel int64) {
	var word [8]byte
	i := 0
	for i < len(p) {
		pos := rel + int64(i)
		x := shape(splitmix(seed+uint64(pos/8)*0xbf58476d1ce4e5b9), d)
		if pos%8 == 0 && len(p)-i >= 8 {
			binary.LittleEndian.PutUint64(p[i:], x)
			i += 8
			continue
		}
		binary.LittleEndian.PutUint64(word[:], x)
		i += copy(p[i:], word[pos%8:])
	}
}

// shape turns a random word into 8 bytes of valid values of d: FP8 of
// magnitude in [1/8, 2), BF16 and F16 near 2^-7 and 2^-7·… , F32 near
// 1e-3 (what block scales hold).
func shape(x uint64, d tensor.DType) uint64 {
	switch d {
	case tensor.F8_E4M3:
		return x&0x9f9f9f9f9f9f9f9f | 0x2020202020202020
	case tensor.BF16:
		return x&0x83ff83ff83ff83ff | 0x3c003c003c003c00
	case tensor.F16:
		return x&0x83ff83ff83ff83ff | 0x2000200020002000
	case tensor.F32:
		lo := math.Float32bits(1e-3 * (1 + float32(x&0xffff)/65536))
		hi := math.Float32bits(1e-3 * (1 + float32(x>>32&0xffff)/65536))
		return uint64(hi)<<32 | uint64(lo)
	}
	return x
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// SHA256 is the file's sha256 at its current version, computed once by
// streaming the generator.
func (f *File) SHA256() string {
	v := f.version.Load()
	f.shaMu.Lock()
	defer f.shaMu.Unlock()
	if s, ok := f.sha[v]; ok {
		return s
	}
	h := sha256.New()
	buf := make([]byte, 4<<20)
	for off := int64(0); off < f.size; off += int64(len(buf)) {
		n, _ := f.readAt(buf[:min(int64(len(buf)), f.size-off)], off, v)
		h.Write(buf[:n])
	}
	if f.sha == nil {
		f.sha = map[int64]string{}
	}
	f.sha[v] = hex.EncodeToString(h.Sum(nil))
	return f.sha[v]
}

// gitSHA1 is the git blob id, the Hub's ETag for a file not in LFS.
func (f *File) gitSHA1() string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(f.Data))
	h.Write(f.Data)
	return hex.EncodeToString(h.Sum(nil))
}

// etag is what the Hub answers as ETag: the sha256 of an LFS file, the
// git blob id of another.
func (f *File) etag() string {
	if f.LFS {
		return `"` + f.SHA256() + `"`
	}
	return `"` + f.gitSHA1() + `"`
}

// Faults are what the server does wrong, counted down per data request
// (a GET of an LFS file's bytes on the CDN).
type Faults struct {
	// Drop cuts the connection after DropAfter body bytes, Drop times.
	Drop      int
	DropAfter int64
	// Status500 and TooMany answer 500, or 429 with Retry-After
	// RetryAfter seconds, that many times.
	Status500, TooMany int
	RetryAfter         int
	// Truncate sends only half of every body (the connection then
	// closes), always.
	Truncate bool
	// Stall sends the headers and then nothing, that many times.
	Stall int
	// Down answers 503 to everything, the endpoint too.
	Down bool
	// Corrupt flips the byte at that offset of that file as it is served.
	Corrupt     string
	CorruptByte int64
	// ChangeAfter changes file Change (ChangeFile) once that many data
	// requests for it were served.
	Change      string
	ChangeAfter int
}

// Server is a running test Hub.
type Server struct {
	URL string // the endpoint (HF_ENDPOINT): http://127.0.0.1:PORT
	// Token, when set, is required on the endpoint (401 without it).
	Token string

	srv   *httptest.Server
	cdn   string // http://localhost:PORT
	mu    sync.Mutex
	repos map[string]*Repo
	f     Faults
	// CDNAuth counts CDN requests that carried an Authorization header;
	// Requests counts every request.
	CDNAuth, Requests atomic.Int64
	changeSeen        int
	log               []string
	served            map[string]int64 // body bytes sent, by file name
}

// Start serves repos on loopback until Close.
func Start(repos ...*Repo) *Server {
	s := &Server{repos: map[string]*Repo{}}
	for _, r := range repos {
		s.repos[r.ID] = r
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	_, port, _ := net.SplitHostPort(s.srv.Listener.Addr().String())
	s.cdn = "http://localhost:" + port
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// SetFaults replaces the faults to inject.
func (s *Server) SetFaults(f Faults) {
	s.mu.Lock()
	s.f, s.changeSeen = f, 0
	s.mu.Unlock()
}

// Served is the number of body bytes of each file (by name) sent from the
// CDN since the server started or since the last ResetServed: what a
// client downloaded of it, so that a test can tell a file read twice.
func (s *Server) Served() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.served)
}

// ResetServed sets every file's Served count to zero.
func (s *Server) ResetServed() {
	s.mu.Lock()
	s.served = nil
	s.mu.Unlock()
}

func (s *Server) count(name string, n int) {
	s.mu.Lock()
	if s.served == nil {
		s.served = map[string]int64{}
	}
	s.served[name] += int64(n)
	s.mu.Unlock()
}

// Log is every request as "METHOD HOST PATH RANGE", in order.
func (s *Server) Log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.log...)
}

// ChangeFile gives a file other bytes (and so another sha256 and ETag), as
// a push to the branch would, but at the same commit: what a server whose
// file changes under a reader looks like.
func (f *File) ChangeFile() { f.version.Add(1) }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.Requests.Add(1)
	s.mu.Lock()
	s.log = append(s.log, r.Method+" "+r.Host+" "+r.URL.Path+" "+r.Header.Get("Range"))
	down := s.f.Down
	s.mu.Unlock()
	if down {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 5)
	if strings.HasPrefix(r.Host, "localhost:") {
		if r.Header.Get("Authorization") != "" {
			s.CDNAuth.Add(1)
		}
		// /cdn/ORG/NAME/COMMIT/FILE
		if len(parts) == 5 && parts[0] == "cdn" {
			if repo, f := s.file(parts[1]+"/"+parts[2], parts[3], parts[4]); f != nil {
				s.serveData(w, r, repo, f)
				return
			}
		}
		http.NotFound(w, r)
		return
	}
	if s.Token != "" && r.Header.Get("Authorization") != "Bearer "+s.Token {
		http.Error(w, "Invalid credentials", http.StatusUnauthorized)
		return
	}
	if len(parts) == 5 && parts[0] == "api" && parts[1] == "models" {
		// /api/models/ORG/NAME[/revision/REV]
		s.serveAPI(w, r, parts[2]+"/"+parts[3], parts[4])
		return
	}
	if len(parts) < 5 || parts[2] != "resolve" {
		http.NotFound(w, r)
		return
	}
	repo, f := s.file(parts[0]+"/"+parts[1], parts[3], parts[4])
	if repo == nil {
		w.Header().Set("X-Error-Code", "RepoNotFound")
		http.Error(w, "Repository not found", http.StatusNotFound)
		return
	}
	w.Header().Set("X-Repo-Commit", repo.Commit)
	if f == nil {
		w.Header().Set("X-Error-Code", "EntryNotFound")
		http.Error(w, "Entry not found", http.StatusNotFound)
		return
	}
	w.Header().Set("ETag", f.etag())
	if !f.LFS {
		w.Header().Set("Accept-Ranges", "bytes")
		http.ServeContent(w, r, f.Name, time.Time{}, io.NewSectionReader(f, 0, f.size))
		return
	}
	w.Header().Set("X-Linked-Etag", `"`+f.SHA256()+`"`)
	w.Header().Set("X-Linked-Size", strconv.FormatInt(f.size, 10))
	w.Header().Set("Location", s.cdn+"/cdn/"+repo.ID+"/"+repo.Commit+"/"+f.Name)
	w.WriteHeader(http.StatusFound)
}

// file finds a repository's file at rev (main or the commit).
func (s *Server) file(id, rev, name string) (*Repo, *File) {
	repo := s.repos[id]
	if repo == nil || (rev != "main" && rev != repo.Commit) {
		return nil, nil
	}
	return repo, repo.Files[name]
}

func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request, id, rest string) {
	repo := s.repos[id]
	rev, ok := strings.CutPrefix(rest, "revision/")
	if repo == nil || !ok || (rev != "main" && rev != repo.Commit) {
		http.NotFound(w, r)
		return
	}
	type sibling struct {
		Name string `json:"rfilename"`
	}
	out := struct {
		ID       string    `json:"id"`
		SHA      string    `json:"sha"`
		Siblings []sibling `json:"siblings"`
	}{ID: id, SHA: repo.Commit}
	for n := range repo.Files {
		out.Siblings = append(out.Siblings, sibling{n})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// serveData serves an LFS file's bytes from the CDN, faults applied.
func (s *Server) serveData(w http.ResponseWriter, r *http.Request, repo *Repo, f *File) {
	s.mu.Lock()
	fl := &s.f
	var drop, stall, truncate bool
	status := 0
	switch {
	case r.Method != http.MethodGet:
	case fl.Status500 > 0:
		fl.Status500--
		status = http.StatusInternalServerError
	case fl.TooMany > 0:
		fl.TooMany--
		status = http.StatusTooManyRequests
	case fl.Stall > 0:
		fl.Stall--
		stall = true
	case fl.Drop > 0 && r.Header.Get("Range") != "" && !strings.HasPrefix(r.Header.Get("Range"), "bytes=0-"):
		fl.Drop--
		drop = true
	}
	truncate = fl.Truncate && r.Method == http.MethodGet
	if fl.Change == f.Name && r.Method == http.MethodGet {
		if s.changeSeen++; s.changeSeen == fl.ChangeAfter {
			f.ChangeFile()
		}
	}
	corrupt := int64(-1)
	if fl.Corrupt == f.Name {
		corrupt = fl.CorruptByte
	}
	dropAfter, retryAfter := fl.DropAfter, fl.RetryAfter
	s.mu.Unlock()
	switch status {
	case http.StatusTooManyRequests:
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
		fallthrough
	case http.StatusInternalServerError:
		http.Error(w, http.StatusText(status), status)
		return
	}
	w.Header().Set("ETag", `"`+f.SHA256()+`"`)
	w.Header().Set("Accept-Ranges", "bytes")
	var body io.ReadSeeker = io.NewSectionReader(f, 0, f.size)
	if corrupt >= 0 {
		body = io.NewSectionReader(corrupted{f, corrupt}, 0, f.size)
	}
	cw := &cutWriter{ResponseWriter: w, left: -1, sent: func(n int) { s.count(f.Name, n) }}
	if stall {
		cw.stall = r.Context().Done()
	}
	if drop {
		cw.left = dropAfter
	}
	if truncate {
		cw.half = true
	}
	http.ServeContent(cw, r, f.Name, time.Time{}, body)
}

// corrupted is a file with one byte flipped.
type corrupted struct {
	f   *File
	off int64
}

func (c corrupted) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.f.ReadAt(p, off)
	if c.off >= off && c.off < off+int64(n) {
		p[c.off-off] ^= 0xff
	}
	return n, err
}

// cutWriter ends the connection after left body bytes (left ≥ 0), or after
// half the announced length (half); with stall set it sends the headers and
// then nothing until stall is closed (the client gave up).
type cutWriter struct {
	http.ResponseWriter
	left  int64
	half  bool
	stall <-chan struct{}
	sent  func(int) // counts the body bytes written
}

func (c *cutWriter) WriteHeader(code int) {
	if c.half {
		if n, err := strconv.ParseInt(c.Header().Get("Content-Length"), 10, 64); err == nil {
			c.left = n / 2
		}
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *cutWriter) Write(p []byte) (int, error) {
	if c.stall != nil {
		c.ResponseWriter.(http.Flusher).Flush()
		<-c.stall
		panic(http.ErrAbortHandler)
	}
	// Bytes are counted before they are written (and what a write did not
	// send taken back after): a client can hold them, and a test read
	// Served, before Write returns.
	if c.left < 0 {
		return c.write(p)
	}
	if int64(len(p)) > c.left {
		c.write(p[:c.left])
		c.ResponseWriter.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the connection is cut, not finished
	}
	c.left -= int64(len(p))
	return c.write(p)
}

func (c *cutWriter) write(p []byte) (int, error) {
	c.sent(len(p))
	n, err := c.ResponseWriter.Write(p)
	if n < len(p) {
		c.sent(n - len(p))
	}
	return n, err
}
