package convert

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestLlama4Fixed: llama.cpp's llama4 graph fixes chunks and the
// temperature floor at 8192, attn_scale at 0.1, no RoPE in every fourth
// layer and QK norms unless there are 128 experts, and the GGUF has no key
// for any of them; a config.json stating otherwise is refused naming the
// key, not converted into a GGUF that computes something else. The
// fixture's own chunks of 4 are one such case.
func TestLlama4Fixed(t *testing.T) {
	t.Parallel()
	src := "../testdata/arch/llama4/hf"
	for _, tc := range []struct {
		name string
		kv   map[string]any
		key  string // "" converts
	}{
		{"published", llama4Fixed, ""},
		{"fixture", nil, "attention_chunk_size"},
		{"floor", map[string]any{"attention_chunk_size": 8192}, "floor_scale"},
		{"attn_scale", map[string]any{"attention_chunk_size": 8192, "floor_scale": 8192, "attn_scale": 0.2}, "attn_scale"},
		{"tuning off", map[string]any{"attention_chunk_size": 8192, "floor_scale": 8192, "attn_temperature_tuning": false}, "attn_temperature_tuning"},
		{"no_rope_layers", map[string]any{"attention_chunk_size": 8192, "floor_scale": 8192, "no_rope_layers": []int{1, 1, 0, 1}}, "no_rope_layers"},
		{"layer_types", map[string]any{"attention_chunk_size": 8192, "floor_scale": 8192,
			"layer_types": []string{"full_attention", "chunked_attention", "chunked_attention", "full_attention"}}, "layer_types"},
		{"moe_layers", map[string]any{"attention_chunk_size": 8192, "floor_scale": 8192, "moe_layers": []int{1, 2}}, "moe_layers"},
		{"use_qk_norm", map[string]any{"attention_chunk_size": 8192, "floor_scale": 8192, "use_qk_norm": false}, "use_qk_norm"},
		{"rope_scaling", map[string]any{"attention_chunk_size": 8192, "floor_scale": 8192,
			"rope_scaling": map[string]any{"rope_type": "linear", "factor": 2.0}}, "rope_scaling"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := withConfigs(t, src, "x/llama4", tc.kv)
			_, err := Run(dir, filepath.Join(t.TempDir(), "out.gguf"), Options{OutType: OutF32})
			switch {
			case tc.key == "" && err != nil:
				t.Fatal(err)
			case tc.key != "" && (err == nil || !strings.Contains(err.Error(), tc.key)):
				t.Fatalf("err = %v, want a refusal naming %s", err, tc.key)
			}
		})
	}
}

// TestLlama4VisionLeftOut: the published class, Llama4ForConditionalGeneration,
// converts with --text-only to its text model's GGUF (as llama.cpp's
// converter does without --mmproj; a conversion naming no half is refused
// now that the llama4 projector is in the record: TestLlama4VLModes); the
// vision tower is not dropped silently: each of its tensors is listed
// among the dropped with the reason, and a warning says it.
func TestLlama4VisionLeftOut(t *testing.T) {
	t.Parallel()
	dir := withConfigs(t, "../testdata/arch/llama4-vl/hf", "x/llama4-vl", llama4Fixed)
	rep, err := Run(dir, filepath.Join(t.TempDir(), "out.gguf"), Options{OutType: OutF32, Multimodal: MultimodalText})
	if err != nil {
		t.Fatal(err)
	}
	vision := 0
	for _, d := range rep.Dropped {
		if strings.HasPrefix(d.Name, "vision_model.") || strings.HasPrefix(d.Name, "multi_modal_projector.") {
			vision++
			if !strings.Contains(d.Reason, "vision tower") {
				t.Errorf("%s dropped as %q", d.Name, d.Reason)
			}
		}
	}
	if vision != 26 {
		t.Errorf("%d vision tensors dropped, the checkpoint has 26", vision)
	}
	warned := false
	for _, w := range rep.Warnings {
		warned = warned || strings.Contains(w, "26 tensors left out") && strings.Contains(w, "vision tower")
	}
	if !warned {
		t.Errorf("no warning of the vision tower left out: %q", rep.Warnings)
	}
}
