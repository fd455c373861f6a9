package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tfconv/tfconv/formats/native"
	"github.com/tfconv/tfconv/tensor"
)

// Every reader's defects reach the user the same way: exit 2, one line on
// stderr naming the file and the byte offset, no panic.
func TestInspectMalformedExit2(t *testing.T) {
	st, err := os.ReadFile("../../testdata/safetensors/llama/model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	gg, err := os.ReadFile("../../testdata/gguf/llama-Q2_K.gguf")
	if err != nil {
		t.Fatal(err)
	}
	hdrLen := int(binary.LittleEndian.Uint64(st))
	mut := func(b []byte, f func([]byte) []byte) []byte { return f(append([]byte(nil), b...)) }
	cases := []struct {
		name, file string
		data       []byte
		want       string // in the message besides file and offset
	}{
		{"st-truncated", "a.safetensors", st[:len(st)-100], ""},
		{"st-header-beyond-file", "b.safetensors", mut(st, func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b, uint64(len(b)))
			return b
		}), ""},
		{"st-bad-utf8", "c.safetensors", mut(st, func(b []byte) []byte {
			i := strings.Index(string(b[8:8+hdrLen]), "model.")
			b[8+i] = 0xff
			return b
		}), ""},
		{"st-unknown-dtype", "d.safetensors", mut(st, func(b []byte) []byte {
			i := strings.Index(string(b[8:8+hdrLen]), `"F32"`)
			copy(b[8+i:], `"X32"`)
			return b
		}), "X32"},
		{"st-trailing", "e.safetensors", append(append([]byte(nil), st...), 0), ""},
		{"gguf-truncated-header", "f.gguf", gg[:4000], ""},
		{"gguf-truncated-data", "g.gguf", gg[:len(gg)-1000], ""},
		{"gguf-huge-kv-count", "h.gguf", mut(gg, func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[16:], 1<<62)
			return b
		}), ""},
		{"gguf-big-endian", "i.gguf", mut(gg, func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[4:], 3)
			return b
		}), "big-endian"},
		{"native-garbage", "j.tfn", append([]byte("\x89TFN\r\n\x1a\n"), make([]byte, 100)...), ""},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, c.file)
			if err := os.WriteFile(p, c.data, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"inspect", p}, {"inspect", "--json", p}} {
				code, out, errOut := run(t, args...)
				if code != exitError || out != "" {
					t.Fatalf("%v: exit %d, stdout %q", args, code, out)
				}
				if !strings.Contains(errOut, p) || !strings.Contains(errOut, "offset ") || !strings.Contains(errOut, c.want) {
					t.Errorf("%v: message %q lacks the file, the offset or %q", args, errOut, c.want)
				}
				if strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
					t.Errorf("message is not one line: %q", errOut)
				}
			}
		})
	}
}

var update = flag.Bool("update", false, "rewrite testdata/malformed (files and verdicts.json) from the corpus generator")

const malformedDir = "../../testdata/malformed"

// fuzzSeedMax is the largest corpus file also kept as a fuzz seed: the
// fuzzer mutates small inputs best, and big seeds slow every run.
const fuzzSeedMax = 16 << 10

// Limits every reading command must keep on every corpus file (issue 8).
// corpusMaxWall is a hang guard, not a speed figure (those come from
// benchmarks): a hostile file that makes a reader loop or crawl exceeds it
// by orders of magnitude, while a loaded CI machine stays well inside.
const (
	corpusMaxRSSBytes = 64 << 20
	corpusMaxWall     = 10 * time.Second
)

// verdict is one entry of verdicts.json.
type verdict struct {
	Class      string         `json:"class"`
	Valid      bool           `json:"valid"`
	Exit       map[string]int `json:"exit"`        // command -> expected exit code
	CheckRules []string       `json:"check_rules"` // rule ids check must report
	Note       string         `json:"note,omitempty"`
}

// corpusCommands are the reading commands run on every file, by name.
var corpusCommands = []string{"inspect", "tokenize", "quantize", "check"}

func expectedExits(c corpusCase) map[string]int {
	m := map[string]int{}
	for _, cmd := range corpusCommands {
		switch {
		case cmd == "check" && c.valid:
			m[cmd] = exitOK
		case cmd == "check":
			m[cmd] = exitFound
		case c.valid && cmd == "inspect":
			m[cmd] = exitOK
		case c.valid && cmd == "tokenize":
			// None of the valid files carries a tokenizer.
			m[cmd] = exitError
		case c.valid && cmd == "quantize":
			m[cmd] = quantizeValidExit(c)
		default:
			m[cmd] = exitError
		}
	}
	for k, v := range c.exit {
		m[k] = v
	}
	return m
}

// quantizeValidExit is quantize --dry-run's verdict on a valid file: it
// measures every tensor, which needs at least one float tensor with a row
// length that Q8_0 blocks (32) divide or that is kept as it is (1-D).
func quantizeValidExit(c corpusCase) int {
	if q, ok := quantizeValid[c.name]; ok {
		return q
	}
	return exitOK
}

