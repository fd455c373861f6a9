package check

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pytorchDir holds the PyTorch fixtures and hostile files gen.py writes.
const pytorchDir = "../testdata/pytorch"

// Every hostile file gets the finding of its class; the fixtures torch
// wrote are clean; nothing a pickle names runs.
func TestPyTorch(t *testing.T) {
	const marker = "/tmp/tfconv-pytorch-pwned" // gen.py's MARKER
	os.Remove(marker)
	for name, rule := range map[string]string{
		"hostile/posix-system.bin":             "pytorch-global",
		"hostile/os-system.bin":                "pytorch-global",
		"hostile/legacy-posix-system.bin":      "pytorch-global",
		"hostile/builtins-eval.bin":            "pytorch-global",
		"hostile/stack-global.bin":             "pytorch-global",
		"hostile/many-globals.bin":             "pytorch-global",
		"hostile/recursion-bomb.bin":           "pytorch-pickle",
		"hostile/long4-huge.bin":               "pytorch-pickle",
		"hostile/unicode8-huge.bin":            "pytorch-pickle",
		"hostile/memo-nesting.bin":             "pytorch-unsupported",
		"hostile/self-cycle.bin":               "pytorch-unsupported",
		"hostile/truncated.bin":                "pytorch-zip",
		"hostile/compressed.bin":               "pytorch-compressed",
		"hostile/storage-short.bin":            "pytorch-storage",
		"hostile/legacy-truncated.bin":         "pytorch-storage",
		"zip/pytorch_model.bin":                "",
		"archive.bin":                          "",
		"legacy.bin":                           "",
		"params.bin":                           "",
		"floats":                               "",
		"sharded":                              "",
		"sharded/pytorch_model.bin.index.json": "",
	} {
		t.Run(name, func(t *testing.T) {
			r, err := Check(filepath.Join(pytorchDir, name))
			if err != nil {
				t.Fatal(err)
			}
			if r.Format != "pytorch" {
				t.Errorf("format %q", r.Format)
			}
			if rule == "" {
				if len(r.Findings) != 0 {
					t.Errorf("findings in a file torch wrote: %v", r.Findings)
				}
				return
			}
			if r.OK() || !r.HasRule(rule) {
				t.Errorf("want %s; findings: %v", rule, r.Findings)
			}
			for _, f := range r.Findings {
				if rr, ok := RuleByID(f.Rule); !ok || rr.Severity != f.Severity {
					t.Errorf("finding with unregistered rule or wrong severity: %v", f)
				}
			}
		})
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("%s exists: a hostile payload ran", marker)
	}
}

// check lists every disallowed global of a pickle, each at its opcode.
func TestPyTorchEveryGlobal(t *testing.T) {
	r, err := Check(filepath.Join(pytorchDir, "hostile", "many-globals.bin"))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		global string
		off    int64
	}{{"posix.system", 49}, {"builtins.exec", 63}, {"subprocess.Popen", 78}}
	if len(r.Findings) != len(want) {
		t.Fatalf("findings %v, want %d", r.Findings, len(want))
	}
	for i, w := range want {
		f := r.Findings[i]
		if f.Rule != "pytorch-global" || f.Offset != w.off || !strings.HasPrefix(f.Message, `global "`+w.global+`" is not allowed`) {
			t.Errorf("finding %d: %v, want global %s at %d", i, f, w.global, w.off)
		}
	}
}
