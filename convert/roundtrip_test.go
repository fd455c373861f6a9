package convert

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/formats/safetensors"
	"github.com/tfconv/tfconv/internal/fixtures"
	"github.com/tfconv/tfconv/tensor"
)

// hyperParams are the config.json keys that define each model; a round
// trip through GGUF must give them back unchanged.
var hyperParams = map[string][]string{
	"gpt2": {"model_type", "architectures", "n_layer", "n_embd", "n_head", "n_ctx", "n_positions", "vocab_size",
		"layer_norm_epsilon", "activation_function", "bos_token_id", "eos_token_id"},
	"llama": {"model_type", "architectures", "num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads",
		"num_key_value_heads", "max_position_embeddings", "rms_norm_eps", "rope_theta", "vocab_size", "tie_word_embeddings",
		"hidden_act", "attention_bias", "bos_token_id", "eos_token_id"},
	"bert": {"model_type", "architectures", "num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads",
		"max_position_embeddings", "layer_norm_eps", "vocab_size", "type_vocab_size", "hidden_act", "pad_token_id",
		"position_embedding_type", "unk_token_id", "sep_token_id", "mask_token_id", "cls_token_id", "bos_token_id"},
}

func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// compareConfig checks the hyper-parameters of two config.json files.
func compareConfig(t *testing.T, arch, got, want string, skip ...string) {
	t.Helper()
	g, w := readJSON(t, got), readJSON(t, want)
	for _, k := range hyperParams[arch] {
		if slices.Contains(skip, k) {
			continue
		}
		wv, ok := w[k]
		if !ok {
			if k == "tie_word_embeddings" { // LlamaConfig's default
				wv = true
			} else {
				t.Fatalf("%s has no %s", want, k)
			}
		}
		gb, _ := json.Marshal(g[k])
		wb, _ := json.Marshal(wv)
		if !bytes.Equal(gb, wb) {
			t.Errorf("config.json %s = %s, original %s", k, gb, wb)
		}
	}
}

// compareTensors checks that every tensor of want (except skip) is in got
// with the same dtype, shape and bytes.
func compareTensors(t *testing.T, got, want string, skip map[string]bool) {
	t.Helper()
	a, err := checkpoint.Open(got)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := checkpoint.Open(want)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	n := 0
	for _, wt := range b.Tensors {
		if skip[wt.Name] {
			continue
		}
		n++
		gt, ok := a.Tensor(wt.Name)
		if !ok {
			t.Errorf("missing tensor %q", wt.Name)
			continue
		}
		gb, err := gt.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		wb, err := wt.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if gt.DType != wt.DType || !gt.Shape.Equal(wt.Shape) || !bytes.Equal(gb, wb) {
			t.Errorf("tensor %q: %v %v differs from the original %v %v", wt.Name, gt.DType, gt.Shape, wt.DType, wt.Shape)
		}
	}
	if len(a.Tensors) != n {
		t.Errorf("%d tensors, want %d", len(a.Tensors), n)
	}
}