// TestMalformedCorpusUpToDate regenerates the corpus in memory and compares
// it with testdata/malformed; with -update it writes it.
func TestMalformedCorpusUpToDate(t *testing.T) {
	cases := corpus(t)
	verdicts := map[string]verdict{}
	files := map[string][]byte{}
	for _, c := range cases {
		if _, dup := verdicts[c.name]; dup {
			t.Fatalf("duplicate corpus name %s", c.name)
		}
		verdicts[c.name] = verdict{Class: c.class, Valid: c.valid, Exit: expectedExits(c), CheckRules: c.rules, Note: c.note}
		if c.files != nil {
			for p, b := range c.files {
				files[p] = b
			}
		} else {
			files[c.name] = c.data
		}
	}
	// Fuzz seed corpora (Go's format) for each reader's fuzz target: the
	// corpus files of its format, small ones only.
	for _, c := range cases {
		if c.data == nil || len(c.data) > fuzzSeedMax {
			continue
		}
		seed := []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", c.data))
		base := strings.TrimSuffix(c.name, filepath.Ext(c.name))
		switch filepath.Ext(c.name) {
		case ".safetensors":
			files["../../formats/safetensors/testdata/fuzz/FuzzOpen/"+base] = seed
		case ".gguf":
			files["../../formats/gguf/testdata/fuzz/FuzzOpen/"+base] = seed
		case ".tfn":
			files["../../formats/native/testdata/fuzz/FuzzOpen/"+base] = seed
		}
		files["../../check/testdata/fuzz/FuzzCheck/"+base] = seed
	}
	vj, err := json.MarshalIndent(verdicts, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	files["verdicts.json"] = append(vj, '\n')
	if *update {
		for p, b := range files {
			full := filepath.Join(malformedDir, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for p, b := range files {
		got, err := os.ReadFile(filepath.Join(malformedDir, filepath.FromSlash(p)))
		if err != nil {
			t.Errorf("%s: %v (run go test -run TestMalformedCorpusUpToDate -update)", p, err)
			continue
		}
		if !bytes.Equal(got, b) {
			t.Errorf("%s differs from the generator (run with -update)", p)
		}
	}
	if n := len(cases); n < 60 {
		t.Errorf("corpus has %d cases, want at least 60", n)
	}
}

// loadVerdicts reads testdata/malformed/verdicts.json.
func loadVerdicts(t *testing.T) map[string]verdict {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(malformedDir, "verdicts.json"))
	if err != nil {
		t.Fatal(err)
	}
	var verdicts map[string]verdict
	if err := json.Unmarshal(raw, &verdicts); err != nil {
		t.Fatal(err)
	}
	if len(verdicts) < 60 {
		t.Fatalf("%d corpus files, want at least 60", len(verdicts))
	}
	return verdicts
}

// TestMalformedCorpus runs every reading command of the built binary on
// every corpus file and holds it to verdicts.json: the exit code, no panic,
// the file named on stderr, peak RSS under 64 MB and under a second.
func TestMalformedCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary ~500 times")
	}
	verdicts := loadVerdicts(t)
	bin := buildBinary(t)
	extra := registeredExtra(t, bin)
	names := make([]string, 0, len(verdicts))
	for n := range verdicts {
		names = append(names, n)
	}
	sort.Strings(names)
	out := t.TempDir()
	for _, name := range names {
		v := verdicts[name]
		path, err := filepath.Abs(filepath.Join(malformedDir, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) {
			// Each file's commands are processes of their own: the files
			// run side by side, as many at once as go test's -parallel.
			t.Parallel()
			cmds := map[string][]string{
				"inspect":  {"inspect", path},
				"tokenize": {"tokenize", path, "hello"},
				"quantize": {"quantize", path, filepath.Join(out, "q.gguf"), "--type", "q8_0", "--dry-run"},
				"check":    {"check", "--json", path},
			}
			if !strings.HasSuffix(name, ".gguf") && !strings.HasSuffix(name, ".tfn") {
				// Hugging Face safetensors input is quantized to a Hugging Face directory.
				cmds["quantize"] = []string{"quantize", path, filepath.Join(out, "q"), "--to", "safetensors", "--type", "int8", "--dry-run"}
			}
			for _, e := range extra {
				switch e {
				case "convert":
					cmds[e] = []string{"convert", path, filepath.Join(t.TempDir(), "converted.gguf")}
				case "run":
					cmds[e] = []string{"run", path, "--tokens", "1"}
				}
			}
			keys := make([]string, 0, len(cmds))
			for k := range cmds {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, cmd := range keys {
				want, known := v.Exit[cmd]
				res := runBinary(t, bin, cmds[cmd]...)
				if res.wall > corpusMaxWall {
					// One retry absorbs a scheduling hiccup on a loaded
					// machine; a real slowness fails twice.
					res = runBinary(t, bin, cmds[cmd]...)
				}
				switch {
				case known && res.code != want:
					t.Errorf("%s: exit %d, want %d; stderr: %.300s", cmd, res.code, want, res.stderr)
				case !known && !v.Valid && res.code != exitError:
					t.Errorf("%s: exit %d, want 2; stderr: %.300s", cmd, res.code, res.stderr)
				}
				if strings.Contains(res.stderr, "goroutine ") || strings.Contains(res.stderr, "panic:") {
					t.Errorf("%s: panicked: %.2000s", cmd, res.stderr)
				}
				// tokenize on a checkpoint without a tokenizer stops before
				// the defect, at "no tokenizer found", which has no file.
				if res.code == exitError && !v.Valid && !strings.Contains(res.stderr, path) && !strings.Contains(res.stderr, "no tokenizer found") {
					t.Errorf("%s: stderr does not name the file: %.300s", cmd, res.stderr)
				}
				if res.maxRSS >= corpusMaxRSSBytes {
					t.Errorf("%s: peak RSS %d MB, limit %d MB", cmd, res.maxRSS>>20, corpusMaxRSSBytes>>20)
				}
				if res.wall > corpusMaxWall {
					t.Errorf("%s: took %v, limit %v", cmd, res.wall, corpusMaxWall)
				}
				if cmd == "check" && res.code != exitError {
					var rep struct {
						Findings []struct{ Rule string } `json:"findings"`
						OK       bool                    `json:"ok"`
					}
					if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil {
						t.Errorf("check --json: %v: %.300s", err, res.stdout)
					}
					got := map[string]bool{}
					for _, f := range rep.Findings {
						got[f.Rule] = true
					}
					for _, r := range v.CheckRules {
						if !got[r] {
							t.Errorf("check: rule %s not reported; findings: %v", r, rep.Findings)
						}
					}
					if rep.OK != (res.code == exitOK) {
						t.Errorf("check: ok=%v with exit %d", rep.OK, res.code)
					}
				}
			}
		})
	}
}

// This file builds the malformed corpus of testdata/malformed: every file is
// made here, byte by byte from the specs (safetensors: huggingface/safetensors
// docs and tensor.rs; GGUF: ggml's docs/gguf.md and gguf.cpp), so that each
// carries exactly the defect its name says. Native files start from the
// native Writer's output and are then damaged by hand.

// corpusCase is one file (or, for checkpoint sets, one folder) of the corpus.
type corpusCase struct {
	name  string            // path under testdata/malformed passed to the commands
	class string            // defect class, for the report and the README
	data  []byte            // the file, or nil for a set
	files map[string][]byte // for a set: paths under testdata/malformed -> bytes
	valid bool              // valid but unusual: the readers must accept it
	rules []string          // rule ids check must report (a subset of its findings)
	// exit overrides the expected exit code of a command (see verdicts).
	exit map[string]int
	note string
}

// --- safetensors ---

func f32s(vals ...float32) []byte {
	b := make([]byte, 0, 4*len(vals))
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

func seq32(n int) []byte {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i) + 0.5
	}
	return f32s(v...)
}

// stFile lays out a safetensors file with the header padded with spaces to
// a multiple of 8, as the reference writer does.
func stFile(hdr string, data []byte) []byte {
	for (8+len(hdr))%8 != 0 {
		hdr += " "
	}
	return stRaw(uint64(len(hdr)), hdr, data)
}

// stRaw writes an explicit header length.
func stRaw(n uint64, hdr string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, n)
	return append(append(b, hdr...), data...)
}

