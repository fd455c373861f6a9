package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// The facts about the sample come from the fixture's README and TRAINING.md
// (llama.cpp's tensor types, file size and general.file_type; torch's
// parameter count), not from tfconv.
const (
	sampleGGUF        = "../../testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf"
	sampleParams      = 3660032 // TRAINING.md: "parameters | 3,660,032"
	sampleFileSize    = 3919104
	sampleF32Tensors  = 9
	sampleQ8_0Tensors = 30
)

func TestInspectJSONSample(t *testing.T) {
	code, out, errOut := run(t, "inspect", "--json", sampleGGUF)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var j struct {
		Format       string `json:"format"`
		Architecture string `json:"architecture"`
		Params       int64  `json:"params"`
		FileSize     int64  `json:"file_size"`
		Layers       int    `json:"layers"`
		Hidden       int64  `json:"hidden_size"`
		Heads        int64  `json:"heads"`
		KVHeads      int64  `json:"kv_heads"`
		Vocab        int64  `json:"vocab_size"`
		Context      int64  `json:"context_length"`
		DTypes       []struct {
			DType   string `json:"dtype"`
			Tensors int    `json:"tensors"`
		} `json:"dtypes"`
		LayerTable []struct {
			Layer   int `json:"layer"`
			Tensors int `json:"tensors"`
		} `json:"layer_table"`
		Tensors []struct {
			Name   string  `json:"name"`
			DType  string  `json:"dtype"`
			Shape  []int64 `json:"shape"`
			Params int64   `json:"params"`
			Bytes  int64   `json:"bytes"`
		} `json:"tensors"`
		Metadata      map[string]json.RawMessage `json:"metadata"`
		MetadataTypes map[string]string          `json:"metadata_types"`
	}
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, out)
	}
	if j.Format != "gguf" || j.Architecture != "llama" || j.Params != sampleParams || j.FileSize != sampleFileSize {
		t.Errorf("summary: format %s arch %s params %d size %d", j.Format, j.Architecture, j.Params, j.FileSize)
	}
	if j.Layers != 4 || j.Hidden != 256 || j.Heads != 4 || j.KVHeads != 2 || j.Vocab != 1000 || j.Context != 256 {
		t.Errorf("hyperparameters: %+v", j)
	}
	counts := map[string]int{}
	for _, d := range j.DTypes {
		counts[d.DType] = d.Tensors
	}
	if len(counts) != 2 || counts["F32"] != sampleF32Tensors || counts["Q8_0"] != sampleQ8_0Tensors {
		t.Errorf("dtype counts %v", counts)
	}
	// 4 blocks of 9 tensors (2 norms, q, k, v, o, gate, up, down), then the rest.
	if len(j.LayerTable) != 5 {
		t.Fatalf("layer table has %d rows", len(j.LayerTable))
	}
	for i, l := range j.LayerTable[:4] {
		if l.Layer != i || l.Tensors != 9 {
			t.Errorf("layer row %d: %+v", i, l)
		}
	}
	if last := j.LayerTable[4]; last.Layer != -1 || last.Tensors != 3 {
		t.Errorf("non-layer row: %+v", last)
	}
	var sum int64
	for _, x := range j.Tensors {
		sum += x.Params
		if x.Name == "token_embd.weight" && (x.DType != "Q8_0" || len(x.Shape) != 2 || x.Shape[0] != 1000 || x.Shape[1] != 256 || x.Bytes != 1000*256/32*34) {
			t.Errorf("token_embd.weight: %+v", x)
		}
	}
	if sum != sampleParams || len(j.Tensors) != sampleF32Tensors+sampleQ8_0Tensors {
		t.Errorf("tensor list: %d tensors, %d params", len(j.Tensors), sum)
	}
	if string(j.Metadata["general.file_type"]) != "7" || j.MetadataTypes["general.file_type"] != "uint32" {
		t.Errorf("general.file_type = %s (%s)", j.Metadata["general.file_type"], j.MetadataTypes["general.file_type"])
	}
	// The 1000-entry vocabulary is summarized without --full ...
	if !strings.Contains(string(j.Metadata["tokenizer.ggml.tokens"]), `"len": 1000`) {
		t.Errorf("tokens not summarized: %.200s", j.Metadata["tokenizer.ggml.tokens"])
	}
	// ... and whole with it.
	_, full, _ := run(t, "inspect", "--json", "--full", sampleGGUF)
	var jf struct {
		Metadata map[string]json.RawMessage `json:"metadata"`
	}
	json.Unmarshal([]byte(full), &jf)
	var toks []string
	if err := json.Unmarshal(jf.Metadata["tokenizer.ggml.tokens"], &toks); err != nil || len(toks) != 1000 || toks[1] != "<s>" {
		t.Errorf("--full tokens: %d %v", len(toks), err)
	}
}

