package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/hubtest"
	"github.com/tfconv/tfconv/internal/httprange"
)

// hubToken is the token the test Hub requires; no output may show it.
const hubToken = "hf_TESTtokenNeverShownAnywhere0123456789"

// startHub serves hubtest.Tiny as org/tiny (with the deepseek3 fixture's
// tokenizer) as HF_ENDPOINT, requiring hubToken from HF_TOKEN, with the
// retry waits and stall timeout cut for a test.
func startHub(t *testing.T) (*hubtest.Server, *hubtest.Repo) {
	t.Helper()
	return startHubOf(t, hubtest.Tiny(), "org/tiny")
}

// startHubOf is startHub serving m as repository id.
func startHubOf(t *testing.T, m hubtest.MoE, id string) (*hubtest.Server, *hubtest.Repo) {
	t.Helper()
	sides := map[string][]byte{}
	for _, n := range []string{"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "generation_config.json"} {
		b, err := os.ReadFile(filepath.Join("../../testdata/arch/deepseek3/hf", n))
		if err != nil {
			t.Fatal(err)
		}
		sides[n] = b
	}
	repo, err := m.Repo(id, m.Layers, sides)
	if err != nil {
		t.Fatal(err)
	}
	s := hubtest.Start(repo)
	s.Token = hubToken
	t.Cleanup(s.Close)
	t.Setenv("HF_ENDPOINT", s.URL)
	t.Setenv("HF_TOKEN", hubToken)
	timeout, backoff := httprange.Timeout, httprange.Backoff
	httprange.Timeout, httprange.Backoff = 500*time.Millisecond, 20*time.Millisecond
	t.Cleanup(func() { httprange.Timeout, httprange.Backoff = timeout, backoff })
	return s, repo
}

