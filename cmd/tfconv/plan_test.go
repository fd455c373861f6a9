package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/formats/gguf"
)

// TestPlanMatchesRun: tfconv plan's files are the real run's, names and
// sizes exact to the byte, each file's tensors in order with their types
// and sizes; with --part the shards marked written are the ones the part
// writes, and disk_bytes their sum.
func TestPlanMatchesRun(t *testing.T) {
	t.Parallel()
	src := "../../testdata/arch/llama3/hf"
	for _, tc := range []struct {
		run  []string // the run's flags
		plan []string // plan's flags for it
	}{
		{[]string{"convert", "--outtype", "f16"}, []string{"--outtype", "f16"}},
		{[]string{"convert", "--outtype", "bf16", "--split-max-size", "20K"}, []string{"--outtype", "bf16", "--split-max-size", "20K"}},
		{[]string{"convert", "--outtype", "q8_0", "--split-max-size", "20K", "--part", "2/3"}, []string{"--outtype", "q8_0", "--split-max-size", "20K", "--part", "2/3"}},
		{[]string{"quantize", "--type", "q4_k_m"}, []string{"--type", "q4_k_m"}},
		{[]string{"quantize", "--type", "q8_0", "--split-max-size", "10K"}, []string{"--type", "q8_0", "--split-max-size", "10K"}},
		{[]string{"quantize", "--type", "q4_k_m", "--split-max-size", "10K", "--part", "3/4"}, []string{"--type", "q4_k_m", "--split-max-size", "10K", "--part", "3/4"}},
	} {
		dir := t.TempDir()
		dst := filepath.Join(dir, "out.gguf")
		out := mustRun(t, append([]string{"plan", src, dst, "--json"}, tc.plan...)...)
		var p struct {
			Command string `json:"command"`
			Shards  []struct {
				Name    string `json:"name"`
				Bytes   int64  `json:"bytes"`
				Write   bool   `json:"write"`
				Tensors []struct {
					Name  string `json:"name"`
					Type  string `json:"type"`
					Bytes int64  `json:"bytes"`
				} `json:"tensors"`
			} `json:"shards"`
			DiskBytes    int64 `json:"disk_bytes"`
			PeakRAMBytes int64 `json:"peak_ram_bytes"`
			Seconds      float64
		}
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatalf("%v: %v\n%s", tc.plan, err, out)
		}
		if p.Command != tc.run[0] || p.PeakRAMBytes <= 0 {
			t.Errorf("%v: command %q, peak RAM %d", tc.plan, p.Command, p.PeakRAMBytes)
		}
		runOut := mustRun(t, append([]string{tc.run[0], src, dst, "--json"}, tc.run[1:]...)...)
		var rep struct {
			Tensors []json.RawMessage `json:"tensors"`
		}
		if err := json.Unmarshal([]byte(runOut), &rep); err != nil {
			t.Fatalf("%v: %v", tc.run, err)
		}
		planned := 0
		for _, sh := range p.Shards {
			if sh.Write {
				planned += len(sh.Tensors)
			}
		}
		if len(rep.Tensors) != planned {
			t.Errorf("%v: the report lists %d tensors, the files written hold %d", tc.run, len(rep.Tensors), planned)
		}
		ents, _ := os.ReadDir(dir)
		var disk int64
		written := 0
		for _, sh := range p.Shards {
			st, err := os.Stat(sh.Name)
			if !sh.Write {
				if err == nil {
					t.Errorf("%v: %s written, the plan says another part writes it", tc.plan, sh.Name)
				}
				continue
			}
			written++
			if err != nil {
				t.Errorf("%v: planned %s not written: %v", tc.plan, sh.Name, err)
				continue
			}
			disk += st.Size()
			if st.Size() != sh.Bytes {
				t.Errorf("%v: %s is %d bytes, planned %d", tc.plan, sh.Name, st.Size(), sh.Bytes)
			}
			f, err := gguf.Open(sh.Name)
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Tensors) != len(sh.Tensors) {
				t.Errorf("%v: %s has %d tensors, planned %d", tc.plan, sh.Name, len(f.Tensors), len(sh.Tensors))
			}
			for i := range min(len(f.Tensors), len(sh.Tensors)) {
				got, want := f.Tensors[i], sh.Tensors[i]
				if got.Name != want.Name || !strings.EqualFold(got.DType.String(), want.Type) || got.Size != want.Bytes {
					t.Errorf("%v: %s tensor %d: %s %v %d bytes, planned %s %s %d", tc.plan, sh.Name, i, got.Name, got.DType, got.Size, want.Name, want.Type, want.Bytes)
				}
			}
			f.Close()
		}
		if len(ents) != written || disk != p.DiskBytes {
			t.Errorf("%v: %d files of %d bytes written, planned %d of %d", tc.plan, len(ents), disk, written, p.DiskBytes)
		}
	}
	code, _, errOut := run(t, "plan", src, "--type", "q8_0", "--outtype", "f16")
	if code == 0 || !strings.Contains(errOut, "give one") {
		t.Errorf("--type with --outtype: exit %d, %q", code, errOut)
	}
}
