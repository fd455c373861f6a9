package checkpoint

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"testing"
)

// Llama-2-70B's shapes (its config.json: hidden 8192, 80 layers, 64 heads, 8
// KV heads, FFN 28672, vocab 32000) and its published parameter count.
const (
	l70Hidden  = 8192
	l70Layers  = 80
	l70KV      = 1024 // 8 KV heads × head dim 128
	l70FFN     = 28672
	l70Vocab   = 32000
	l70Params  = 68976648192
	l70PerFile = 5 // layers per shard
)

type sparseTensor struct {
	name  string
	shape []int64
}

func llama70BTensors() [][]sparseTensor {
	var shards [][]sparseTensor
	cur := []sparseTensor{{"model.embed_tokens.weight", []int64{l70Vocab, l70Hidden}}}
	for l := 0; l < l70Layers; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		cur = append(cur,
			sparseTensor{p + "input_layernorm.weight", []int64{l70Hidden}},
			sparseTensor{p + "self_attn.q_proj.weight", []int64{l70Hidden, l70Hidden}},
			sparseTensor{p + "self_attn.k_proj.weight", []int64{l70KV, l70Hidden}},
			sparseTensor{p + "self_attn.v_proj.weight", []int64{l70KV, l70Hidden}},
			sparseTensor{p + "self_attn.o_proj.weight", []int64{l70Hidden, l70Hidden}},
			sparseTensor{p + "post_attention_layernorm.weight", []int64{l70Hidden}},
			sparseTensor{p + "mlp.gate_proj.weight", []int64{l70FFN, l70Hidden}},
			sparseTensor{p + "mlp.up_proj.weight", []int64{l70FFN, l70Hidden}},
			sparseTensor{p + "mlp.down_proj.weight", []int64{l70Hidden, l70FFN}},
		)
		if (l+1)%l70PerFile == 0 {
			shards = append(shards, cur)
			cur = nil
		}
	}
	cur = append(cur, sparseTensor{"model.norm.weight", []int64{l70Hidden}}, sparseTensor{"lm_head.weight", []int64{l70Vocab, l70Hidden}})
	return append(shards, cur)
}

// writeSparse70B lays out a 70B-shaped bf16 HF checkpoint (about 138 GB) as
// sparse files: real headers written by hand from the safetensors spec, data
// sections that exist only as file length.
func writeSparse70B(tb testing.TB, dir string) {
	shards := llama70BTensors()
	weightMap := map[string]string{}
	var total int64
	for i, ts := range shards {
		name := fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, len(shards))
		hdr := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
		var off int64
		for _, t := range ts {
			n := int64(2)
			for _, d := range t.shape {
				n *= d
			}
			hdr[t.name] = map[string]any{"dtype": "BF16", "shape": t.shape, "data_offsets": []int64{off, off + n}}
			off += n
			weightMap[t.name] = name
		}
		total += off
		js, _ := json.Marshal(hdr)
		for (8+len(js))%8 != 0 {
			js = append(js, ' ')
		}
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			tb.Fatal(err)
		}
		binary.Write(f, binary.LittleEndian, uint64(len(js)))
		f.Write(js)
		if err := f.Truncate(8 + int64(len(js)) + off); err != nil {
			tb.Fatal(err)
		}
		f.Close()
	}
	idx, _ := json.MarshalIndent(map[string]any{"metadata": map[string]any{"total_size": total}, "weight_map": weightMap}, "", "  ")
	os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), idx, 0o644)
	cfg := fmt.Sprintf(`{"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":%d,"num_hidden_layers":%d,"num_attention_heads":64,"num_key_value_heads":8,"intermediate_size":%d,"vocab_size":%d,"max_position_embeddings":4096}`, l70Hidden, l70Layers, l70FFN, l70Vocab)
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o644)
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
	if s.Params != l70Params || s.TensorBytes != 2*l70Params || s.Layers != l70Layers || s.Hidden != l70Hidden ||
		s.Heads != 64 || s.KVHeads != 8 || s.Vocab != l70Vocab || s.Context != 4096 || s.Files != 17 || s.Architecture != "llama" {
		t.Errorf("summary %+v", s)
	}
	if s.BitsPerWeight != 16 {
		t.Errorf("bits per weight %v", s.BitsPerWeight)
	}
	if len(s.LayerTable) != l70Layers+1 || s.LayerTable[79].Tensors != 9 || s.LayerTable[80].Layer != -1 {
		t.Errorf("layer table: %d rows", len(s.LayerTable))
	}
	names := make([]string, 0, len(c.Tensors))
	for _, x := range c.Tensors {
		names = append(names, x.Name)
	}
	if len(names) != 2+9*l70Layers+1 || !sort.SliceIsSorted(c.Files, func(i, j int) bool { return c.Files[i].Path < c.Files[j].Path }) {
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