// TestHubFaults runs quantize (and convert) from the test Hub under each
// fault: a dropped connection, 500s, 429 with Retry-After and a stall are
// survived with the fault-free run's bytes; a truncating server, one that
// stays down, a corrupt file and a file that changes mid-run stop the run
// with an error naming the file and nothing written. The output records
// the repository and commit; the token shows in no output, error, --json,
// progress or metadata, and never reaches the CDN host.
func TestHubFaults(t *testing.T) {
	s, repo := startHub(t)
	dir := t.TempDir()
	var outputs []string // every stdout, stderr and file, for the token grep
	quantize := func(name string, f hubtest.Faults, args ...string) (int, string, string) {
		s.SetFaults(f)
		dst := filepath.Join(dir, name+".gguf")
		code, out, errb := run(t, append([]string{"quantize", "hf://org/tiny", dst, "--type", "q4_k_m", "--json", "--progress"}, args...)...)
		outputs = append(outputs, out, errb)
		if b, err := os.ReadFile(dst); err == nil {
			outputs = append(outputs, string(b))
		}
		return code, out, errb
	}
	code, _, errb := quantize("base", hubtest.Faults{})
	if code != 0 {
		t.Fatalf("fault-free quantize: exit %d: %s", code, errb)
	}
	// Progress: bytes, rate and ETA of the quantization, and the source's
	// bytes fetched with their rate.
	if !strings.Contains(errb, "MiB/s") || !strings.Contains(errb, " in ") || !strings.Contains(errb, ", fetched ") {
		t.Errorf("progress shows no bytes, rate, time and bytes fetched: %q", errb)
	}
	want, err := os.ReadFile(filepath.Join(dir, "base.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(filepath.Join(dir, "base.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	for key, v := range map[string]string{"general.source.repo_url": s.URL + "/org/tiny", "general.source.url": s.URL + "/org/tiny/tree/" + repo.Commit} {
		if got, ok := f.Metadata.Get(key); !ok || got.String() != `"`+v+`"` {
			t.Errorf("%s = %v, want %q", key, got, v)
		}
	}
	f.Close()
	shard := "model-00001-of-000003.safetensors"
	for _, tc := range []struct {
		name string
		f    hubtest.Faults
		err  string // "" survives
	}{
		{"drop", hubtest.Faults{Drop: 3, DropAfter: 10000}, ""},
		{"500", hubtest.Faults{Status500: 3}, ""},
		{"429", hubtest.Faults{TooMany: 2, RetryAfter: 1}, ""},
		{"stall", hubtest.Faults{Stall: 1}, ""},
		{"truncate", hubtest.Faults{Truncate: true}, "bytes received"},
		{"down", hubtest.Faults{Down: true}, "503"},
		{"corrupt", hubtest.Faults{Corrupt: shard, CorruptByte: 200000}, "checksum mismatch"},
		{"change", hubtest.Faults{Change: shard, ChangeAfter: 2}, "changed while being read"},
	} {
		start := time.Now()
		code, _, errb := quantize(tc.name, tc.f)
		d := time.Since(start)
		out := filepath.Join(dir, tc.name+".gguf")
		got, rerr := os.ReadFile(out)
		switch {
		case tc.err == "" && code != 0:
			t.Errorf("%s: exit %d: %s", tc.name, code, errb)
		case tc.err == "" && !bytes.Equal(got, want):
			t.Errorf("%s: the output differs from the fault-free run's", tc.name)
		case tc.err != "" && (code == 0 || !strings.Contains(errb, tc.err)):
			t.Errorf("%s: exit %d, want an error saying %q: %s", tc.name, code, tc.err, errb)
		case tc.err != "" && rerr == nil:
			t.Errorf("%s: failed run left %s", tc.name, out)
		case tc.err != "" && tc.name != "down" && !strings.Contains(errb, "model-0000") && !strings.Contains(errb, "org/tiny"):
			t.Errorf("%s: the error names no file: %s", tc.name, errb)
		}
		t.Logf("%s: exit %d in %v: %s", tc.name, code, d.Round(time.Millisecond), lastLine(errb))
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, p := range left {
		if b := filepath.Base(p); b != "base.gguf" && !strings.HasPrefix(b, "drop") && !strings.HasPrefix(b, "500") &&
			!strings.HasPrefix(b, "429") && !strings.HasPrefix(b, "stall") {
			t.Errorf("left behind: %s", b)
		}
	}
	s.SetFaults(hubtest.Faults{})
	code, out, errb := run(t, "convert", "hf://org/tiny", filepath.Join(dir, "conv.gguf"), "--json")
	outputs = append(outputs, out, errb)
	if code != 0 {
		t.Errorf("convert: exit %d: %s", code, errb)
	}
	// --token in place of HF_TOKEN, on every command that reads remote
	// sources: without it the Hub answers 401, with it each command runs,
	// and its outputs join the grep. A wrong token fails without showing it.
	t.Setenv("HF_TOKEN", "")
	conv := filepath.Join(dir, "conv.gguf")
	for _, args := range [][]string{
		{"convert", "hf://org/tiny", filepath.Join(dir, "tok-conv.gguf"), "--json", "--progress"},
		{"quantize", "hf://org/tiny", filepath.Join(dir, "tok-q.gguf"), "--type", "q8_0", "--json", "--progress"},
		{"plan", "hf://org/tiny", "--type", "q4_k_m", "--json"},
		{"inspect", "hf://org/tiny", "--json"},
		{"check", "hf://org/tiny/" + shard, "--json", "--progress"},
		{"diff", "hf://org/tiny", "hf://org/tiny"},
		{"verify", "hf://org/tiny", conv, "--json"},
	} {
		if code, _, errb := run(t, args...); code == 0 || !strings.Contains(errb, "401") {
			t.Errorf("%s without a token: exit %d, want the Hub's 401: %s", args[0], code, lastLine(errb))
		}
		code, out, errb := run(t, append(args, "--token", hubToken)...)
		outputs = append(outputs, out, errb)
		if code != 0 {
			t.Errorf("%s --token: exit %d: %s", args[0], code, lastLine(errb))
		}
		code, out, errb = run(t, append(args, "--token", "hf_wrong"+hubToken[3:])...)
		outputs = append(outputs, out, errb)
		if code == 0 || !strings.Contains(errb, "401") {
			t.Errorf("%s with a wrong --token: exit %d, want the Hub's 401: %s", args[0], code, lastLine(errb))
		}
	}
	for _, p := range []string{"tok-conv.gguf", "tok-q.gguf"} {
		if b, err := os.ReadFile(filepath.Join(dir, p)); err != nil {
			t.Errorf("--token run wrote no %s: %v", p, err)
		} else {
			outputs = append(outputs, string(b))
		}
	}
	for _, o := range outputs {
		if strings.Contains(o, hubToken) || strings.Contains(o, hubToken[3:]) {
			t.Fatalf("the token shows in an output: %q", o[:min(len(o), 300)])
		}
	}
	if n := s.CDNAuth.Load(); n != 0 {
		t.Errorf("the token went to the CDN host %d times", n)
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}
