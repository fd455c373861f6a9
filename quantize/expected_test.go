package quantize

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/internal/fixtures"
)

var update = flag.Bool("update", false, "rewrite testdata/quantize from shared/fixtures")

const testdata = "../testdata/quantize"

// refTypes are the llama-quantize outputs the interop fixtures hold: --pure
// for the single types, the default policy for Q4_K_M.
var refTypes = []string{"Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q4_K_M"}

// refFile is what the tests need of one llama.cpp file.
type refFile struct {
	SHA256   string      `json:"sha256,omitempty"` // of the whole file, from summary.json
	FileType int64       `json:"general.file_type"`
	KVKeys   []string    `json:"kv_keys"`
	Tensors  []refTensor `json:"tensors"` // in the file's order
}

type refTensor struct {
	Name   string `json:"name"`
	Type   string `json:"type"`
	SHA256 string `json:"sha256,omitempty"` // of the tensor's data bytes
}

// expected is testdata/quantize/expected.json: model -> llama.cpp type name -> file.
type expected map[string]map[string]refFile

func loadExpected(t *testing.T) expected {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testdata, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var e expected
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

// readRef reads a llama.cpp GGUF's key order, tensor order, types and data
// hashes (the bytes as llama.cpp wrote them).
func readRef(path string, hashes bool) (refFile, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return refFile{}, err
	}
	defer f.Close()
	var r refFile
	r.FileType, _ = f.Metadata.Int("general.file_type")
	for _, kv := range f.Metadata {
		r.KVKeys = append(r.KVKeys, kv.Key)
	}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		rt := refTensor{Name: t.Name, Type: t.DType.String()}
		if hashes {
			h := sha256.New()
			if _, err := io.Copy(h, t.Open()); err != nil {
				return refFile{}, err
			}
			rt.SHA256 = hex.EncodeToString(h.Sum(nil))
		}
		r.Tensors = append(r.Tensors, rt)
	}
	return r, nil
}

// TestUpdateExpected regenerates testdata/quantize from the llama.cpp files
// in shared/fixtures (go test ./quantize -run UpdateExpected -update).
func TestUpdateExpected(t *testing.T) {
	if !*update {
		t.Skip("run with -update to regenerate testdata/quantize")
	}
	dir := fixtures.Require(t)
	e := expected{}
	for _, arch := range []string{"llama", "gpt2", "bert"} {
		e[arch] = map[string]refFile{}
		var summary struct {
			Files map[string]struct {
				SHA256 string `json:"sha256"`
			} `json:"files"`
		}
		b, err := os.ReadFile(filepath.Join(dir, "interop", arch, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &summary); err != nil {
			t.Fatal(err)
		}
		for _, typ := range refTypes {
			name := arch + "-" + typ + ".gguf"
			r, err := readRef(filepath.Join(dir, "interop", arch, "gguf", name), true)
			if err != nil {
				t.Fatal(err)
			}
			r.SHA256 = summary.Files[name].SHA256
			if r.SHA256 == "" {
				t.Fatalf("%s: no sha256 in summary.json", name)
			}
			e[arch][typ] = r
		}
	}
	e["tiny-fortunes"] = map[string]refFile{}
	for _, typ := range []string{"Q8_0", "Q4_0", "Q4_K_M"} {
		name := "tiny-fortunes-" + typ + ".gguf"
		r, err := readRef(filepath.Join(dir, "trained", "tiny-fortunes", "gguf", name), false)
		if err != nil {
			t.Fatal(err)
		}
		r.SHA256 = sumFromSHA256SUMS(t, filepath.Join(dir, "trained", "tiny-fortunes", "SHA256SUMS"), "gguf/"+name)
		e["tiny-fortunes"][typ] = r
	}
	b, err := json.MarshalIndent(e, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(testdata, "expected.json"), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(dir, "interop", "bert", "gguf", "bert-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(testdata, "bert-f32.gguf"), src, 0o644); err != nil {
		t.Fatal(err)
	}
}

// sumFromSHA256SUMS returns the hash sha256sum recorded for name.
func sumFromSHA256SUMS(t *testing.T, path, name string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[1] == name {
			return f[0]
		}
	}
	t.Fatalf("%s: no %s", path, name)
	return ""
}