const stAB = `{"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[2],"data_offsets":[16,24]}}`

func stValid() []byte { return stFile(stAB, seq32(6)) }

// --- GGUF ---

type gg struct{ b []byte }

func (g *gg) raw(p ...byte) *gg { g.b = append(g.b, p...); return g }
func (g *gg) u8(x uint8) *gg    { return g.raw(x) }
func (g *gg) u32(x uint32) *gg  { g.b = binary.LittleEndian.AppendUint32(g.b, x); return g }
func (g *gg) u64(x uint64) *gg  { g.b = binary.LittleEndian.AppendUint64(g.b, x); return g }
func (g *gg) str(s string) *gg  { return g.u64(uint64(len(s))).raw([]byte(s)...) }

// GGUF value types (gguf_type).
const (
	ggU8, ggI8, ggU16, ggI16, ggU32, ggI32, ggF32, ggBool, ggStr, ggArr, ggU64, ggI64, ggF64 = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12
)

// ggml type ids.
const (
	ggmlF32, ggmlF16, ggmlQ4_0 = 0, 1, 2
)

func ggHead(version uint32, nT, nKV uint64) *gg {
	return (&gg{}).raw([]byte("GGUF")...).u32(version).u64(nT).u64(nKV)
}

func (g *gg) kvStr(k, v string) *gg        { return g.str(k).u32(ggStr).str(v) }
func (g *gg) kvU32(k string, v uint32) *gg { return g.str(k).u32(ggU32).u32(v) }

func (g *gg) tinfo(name string, typ uint32, off uint64, ne ...uint64) *gg {
	g.str(name).u32(uint32(len(ne)))
	for _, d := range ne {
		g.u64(d)
	}
	return g.u32(typ).u64(off)
}

func (g *gg) pad(n int) *gg {
	for len(g.b)%n != 0 {
		g.b = append(g.b, 0)
	}
	return g
}

// ggTwo is the valid base: one key, tensors "a" (F32 ne [4,2]) at 0 and
// "b" (F32 ne [8]) at 32, 64 bytes of data.
func ggTwo(version uint32) []byte {
	g := ggHead(version, 2, 1).kvStr("general.name", "corpus")
	g.tinfo("a", ggmlF32, 0, 4, 2).tinfo("b", ggmlF32, 32, 8).pad(32)
	return g.raw(seq32(16)...).b
}

// ggWith builds a file with the given metadata and tensor-info builders and
// data, padding the header to align.
func ggWith(nT, nKV uint64, kvs func(*gg), infos func(*gg), align int, data []byte) []byte {
	g := ggHead(3, nT, nKV)
	if kvs != nil {
		kvs(g)
	}
	if infos != nil {
		infos(g)
	}
	if nT > 0 {
		g.pad(align)
	}
	return g.raw(data...).b
}

// --- native ---

