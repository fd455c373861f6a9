package checkpoint

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// recurrentMemoryCase is one context llama.cpp d32676d7 made on a fixture
// with recurrent layers (testdata/arch/memory-recurrent.json, written by
// gen_memory.py --recurrent from tools/kv_report.cpp's log): its
// llama_kv_cache line (absent, all zero, for a model without attention)
// and its llama_memory_recurrent line, MiB at the two decimals it prints.
type recurrentMemoryCase struct {
	File     string  `json:"file"`
	Ctx      int64   `json:"ctx"`
	KVType   string  `json:"kv_type"`
	Parallel int64   `json:"parallel"`
	KVCells  int64   `json:"kv_cells"`
	KVLayers int     `json:"kv_layers"`
	KMiB     float64 `json:"k_mib"`
	VMiB     float64 `json:"v_mib"`
	RSMiB    float64 `json:"rs_mib"`
	RSLayers int     `json:"rs_layers"`
}

// exactStatePerSequence is the recurrent state of one sequence in bytes,
// worked out from the fixtures' configs (f32): Mamba's (mamba, jamba: 2
// layers of (d_conv−1)·d_inner + d_inner·d_state = 3·128 + 128·16 floats),
// Granite 4.0-H's (3 Mamba-2 layers of 3·160 + 16·128: the convolution over
// x, B and C), Qwen3-Next's one DeltaNet layer ((K−1)·(2·2·16 + 4·16) +
// 4·16·16). llama.cpp prints MiB; these pin the bytes.
var exactStatePerSequence = map[string]int64{
	"mamba": 2 * 9728, "jamba": 2 * 9728, "granitehybrid": 3 * (3*160 + 16*128) * 4, "qwen3next": 5632,
}

// TestRecurrentMemoryMatchesLlamaCpp holds the memory estimate of every
// fixture with recurrent layers, HF folder and llama.cpp's GGUF alike, to
// what llama.cpp d32676d7 reports when it makes a context on the GGUF: the
// attention layers' K and V cache (only they keep one) at 512, 4096 and
// 32768 positions, and the recurrent state (the same at every context) for
// 1 to 256 sequences; the layers each counts are those the summary's
// pattern calls attention and recurrent. With more than one sequence
// d32676d7 gives each its own stream of the cache (n_ctx / n_seq cells),
// where the estimate keeps c392e509's one shared cache: the KV cache is
// compared for one sequence.
func TestRecurrentMemoryMatchesLlamaCpp(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../testdata/arch/memory-recurrent.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Cases []recurrentMemoryCase `json:"cases"`
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	byFam := map[string][]recurrentMemoryCase{}
	for _, c := range ref.Cases {
		fam := strings.TrimSuffix(filepath.Base(c.File), "-f32.gguf")
		byFam[fam] = append(byFam[fam], c)
	}
	mib := func(n int64) string { return fmt.Sprintf("%.2f", float64(n)/(1<<20)) }
	printed := func(v float64) string { return fmt.Sprintf("%.2f", v) }
	ents, err := os.ReadDir("../testdata/arch")
	if err != nil {
		t.Fatal(err)
	}
	var fams int
	for _, e := range ents {
		fam := e.Name()
		hf := filepath.Join("../testdata/arch", fam, "hf")
		if _, err := os.Stat(filepath.Join(hf, "config.json")); err != nil {
			continue
		}
		for _, path := range []string{filepath.Join("../testdata/arch", fam, "gguf", fam+"-f32.gguf"), hf} {
			ck, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			s, err := Summarize(ck)
			ck.Close()
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			var attention, recurrent int
			for _, l := range s.LayerPattern {
				if attends(l) && l.KVFrom == nil {
					attention++
				}
				if l.Recurrent {
					recurrent++
				}
			}
			if recurrent == 0 {
				break
			}
			cases := byFam[fam]
			ctxs := map[int64]bool{}
			for _, c := range cases {
				if c.Parallel == 1 {
					ctxs[c.Ctx] = true
				}
			}
			if len(ctxs) < 3 {
				t.Errorf("%s: llama.cpp's report at %d context sizes in memory-recurrent.json, want 3 (gen_memory.py --recurrent)", fam, len(ctxs))
			}
			if path == hf {
				fams++
			}
			for _, c := range cases {
				name := fmt.Sprintf("%s ctx %d, %d sequences", path, c.Ctx, c.Parallel)
				kv, ok := tensor.Parse(c.KVType)
				if !ok {
					t.Fatalf("%s: kv_type %q", name, c.KVType)
				}
				m, err := s.EstimateMemory(MemoryOptions{Context: c.Ctx, KVType: kv, Parallel: c.Parallel})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if mib(m.RSBytes) != printed(c.RSMiB) || recurrent != c.RSLayers {
					t.Errorf("%s: state %s MiB (rs_bytes %d) over %d layers; llama.cpp %s MiB over %d", name, mib(m.RSBytes), m.RSBytes, recurrent, printed(c.RSMiB), c.RSLayers)
				}
				if want, ok := exactStatePerSequence[fam]; ok && m.RSBytes != want*c.Parallel {
					t.Errorf("%s: rs_bytes %d, want %d", name, m.RSBytes, want*c.Parallel)
				}
				if attention != c.KVLayers {
					t.Errorf("%s: %d attention layers keep a cache, llama.cpp's has %d", name, attention, c.KVLayers)
				}
				if c.KVCells == 0 && m.KVBytes != 0 {
					t.Errorf("%s: a KV cache of %d bytes, llama.cpp keeps none", name, m.KVBytes)
				}
				if c.Parallel == 1 && c.KVCells != 0 && (m.KVSize != c.KVCells || mib(m.KBytes) != printed(c.KMiB) || mib(m.VBytes) != printed(c.VMiB)) {
					t.Errorf("%s: cache of %d positions, K %s V %s MiB; llama.cpp %d, K %s V %s", name, m.KVSize, mib(m.KBytes), mib(m.VBytes),
						c.KVCells, printed(c.KMiB), printed(c.VMiB))
				}
				if fam == "jamba" && c.Parallel == 1 && m.KVBytes != 2*2*2*16*c.Ctx*2 {
					// 2 attention layers, K and V, 2 heads of 16, f16
					t.Errorf("%s: kv_bytes %d, want %d", name, m.KVBytes, 2*2*2*16*c.Ctx*2)
				}
				if m.TotalBytes != m.WeightBytes+m.KVBytes+m.RSBytes {
					t.Errorf("%s: total %d is not weights %d + KV %d + state %d", name, m.TotalBytes, m.WeightBytes, m.KVBytes, m.RSBytes)
				}
			}
		}
	}
	if fams < len(byFam) || fams == 0 {
		t.Errorf("%d fixtures with recurrent layers, memory-recurrent.json has %d", fams, len(byFam))
	}
	t.Logf("%d fixtures with recurrent layers, %d cases", fams, len(ref.Cases))
}
