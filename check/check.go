package check

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/formats/native"
	"github.com/tfconv/tfconv/formats/pytorch"
	"github.com/tfconv/tfconv/formats/safetensors"
	"github.com/tfconv/tfconv/internal/httprange"
	"github.com/tfconv/tfconv/internal/progress"
	"github.com/tfconv/tfconv/sniff"
	"github.com/tfconv/tfconv/tensor"
)

// Finding is one defect.
type Finding struct {
	Rule     string   // a Rules id
	Severity Severity // the rule's severity
	File     string   // the file it is in
	Offset   int64    // absolute byte offset in File; -1 when the defect has no position
	Item     string   // `tensor "x"`, `key "k"`, or ""
	Message  string
}

func (f Finding) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %s", f.Severity, f.Rule, f.File)
	if f.Offset >= 0 {
		fmt.Fprintf(&b, ": offset %d", f.Offset)
	}
	if f.Item != "" {
		b.WriteString(": " + f.Item)
	}
	b.WriteString(": " + f.Message)
	return b.String()
}

// Report is the result of checking one checkpoint.
type Report struct {
	Path     string
	Format   string   // "safetensors", "gguf", "native", "pytorch", or "none" (not-a-checkpoint)
	Files    []string // every file read (shards in order)
	Findings []Finding

	counts map[[2]string]int // findings per file and rule, for MaxPerRule
	remote bool              // files are URLs, read with HTTP range requests

	// meter counts the tensor bytes scanned against those known so far
	// (a shard's are added when the shard is opened); nil: silent.
	meter           *progress.Meter
	scanned, toScan int64
}

// expect adds the bytes of infos to those the scan will read.
func (r *Report) expect(infos ...tensor.Info) {
	for _, t := range infos {
		r.toScan += t.Size
	}
	r.meter.Set(r.scanned, r.toScan)
}

// didScan counts n bytes read by the scan.
func (r *Report) didScan(n int64) {
	r.scanned += n
	r.meter.Set(r.scanned, r.toScan)
}

// Options tune CheckWith.
type Options struct {
	// Progress, when not nil, receives a progress line of the bytes the
	// scan for NaN, Inf and checksums reads (every tensor's), with ETA.
	Progress io.Writer
}

// Check is CheckWith without options.
func Check(path string) (*Report, error) { return CheckWith(path, Options{}) }

// OK reports whether no finding is an error (warnings are allowed).
func (r *Report) OK() bool {
	for _, f := range r.Findings {
		if f.Severity == Error {
			return false
		}
	}
	return true
}

// HasRule reports whether some finding has the given rule id.
func (r *Report) HasRule(id string) bool {
	for _, f := range r.Findings {
		if f.Rule == id {
			return true
		}
	}
	return false
}

// CheckWith validates the checkpoint at path (see the package doc for what it
// reads) and returns every finding. The error is for files that cannot be
// read at all (missing, unreadable, a directory without a checkpoint);
// defects of the content are findings, never errors.
func CheckWith(path string, o Options) (*Report, error) {
	meter := progress.New(o.Progress, "check", 0, progress.Bytes, "")
	defer meter.Finish()
	return checkPath(path, meter)
}

func checkPath(path string, meter *progress.Meter) (*Report, error) {
	if httprange.IsRemote(path) {
		return checkRemote(path, meter)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	if st.IsDir() {
		// A PEFT adapter directory's weights are checked as any other file.
		for _, name := range []string{safetensors.SingleName, safetensors.IndexName, pytorch.SingleName, pytorch.IndexName,
			safetensors.AdapterName, pytorch.AdapterName} {
			p := filepath.Join(path, name)
			if _, err := os.Stat(p); err == nil {
				r, err := checkPath(p, meter)
				if r != nil {
					r.Path = path
				}
				return r, err
			}
		}
		return nil, fmt.Errorf("check: %s: no %s, %s, %s or %s: %w", path, safetensors.SingleName, safetensors.IndexName,
			pytorch.SingleName, pytorch.IndexName, fs.ErrNotExist)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("check: %s is not a regular file", path)
	}
	head := make([]byte, sniff.HeadLen)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	n, err := io.ReadFull(f, head)
	f.Close()
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("check: %s: %w", path, err)
	}
	return checkFile(&Report{Path: path, meter: meter}, path, head[:n])
}

// checkRemote checks a file or set read over HTTP (URLs as inspect takes
// them): the same walk, each file read with range requests. A bare
// hf://ORG/REPO checks its model.safetensors, else its index.
func checkRemote(path string, meter *progress.Meter) (*Report, error) {
	u, _, err := httprange.Locate(path, safetensors.FolderNames)
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	r := &Report{Path: path, remote: true, meter: meter}
	if _, _, _, ok := gguf.ParseSplitName(u); ok {
		// Every shard is read by the split walk itself.
		return checkFile(r, u, []byte("GGUF"))
	}
	rd, err := httprange.Open(u)
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	head := make([]byte, min(sniff.HeadLen, rd.Size()))
	if _, err := rd.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("check: %w", err)
	}
	return checkFile(r, u, head)
}

