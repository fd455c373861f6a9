package convert

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/internal/fixtures"
	"github.com/tfconv/tfconv/tensor"
)

// The GGUF keys whose values may differ from llama.cpp's converter output,
// and why. general.name is derived from the source directory's name (the
// fixtures were converted from a directory called "hf"; tests convert from
// copies elsewhere). tokenizer.ggml.pre of the bert fixture is "jina-v2-en",
// which the fixture tools obtained by hashing the untrimmed parent
// vocabulary (the unmodified converter raises NotImplementedError on the
// trimmed one, see the fixture README); the trimmed vocabulary itself says
// nothing about it, and llama.cpp ignores the pre-tokenizer for WordPiece.
func allowedDiff(arch, key string) bool {
	return slices.Contains(ProvenanceKeys, key) || arch == "bert" && key == "tokenizer.ggml.pre"
}

// pathDerived are the provenance keys written only when a folder's name
// yields them: two conversions from differently named folders may differ in
// whether they have them at all (general.name they always have).
func pathDerived(key string) bool { return key != keyName && slices.Contains(ProvenanceKeys, key) }

// ggufFixture returns the llama.cpp converter output for outType. The q8_0
// file shares its name, case aside, with llama-quantize's Q8_0 output and
// only the latter is present on case-insensitive copies; the fixture README
// records that both hold identical tensor types and bytes.
func ggufFixture(t *testing.T, dir, arch, outType string) string {
	p := filepath.Join(dir, arch+"-"+outType+".gguf")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if outType == OutQ8_0 {
		return filepath.Join(dir, arch+"-Q8_0.gguf")
	}
	t.Fatalf("no fixture %s", p)
	return ""
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// compareGGUF checks that ours has exactly want's tensors (names, types,
// shapes, bytes; order free) and metadata (keys and values, except the
// allowed differences; order too when ordered).
func compareGGUF(t *testing.T, arch, ours, want string, ordered bool) {
	t.Helper()
	a, err := checkpoint.Open(ours)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := checkpoint.Open(want)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	sameTensors(t, a, b, nil)
	compareMetadata(t, arch, a.Metadata, b.Metadata, ordered)
}

// sameTensors checks that a has exactly b's tensors: names, types,
// shapes and bytes (after view, when given, maps both sides' bytes). A
// tensor a family pads (Tensor.PadTo) may be longer in a, by zero rows.
func sameTensors(t *testing.T, a, b *checkpoint.Checkpoint, view func(name string, data []byte) []byte) {
	t.Helper()
	checkTensors(t, a, b, view, true)
}

// identicalTensors checks that a has exactly b's tensors, names, types,
// shapes and bytes, with no padding allowed.
func identicalTensors(t *testing.T, a, b *checkpoint.Checkpoint) {
	t.Helper()
	checkTensors(t, a, b, nil, false)
}

func checkTensors(t *testing.T, a, b *checkpoint.Checkpoint, view func(name string, data []byte) []byte, padOK bool) {
	t.Helper()
	if len(a.Tensors) != len(b.Tensors) {
		t.Errorf("%d tensors, the reference has %d", len(a.Tensors), len(b.Tensors))
	}
	for _, wt := range b.Tensors {
		ot, ok := a.Tensor(wt.Name)
		if !ok {
			t.Errorf("missing tensor %q", wt.Name)
			continue
		}
		if ot.DType != wt.DType || !ot.Shape.Equal(wt.Shape) {
			if !padOK || !zeroPadded(t, ot, wt) {
				t.Errorf("tensor %q: %v %v, the reference %v %v", wt.Name, ot.DType, ot.Shape, wt.DType, wt.Shape)
			}
			continue
		}
		ob, err := ot.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		wb, err := wt.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if view != nil {
			ob, wb = view(wt.Name, ob), view(wt.Name, wb)
		}
		if !bytes.Equal(ob, wb) {
			t.Errorf("tensor %q: data differs from the reference's", wt.Name)
		}
	}
}

func compareMetadata(t *testing.T, arch string, ours, want tensor.Metadata, ordered bool) {
	t.Helper()
	var ok, wk []string
	for _, kv := range ours {
		if !pathDerived(kv.Key) {
			ok = append(ok, kv.Key)
		}
	}
	for _, kv := range want {
		if pathDerived(kv.Key) {
			continue
		}
		wk = append(wk, kv.Key)
		v, found := ours.Get(kv.Key)
		switch {
		case !found:
			t.Errorf("metadata: missing %s", kv.Key)
		case !v.Equal(kv.Value) && !allowedDiff(arch, kv.Key):
			t.Errorf("metadata %s = %v, llama.cpp %v", kv.Key, v, kv.Value)
		}
	}
	if !ordered {
		slices.Sort(ok)
		slices.Sort(wk)
	}
	if !slices.Equal(ok, wk) {
		t.Errorf("metadata keys\n ours %v\n want %v", ok, wk)
	}
}

// TestMatchesLlamaCpp converts each interop fixture's hf/ directory with
// every converter outtype and compares with llama.cpp's own output.
func TestMatchesLlamaCpp(t *testing.T) {
	root := filepath.Join(fixtures.Require(t), "interop")
	for _, arch := range []string{"gpt2", "llama", "bert"} {
		for _, ot := range []string{OutF32, OutF16, OutBF16, OutQ8_0} {
			t.Run(arch+"/"+ot, func(t *testing.T) {
				out := filepath.Join(t.TempDir(), "out.gguf")
				rep, err := Run(filepath.Join(root, arch, "hf"), out, Options{OutType: ot})
				if err != nil {
					t.Fatal(err)
				}
				want := ggufFixture(t, filepath.Join(root, arch, "gguf"), arch, ot)
				// llama-quantize moves general.file_type; the converter's
				// own files keep the order we must match.
				ordered := filepath.Base(want) == arch+"-"+ot+".gguf"
				compareGGUF(t, arch, out, want, ordered)
				if rep.SelfCheck != "ok" || rep.Arch != arch {
					t.Errorf("report: self_check %q arch %q", rep.SelfCheck, rep.Arch)
				}
			})
		}
	}
}

// zeroPadded reports whether ot is wt with zero rows appended, as the
// converter pads a table whose role has arch.Tensor.PadTo (Gemma 3n's
// per-layer embeddings): wt's bytes first, then zeros. GGUF → HF keeps the
// padded rows (the GGUF does not say how many were added).
func zeroPadded(t *testing.T, ot, wt *checkpoint.Tensor) bool {
	t.Helper()
	padded := false
	for _, f := range arch.Families() {
		if m, ok := f.FromHF(wt.Name); ok && m.Tensor.PadTo != "" {
			padded = true
		}
	}
	if !padded || ot.DType != wt.DType || len(ot.Shape) == 0 || len(ot.Shape) != len(wt.Shape) ||
		ot.Shape[0] <= wt.Shape[0] || !ot.Shape[1:].Equal(wt.Shape[1:]) {
		return false
	}
	ob, err := ot.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	wb, err := wt.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(ob[:len(wb)], wb) && !slices.ContainsFunc(ob[len(wb):], func(b byte) bool { return b != 0 })
}
