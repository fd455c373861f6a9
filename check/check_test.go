package check

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/formats/native"
	"github.com/tfconv/tfconv/formats/pytorch"
	"github.com/tfconv/tfconv/formats/safetensors"
)

// corpusDir holds the malformed corpus built by cmd/tfconv's generator;
// verdicts.json gives, for each file, the rule ids check must report.
const corpusDir = "../testdata/malformed"

type verdict struct {
	Valid      bool           `json:"valid"`
	Exit       map[string]int `json:"exit"`
	CheckRules []string       `json:"check_rules"`
}

func TestCorpus(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(corpusDir, "verdicts.json"))
	if err != nil {
		t.Fatal(err)
	}
	var vs map[string]verdict
	if err := json.Unmarshal(raw, &vs); err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(vs))
	for n := range vs {
		names = append(names, n)
	}
	sort.Strings(names)
	used := map[string]bool{}
	for _, name := range names {
		v := vs[name]
		t.Run(name, func(t *testing.T) {
			r, err := Check(filepath.Join(corpusDir, filepath.FromSlash(name)))
			if err != nil {
				t.Fatal(err)
			}
			wantOK := v.Exit["check"] == 0
			if r.OK() != wantOK {
				t.Errorf("OK() = %v, want %v; findings: %v", r.OK(), wantOK, r.Findings)
			}
			for _, id := range v.CheckRules {
				if !r.HasRule(id) {
					t.Errorf("rule %s not reported; findings: %v", id, r.Findings)
				}
			}
			for _, f := range r.Findings {
				used[f.Rule] = true
				rule, ok := RuleByID(f.Rule)
				if !ok {
					t.Errorf("finding with unregistered rule %q", f.Rule)
				} else if rule.Severity != f.Severity {
					t.Errorf("%s: severity %s, rule says %s", f.Rule, f.Severity, rule.Severity)
				}
				if f.File == "" || f.Message == "" {
					t.Errorf("finding lacks file or message: %+v", f)
				}
			}
		})
	}
	t.Logf("corpus exercises %d of %d rules", len(used), len(Rules))
}

// A file with several independent defects gets one finding for each, at
// the right offsets: the walk does not stop at the first.
func TestEveryFindingListed(t *testing.T) {
	r, err := Check(filepath.Join(corpusDir, "st-multi-defect.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, f := range r.Findings {
		got[f.Rule+" "+f.Item] = f.Offset
	}
	// Header: 8-byte length + the JSON padded to a multiple of 8.
	hdr := int64(len(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]},"c":{"dtype":"F32","shape":[1],"data_offsets":[20,24]},"d":{"dtype":"Z9","shape":[1],"data_offsets":[24,28]}}`))
	data := 8 + (hdr+7)/8*8
	want := map[string]int64{
		`st-overlap tensor "b"`: data + 4,  // b starts inside a
		`st-hole tensor "c"`:    data + 12, // [12,20) is nobody's
		`st-trailing-bytes `:    data + 28, // 32 data bytes, the last tensor ends at 28
	}
	for k, off := range want {
		if g, ok := got[k]; !ok || g != off {
			t.Errorf("%s: offset %d (present %v), want %d; all: %v", k, g, ok, off, r.Findings)
		}
	}
	if !r.HasRule("st-dtype") {
		t.Errorf("unknown dtype Z9 not reported: %v", r.Findings)
	}
}

func TestUnreadable(t *testing.T) {
	if _, err := Check(filepath.Join(t.TempDir(), "missing.safetensors")); err == nil {
		t.Error("a missing file is not an error")
	}
	if _, err := Check(t.TempDir()); err == nil {
		t.Error("an empty directory is not an error")
	}
}

// FuzzCheck runs the checker on arbitrary bytes as each format: it must not
// panic, and a file the strict readers accept must not get error findings
// other than NaN or Inf weights and a 0 GGUF dimension (which the readers
// accept by design: ggml cannot load a 0 dimension and a model cannot run on
// NaN or Inf, but all are well-formed).
func FuzzCheck(f *testing.F) {
	for _, name := range []string{"ok-st-zero-element.safetensors", "st-multi-defect.safetensors", "ok-gguf-v2.gguf", "gguf-multi-defect.gguf", "ok-native.tfn", "native-overlap.tfn"} {
		b, err := os.ReadFile(filepath.Join(corpusDir, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, name := range []string{"params.bin", "legacy.bin", "hostile/many-globals.bin", "hostile/storage-short.bin"} {
		b, err := os.ReadFile(filepath.Join(pytorchDir, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "x.bin")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Check(p)
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		if r.Format == "" {
			t.Fatal("no format")
		}
		if !strictAccepts(r.Format, data) {
			if r.OK() {
				t.Fatalf("the %s reader refuses the file, but check finds no error: %v", r.Format, r.Findings)
			}
			return
		}
		for _, fd := range r.Findings {
			if fd.Severity == Error && fd.Rule != "nan-in-weights" && fd.Rule != "inf-in-weights" && fd.Rule != "gguf-zero-dim" {
				t.Fatalf("the %s reader accepts the file, but check reports %v", r.Format, fd)
			}
		}
	})
}

// strictAccepts reports whether the format's reader accepts data (and, for
// native files, every checksum matches).
func strictAccepts(format string, data []byte) bool {
	rd := bytes.NewReader(data)
	switch format {
	case "safetensors":
		if len(bytes.TrimLeft(data, " \t\r\n")) > 0 && bytes.TrimLeft(data, " \t\r\n")[0] == '{' {
			return false // read as an index without shards
		}
		_, err := safetensors.NewFile(rd, int64(len(data)))
		return err == nil
	case "gguf":
		_, err := gguf.NewFile(rd, int64(len(data)))
		return err == nil
	case "native":
		f, err := native.NewFile(rd, int64(len(data)))
		return err == nil && f.Verify() == nil
	case "pytorch":
		_, err := pytorch.NewFile(rd, int64(len(data)))
		return err == nil
	}
	return false
}
