package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/tfconv/tfconv/internal/fixtures"
	"github.com/tfconv/tfconv/tensor"
)

// FuzzOpen parses arbitrary bytes. It must never panic; an accepted file
// must satisfy the invariants the reader promises and survive a rewrite.
func FuzzOpen(f *testing.F) {
	// Real files from transformers, whole and corrupted.
	for _, d := range []string{"bert-bfloat16", "gpt2-float16"} {
		b, err := os.ReadFile(filepath.Join(testdata, d, "model.safetensors"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		n := int(binary.LittleEndian.Uint64(b))
		f.Add(b[:8+n])                      // header only
		f.Add(b[:8+n/2])                    // cut in the header
		f.Add(append(b[:len(b):len(b)], 0)) // one byte too many
		flip := bytes.Clone(b)
		flip[8+n/3] ^= 0x20 // a case or punctuation flip in the header
		f.Add(flip)
		// A small file: the real header with its data sizes kept small
		// enough that the fuzzer mutates the header, not the data.
		f.Add(b[:min(len(b), 8+n+64)])
	}
	for _, s := range []string{
		`{}`, `{"__metadata__":{"format":"pt"}}`, `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`,
		`{"a":{"dtype":"F4","shape":[2,3],"data_offsets":[0,3]},"b":{"dtype":"BOOL","shape":[],"data_offsets":[3,4]}}`,
		`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`,
		`{"\ud800":{}}`, `{"a":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,8]}}`,
		`{"a":{"dtype":"F32","shape":[0],"data_offsets":[9223372036854775807,9223372036854775807]}}`,
	} {
		f.Add(file(s, 8))
	}
	f.Add(withN(1<<62, "{}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		sf, err := NewFile(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			if !errors.Is(err, tensor.ErrFormat) {
				t.Fatalf("error %v is not ErrFormat", err)
			}
			return
		}
		next := sf.DataOffset
		infos := make([]tensor.Info, len(sf.Tensors))
		for i := range sf.Tensors {
			tt := &sf.Tensors[i]
			if tt.Offset != next {
				t.Fatalf("%q at %d, want %d", tt.Name, tt.Offset, next)
			}
			size, err := tt.DType.ShapeBytes(tt.Shape)
			if err != nil || size != tt.Size {
				t.Fatalf("%q: size %d, shape says %d (%v)", tt.Name, tt.Size, size, err)
			}
			next += tt.Size
			if got, ok := sf.Tensor(tt.Name); !ok || got != tt {
				t.Fatalf("Tensor(%q) lookup failed", tt.Name)
			}
			infos[i] = tt.Info
		}
		if next != int64(len(b)) {
			t.Fatalf("tensors end at %d, file is %d bytes", next, len(b))
		}
		// Rewrite and read back: same tensors, same metadata.
		var out bytes.Buffer
		w, err := NewWriter(&out, infos, sf.Metadata)
		if err != nil {
			t.Fatalf("NewWriter refused what the reader accepted: %v", err)
		}
		for i := range sf.Tensors {
			bw, err := w.Next(sf.Tensors[i].Name)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(bw, sf.Tensors[i].Open()); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		back, err := NewFile(bytes.NewReader(out.Bytes()), int64(out.Len()))
		if err != nil {
			t.Fatalf("rewritten file does not parse: %v", err)
		}
		if !back.Metadata.Equal(sf.Metadata) || len(back.Tensors) != len(sf.Tensors) {
			t.Fatal("rewritten file differs")
		}
		for i := range back.Tensors {
			a, b := back.Tensors[i].Info, sf.Tensors[i].Info
			if a.Name != b.Name || a.DType != b.DType || !a.Shape.Equal(b.Shape) || a.Size != b.Size {
				t.Fatalf("tensor %d: %+v, was %+v", i, a, b)
			}
		}
	})
}

// TestSharedFixtures walks every safetensors file that the reference tools
// made (when /work/shared/fixtures is present, as in CI): each opens, each
// with a config.json matches it, and each rewrites byte-identically.
func TestSharedFixtures(t *testing.T) {
	root := sharedFixtures()
	if root == "" {
		t.Skip("shared/fixtures not found above the package")
	}
	n := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "model.safetensors" {
			return err
		}
		n++
		rel, _ := filepath.Rel(root, path)
		t.Run(rel, func(t *testing.T) {
			dir := filepath.Dir(path)
			if _, err := os.Stat(filepath.Join(dir, "config.json")); err == nil && knownArch(t, dir) {
				checkFixture(t, dir)
			}
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := rewrite(t, src); !bytes.Equal(got, src) {
				t.Errorf("rewrite differs from the original at byte %d", firstDiff(got, src))
			}
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Error("no model.safetensors under " + root)
	}
}

// knownArch reports whether expectedTensors knows the config's model type.
func knownArch(t *testing.T, dir string) bool {
	switch readConfig(t, dir).ModelType {
	case "llama", "gpt2", "bert", "t5":
		return true
	}
	return false
}

// sharedFixtures returns shared/fixtures beside the clone, or "".
func sharedFixtures() string { return fixtures.Dir() }
