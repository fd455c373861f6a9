package checkpoint

import (
	"runtime"
	"sort"
	"testing"

	"github.com/tfconv/tfconv/internal/fixtures"
)

// writeSparse70B lays out a 70B-shaped bf16 HF checkpoint (about 138 GB)
// as sparse files (fixtures.WriteSparse70B).
func writeSparse70B(tb testing.TB, dir string) {
	if err := fixtures.WriteSparse70B(dir); err != nil {
		tb.Fatal(err)
	}
}

func TestSparse70B(t *testing.T) {
	dir := t.TempDir()
	writeSparse70B(t, dir)
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := Summarize(c)
	if err != nil {
		t.Fatal(err)
	}
	if s.Params != fixtures.Llama70BParams || s.TensorBytes != 2*fixtures.Llama70BParams || s.Layers != fixtures.Llama70BLayers || s.Hidden != fixtures.Llama70BHidden ||
		s.Heads != 64 || s.KVHeads != 8 || s.Vocab != fixtures.Llama70BVocab || s.Context != 4096 || s.Files != 17 || s.Architecture != "llama" {
		t.Errorf("summary %+v", s)
	}
	if s.BitsPerWeight != 16 {
		t.Errorf("bits per weight %v", s.BitsPerWeight)
	}
	if len(s.LayerTable) != fixtures.Llama70BLayers+1 || s.LayerTable[79].Tensors != 9 || s.LayerTable[80].Layer != -1 {
		t.Errorf("layer table: %d rows", len(s.LayerTable))
	}
	names := make([]string, 0, len(c.Tensors))
	for _, x := range c.Tensors {
		names = append(names, x.Name)
	}
	if len(names) != 2+9*fixtures.Llama70BLayers+1 || !sort.SliceIsSorted(c.Files, func(i, j int) bool { return c.Files[i].Path < c.Files[j].Path }) {
		t.Errorf("%d tensors", len(names))
	}
}

// BenchmarkInspect70B opens and summarizes the sparse 70B-shaped checkpoint:
// the header-only path inspect takes. Reports heap bytes allocated per run.
func BenchmarkInspect70B(b *testing.B) {
	dir := b.TempDir()
	writeSparse70B(b, dir)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Summarize(c); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
	b.StopTimer()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.Sys)/(1<<20), "MiB-sys")
}
