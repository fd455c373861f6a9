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
			rep, err := Run(src, out, Options{OutType: OutF32, Multimodal: textOnly(t, src)})
			if err != nil {
				t.Fatal(err)
			}
			// A family newer than c392e509 was converted by a newer llama.cpp
			// (testdata/arch/README.md), which writes
			// general.quantization_version before the tokenizer keys; tfconv
			// keeps c392e509's layout, so only the order may differ there.
			ref, converter := filepath.Join(dir, "gguf", fam+"-f32.gguf"), summary[fam].Converter
			if newer := filepath.Join(dir, "gguf", fam+"-newer-f32.gguf"); fileExists(newer) {
				// A fixture of a family whose GGUF form changed after
				// c392e509 (DeepSeek-2): tfconv writes the newer form, and
				// reads both.
				ref, converter = newer, "newer"
			}
			compareGGUF(t, rep.Arch, out, ref, converter != "newer")
		})
	}
}

// textOnly is --text-only for a fixture whose class has a projector
// (mistral3's Mistral3ForConditionalGeneration: a conversion naming no
// half is refused), none otherwise: the reference GGUF is the converter's
// text model.
func textOnly(t *testing.T, src string) Multimodal {
	t.Helper()
	c, err := checkpoint.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := projectorOf(c)
	if err != nil {
		t.Fatal(err)
	}
	if p != nil {
		return MultimodalText
	}
	return MultimodalUnset
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
		"max_position_embeddings", "use_qkv_bias", "use_bias", "attention_bias", "sliding_window", "norm_eps",
		"conv_L_cache", "conv_bias"}
	// Keys only some families' configs hold, which GGUF → HF must give
	// back: LFM2's layer pattern (the GGUF's per-layer head_count_kv) and
	// LFM2-MoE's and Hunyuan's mixtures (Hunyuan's transformers class reads
	// num_experts and moe_topk; its converter the per-layer lists).
	familyKeys := map[string][]string{"lfm2": {"layer_types"}, "lfm2moe": {"layer_types", "num_experts",
		"num_experts_per_tok", "moe_intermediate_size", "num_dense_layers", "norm_topk_prob", "use_expert_bias"},
		"hunyuanmoe": {"num_experts", "moe_topk", "moe_intermediate_size", "num_shared_expert"}}
	// What a GGUF cannot say: Mistral's sliding window (llama.cpp's llama
	// graph has none, so the HF output computes what llama.cpp computes);
	// dots1's: its layers are all full attention (layer_types), and
	// llama.cpp's dots1 has no window.
	// granitehybrid's context: without RoPE the converter writes 2²⁰; so
	// does RWKV-7's ("RWKV isn't context limited").
	lost := map[string]map[string]bool{"mistral": {"sliding_window": true}, "dots1": {"sliding_window": true},
		"granitehybrid": {"max_position_embeddings": true}, "granitehybrid-dense": {"max_position_embeddings": true},
		"rwkv7": {"max_position_embeddings": true}}
	// What the converter writes instead of config.json's value: Falcon's
	// context, always 2048.
	// LFM2's intermediate_size: the GGUF keeps the width LFM2 adjusts it
	// to, which comes back with block_auto_adjust_ff_dim false (the widths
	// transformers builds are compared instead: Family.HFFFN).
	replaced := map[string]map[string]bool{"falcon-mqa": {"max_position_embeddings": true},
		"falcon-new": {"max_position_embeddings": true}, "lfm2": {"intermediate_size": true},
		"nemotron_h": {"max_position_embeddings": true}}
	var runs []string // fixture, or fixture+"-newer" for the newer converter's GGUF of it
	for _, fam := range archFixtures(t) {
		runs = append(runs, fam)
		if fileExists(filepath.Join("../testdata/arch", fam, "gguf", fam+"-newer-f32.gguf")) {
			runs = append(runs, fam+"-newer")
		}
	}
	for _, run := range runs {
		fam := strings.TrimSuffix(run, "-newer")
		t.Run(run, func(t *testing.T) {
			dir := filepath.Join("../testdata/arch", fam)
			out := filepath.Join(t.TempDir(), "hf")
			_, err := Run(filepath.Join(dir, "gguf", run+"-f32.gguf"), out, Options{})
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
				layers := int(f.Layers(arch.Config(wcfg)))
				through := throughGGUF(t, f, filepath.Join(dir, "gguf", run+"-f32.gguf"), a)
				sameTensors(t, a, b, func(name string, data []byte) []byte {
					if f.MTPNames != nil {
						// Qwen3-Next's mtp.* are the layers after the decoder's.
						name = f.MTPNames(name, layers, false)
					}
					if plusOne(f, name) {
						return addOne(data)
					}
					if through[name] {
						return nil // checked by throughGGUF
					}
					if m, ok := f.FromHF(name); ok && m.Layout() == arch.LayoutNegExp {
						// Mamba's A_log: log(−(−exp(a))) need not round
						// back to a, but both runtimes use −exp(a), which
						// must be the same float32.
						return negExp(t, name, data)
					}
					return data
				})
			}
			oc, _ := a.Config()
			wc, _ := b.Config()
			if f.HFFFN != nil {
				ow, ok1 := f.HFFFN(arch.Config(oc))
				ww, ok2 := f.HFFFN(arch.Config(wc))
				if !ok1 || !ok2 || ow != ww {
					t.Errorf("feed-forward width as transformers builds it: %d (%v), original %d (%v)", ow, ok1, ww, ok2)
				}
			}
			for _, k := range append(keys, familyKeys[fam]...) {
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

// throughGGUF checks the tensors of out (GGUF → HF of gguf) that the
// converter scaled (Tensor.Scales: Falcon-H1's multipliers, which GGUF → HF
// leaves in the weights): each must be the GGUF's own bytes. It returns
// their names.
func throughGGUF(t *testing.T, f *arch.Family, gguf string, out *checkpoint.Checkpoint) map[string]bool {
	t.Helper()
	g, err := checkpoint.Open(gguf)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	names := map[string]bool{}
	for _, gt := range g.Tensors {
		m, ok := f.FromGGUF(gt.Name)
		if !ok || m.Tensor.Scales == nil {
			continue
		}
		name := m.Name(false)
		names[name] = true
		ot, ok := out.Tensor(name)
		if !ok {
			t.Errorf("missing tensor %q", name)
			continue
		}
		want, err := gt.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		got, err := ot.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("tensor %q: data differs from the GGUF's %q", name, gt.Name)
		}
	}
	return names
}

// negExp returns −exp(a) of each float32 in b, as bytes (the GGUF form of
// Mamba's A_log).
func negExp(t *testing.T, name string, b []byte) []byte {
	t.Helper()
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	tf, _, err := arch.LayoutNegExp.Transform(name, tensor.Shape{int64(len(v))}, 0, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	tf(v, v)
	out := make([]byte, len(b))
	for i, x := range v {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(x))
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