// checkFile checks the file at path, whose first bytes are head, by its
// format.
func checkFile(r *Report, path string, head []byte) (*Report, error) {
	var err error
	kind := sniff.Format(head, path)
	if nc := sniff.NotCheckpoint(kind, head, path); nc != nil {
		// Not a format check reads: one finding saying what the file is.
		r.Format = "none"
		r.Files = append(r.Files, path)
		r.notCheckpoint(path, nc)
		return r, nil
	}
	switch kind {
	case sniff.GGUF:
		r.Format = "gguf"
		if _, _, _, ok := gguf.ParseSplitName(path); ok {
			err = checkGGUFSplit(r, path)
		} else {
			err = checkGGUFFile(r, path, nil)
		}
	case sniff.Native:
		r.Format = "native"
		err = checkNative(r, path)
	case sniff.PyTorch:
		r.Format = "pytorch"
		var ts []placedInfo
		if ts, err = checkPyTorch(r, path); err == nil {
			checkInt8Scales(r, ts)
		}
	case sniff.PyTorchIndex:
		r.Format = "pytorch"
		err = checkPyTorchIndex(r, path)
	case sniff.SafetensorsIndex:
		r.Format = "safetensors"
		err = checkIndex(r, path)
	default:
		r.Format = "safetensors"
		var infos []tensor.Info
		if _, infos, err = checkSafetensorsFile(r, path); err == nil {
			checkInt8Scales(r, placed(path, infos))
		}
	}
	if err != nil {
		return nil, err
	}
	sort.SliceStable(r.Findings, func(i, j int) bool {
		a, b := r.Findings[i], r.Findings[j]
		if a.File != b.File {
			return fileIndex(r.Files, a.File) < fileIndex(r.Files, b.File)
		}
		return a.Offset < b.Offset
	})
	return r, nil
}

// notCheckpoint reports sniff's error for a file that is no checkpoint.
func (r *Report) notCheckpoint(path string, nc error) {
	var fe *tensor.FormatError
	msg := nc.Error()
	if errors.As(nc, &fe) {
		msg = fe.Msg
	}
	r.add("not-a-checkpoint", path, -1, "", "%s", msg)
}

func fileIndex(files []string, f string) int {
	for i, x := range files {
		if x == f {
			return i
		}
	}
	return len(files)
}

// MaxPerRule caps the findings of one rule in one file. A hostile header
// can repeat a defect a million times; the first hundred say all there is
// to say, and the cap keeps the report's memory bounded.
const MaxPerRule = 100

// add records a finding under rule id; the severity comes from Rules.
func (r *Report) add(id, file string, off int64, item, format string, args ...any) {
	sev := Error
	if rule, ok := ruleByID[id]; ok {
		sev = rule.Severity
	}
	if r.counts == nil {
		r.counts = map[[2]string]int{}
	}
	k := [2]string{file, id}
	r.counts[k]++
	switch n := r.counts[k]; {
	case n == MaxPerRule+1:
		r.Findings = append(r.Findings, Finding{Rule: id, Severity: sev, File: file, Offset: -1,
			Message: fmt.Sprintf("more findings of this rule are not listed (the limit is %d per rule and file)", MaxPerRule)})
		return
	case n > MaxPerRule:
		return
	}
	r.Findings = append(r.Findings, Finding{Rule: id, Severity: sev, File: file, Offset: off, Item: item, Message: fmt.Sprintf(format, args...)})
}

// errorsIn counts the error findings about file.
func (r *Report) errorsIn(file string) int {
	n := 0
	for _, f := range r.Findings {
		if f.File == file && f.Severity == Error {
			n++
		}
	}
	return n
}

// checkedFile is a file being checked: a local file, or one read over HTTP.
type checkedFile interface {
	io.Reader
	io.ReaderAt
	io.Closer
}

// remoteFile is a file read over HTTP; closing it has nothing to release.
type remoteFile struct{ *io.SectionReader }

func (remoteFile) Close() error { return nil }

// beside names the file name in path's folder (a shard beside its index):
// a path, or a URL when the report reads over HTTP.
func (r *Report) beside(path, name string) string {
	if r.remote {
		return path[:strings.LastIndexByte(path, '/')+1] + url.PathEscape(name)
	}
	return filepath.Join(filepath.Dir(path), name)
}

// openFile opens path and records it in r.Files.
func (r *Report) openFile(path string) (checkedFile, int64, error) {
	if r.remote {
		rd, err := httprange.Open(path)
		if err != nil {
			return nil, 0, fmt.Errorf("check: %w", err)
		}
		r.Files = append(r.Files, path)
		return remoteFile{io.NewSectionReader(rd, 0, rd.Size())}, rd.Size(), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("check: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("check: %w", err)
	}
	r.Files = append(r.Files, path)
	return f, st.Size(), nil
}

// polyglotMagic names the format whose file starts with b, or "".
func polyglotMagic(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("GGUF")):
		return "GGUF"
	case bytes.HasPrefix(b, []byte(native.Magic)):
		return "tfconv native"
	case len(b) >= 9 && b[8] == '{' && b[5]|b[6]|b[7] == 0:
		// An 8-byte little-endian header length of at most 2^40, then
		// the JSON header.
		return "safetensors"
	}
	return ""
}

// checkTrailing records trailing bytes [from, size) under rule, and a
// polyglot finding when they open another format's file.
func (r *Report) checkTrailing(rule, file string, rd io.ReaderAt, from, size int64, what string) {
	r.add(rule, file, from, "", "%d trailing bytes after %s", size-from, what)
	head := make([]byte, 16)
	n, _ := rd.ReadAt(head, from)
	if m := polyglotMagic(head[:n]); m != "" {
		r.add("polyglot", file, from, "", "the trailing bytes start a %s file: the file can be read as two formats", m)
	}
}
