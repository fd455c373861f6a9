package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/tensor"
)

// inspectJSONOf runs inspect --json on path and decodes its output.
func inspectJSONOf(t *testing.T, path string, v any, args ...string) string {
	t.Helper()
	code, out, errOut := run(t, append([]string{"inspect", "--json", path}, args...)...)
	if code != 0 {
		t.Fatalf("inspect %s: exit %d: %s", path, code, errOut)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("inspect %s: %v\n%s", path, err, out)
	}
	return errOut
}

// TestInspectFileType: inspect names general.file_type as llama.h does
// (llama.cpp wrote 15, LLAMA_FTYPE_MOSTLY_Q4_K_M, into llama-Q4_K_M.gguf).
func TestInspectFileType(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]string{
		"../../testdata/model/gguf/llama-Q4_K_M.gguf": "Q4_K_M",
		sampleGGUF: "Q8_0",
	} {
		var j struct {
			FileType string `json:"file_type"`
			Type     string `json:"type"`
		}
		inspectJSONOf(t, path, &j)
		if j.FileType != want {
			t.Errorf("%s: file_type %q, want %q", path, j.FileType, want)
		}
		_, out, _ := run(t, "inspect", path)
		if !strings.Contains(out, "file type\t"+want+"\n") {
			t.Errorf("%s: no \"file type %s\" row:\n%s", path, want, out)
		}
	}
	if got := gguf.FileType(30).String(); got != "IQ4_XS" {
		t.Errorf("FileType(30) = %q, want IQ4_XS", got)
	}
	if got := gguf.FileType(99).String(); got != "unknown (99)" {
		t.Errorf("FileType(99) = %q", got)
	}
}

// TestInspectImatrix: an importance matrix is summarized as one (datasets,
// chunks, entries, from the file's imatrix.* keys and W.in_sum2 tensors),
// not as a model.
func TestInspectImatrix(t *testing.T) {
	t.Parallel()
	path := "../../testdata/imatrix/llama3.gguf"
	var j struct {
		Type    string `json:"type"`
		Imatrix *struct {
			Datasets   []string `json:"datasets"`
			ChunkCount int      `json:"chunk_count"`
			ChunkSize  int      `json:"chunk_size"`
			Entries    int      `json:"entries"`
		} `json:"imatrix"`
	}
	inspectJSONOf(t, path, &j)
	if j.Type != "imatrix" || j.Imatrix == nil {
		t.Fatalf("type %q, imatrix %v", j.Type, j.Imatrix)
	}
	// The file holds 28 tensors: in_sum2 and counts of 14 weights.
	if m := j.Imatrix; len(m.Datasets) != 1 || m.Datasets[0] != "calib.txt" || m.ChunkCount != 15 || m.ChunkSize != 128 || m.Entries != 14 {
		t.Errorf("imatrix summary %+v", *m)
	}
	_, out, _ := run(t, "inspect", path)
	for _, want := range []string{"type\timatrix", "chunks\t15 of 128 tokens", "entries\t14 weights"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "hidden size") || strings.Contains(out, "heads / kv heads") {
		t.Errorf("an imatrix summarized as a model:\n%s", out)
	}
}

// TestInspectLoRAGGUF: a LoRA GGUF (general.type adapter) shows its rank,
// alpha and targets; the fixture's adapter_config.json says r 8, alpha 16,
// q_proj, v_proj and down_proj on 2 layers.
func TestInspectLoRAGGUF(t *testing.T) {
	t.Parallel()
	var j struct {
		Type    string `json:"type"`
		Adapter *struct {
			Type    string   `json:"type"`
			Rank    int64    `json:"rank"`
			Alpha   float64  `json:"alpha"`
			Targets []string `json:"targets"`
			Pairs   int      `json:"pairs"`
		} `json:"adapter"`
	}
	inspectJSONOf(t, "../../testdata/lora/mistral-rslora/mistral-rslora-f32.gguf", &j)
	if j.Type != "adapter" || j.Adapter == nil {
		t.Fatalf("type %q, adapter %v", j.Type, j.Adapter)
	}
	a := j.Adapter
	if a.Type != "lora" || a.Rank != 8 || a.Alpha != 16 || strings.Join(a.Targets, ",") != "attn_q,attn_v,ffn_down" || a.Pairs != 6 {
		t.Errorf("adapter %+v", *a)
	}
}