func TestInspectTables(t *testing.T) {
	code, out, errOut := run(t, "inspect", "--tensors", "--metadata", sampleGGUF)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"architecture\tllama", "parameters\t3660032 (3.66M)", "blk.3.ffn_down.weight\tQ8_0\t[256 768]", "general.file_type\tuint32\t7", "tokenizer.ggml.tokens\tarray[string]\t[\"<unk>\", \"<s>\""} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// TestInspectMemoryFlags runs --ctx with llama.cpp's batch and sequence
// flags on the llama fixture and checks --json against what llama.cpp
// c392e509 reported for the same context parameters
// (testdata/arch/memory.json: KV self size 2.00 + 2.00 MiB at 4096
// positions, f16; output buffer 0.02 MiB for four sequences; compute
// buffer 10.50 MiB for -ub 128), and that bad values are refused.
func TestInspectMemoryFlags(t *testing.T) {
	const llama = "../../testdata/model/gguf/llama-Q8_0.gguf"
	code, out, errOut := run(t, "inspect", llama, "--ctx", "4096", "--ubatch-size", "128", "--parallel", "4", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var j struct {
		Memory struct {
			KVSize  int64 `json:"kv_size"`
			KV      int64 `json:"kv_bytes"`
			Weights int64 `json:"weight_bytes"`
			Total   int64 `json:"total_bytes"`
			UBatch  int64 `json:"ubatch"`
			Par     int64 `json:"parallel"`
			Flash   bool  `json:"flash_attention"`
			Output  int64 `json:"output_bytes"`
			Compute int64 `json:"compute_bytes"`
			Run     int64 `json:"run_total_bytes"`
		} `json:"memory"`
	}
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, out)
	}
	m := j.Memory
	const mib = 1 << 20
	if m.KVSize != 4096 || m.KV != 4*mib || m.UBatch != 128 || m.Par != 4 || m.Flash {
		t.Errorf("memory %+v: want a cache of 4096, 4 MiB, ubatch 128, 4 sequences, no flash attention", m)
	}
	if m.Output != 1000*4*4 { // llama.cpp: 0.02 MiB (vocabulary 1000, four sequences, f32)
		t.Errorf("output buffer %d bytes", m.Output)
	}
	if c := float64(m.Compute) / mib; c < 10.50-1.1 || c > 10.50+1.1 {
		t.Errorf("compute buffer %.2f MiB, llama.cpp 10.50", c)
	}
	if m.Total != m.Weights+m.KV || m.Run != m.Total+m.Output+m.Compute {
		t.Errorf("totals %+v", m)
	}
	code, out, _ = run(t, "inspect", llama, "--ctx", "4096", "--kv-type", "q8_0")
	if code != 0 || !strings.Contains(out, "flash attention") || !strings.Contains(out, "compute buffer (estimate)") || !strings.Contains(out, "total to run") {
		t.Errorf("table (exit %d):\n%s", code, out)
	}
	for _, bad := range [][]string{{"--parallel", "0"}, {"--ubatch", "-1"}, {"--batch", "0"}} {
		code, _, errOut := run(t, append([]string{"inspect", llama, "--ctx", "512"}, bad...)...)
		if code == 0 || !strings.Contains(errOut, strings.TrimPrefix(bad[0], "--")) {
			t.Errorf("%v: exit %d, %q", bad, code, errOut)
		}
	}
}
