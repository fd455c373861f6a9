package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
