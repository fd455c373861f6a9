package convert

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestHunyuanRopeScaling: the converter bakes Hunyuan's alpha scaling into
// rope.freq_base only under its own assumptions (rope_theta 10000, a
// context of 32768 or 262144) and writes no other scaling, so a config.json
// outside them is refused naming rope_scaling; without rope_scaling the
// base is rope_theta and the context config.json's.
func TestHunyuanRopeScaling(t *testing.T) {
	t.Parallel()
	src := "../testdata/arch/hunyuan/hf"
	for _, tc := range []struct {
		name     string
		key      string
		v        any
		base     float64 // 0: refused
		context  int64
		alphaKey bool // the scaling keys after general.file_type
	}{
		{"fixture", "rope_theta", 10000.0, 26826958, 262144, true},
		{"none", "rope_scaling", nil, 10000, 32768, false},
		{"theta", "rope_theta", 500000.0, 0, 0, false},
		{"linear", "rope_scaling", map[string]any{"type": "linear", "factor": 2.0}, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := withConfig(t, src, "x/hunyuan", tc.key, tc.v)
			out := filepath.Join(t.TempDir(), "out.gguf")
			_, err := Run(dir, out, Options{OutType: OutF32})
			if tc.base == 0 {
				if err == nil || !strings.Contains(err.Error(), "rope_scaling") {
					t.Fatalf("err = %v, want a refusal naming rope_scaling", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			md, _ := ggufMeta(t, out)
			v, _ := md.Get("hunyuan-dense.rope.freq_base")
			base, _ := v.Float()
			n, _ := md.Int("hunyuan-dense.context_length")
			_, hasType := md.Get("hunyuan-dense.rope.scaling.type")
			if base != tc.base || n != tc.context || hasType != tc.alphaKey {
				t.Errorf("freq_base %v, context %d, scaling type present %v; want %v, %d, %v", base, n, hasType, tc.base, tc.context, tc.alphaKey)
			}
		})
	}
}

// TestHunyuanEOD: config.json's eod_token_id (which the published Hunyuan
// configs state and transformers' class does not save) is written as
// tokenizer.ggml.eos_token_id, as the converter does.
func TestHunyuanEOD(t *testing.T) {
	t.Parallel()
	for _, id := range []int{3, 998} {
		t.Run(fmt.Sprint(id), func(t *testing.T) {
			dir := withConfig(t, "../testdata/arch/hunyuan/hf", "x/hunyuan", "eod_token_id", id)
			out := filepath.Join(t.TempDir(), "out.gguf")
			if _, err := Run(dir, out, Options{OutType: OutF32}); err != nil {
				t.Fatal(err)
			}
			md, _ := ggufMeta(t, out)
			if eos, _ := md.Int("tokenizer.ggml.eos_token_id"); eos != int64(id) {
				t.Errorf("eos_token_id %d, want %d", eos, id)
			}
		})
	}
}