// TestRoundTripHF: HF → GGUF f32 → HF gives the original tensors bit for
// bit (the BERT pooler aside, which GGUF does not hold) and the same
// hyper-parameters.
func TestRoundTripHF(t *testing.T) {
	root := filepath.Join(fixtures.Require(t), "interop")
	for _, arch := range []string{"gpt2", "llama", "bert"} {
		t.Run(arch, func(t *testing.T) {
			tmp := t.TempDir()
			src := filepath.Join(root, arch, "hf")
			if _, err := Run(src, filepath.Join(tmp, "m.gguf"), Options{OutType: OutF32}); err != nil {
				t.Fatal(err)
			}
			rep, err := Run(filepath.Join(tmp, "m.gguf"), filepath.Join(tmp, "back"), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Format != Safetensors || rep.OutType != OutF32 {
				t.Errorf("report format %q outtype %q", rep.Format, rep.OutType)
			}
			skip := map[string]bool{"pooler.dense.weight": true, "pooler.dense.bias": true}
			compareTensors(t, filepath.Join(tmp, "back"), src, skip)
			compareConfig(t, arch, filepath.Join(tmp, "back", "config.json"), filepath.Join(src, "config.json"))
		})
	}
}

// TestRoundTripGGUF: GGUF → HF → GGUF gives llama.cpp's file back: the same
// tensors bit for bit and the same metadata (the allowed differences
// aside).
func TestRoundTripGGUF(t *testing.T) {
	root := filepath.Join(fixtures.Require(t), "interop")
	for _, arch := range []string{"gpt2", "llama", "bert"} {
		t.Run(arch, func(t *testing.T) {
			tmp := t.TempDir()
			src := filepath.Join(root, arch, "gguf", arch+"-f32.gguf")
			hf := filepath.Join(tmp, "hf")
			if _, err := Run(src, hf, Options{}); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(tmp, "m.gguf")
			if _, err := Run(hf, out, Options{OutType: OutF32}); err != nil {
				t.Fatal(err)
			}
			compareGGUF(t, arch, out, src, true)
		})
	}
}

// TestShardedInput splits a fixture into shards with our own writer and
// checks the conversion is the same as from the single file.
func TestShardedInput(t *testing.T) {
	root := filepath.Join(fixtures.Require(t), "interop")
	src := filepath.Join(root, "llama", "hf")
	c, err := checkpoint.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dir := t.TempDir()
	for _, name := range c.AuxNames() {
		b, err := c.ReadAux(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var infos []tensor.Info
	for _, tt := range c.Tensors {
		infos = append(infos, tensor.Info{Name: tt.Name, DType: tt.DType, Shape: tt.Shape})
	}
	create := func(name string) (io.WriteCloser, error) { return os.Create(filepath.Join(dir, name)) }
	sw, err := safetensors.NewShardedWriter(create, "model", 2<<20, infos, tensor.Metadata{{Key: "format", Value: tensor.String("pt")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(sw.Plan().Files) < 3 {
		t.Fatalf("only %d shards", len(sw.Plan().Files))
	}
	for _, tt := range c.Tensors {
		w, err := sw.Next(tt.Name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(w, tt.Open()); err != nil {
			t.Fatal(err)
		}
	}
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	for _, ot := range []string{OutF16, OutQ8_0} {
		a, b := filepath.Join(dir, "sharded-"+ot+".gguf"), filepath.Join(dir, "single-"+ot+".gguf")
		if _, err := Run(dir, a, Options{OutType: ot}); err != nil {
			t.Fatal(err)
		}
		if _, err := Run(src, b, Options{OutType: ot}); err != nil {
			t.Fatal(err)
		}
		compareGGUF(t, "llama", a, b, true)
	}
}

// TestRoundTripMixedTypes: a GGUF that mixes F16 weights with F32 norms and
// biases (llama.cpp's default f16 output) goes to Hugging Face and back,
// directly and through native, without a bit changing: Hugging Face output
// keeps each float tensor in its own type. An f32 GGUF comes back
// bit-identical too, and nothing is reported lossy on either way.
func TestRoundTripMixedTypes(t *testing.T) {
	tmp := t.TempDir()
	for _, ot := range []string{OutF16, OutF32} {
		t.Run(ot, func(t *testing.T) {
			g := filepath.Join(tmp, ot+".gguf")
			if _, err := Run(shippedGPT2, g, Options{OutType: ot}); err != nil {
				t.Fatal(err)
			}
			n := filepath.Join(tmp, ot+".tfn")
			if _, err := Run(g, n, Options{}); err != nil {
				t.Fatal(err)
			}
			for _, src := range []string{g, n} {
				hf := filepath.Join(tmp, ot+"-hf-from-"+filepath.Ext(src)[1:])
				rep, err := Run(src, hf, Options{})
				if err != nil {
					t.Fatal(err)
				}
				f32 := 0
				for _, tr := range rep.Tensors {
					if tr.DType != tr.SourceDType || tr.Lossy {
						t.Errorf("%s → HF: tensor %q written as %s from %s (lossy %v)", src, tr.Name, tr.DType, tr.SourceDType, tr.Lossy)
					}
					if tr.DType == "F32" {
						f32++
					}
				}
				// 19 of GPT-2's 28 HF tensors are F32 in llama.cpp's f16 GGUF.
				if want := map[string]int{OutF16: 19, OutF32: 28}[ot]; f32 != want {
					t.Errorf("%s → HF: %d F32 tensors, want %d", src, f32, want)
				}
				if len(rep.Warnings) != 0 {
					t.Errorf("%s → HF: warnings %q", src, rep.Warnings)
				}
				back := filepath.Join(tmp, ot+"-back-from-"+filepath.Ext(src)[1:]+".gguf")
				if _, err := Run(hf, back, Options{OutType: ot}); err != nil {
					t.Fatal(err)
				}
				compareGGUF(t, "gpt2", back, g, true)
			}
		})
	}
}

// TestLossyReported: a tensor written in a type that cannot hold every
// value of its source is flagged in the report and named in a warning;
// exact widenings (a quantized or f16 tensor to f32) are not.
func TestLossyReported(t *testing.T) {
	tmp := t.TempDir()
	g := filepath.Join(tmp, "f32.gguf")
	if _, err := Run(shippedGPT2, g, Options{OutType: OutF32}); err != nil {
		t.Fatal(err)
	}
	rep, err := Run(g, filepath.Join(tmp, "hf16"), Options{OutType: OutF16})
	if err != nil {
		t.Fatal(err)
	}
	lossy := 0
	for _, tr := range rep.Tensors {
		if tr.SourceDType != "F32" || tr.DType != "F16" || !tr.Lossy {
			t.Errorf("--outtype f16: tensor %q %s from %s, lossy %v", tr.Name, tr.DType, tr.SourceDType, tr.Lossy)
		}
		if tr.Lossy {
			lossy++
		}
	}
	if lossy != 28 || len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "28 tensor(s) written as F16 from F32") ||
		!strings.Contains(rep.Warnings[0], "transformer.h.0.attn.c_attn.bias") {
		t.Errorf("%d lossy tensors, warnings %q", lossy, rep.Warnings)
	}

	// Q8_0 and F32 tensors of a quantized GGUF go to F32: exact, no warning.
	rep, err = Run("../testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf", filepath.Join(tmp, "fortunes"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	q8 := 0
	for _, tr := range rep.Tensors {
		if tr.DType != "F32" || tr.Lossy {
			t.Errorf("Q8_0 GGUF → HF: tensor %q %s from %s, lossy %v", tr.Name, tr.DType, tr.SourceDType, tr.Lossy)
		}
		if tr.SourceDType == "Q8_0" {
			q8++
		}
	}
	if q8 != 30 || len(rep.Warnings) != 0 {
		t.Errorf("%d Q8_0 sources, warnings %q", q8, rep.Warnings)
	}
}
