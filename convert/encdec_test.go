package convert

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/internal/fixtures"
)

// TestT5RoundTrip: transformers' tiny T5 → GGUF f32 → HF gives its tensors
// back bit for bit (the tied lm_head is not stored by transformers either)
// and the same hyper-parameters; GGUF → HF → GGUF gives the GGUF back.
func TestT5RoundTrip(t *testing.T) {
	src := filepath.Join(fixtures.Require(t), "hf-tiny", "t5")
	tmp := t.TempDir()
	g := filepath.Join(tmp, "t5.gguf")
	rep, err := Run(src, g, Options{OutType: OutF32})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Arch != "t5" || len(rep.Warnings) == 0 {
		t.Errorf("arch %q, warnings %v (the tiny T5 has no tokenizer)", rep.Arch, rep.Warnings)
	}
	back := filepath.Join(tmp, "back")
	if _, err := Run(g, back, Options{}); err != nil {
		t.Fatal(err)
	}
	compareTensors(t, back, src, nil)
	g2 := filepath.Join(tmp, "t5b.gguf")
	if _, err := Run(back, g2, Options{OutType: OutF32}); err != nil {
		t.Fatal(err)
	}
	compareGGUF(t, "t5", g2, g, true)
	for _, k := range []string{"d_model", "d_ff", "d_kv", "num_layers", "num_decoder_layers", "num_heads",
		"relative_attention_num_buckets", "layer_norm_epsilon", "decoder_start_token_id", "vocab_size", "feed_forward_proj",
		"model_type", "architectures", "is_encoder_decoder"} {
		hyperParams["t5"] = append(hyperParams["t5"], k)
	}
	compareConfig(t, "t5", filepath.Join(back, "config.json"), filepath.Join(src, "config.json"))
	// f16 and q8_0 follow the type rules (the [32,4] relative bias has rows
	// of 4, so q8_0 falls back to f16 for it).
	rep, err = Run(src, filepath.Join(tmp, "q.gguf"), Options{OutType: OutQ8_0})
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range rep.Tensors {
		want := "Q8_0"
		switch {
		case len(tr.Shape) == 1:
			want = "F32"
		case strings.HasSuffix(tr.Name, "attn_rel_b.weight"):
			want = "F16"
		}
		if tr.DType != want {
			t.Errorf("%s: %s, want %s", tr.Name, tr.DType, want)
		}
	}
}

// TestMarian: Marian has no llama.cpp architecture; GGUF output is refused
// with a message that says what to do, and native/safetensors keep it
// bit for bit.
func TestMarian(t *testing.T) {
	src := filepath.Join(fixtures.Require(t), "hf-tiny", "marian")
	tmp := t.TempDir()
	_, err := Run(src, filepath.Join(tmp, "m.gguf"), Options{})
	if err == nil || !strings.Contains(err.Error(), "Marian") || !strings.Contains(err.Error(), "--to native") {
		t.Fatalf("marian to GGUF: %v", err)
	}
	n := filepath.Join(tmp, "m.tfn")
	if _, err := Run(src, n, Options{}); err != nil {
		t.Fatal(err)
	}
	back := filepath.Join(tmp, "back")
	if _, err := Run(n, back, Options{}); err != nil {
		t.Fatal(err)
	}
	compareTensors(t, back, src, nil)
	b := readJSON(t, filepath.Join(back, "config.json"))
	if b["model_type"] != "marian" || b["d_model"] != float64(64) {
		t.Errorf("config.json: model_type %v d_model %v", b["model_type"], b["d_model"])
	}
}
