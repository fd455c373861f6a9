package convert

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/internal/fixtures"

	"github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/tensor"
)

func archFixtures(t *testing.T) []string {
	t.Helper()
	return fixtures.Families(t, "../testdata/arch", fixtures.FamilyCount)
}

// TestFamiliesMatchLlamaCpp converts each family fixture to an f32 GGUF and
// compares it with llama.cpp's own conversion: every tensor byte, and the
// metadata key for key and in order.
func TestFamiliesMatchLlamaCpp(t *testing.T) {
	var summary map[string]struct {
		Converter string `json:"converter"`
	}
	b, err := os.ReadFile("../testdata/arch/summary.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &summary); err != nil {
		t.Fatal(err)
	}
	for _, fam := range archFixtures(t) {
		t.Run(fam, func(t *testing.T) {
			dir := filepath.Join("../testdata/arch", fam)
			out := filepath.Join(t.TempDir(), "out.gguf")
			src := filepath.Join(dir, "hf")
			if kv, ok := ggufFixed[fam]; ok {
				src = withConfigs(t, src, "x/"+fam, kv)
			}
			rep, err := Run(src, out, Options{OutType: OutF32})
			if err != nil {
				t.Fatal(err)
			}
			// A family newer than c392e509 was converted by a newer llama.cpp
			// (testdata/arch/README.md), which writes
			// general.quantization_version before the tokenizer keys; tfconv
			// keeps c392e509's layout, so only the order may differ there.
			compareGGUF(t, rep.Arch, out, filepath.Join(dir, "gguf", fam+"-f32.gguf"), summary[fam].Converter != "newer")
		})
	}
}

// ggufFixed are the config.json values a fixture states and the GGUF
// runtime fixes otherwise (tfconv refuses to convert them: the GGUF would
// compute something else; the reference converter wrote them nowhere):
// the byte comparison converts the fixture with llama.cpp's values.
// llama4's chunks of 4 and temperature floor of 4 make chunking and
// tuning matter in its 12 tokens; llama.cpp's llama4 graph fixes 8192.
var ggufFixed = map[string]map[string]any{"llama4": llama4Fixed, "llama4-vl": llama4Fixed}

var llama4Fixed = map[string]any{"attention_chunk_size": 8192, "floor_scale": 8192}

// TestFamiliesGGUFToHF converts llama.cpp's GGUF of each family back to a
// Hugging Face directory: every tensor must equal the original checkpoint's
// byte for byte, and config.json must state every hyper-parameter the
// forward pass reads as the original does. (transformers v4.43.4 run on
// these outputs reproduces the original logits exactly: testdata/arch/README.md.)
func TestFamiliesGGUFToHF(t *testing.T) {
	// Keys transformers' forward pass reads, where the families use them.
	keys := []string{"num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads",
		"num_key_value_heads", "rms_norm_eps", "layer_norm_eps", "norm_epsilon", "rope_theta", "head_dim",
		"partial_rotary_factor", "rotary_pct", "use_parallel_residual", "attn_logit_softcapping",
		"final_logit_softcapping", "query_pre_attn_scalar", "clip_qkv", "tie_word_embeddings", "vocab_size",
		"max_position_embeddings", "use_qkv_bias", "use_bias", "attention_bias", "sliding_window"}
	// What a GGUF cannot say: Mistral's sliding window (llama.cpp's llama
	// graph has none, so the HF output computes what llama.cpp computes);
	// dots1's: its layers are all full attention (layer_types), and
	// llama.cpp's dots1 has no window.
	lost := map[string]map[string]bool{"mistral": {"sliding_window": true}, "dots1": {"sliding_window": true}}
	// What the converter writes instead of config.json's value: Falcon's
	// context, always 2048.
	replaced := map[string]map[string]bool{"falcon-mqa": {"max_position_embeddings": true},
		"falcon-new": {"max_position_embeddings": true}}
	for _, fam := range archFixtures(t) {
		t.Run(fam, func(t *testing.T) {
			dir := filepath.Join("../testdata/arch", fam)
			out := filepath.Join(t.TempDir(), "hf")
			_, err := Run(filepath.Join(dir, "gguf", fam+"-f32.gguf"), out, Options{})
			if err != nil {
				t.Fatal(err)
			}
			a, err := checkpoint.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			b, err := checkpoint.Open(filepath.Join(dir, "hf"))
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			// Gemma's norm weights w are stored as w+1 in the GGUF; (w+1)-1
			// need not round back to w, but both runtimes use 1+w, which
			// must be the same float32.
			wcfg, err := b.Config()
			if err != nil {
				t.Fatal(err)
			}
			f, ok := arch.ForConfig(arch.Config(wcfg))
			if !ok {
				t.Fatalf("%s: no family for its config.json", fam)
			}
			if prefix, ok := textModelOf[fam]; ok {
				sameTextTensors(t, a, b, prefix)
			} else {
				sameTensors(t, a, b, func(name string, data []byte) []byte {
					if plusOne(f, name) {
						return addOne(data)
					}
					if negExp(f, name) {
						// Mamba's A_log: several values round to one
						// A = −exp(A_log), the GGUF's; the HF output's
						// must give that A back exactly.
						return applyLayout(t, arch.LayoutNegExp, name, data)
					}
					return data
				})
			}
			oc, _ := a.Config()
			wc, _ := b.Config()
			for _, k := range keys {
				if lost[fam][k] {
					continue
				}
				w, inW := wc[k]
				o, inO := oc[k]
				if inW && w == nil && o != nil && !replaced[fam][k] {
					// null is a value: Phi-3's sliding_window null is no
					// window, 0 a window of nothing to transformers 4.57.
					t.Errorf("config.json: %s = %v, original null", k, o)
					continue
				}
				if !inW || w == nil || replaced[fam][k] {
					continue
				}
				if !inO {
					t.Errorf("config.json: %s missing (original %v)", k, w)
					continue
				}
				if fmt.Sprint(normNum(o)) != fmt.Sprint(normNum(w)) {
					t.Errorf("config.json: %s = %v, original %v", k, o, w)
				}
			}
			if fam == "llama3" {
				// rope_freqs become rope_scaling again. The converter
				// computed them from an original context of 8192 (it reads
				// the top level of config.json), so that is what they give
				// back, not the fixture's 64.
				rs, _ := json.Marshal(oc["rope_scaling"])
				want := `{"factor":8,"high_freq_factor":4,"low_freq_factor":1,"original_max_position_embeddings":8192,"rope_type":"llama3"}`
				if string(rs) != want {
					t.Errorf("config.json: rope_scaling %s, want %s", rs, want)
				}
			}
			for k := range lost[fam] {
				if _, ok := oc[k]; ok {
					t.Errorf("config.json: %s present, but the GGUF cannot hold it", k)
				}
			}
		})
	}
}