// TestInspectMmproj: a multimodal projector GGUF, with the clip.* keys
// llama.cpp's tools/mtmd reads (clip-impl.h), is summarized as one.
func TestInspectMmproj(t *testing.T) {
	t.Parallel()
	meta := tensor.Metadata{
		{Key: "general.architecture", Value: tensor.String("clip")},
		{Key: "general.type", Value: tensor.String("mmproj")},
		{Key: "general.file_type", Value: tensor.Uint32(1)},
		{Key: "clip.has_vision_encoder", Value: tensor.Bool(true)},
		{Key: "clip.projector_type", Value: tensor.String("gemma3")},
		{Key: "clip.vision.image_size", Value: tensor.Uint32(896)},
		{Key: "clip.vision.patch_size", Value: tensor.Uint32(14)},
		{Key: "clip.vision.block_count", Value: tensor.Uint32(27)},
		{Key: "clip.vision.embedding_length", Value: tensor.Uint32(1152)},
		{Key: "clip.vision.projection_dim", Value: tensor.Uint32(2560)},
	}
	infos := []tensor.Info{
		{Name: "v.patch_embd.weight", DType: tensor.F32, Shape: tensor.Shape{4, 8}},
		{Name: "mm.input_projection.weight", DType: tensor.F32, Shape: tensor.Shape{8, 4}},
	}
	var buf bytes.Buffer
	w, err := gguf.NewWriter(&buf, meta, infos)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range infos {
		bw, err := w.Next(in.Name)
		if err != nil {
			t.Fatal(err)
		}
		bw.Write(make([]byte, 4*in.NumElements()))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mmproj-F16.gguf")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var j struct {
		Type      string `json:"type"`
		FileType  string `json:"file_type"`
		Projector *struct {
			ProjectorType string `json:"projector_type"`
			HasVision     bool   `json:"has_vision_encoder"`
			ImageSize     int64  `json:"image_size"`
			PatchSize     int64  `json:"patch_size"`
			VisionLayers  int64  `json:"vision_layers"`
			ProjectionDim int64  `json:"projection_dim"`
		} `json:"projector"`
	}
	inspectJSONOf(t, path, &j)
	if j.Type != "mmproj" || j.FileType != "F16" || j.Projector == nil {
		t.Fatalf("type %q, file type %q, projector %v", j.Type, j.FileType, j.Projector)
	}
	if p := j.Projector; p.ProjectorType != "gemma3" || !p.HasVision || p.ImageSize != 896 || p.PatchSize != 14 || p.VisionLayers != 27 || p.ProjectionDim != 2560 {
		t.Errorf("projector %+v", *p)
	}
	_, out, _ := run(t, "inspect", path)
	for _, want := range []string{"projector type\tgemma3", "image size\t896", "patch size\t14", "vision layers\t27"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "heads / kv heads") {
		t.Errorf("an mmproj summarized as a model:\n%s", out)
	}
}

// TestInspectCtxBeyondTraining: --ctx past the trained context (the
// sample's llama.context_length is 256) is warned about; within it, not.
func TestInspectCtxBeyondTraining(t *testing.T) {
	t.Parallel()
	_, _, errOut := run(t, "inspect", sampleGGUF, "--ctx", "1024")
	if !strings.Contains(errOut, "warning: --ctx 1024 exceeds the 256 positions the model was trained on") {
		t.Errorf("--ctx 1024: stderr %q", errOut)
	}
	_, _, errOut = run(t, "inspect", sampleGGUF, "--ctx", "256")
	if strings.Contains(errOut, "warning") {
		t.Errorf("--ctx 256: stderr %q", errOut)
	}
}
