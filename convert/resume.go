package convert

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/internal/atomicfile"
)

// ResumeSuffix ends the name of the record a split run keeps beside its
// output while it runs (DST.gguf.tfconv-resume; with --part K/N,
// DST.gguf.part-K-of-N.tfconv-resume): the plan's identity and the sha256
// of every shard finished so far. A run that succeeds removes it; one that
// is killed or fails leaves it, with its finished shards, for --resume.
const ResumeSuffix = ".tfconv-resume"

// resumeRecord is the record's JSON.
type resumeRecord struct {
	Tool    string            `json:"tool"` // "tfconv"
	Command string            `json:"command"`
	Options map[string]string `json:"options"`
	Sources []resumeSource    `json:"sources"`
	// Plan is every shard of the set as planned: a shard whose header
	// (metadata, tensor names, types, shapes) or size changed is another
	// plan.
	Plan []resumeShard `json:"plan"`
	// Done are the shards written, in order, with their sha256.
	Done []resumeShard `json:"done"`
}

type resumeSource struct {
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	ModTime string `json:"mtime,omitempty"`
}

type resumeShard struct {
	Name   string `json:"name"`
	Bytes  int64  `json:"bytes,omitempty"`
	Header string `json:"header_sha256,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
}

// resumeIdentity is the identity of a run: what it reads (each source
// file's path, size and modification time) and what it plans.
func resumeIdentity(command string, options map[string]string, c *checkpoint.Checkpoint, layout []gguf.Shard) resumeRecord {
	r := resumeRecord{Tool: "tfconv", Command: command, Options: options}
	for _, f := range c.Files {
		s := resumeSource{Path: f.Path, Size: f.Size}
		if abs, err := filepath.Abs(f.Path); err == nil && !strings.Contains(f.Path, "://") {
			s.Path = abs
		}
		if st, err := os.Stat(f.Path); err == nil {
			s.ModTime = st.ModTime().UTC().Format(time.RFC3339Nano)
		}
		r.Sources = append(r.Sources, s)
	}
	for _, sh := range layout {
		r.Plan = append(r.Plan, resumeShard{Name: filepath.Base(sh.Name), Bytes: sh.Size, Header: hex.EncodeToString(sh.HeaderSHA256[:])})
	}
	return r
}

// differs names what differs between an earlier run's record and this
// run's identity, or returns "".
func (r *resumeRecord) differs(now *resumeRecord) string {
	var d []string
	if r.Command != now.Command {
		d = append(d, fmt.Sprintf("the command (%s, now %s)", r.Command, now.Command))
	}
	keys := map[string]bool{}
	for k := range r.Options {
		keys[k] = true
	}
	for k := range now.Options {
		keys[k] = true
	}
	var names []string
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if r.Options[k] != now.Options[k] {
			d = append(d, fmt.Sprintf("option %s (%q, now %q)", k, r.Options[k], now.Options[k]))
		}
	}
	if len(r.Sources) != len(now.Sources) {
		d = append(d, fmt.Sprintf("the source's files (%d, now %d)", len(r.Sources), len(now.Sources)))
	} else {
		for i, s := range r.Sources {
			if n := now.Sources[i]; s != n {
				d = append(d, fmt.Sprintf("source file %s (%d bytes modified %s, now %s: %d bytes modified %s)", s.Path, s.Size, s.ModTime, n.Path, n.Size, n.ModTime))
			}
		}
	}
	if len(d) == 0 {
		if len(r.Plan) != len(now.Plan) {
			d = append(d, fmt.Sprintf("the plan's shard count (%d, now %d)", len(r.Plan), len(now.Plan)))
		} else {
			for i, s := range r.Plan {
				if s != now.Plan[i] {
					d = append(d, fmt.Sprintf("shard %s (%d bytes, header %.12s…; now %s, %d bytes, header %.12s…)", s.Name, s.Bytes, s.Header, now.Plan[i].Name, now.Plan[i].Bytes, now.Plan[i].Header))
					break
				}
			}
		}
	}
	return strings.Join(d, "; ")
}

// splitOut writes shards [first, end) of a split set one by one: each is
// written to a temporary beside its destination and renamed into place as
// soon as it is finished, after its sha256 is in the record; the record
// goes once every shard is in place. An interrupted run so leaves whole
// shards, the record naming them, and at most one temporary, which the
// signal handler (or the next run) removes.
type splitOut struct {
	record      string
	rec         resumeRecord
	inputs      []string
	first, end  int // the shards this run writes
	start       int // the first one not kept from an earlier run
	kept        []string
	cur         *atomicfile.File
	names       []string // every shard's path
	wroteRecord bool
}

// openSplitOut prepares to write shards [first, end) of layout to the
// files layout names. With resume, an earlier run's record (same identity,
// else an error naming what differs) lets the shards it finished and whose
// sha256 still matches be kept: writing starts at the first other one. An
// existing record without resume is refused unless force, which starts
// over; existing shards are refused unless force or the record names them.
func openSplitOut(dst string, part Part, id resumeRecord, layout []gguf.Shard, resume, force bool, inputs []string, note func(string)) (*splitOut, error) {
	record := dst + ResumeSuffix
	if !part.Whole() {
		record = fmt.Sprintf("%s.part-%d-of-%d%s", dst, part.K, part.N, ResumeSuffix)
	}
	o := &splitOut{record: record, rec: id, inputs: inputs}
	for _, sh := range layout {
		o.names = append(o.names, sh.Name)
	}
	o.first, o.end = part.Range(len(layout))
	o.start = o.first
	ours := map[string]bool{}
	b, err := os.ReadFile(record)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if resume && note != nil {
			note(fmt.Sprintf("resume: no record %s; starting from the first shard", record))
		}
	case err != nil:
		return nil, fmt.Errorf("convert: resume record %s: %w", record, err)
	case !resume && !force:
		return nil, fmt.Errorf("%s: %w: an earlier run to %s was interrupted; --resume continues it, --force starts over", record, atomicfile.ErrExists, dst)
	default:
		var old resumeRecord
		if err := json.Unmarshal(b, &old); err != nil || old.Tool != "tfconv" {
			return nil, fmt.Errorf("convert: %s is not a tfconv resume record (%v), and tfconv replaces no file it did not write: move it away to start over", record, err)
		}
		for _, d := range old.Done {
			ours[d.Name] = true
		}
		if !resume {
			break // --force: start over, replacing the shards the record names
		}
		if d := old.differs(&id); d != "" {
			return nil, fmt.Errorf("convert: --resume: %s was written by another plan: %s differ; --force starts over", record, d)
		}
		for i, d := range old.Done {
			k := o.first + i
			if k >= o.end || d.Name != filepath.Base(o.names[k]) {
				break
			}
			sum, err := fileSHA256(o.names[k])
			if err != nil || sum != d.SHA256 {
				if note != nil {
					why := "missing"
					if err == nil {
						why = "its sha256 differs from the record's"
					}
					note(fmt.Sprintf("resume: %s is %s: written again", o.names[k], why))
				}
				break
			}
			o.kept = append(o.kept, o.names[k])
			o.rec.Done = append(o.rec.Done, d)
			o.start = k + 1
		}
		if note != nil {
			note(fmt.Sprintf("resume: %d of %d shards kept (sha256 verified), writing from %s", len(o.kept), o.end-o.first, o.nameOr(o.start)))
		}
	}
	for k := o.start; k < o.end; k++ {
		if ours[filepath.Base(o.names[k])] {
			continue
		}
		if err := atomicfile.CheckDest(o.names[k], force, inputs...); err != nil {
			return nil, err
		}
	}
	if err := atomicfile.CheckDest(record, true, inputs...); err != nil {
		return nil, err
	}
	return o, nil
}

func (o *splitOut) nameOr(k int) string {
	if k < len(o.names) && k < o.end {
		return filepath.Base(o.names[k])
	}
	return "nothing (all kept)"
}

// save writes the record atomically.
func (o *splitOut) save() error {
	b, err := json.MarshalIndent(&o.rec, "", " ")
	if err != nil {
		return err
	}
	f, err := atomicfile.Create(o.record, true, o.inputs...)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.Write(append(b, '\n')); err != nil {
		return err
	}
	if err := f.Commit(); err != nil {
		return err
	}
	o.wroteRecord = true
	return nil
}

// create is the SplitWriter's: shard name, written through a hash.
func (o *splitOut) create(name string) (io.WriteCloser, error) {
	if !o.wroteRecord {
		if err := o.save(); err != nil {
			return nil, err
		}
	}
	f, err := atomicfile.Create(name, true, o.inputs...) // checked in openSplitOut
	if err != nil {
		return nil, err
	}
	o.cur = f
	return &shardFile{o: o, f: f, s: f.Stream(), h: sha256.New(), name: name}, nil
}

// finish removes the record once every shard is in place.
func (o *splitOut) finish() error {
	if err := os.Remove(o.record); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// abort removes the unfinished shard's temporary; finished shards and the
// record stay for --resume.
func (o *splitOut) abort() {
	if o.cur != nil {
		o.cur.Abort()
	}
}

// discard removes the shards this run renamed into place, and their
// lines of the record (the record itself when it keeps none): the run
// failed because a source did not match the sha256 the Hub publishes
// (checkpoint.ErrSourceMismatch), and shards made from it must not be kept
// for --resume. Shards kept from an earlier run stay.
func (o *splitOut) discard() {
	keep := len(o.kept)
	if len(o.rec.Done) <= keep {
		return
	}
	for _, d := range o.rec.Done[keep:] {
		os.Remove(filepath.Join(filepath.Dir(o.record), d.Name))
	}
	o.rec.Done = o.rec.Done[:keep]
	if keep == 0 {
		os.Remove(o.record)
		return
	}
	o.save()
}

// shardFile is one shard being written.
type shardFile struct {
	o    *splitOut
	f    *atomicfile.File
	s    *atomicfile.Stream
	h    hash.Hash
	name string
}

func (w *shardFile) Write(p []byte) (int, error) {
	w.h.Write(p)
	return w.s.Write(p)
}

// Close finishes the shard: its sha256 goes into the record, then the
// shard is synced and renamed into place.
func (w *shardFile) Close() error {
	if err := w.s.Close(); err != nil {
		return err
	}
	w.o.rec.Done = append(w.o.rec.Done, resumeShard{Name: filepath.Base(w.name), SHA256: hex.EncodeToString(w.h.Sum(nil))})
	if err := w.o.save(); err != nil {
		return err
	}
	if err := w.f.Commit(); err != nil {
		return err
	}
	w.o.cur = nil
	return nil
}

// fileSHA256 is the hex sha256 of a file's bytes.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