// textModelOf are the multimodal fixtures whose GGUF is their text model
// alone: GGUF → HF gives the text model's class, whose tensors are the
// original's under this prefix (the vision tower is not in the GGUF).
var textModelOf = map[string]string{"llama4-vl": "language_model.", "mistral3": "language_model."}

// sameTextTensors checks that a holds exactly b's tensors under prefix,
// named without it, byte for byte.
func sameTextTensors(t *testing.T, a, b *checkpoint.Checkpoint, prefix string) {
	t.Helper()
	n := 0
	for _, wt := range b.Tensors {
		name, ok := strings.CutPrefix(wt.Name, prefix)
		if !ok {
			continue
		}
		n++
		ot, ok := a.Tensor(name)
		if !ok {
			t.Errorf("missing tensor %q (the original's %q)", name, wt.Name)
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
		if ot.DType != wt.DType || !ot.Shape.Equal(wt.Shape) || !bytes.Equal(ob, wb) {
			t.Errorf("tensor %q differs from the original's %q", name, wt.Name)
		}
	}
	if len(a.Tensors) != n {
		t.Errorf("%d tensors, the original's text model has %d", len(a.Tensors), n)
	}
}

// normNum makes JSON numbers comparable across 64 and 64.0.
func normNum(v any) any {
	if n, ok := v.(json.Number); ok {
		if f, err := n.Float64(); err == nil {
			return f
		}
	}
	return v
}

// plusOne reports whether an HF tensor is a norm weight family f stores
// as w+1 in GGUF.
func plusOne(f *arch.Family, name string) bool {
	m, ok := f.FromHF(name)
	return ok && m.Layout() == arch.LayoutNormPlusOne
}

// negExp reports whether the HF tensor name is stored as −exp of it.
func negExp(f *arch.Family, name string) bool {
	m, ok := f.FromHF(name)
	return ok && m.Layout() == arch.LayoutNegExp
}

// applyLayout returns the float32 values of b through layout l's HF → GGUF
// change (an element-wise one), as bytes.
func applyLayout(t *testing.T, l arch.Layout, name string, b []byte) []byte {
	t.Helper()
	n := len(b) / 4
	tf, _, err := l.Transform(name, tensor.Shape{int64(n)}, 0, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	src, dst := make([]float32, n), make([]float32, n)
	for i := range src {
		src[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	tf(dst, src)
	out := make([]byte, len(b))
	for i, v := range dst {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
	}
	return out
}

// addOne returns 1+w of each float32 in b, as bytes.
func addOne(b []byte) []byte {
	out := make([]byte, len(b))
	for i := 0; i+4 <= len(b); i += 4 {
		v := math.Float32frombits(binary.LittleEndian.Uint32(b[i:]))
		binary.LittleEndian.PutUint32(out[i:], math.Float32bits(1+v))
	}
	return out
}

// TestBloomMatchesLlamaCpp converts testdata/model/bloom (transformers'
// BloomForCausalLM) with the trimmed GPT-2 tokenizer that
// testdata/model/gen_bloom_gguf.py gave llama.cpp's converter, and compares
// with the converter's bloom-f32.gguf.
func TestBloomMatchesLlamaCpp(t *testing.T) {
	src := t.TempDir()
	for _, f := range []struct{ dir, name string }{
		{"../testdata/model/bloom", "config.json"}, {"../testdata/model/bloom", "model.safetensors"},
		{"../testdata/convert/gpt2/hf", "vocab.json"}, {"../testdata/convert/gpt2/hf", "merges.txt"},
		{"../testdata/convert/gpt2/hf", "tokenizer_config.json"}, {"../testdata/convert/gpt2/hf", "special_tokens_map.json"},
	} {
		b, err := os.ReadFile(filepath.Join(f.dir, f.name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, f.name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "bloom.gguf")
	rep, err := Run(src, out, Options{OutType: OutF32})
	if err != nil {
		t.Fatal(err)
	}
	compareGGUF(t, rep.Arch, out, "../testdata/model/bloom/bloom-f32.gguf", true)

	// And back: llama.cpp's GGUF → HF gives the original tensors.
	hf := filepath.Join(t.TempDir(), "hf")
	if _, err := Run("../testdata/model/bloom/bloom-f32.gguf", hf, Options{}); err != nil {
		t.Fatal(err)
	}
	a, err := checkpoint.Open(hf)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := checkpoint.Open("../testdata/model/bloom")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	sameTensors(t, a, b, nil)
}
