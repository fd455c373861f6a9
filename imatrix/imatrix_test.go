package imatrix

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/tfconv/tfconv/internal/fixtures"
	"github.com/tfconv/tfconv/model"
)

const testdata = "../testdata/imatrix"

// maxRelDiff bounds |ours − llama-imatrix| / |llama-imatrix| per entry of
// the mean squared activation. Both sum float32 squares of float32
// activations; what differs is the order of the float32 sums inside the
// forward pass (a few 1e-7 relative, compounding over the layers: the
// largest seen is 3.4e-6), so 1e-4 (the bound) leaves room
// without hiding a wrong column, chunk or count.
const maxRelDiff = 1e-4

// reference is a model and the llama-imatrix outputs made from it.
type reference struct {
	name  string // file prefix under testdata/imatrix
	model string // path of the model
}

func references(t *testing.T) []reference {
	refs := []reference{
		{"mixtral", "../testdata/arch/mixtral/gguf/mixtral-f32.gguf"},
		{"llama3", "../testdata/arch/llama3/gguf/llama3-f32.gguf"},
	}
	if d := fixtures.Dir(); d != "" {
		// The tiny-fortunes f32 GGUF is its HF checkpoint converted
		// losslessly; tfconv runs the HF checkpoint itself.
		refs = append(refs, reference{"tiny-fortunes", filepath.Join(d, "trained", "tiny-fortunes", "hf")},
			reference{"interop-llama", filepath.Join(d, "interop", "llama", "gguf", "llama-f32.gguf")})
	} else {
		t.Log("shared/fixtures absent: tiny-fortunes and interop-llama not compared")
	}
	return refs
}

func compute(t *testing.T, path string) *Matrix {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(testdata, "calib.txt"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Load(path, model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	mat, err := Compute(m, string(text), Options{Ctx: 128, Dataset: "calib.txt"})
	if err != nil {
		t.Fatal(err)
	}
	return mat
}

// compareMeans checks every entry's mean squared activation against want's.
func compareMeans(t *testing.T, what string, got, want *Matrix) {
	t.Helper()
	gi, wi := got.Importance(), want.Importance()
	if len(gi) != len(wi) {
		t.Errorf("%s: %d entries, llama-imatrix has %d", what, len(gi), len(wi))
	}
	worst := 0.0
	for name, w := range wi {
		g, ok := gi[name]
		if !ok {
			t.Errorf("%s: no entry %s", what, name)
			continue
		}
		if len(g) != len(w) {
			t.Errorf("%s: %s: %d values, llama-imatrix has %d", what, name, len(g), len(w))
			continue
		}
		for i := range w {
			d := math.Abs(float64(g[i])-float64(w[i])) / math.Abs(float64(w[i]))
			worst = max(worst, d)
			if !(d <= maxRelDiff) {
				t.Errorf("%s: %s[%d] = %g, llama-imatrix %g (relative difference %.3g)", what, name, i, g[i], w[i], d)
				break
			}
		}
	}
	t.Logf("%s: %d entries, largest relative difference %.3g", what, len(wi), worst)
}

// Issue 19: tfconv imatrix agrees with llama-imatrix (c392e509's legacy
// .dat, and the current GGUF with its exact counts) on the same text.
func TestComputeMatchesLlamaImatrix(t *testing.T) {
	for _, r := range references(t) {
		got := compute(t, r.model)
		if got.ChunkCount != 15 || got.ChunkSize != 128 {
			t.Errorf("%s: %d chunks of %d; llama-imatrix computed over 15 chunks of 128", r.name, got.ChunkCount, got.ChunkSize)
		}
		old, err := Open(filepath.Join(testdata, r.name+".c392e509.dat"))
		if err != nil {
			t.Fatal(err)
		}
		if old.ChunkCount != got.ChunkCount || len(old.Datasets) != 1 || old.Datasets[0] != "calib.txt" {
			t.Errorf("%s: c392e509 trailer: %d chunks, datasets %q", r.name, old.ChunkCount, old.Datasets)
		}
		compareMeans(t, r.name+" vs c392e509", got, old)
	}
}

// A written matrix reads back the same in both formats; the .dat keeps
// means (× ncall), which Importance turns back into the same means.
func TestWriteRead(t *testing.T) {
	m := &Matrix{ChunkCount: 3, ChunkSize: 4, Datasets: []string{"a.txt"}, Entries: []Entry{
		{Name: "blk.0.attn_q.weight", Sums: []float32{12, 24}, Counts: []int64{12}},
		{Name: "blk.0.ffn_up_exps.weight", Sums: []float32{1, 2, 3, 4, 5, 6}, Counts: []int64{2, 0, 4}},
	}}
	for _, f := range []Format{GGUF, Dat} {
		var b bytes.Buffer
		if err := Write(&b, m, f); err != nil {
			t.Fatal(err)
		}
		got, err := Read(bytes.NewReader(b.Bytes()), int64(b.Len()))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if got.Legacy != (f == Dat) || got.ChunkCount != 3 || len(got.Datasets) != 1 || got.Datasets[0] != "a.txt" {
			t.Errorf("%s: %+v", f, got)
		}
		want := map[string][]float32{"blk.0.attn_q.weight": {1, 2}, "blk.0.ffn_up_exps.weight": {0.5, 1, 1, 1, 1.25, 1.5}}
		if gi := got.Importance(); fmt.Sprint(gi) != fmt.Sprint(want) {
			t.Errorf("%s: importance %v, want %v", f, gi, want)
		}
	}
	if _, err := Read(bytes.NewReader([]byte("GGUF")), 4); err == nil {
		t.Error("a cut GGUF reads")
	}
}

// FuzzRead: any bytes either fail or give a matrix whose entries are
// consistent and that writes in both formats.
func FuzzRead(f *testing.F) {
	for _, name := range []string{"mixtral.c392e509.dat", "llama3.c392e509.dat"} {
		b, err := os.ReadFile(filepath.Join(testdata, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	var b bytes.Buffer
	WriteGGUF(&b, &Matrix{ChunkCount: 1, ChunkSize: 2, Entries: []Entry{{Name: "blk.0.x", Sums: []float32{1, 2}, Counts: []int64{2}}}})
	f.Add(b.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Read(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		for _, e := range m.Entries {
			if len(e.Counts) == 0 || len(e.Sums)%len(e.Counts) != 0 {
				t.Fatalf("%s: %d sums, %d counts", e.Name, len(e.Sums), len(e.Counts))
			}
		}
		m.Importance()
		var out bytes.Buffer
		WriteGGUF(&out, m)
		WriteDat(&out, m)
	})
}