// nativeValid writes a small valid native file with the native Writer.
func nativeValid(t *testing.T, tensors []tensor.Info, data [][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	specs := make([]native.TensorSpec, len(tensors))
	for i, ti := range tensors {
		specs[i] = native.TensorSpec{Info: ti}
	}
	w, err := native.NewWriter(&buf, native.Header{Metadata: tensor.Metadata{{Key: "general.name", Value: tensor.String("corpus")}}}, nil, specs)
	if err != nil {
		t.Fatal(err)
	}
	for i, ti := range tensors {
		bw, err := w.Next(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bw.Write(data[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func nativeAB(t *testing.T) []byte {
	return nativeValid(t, []tensor.Info{
		{Name: "a", DType: tensor.F32, Shape: tensor.Shape{2, 2}},
		{Name: "b", DType: tensor.F32, Shape: tensor.Shape{2}},
	}, [][]byte{seq32(4), seq32(2)})
}

var castagnoliTable = crc32.MakeTable(crc32.Castagnoli)

// nativeReseal recomputes the header checksum (preamble and footer copy) and
// the trailer checksum after a header edit, so that the edit itself is the
// only defect (docs/native-format.md: header_crc covers preamble bytes
// [0,24) and [28,32) and the header; trailer_crc the table and footer[0,20)).
func nativeReseal(b []byte) []byte {
	hlen := binary.LittleEndian.Uint64(b[16:])
	c := crc32.Update(0, castagnoliTable, b[:24])
	c = crc32.Update(c, castagnoliTable, b[28:32])
	c = crc32.Update(c, castagnoliTable, b[32:32+hlen])
	binary.LittleEndian.PutUint32(b[24:], c)
	fo := len(b) - 32
	binary.LittleEndian.PutUint32(b[fo+16:], c)
	table := binary.LittleEndian.Uint64(b[fo:])
	binary.LittleEndian.PutUint32(b[fo+20:], crc32.Checksum(b[table:fo+20], castagnoliTable))
	return b
}

// nativeField returns the offset of tensor name's data-offset field: after
// name str, dtype str "F32", rank u32 and rank dims.
func nativeField(b []byte, name string, rank int) int {
	hlen := binary.LittleEndian.Uint64(b[16:])
	key := binary.LittleEndian.AppendUint64(nil, uint64(len(name)))
	key = append(key, name...)
	key = binary.LittleEndian.AppendUint64(key, 3)
	key = append(key, "F32"...)
	i := bytes.Index(b[32:32+hlen], key)
	if i < 0 {
		panic("nativeField: tensor not found")
	}
	return 32 + i + len(key) + 4 + 8*rank
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

func put64(b []byte, off int, v uint64) []byte {
	b = clone(b)
	binary.LittleEndian.PutUint64(b[off:], v)
	return b
}

// zeroDimNote explains the verdicts of the GGUF files with a 0 dimension.
const zeroDimNote = "the GGUF spec allows a 0 dimension and the readers accept it (inspect 0), but ggml's loader divides by ne[1..3]: " +
	"check reports gguf-zero-dim as an error and GGUF output (convert, quantize, --dry-run too) refuses it"

// zeroDimTensor is the tensor of gguf-zero-dim.gguf with ne [8, 0, 2].
const zeroDimTensor = "blk.0.ffn_up.weight"

// corpus returns every case. Expected rules are the defect each file was
// built to have.
func corpus(t *testing.T) []corpusCase {
	st := stValid()
	ggv := ggTwo(3)
	nat := nativeAB(t)
	nan32, inf32 := float32(math.NaN()), float32(math.Inf(1))
	deep := func(open, close string, n int) string { return strings.Repeat(open, n) + strings.Repeat(close, n) }
	var cs []corpusCase
	add := func(c corpusCase) { cs = append(cs, c) }
	stc := func(name, class string, data []byte, rules ...string) {
		add(corpusCase{name: name + ".safetensors", class: class, data: data, rules: rules})
	}
	ggc := func(name, class string, data []byte, rules ...string) {
		add(corpusCase{name: name + ".gguf", class: class, data: data, rules: rules})
	}
	nac := func(name, class string, data []byte, rules ...string) {
		add(corpusCase{name: name + ".tfn", class: class, data: data, rules: rules})
	}

	// safetensors: truncation at each section.
	stc("st-empty", "truncation", nil, "not-a-checkpoint")
	stc("st-trunc-length", "truncation", st[:5], "st-truncated")
	stc("st-trunc-header", "truncation", st[:40], "st-header-length")
	stc("st-trunc-after-header", "truncation", st[:len(st)-24], "st-out-of-bounds")
	stc("st-trunc-data", "truncation", st[:len(st)-3], "st-out-of-bounds")
	// Header length values up to 2^64-1.
	stc("st-hlen-2p63", "huge length", put64(st, 0, 1<<63), "st-header-length")
	stc("st-hlen-max", "huge length", put64(st, 0, math.MaxUint64), "st-header-length")
	stc("st-hlen-over-limit", "huge length", put64(st, 0, 100_000_001), "st-header-length")
	stc("st-hlen-past-eof", "huge length", put64(st, 0, uint64(len(st))), "st-header-length")
	stc("st-hlen-big-endian", "big-endian", func() []byte {
		b := clone(st)
		binary.BigEndian.PutUint64(b, binary.LittleEndian.Uint64(st))
		return b
	}(), "st-header-length")
	// Lengths and counts inside the header.
	stc("st-dim-2p63", "huge length", stFile(`{"a":{"dtype":"F32","shape":[9223372036854775808],"data_offsets":[0,4]}}`, seq32(1)), "st-shape")
	stc("st-dims-product-overflow", "huge length", stFile(`{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}}`, seq32(1)), "st-shape")
	stc("st-offsets-2p63", "huge length", stFile(`{"a":{"dtype":"U8","shape":[9223372036854775807],"data_offsets":[0,9223372036854775807]}}`, seq32(1)), "st-out-of-bounds")
	stc("st-negative-dim", "wrong types", stFile(`{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, seq32(1)), "st-shape")
	stc("st-float-dim", "wrong types", stFile(`{"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}}`, seq32(1)), "st-shape")
	// Allocation bombs: a long array, deep nesting.
	stc("st-shape-bomb", "allocation bomb", stFile(`{"a":{"dtype":"F32","shape":[`+strings.Repeat("1,", 1<<18)+`1],"data_offsets":[0,4]}}`, seq32(1)), "st-shape")
	stc("st-nesting-bomb", "allocation bomb", stFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":`+deep("[", "]", 100000)+`}}`, seq32(1)), "st-header-json")
	stc("st-metadata-nesting-bomb", "allocation bomb", stFile(`{"__metadata__":{"k":`+deep(`{"k":`, "}", 100000)+`"v"}}`, nil), "st-metadata")
	stc("st-many-tensors-bomb", "allocation bomb", func() []byte {
		var b strings.Builder
		b.WriteString("{")
		for i := 0; i < 20000; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`"t` + itoa(i) + `":{"dtype":"F32","shape":[1048576,1048576],"data_offsets":[0,4398046511104]}`)
		}
		b.WriteString("}")
		return stFile(b.String(), nil)
	}(), "st-out-of-bounds", "st-overlap")
	// Layout.
	stc("st-overlap", "overlap", stFile(`{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}}`, seq32(6)), "st-overlap")
	stc("st-overlap-empty-inside", "overlap", stFile(`{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[0],"data_offsets":[8,8]}}`, seq32(4)), "st-overlap")
	stc("st-hole", "hole", stFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[16,24]}}`, seq32(6)), "st-hole")
	stc("st-hole-at-start", "hole", stFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}`, seq32(4)), "st-hole")
	stc("st-trailing-bytes", "trailing bytes", append(clone(st), 0, 0, 0, 0), "st-trailing-bytes")
	stc("st-size-mismatch", "wrong types", stFile(`{"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}}`, seq32(3)), "st-size-mismatch")
	stc("st-offsets-reversed", "wrong types", stFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}}`, seq32(2)), "st-offsets")
	stc("st-offsets-three", "wrong types", stFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4,8]}}`, seq32(2)), "st-offsets")
	// Wrong dtypes and types.
	stc("st-unknown-dtype", "wrong dtype", stFile(strings.Replace(stAB, `"F32"`, `"X32"`, 1), seq32(6)), "st-dtype")
	stc("st-dtype-lowercase", "wrong dtype", stFile(strings.Replace(stAB, `"F32"`, `"f32"`, 1), seq32(6)), "st-dtype")
	stc("st-dtype-ggml-q4_0", "wrong dtype", stFile(`{"a":{"dtype":"Q4_0","shape":[32],"data_offsets":[0,18]}}`, make([]byte, 18)), "st-dtype")
	stc("st-dtype-number", "wrong types", stFile(strings.Replace(stAB, `"F32"`, `0`, 1), seq32(6)), "st-dtype")
	stc("st-f4-odd-count", "wrong dtype", stFile(`{"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}`, []byte{1, 2}), "st-shape")
	stc("st-entry-not-object", "wrong types", stFile(`{"a":5}`, nil), "st-entry")
	stc("st-missing-field", "wrong types", stFile(`{"a":{"dtype":"F32","data_offsets":[0,4]}}`, seq32(1)), "st-entry")
	stc("st-unknown-field", "wrong types", stFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"scale":1}}`, seq32(1)), "st-entry")
	stc("st-metadata-not-string", "wrong types", stFile(`{"__metadata__":{"format":1}}`, nil), "st-metadata")
	// Duplicates.
	stc("st-duplicate-tensor", "duplicate names", stFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, seq32(2)), "dup-tensor-name")
	stc("st-duplicate-field", "duplicate names", stFile(`{"a":{"dtype":"F32","dtype":"F16","shape":[1],"data_offsets":[0,4]}}`, seq32(1)), "st-duplicate-key")
	stc("st-duplicate-metadata-key", "duplicate names", stFile(`{"__metadata__":{"k":"1","k":"2"}}`, nil), "st-duplicate-key")
	// Encoding and JSON.
	stc("st-bad-utf8", "encoding", stFile(strings.Replace(stAB, `"b"`, "\"\xff\"", 1), seq32(6)), "st-header-utf8")
	stc("st-lone-surrogate", "encoding", stFile(strings.Replace(stAB, `"b"`, `"\ud800"`, 1), seq32(6)), "st-rejected")
	stc("st-not-json", "encoding", stFile(`hello world`, nil), "st-header-json")
	stc("st-top-level-array", "wrong types", stFile(`[1,2]`, nil), "st-header-json")
	stc("st-text-after-header", "encoding", stRaw(uint64(len(stAB)+2), stAB+" x", seq32(6)), "st-header-json")
	// Polyglots.
	stc("st-polyglot-gguf-appended", "polyglot", append(clone(st), ggv...), "st-trailing-bytes", "polyglot")
	stc("st-polyglot-header-says-gguf", "polyglot", append([]byte("GGUF\x03\x00\x00\x00"), st[8:]...), "gguf-count")
	// Several defects in one file: every one is listed.
	stc("st-multi-defect", "several defects", stFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]},"c":{"dtype":"F32","shape":[1],"data_offsets":[20,24]},"d":{"dtype":"Z9","shape":[1],"data_offsets":[24,28]}}`, seq32(8)),
		"st-overlap", "st-hole", "st-dtype", "st-trailing-bytes")

	// GGUF: truncation at each section.
	ggc("gguf-magic-only", "truncation", []byte("GGUF"), "gguf-truncated")
	ggc("gguf-trunc-counts", "truncation", ggv[:20], "gguf-truncated")
	ggOne := ggWith(1, 1, func(g *gg) { g.kvStr("general.name", "corpus") }, func(g *gg) { g.tinfo("a", ggmlF32, 0, 8) }, 32, seq32(8))
	ggc("gguf-trunc-kv", "truncation", ggWith(0, 1, func(g *gg) { g.kvStr("general.name", "corpus") }, nil, 32, nil)[:24+8+12+2], "gguf-truncated")
	ggc("gguf-trunc-kv-string", "truncation", ggWith(0, 1, func(g *gg) { g.kvStr("general.name", "corpus") }, nil, 32, nil)[:24+8+12+4+8+3], "gguf-string-length")
	ggc("gguf-trunc-tensor-info", "truncation", ggOne[:24+38+30], "gguf-truncated")
	ggc("gguf-trunc-padding", "truncation", ggv[:len(ggv)-64-4], "gguf-truncated")
	ggc("gguf-trunc-data", "truncation", ggv[:len(ggv)-5], "gguf-truncated")
	// Versions and endianness.
	ggc("gguf-version-0", "wrong types", put32(ggv, 4, 0), "gguf-version")
	ggc("gguf-version-1", "wrong types", put32(ggv, 4, 1), "gguf-version")
	ggc("gguf-version-4", "wrong types", put32(ggv, 4, 4), "gguf-version")
	ggc("gguf-big-endian", "big-endian", func() []byte {
		b := clone(ggv)
		binary.BigEndian.PutUint32(b[4:], 3)
		binary.BigEndian.PutUint64(b[8:], 2)
		binary.BigEndian.PutUint64(b[16:], 1)
		return b
	}(), "gguf-big-endian")
	// Counts and lengths up to 2^64-1.
	ggc("gguf-tensor-count-2p63", "huge length", put64(ggv, 8, 1<<63), "gguf-count")
	ggc("gguf-kv-count-max", "huge length", put64(ggv, 16, math.MaxUint64), "gguf-count")
	ggc("gguf-key-length-2p63", "huge length", put64(ggv, 24, 1<<63), "gguf-string-length")
	ggc("gguf-value-length-past-eof", "huge length", ggWith(0, 1, func(g *gg) { g.str("k").u32(ggStr).u64(1 << 20).raw([]byte("abc")...) }, nil, 32, nil), "gguf-string-length")
	ggc("gguf-ne-2p62-wraps", "huge length", ggWith(1, 0, nil, func(g *gg) { g.tinfo("a", ggmlF32, 0, 1<<62) }, 32, seq32(8)), "gguf-shape")
	ggc("gguf-ne-negative", "huge length", ggWith(1, 0, nil, func(g *gg) { g.tinfo("a", ggmlF32, 0, 1<<63) }, 32, seq32(8)), "gguf-shape")
	ggc("gguf-offset-2p63", "huge length", ggWith(1, 0, nil, func(g *gg) { g.tinfo("a", ggmlF32, 1<<63, 8) }, 32, seq32(8)), "gguf-out-of-bounds")
	// Allocation bombs.
	ggc("gguf-array-count-2p62", "allocation bomb", ggWith(0, 1, func(g *gg) { g.str("k").u32(ggArr).u32(ggU8).u64(1 << 62) }, nil, 32, nil), "gguf-array-length")
	ggc("gguf-array-strings-bomb", "allocation bomb", ggWith(0, 1, func(g *gg) { g.str("k").u32(ggArr).u32(ggStr).u64(1 << 29).u64(0) }, nil, 32, nil), "gguf-array-length")
	ggc("gguf-array-arrays-bomb", "allocation bomb", ggWith(0, 1, func(g *gg) { g.str("k").u32(ggArr).u32(ggArr).u64(1 << 28).u32(ggU8).u64(0) }, nil, 32, nil), "gguf-array-length")
	ggc("gguf-nesting-bomb", "allocation bomb", ggWith(0, 1, func(g *gg) {
		g.str("k").u32(ggArr)
		for i := 0; i < 10000; i++ {
			g.u32(ggArr).u64(1)
		}
		g.u32(ggU8).u64(0)
	}, nil, 32, nil), "gguf-array-depth")
	ggc("gguf-tensor-info-bomb", "allocation bomb", func() []byte {
		g := ggHead(3, 20000, 0)
		for i := 0; i < 20000; i++ {
			g.tinfo("t"+itoa(i), ggmlF32, 0, 1<<40, 1<<20)
		}
		return g.pad(32).b
	}(), "gguf-out-of-bounds")
	// Types and values.
	ggc("gguf-value-type-13", "wrong types", ggWith(0, 1, func(g *gg) { g.str("k").u32(13).u32(0) }, nil, 32, nil), "gguf-value-type")
	ggc("gguf-array-elem-type-bad", "wrong types", ggWith(0, 1, func(g *gg) { g.str("k").u32(ggArr).u32(0xFFFFFFFF).u64(1).u32(0) }, nil, 32, nil), "gguf-value-type")
	ggc("gguf-bool-2", "wrong types", ggWith(0, 1, func(g *gg) { g.str("k").u32(ggBool).u8(2) }, nil, 32, nil), "gguf-bool")
	ggc("gguf-alignment-48", "misalignment", ggWith(0, 1, func(g *gg) { g.kvU32("general.alignment", 48) }, nil, 32, nil), "gguf-alignment")
	ggc("gguf-alignment-0", "misalignment", ggWith(0, 1, func(g *gg) { g.kvU32("general.alignment", 0) }, nil, 32, nil), "gguf-alignment")
	ggc("gguf-alignment-u64", "wrong types", ggWith(0, 1, func(g *gg) { g.str("general.alignment").u32(ggU64).u64(32) }, nil, 32, nil), "gguf-alignment")
	ggc("gguf-type-removed-4", "wrong dtype", ggWith(1, 0, nil, func(g *gg) { g.tinfo("a", 4, 0, 32) }, 32, make([]byte, 32)), "gguf-type")
	ggc("gguf-type-unknown", "wrong dtype", ggWith(1, 0, nil, func(g *gg) { g.tinfo("a", 1000, 0, 8) }, 32, make([]byte, 32)), "gguf-type")
	ggc("gguf-block-size", "wrong dtype", ggWith(1, 0, nil, func(g *gg) { g.tinfo("a", ggmlQ4_0, 0, 16) }, 32, make([]byte, 32)), "gguf-block-size")
	ggc("gguf-ndims-0", "wrong types", ggWith(1, 0, nil, func(g *gg) { g.tinfo("a", ggmlF32, 0) }, 32, make([]byte, 32)), "gguf-dims")
	ggc("gguf-ndims-5", "wrong types", ggWith(1, 0, nil, func(g *gg) { g.tinfo("a", ggmlF32, 0, 1, 1, 1, 1, 1) }, 32, make([]byte, 32)), "gguf-dims")
	ggc("gguf-ndims-max", "huge length", ggWith(1, 0, nil, func(g *gg) { g.str("a").u32(math.MaxUint32).u64(1).u32(0).u64(0) }, 32, make([]byte, 32)), "gguf-dims")
	// A 0 in ne[1]: ggml's loader computes INT64_MAX/ne[1] and dies.
	add(corpusCase{name: "gguf-zero-dim.gguf", class: "zero dimension",
		data:  ggWith(2, 0, nil, func(g *gg) { g.tinfo(zeroDimTensor, ggmlF32, 0, 8, 0, 2).tinfo("b", ggmlF32, 0, 8) }, 32, seq32(8)),
		rules: []string{"gguf-zero-dim"}, exit: map[string]int{"inspect": 0}, note: zeroDimNote})
	// Names and keys.
	ggc("gguf-empty-key", "duplicate names", ggWith(0, 1, func(g *gg) { g.kvStr("", "x") }, nil, 32, nil), "gguf-empty-key")
	ggc("gguf-duplicate-key", "duplicate names", ggWith(0, 2, func(g *gg) { g.kvStr("general.name", "x").kvStr("general.name", "y") }, nil, 32, nil), "gguf-duplicate-key")
	ggc("gguf-duplicate-tensor", "duplicate names", ggWith(2, 0, nil, func(g *gg) { g.tinfo("a", ggmlF32, 0, 8).tinfo("a", ggmlF32, 32, 8) }, 32, seq32(16)), "dup-tensor-name")
	ggc("gguf-tensor-name-empty", "duplicate names", ggWith(1, 0, nil, func(g *gg) { g.tinfo("", ggmlF32, 0, 8) }, 32, seq32(8)), "gguf-tensor-name")
	ggc("gguf-tensor-name-64", "huge length", ggWith(1, 0, nil, func(g *gg) { g.tinfo(strings.Repeat("n", 64), ggmlF32, 0, 8) }, 32, seq32(8)), "gguf-tensor-name")
	ggc("gguf-tensor-name-nul", "encoding", ggWith(1, 0, nil, func(g *gg) { g.tinfo("a\x00b", ggmlF32, 0, 8) }, 32, seq32(8)), "gguf-tensor-name")
	// Layout.
	ggc("gguf-misaligned", "misalignment", ggWith(2, 0, nil, func(g *gg) { g.tinfo("a", ggmlF32, 0, 1).tinfo("b", ggmlF32, 4, 7) }, 32, seq32(8)), "gguf-misaligned")
	ggc("gguf-overlap", "overlap", ggWith(2, 0, nil, func(g *gg) { g.tinfo("a", ggmlF32, 0, 16).tinfo("b", ggmlF32, 32, 8) }, 32, seq32(16)), "gguf-overlap")
	ggc("gguf-hole", "hole", ggWith(2, 0, nil, func(g *gg) { g.tinfo("a", ggmlF32, 0, 8).tinfo("b", ggmlF32, 64, 8) }, 32, seq32(24)), "gguf-hole")
	ggc("gguf-order", "overlap", ggWith(2, 0, nil, func(g *gg) { g.tinfo("a", ggmlF32, 32, 8).tinfo("b", ggmlF32, 0, 8) }, 32, seq32(16)), "gguf-order")
	ggc("gguf-trailing-bytes", "trailing bytes", append(clone(ggv), make([]byte, 40)...), "gguf-trailing-bytes")
	ggc("gguf-polyglot-st-appended", "polyglot", append(clone(ggv), st...), "gguf-trailing-bytes", "polyglot")
	ggc("gguf-polyglot-native-appended", "polyglot", append(clone(ggv), nat...), "gguf-trailing-bytes", "polyglot")
	ggc("gguf-multi-defect", "several defects", ggWith(3, 2, func(g *gg) { g.kvStr("k", "x").kvStr("k", "y") }, func(g *gg) {
		g.tinfo("a", ggmlF32, 0, 8).tinfo("a", ggmlF32, 16, 8).tinfo("c", 1000, 64, 8)
	}, 32, seq32(24)), "gguf-duplicate-key", "dup-tensor-name", "gguf-misaligned", "gguf-overlap", "gguf-type")

	// Native.
	hlen := int(binary.LittleEndian.Uint64(nat[16:]))
	offA := nativeField(nat, "a", 2)
	offB := nativeField(nat, "b", 1)
	aData := int(binary.LittleEndian.Uint64(nat[offA:]))
	nac("native-too-short", "truncation", nat[:40], "native-truncated")
	nac("native-trunc-header", "truncation", nat[:32+hlen/2], "native-truncated")
	nac("native-trunc-footer", "truncation", nat[:len(nat)-1], "native-trailer-crc")
	nac("native-hlen-2p63", "huge length", put64(nat, 16, 1<<63), "native-truncated")
	nac("native-version-2", "wrong types", put16(nat, 8, 2), "native-version")
	nac("native-header-crc", "checksum", flip(nat, 40), "native-header-crc")
	nac("native-trailer-crc", "checksum", flip(nat, len(nat)-32-2), "native-trailer-crc")
	crcBad := flip(nat, aData+1)
	add(corpusCase{name: "native-crc-mismatch.tfn", class: "checksum", data: crcBad, rules: []string{"native-crc-mismatch"},
		exit: map[string]int{"inspect": 0}, note: "inspect reads headers only; commands that read the data (quantize, check) reject it"})
	nac("native-misaligned", "misalignment", nativeReseal(put64(nat, offB, uint64(aData+64+4))), "native-misaligned")
	nac("native-overlap", "overlap", nativeReseal(put64(nat, offB, uint64(aData))), "native-overlap")
	nac("native-out-of-bounds", "huge length", nativeReseal(put64(nat, offB, 1<<62)), "native-out-of-bounds")
	nac("native-duplicate-tensor", "duplicate names", func() []byte {
		b := clone(nat)
		copy(b[offB-4-8-8-3-1:], "a") // the name byte of "b"
		return nativeReseal(b)
	}(), "dup-tensor-name")
	nac("native-polyglot-gguf-appended", "polyglot", append(clone(nat), ggv...), "native-trailer-crc")

	// Checkpoint sets.
	add(corpusCase{name: "idx-missing-shard", class: "set", files: map[string][]byte{
		"idx-missing-shard/model.safetensors.index.json":     []byte(`{"metadata":{},"weight_map":{"a":"model-00001-of-00002.safetensors","x":"model-00002-of-00002.safetensors"}}`),
		"idx-missing-shard/model-00001-of-00002.safetensors": stFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, seq32(1)),
	}, rules: []string{"idx-missing-shard"}})
	add(corpusCase{name: "idx-dup-across-shards", class: "duplicate names", files: map[string][]byte{
		"idx-dup-across-shards/model.safetensors.index.json":     []byte(`{"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}}`),
		"idx-dup-across-shards/model-00001-of-00002.safetensors": stFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, seq32(1)),
		"idx-dup-across-shards/model-00002-of-00002.safetensors": stFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, seq32(2)),
	}, rules: []string{"dup-tensor-name"}})
	add(corpusCase{name: "idx-path-escape", class: "wrong types", files: map[string][]byte{
		"idx-path-escape/model.safetensors.index.json": []byte(`{"weight_map":{"a":"../st-hole.safetensors"}}`),
	}, rules: []string{"idx-shard-name"}})
	add(corpusCase{name: "idx-nesting-bomb", class: "allocation bomb", files: map[string][]byte{
		"idx-nesting-bomb/model.safetensors.index.json": []byte(`{"junk":` + deep("[", "]", 100000) + `,"weight_map":{}}`),
	}, rules: []string{"idx-json"}})
	add(corpusCase{name: "split/gguf-split-00001-of-00002.gguf", class: "set", files: map[string][]byte{
		"split/gguf-split-00001-of-00002.gguf": ggWith(1, 3, func(g *gg) {
			g.str("split.no").u32(ggU16).raw(0, 0).str("split.count").u32(ggU16).raw(2, 0).str("split.tensors.count").u32(ggI32).u32(2)
		}, func(g *gg) { g.tinfo("a", ggmlF32, 0, 8) }, 32, seq32(8)),
	}, rules: []string{"gguf-split"}})

	// Valid but unusual: the readers must accept these.
	ok := func(name, class string, data []byte, rules ...string) {
		add(corpusCase{name: name, class: class, data: data, valid: true, rules: rules})
	}
	ok("ok-st-zero-tensors.safetensors", "valid", stFile(`{}`, nil))
	ok("ok-st-metadata-only.safetensors", "valid", stFile(`{"__metadata__":{"format":"pt"}}`, nil))
	ok("ok-st-zero-element.safetensors", "valid", stFile(`{"a":{"dtype":"F32","shape":[0,4],"data_offsets":[0,0]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, seq32(1)))
	ok("ok-st-scalar.safetensors", "valid", stFile(`{"a":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}`, seq32(1)))
	ok("ok-st-unicode-names.safetensors", "valid", stFile(`{"模型.层.0":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"😀\u00e9":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, seq32(2)))
	add(corpusCase{name: "ok-st-inf.safetensors", class: "valid", valid: true, data: stFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, f32s(1, inf32)),
		rules: []string{"inf-in-weights"}, exit: map[string]int{"check": 1}, note: "Inf weights are readable; check reports them as an error"})
	add(corpusCase{name: "ok-st-nan.safetensors", class: "valid", valid: true, data: stFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, f32s(nan32, 1)),
		rules: []string{"nan-in-weights"}, exit: map[string]int{"check": 1}, note: "NaN weights are readable; check reports them as an error"})
	ok("ok-st-unpadded-header.safetensors", "valid", stRaw(uint64(len(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`)), `{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, []byte{7}), "st-header-unaligned")
	ok("ok-st-misaligned-f32.safetensors", "valid", stFile(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}}`, []byte{1, 2, 0, 0, 0x80, 0x3f}), "st-misaligned")
	ok("ok-gguf-zero-tensors.gguf", "valid", ggWith(0, 1, func(g *gg) { g.kvStr("general.name", "empty") }, nil, 32, nil))
	ok("ok-gguf-v2.gguf", "valid", ggTwo(2))
	ok("ok-gguf-alignment-64.gguf", "valid", ggWith(2, 1, func(g *gg) { g.kvU32("general.alignment", 64) }, func(g *gg) {
		g.tinfo("a", ggmlF32, 0, 4).tinfo("b", ggmlF32, 64, 16)
	}, 64, append(append(seq32(4), make([]byte, 48)...), seq32(16)...)))
	add(corpusCase{name: "ok-gguf-zero-element.gguf", class: "valid", valid: true,
		data:  ggWith(2, 0, nil, func(g *gg) { g.tinfo("a", ggmlF32, 0, 4, 0).tinfo("b", ggmlF32, 0, 8) }, 32, seq32(8)),
		rules: []string{"gguf-zero-dim"}, exit: map[string]int{"check": 1, "quantize": 2, "convert": 2}, note: zeroDimNote})
	ok("ok-gguf-unicode-names.gguf", "valid", ggWith(1, 1, func(g *gg) { g.kvStr("général.名前", "ü") }, func(g *gg) { g.tinfo("層.0.😀", ggmlF32, 0, 8) }, 32, seq32(8)))
	add(corpusCase{name: "ok-gguf-inf-f16.gguf", class: "valid", valid: true, data: ggWith(1, 0, nil, func(g *gg) { g.tinfo("a", ggmlF16, 0, 16) }, 32, append([]byte{0x00, 0x7c, 0x00, 0xfc}, make([]byte, 28)...)),
		rules: []string{"inf-in-weights"}, exit: map[string]int{"check": 1}, note: "Inf weights are readable; check reports them as an error"})
	add(corpusCase{name: "ok-gguf-nan-f16.gguf", class: "valid", valid: true, data: ggWith(1, 0, nil, func(g *gg) { g.tinfo("a", ggmlF16, 0, 16) }, 32, append([]byte{0x01, 0x7e}, make([]byte, 30)...)),
		rules: []string{"nan-in-weights"}, exit: map[string]int{"check": 1}, note: "NaN weights are readable; check reports them as an error"})
	ok("ok-gguf-nested-array.gguf", "valid", ggWith(0, 1, func(g *gg) { g.str("k").u32(ggArr).u32(ggArr).u64(1).u32(ggU8).u64(2).raw(1, 2) }, nil, 32, nil), "gguf-nested-array")
	ok("ok-native.tfn", "valid", nat)
	ok("ok-native-zero-tensors.tfn", "valid", nativeValid(t, nil, nil))
	return cs
}

func itoa(i int) string { return strconv.Itoa(i) }

func put32(b []byte, off int, v uint32) []byte {
	b = clone(b)
	binary.LittleEndian.PutUint32(b[off:], v)
	return b
}

func put16(b []byte, off int, v uint16) []byte {
	b = clone(b)
	binary.LittleEndian.PutUint16(b[off:], v)
	return b
}

func flip(b []byte, off int) []byte {
	b = clone(b)
	b[off] ^= 0x55
	return b
}

var quantizeValid = map[string]int{}
