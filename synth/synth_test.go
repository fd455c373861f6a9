package synth

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/formats/safetensors"
	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// Published parameter counts of the checkpoints the built-in shapes copy
// (model cards / transformers' num_parameters()).
var publishedParams = map[string]int64{
	"tinyllama-1.1b": 1_100_048_384,
	"llama-7b":       6_738_415_616,
	"gpt2-124m":      124_439_808,
	"bert-base":      109_482_240,
	"mistral-7b":     7_241_732_096,
	"qwen2.5-0.5b":   494_032_768,
	"gemma-2b":       2_506_172_416,
	"phi3-mini-4k":   3_821_079_552,
	"mixtral-8x7b":   46_702_792_704,
	// llama.cpp's n_params for GLM-4.6V-Flash's text model, the same
	// glm4 shape (its model card rounds to 9.4B).
	"glm4-9b": 9_400_279_040,
	// Llama 4's text models, from their config.json's text_config (Meta's
	// 109B and 400B count the vision tower too): Scout 48 layers of 16
	// experts, Maverick 24 of 128 between 24 dense ones.
	"llama4-scout-17b-16e":     107_769_861_120,
	"llama4-maverick-17b-128e": 400_711_848_960,
	"gpt-oss-20b":              20_914_757_184,
	"gpt-oss-120b":             116_829_156_672,
	// LFM2-1.2B: its config.json's tensors counted (the model card's
	// 1.17B).
	"lfm2-1.2b": 1_170_340_608,
	// The state-space shapes: their config.json's tensors counted (the
	// model cards' 130M, 2.7B, 7B and 3B; mamba-130m-hf and the Granite
	// checkpoints' safetensors hold 129.1M, 6.94B and 3.19B).
	"mamba-130m":          129_135_360,
	"mamba2-130m":         128_989_632,
	"mamba2-2.7b":         2_702_599_680,
	"granite-4.0-h-tiny":  6_939_037_248,
	"granite-4.0-h-micro": 3_191_396_096,
	// Hunyuan-A13B: its config.json's tensors counted (80B total, 13B
	// active in the model card; 80.4B the safetensors' own count).
	"hunyuan-a13b": 80_393_183_232,
}

// TestShapesStateSpaceLayers checks what the state-space shapes hold per
// layer at the published widths, cut to a few layers as bench uses them:
// Granite 4.0-H's first six are five Mamba-2 layers and an attention
// layer, each with its experts; Mamba-2's Δ bias and convolution bias are
// there in GGUF's names and shapes.
func TestShapesStateSpaceLayers(t *testing.T) {
	t.Parallel()
	shapes := map[string]map[string]string{}
	for _, c := range []struct {
		name   string
		layers int
	}{{"granite-4.0-h-tiny", 6}, {"granite-4.0-h-micro", 6}, {"mamba2-2.7b", 2}, {"mamba-130m", 2}} {
		s, ok := Lookup(c.name)
		if !ok {
			t.Fatalf("no shape %s", c.name)
		}
		s.Layers = c.layers
		infos, err := GGUFTensors(s, tensor.Q8_0)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		m := map[string]string{}
		for _, ti := range infos {
			m[ti.Name] = fmt.Sprint(ti.Shape)
		}
		shapes[c.name] = m
		md, err := GGUFMetadata(s, tensor.Q8_0)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if n, _ := md.Int(s.Arch + ".block_count"); n != int64(c.layers) {
			t.Errorf("%s: block_count %d, want %d", c.name, n, c.layers)
		}
	}
	for _, c := range []struct {
		shape, tensor, want string // want "": absent
	}{
		{"granite-4.0-h-tiny", "blk.0.ssm_in.weight", "[6448 1536]"}, // 2·3072 + 2·128 + 48
		{"granite-4.0-h-tiny", "blk.0.ssm_conv1d.weight", "[3328 4]"},
		{"granite-4.0-h-tiny", "blk.0.ssm_conv1d.bias", "[3328]"},
		{"granite-4.0-h-tiny", "blk.0.ssm_dt.bias", "[48]"},
		{"granite-4.0-h-tiny", "blk.0.ssm_a", "[48 1]"},
		{"granite-4.0-h-tiny", "blk.0.ssm_norm.weight", "[1 3072]"},
		{"granite-4.0-h-tiny", "blk.0.attn_q.weight", ""},
		{"granite-4.0-h-tiny", "blk.4.ssm_out.weight", "[1536 3072]"},
		{"granite-4.0-h-tiny", "blk.5.ssm_in.weight", ""},
		{"granite-4.0-h-tiny", "blk.5.attn_q.weight", "[1536 1536]"},
		{"granite-4.0-h-tiny", "blk.5.attn_k.weight", "[512 1536]"},
		{"granite-4.0-h-tiny", "blk.5.ffn_gate_exps.weight", "[64 512 1536]"},
		{"granite-4.0-h-tiny", "blk.0.ffn_up_shexp.weight", "[1024 1536]"},
		{"granite-4.0-h-tiny", "blk.0.ffn_gate_inp.weight", "[64 1536]"},
		{"granite-4.0-h-tiny", "output.weight", ""},
		{"granite-4.0-h-micro", "blk.0.ssm_in.weight", "[8512 2048]"}, // 2·4096 + 2·128 + 64
		{"granite-4.0-h-micro", "blk.5.attn_v.weight", "[512 2048]"},
		{"granite-4.0-h-micro", "blk.3.ffn_gate.weight", "[8192 2048]"},
		{"granite-4.0-h-micro", "blk.3.ffn_gate_exps.weight", ""},
		{"mamba2-2.7b", "blk.1.ssm_in.weight", "[10576 2560]"}, // 2·5120 + 2·128 + 80
		{"mamba2-2.7b", "blk.1.ssm_dt.bias", "[80]"},
		{"mamba2-2.7b", "blk.1.ssm_conv1d.bias", "[5376]"},
		{"mamba2-2.7b", "blk.1.ssm_d", "[80 1]"},
		{"mamba2-2.7b", "token_embd.weight", "[50288 2560]"},
		{"mamba-130m", "blk.1.ssm_x.weight", "[80 1536]"}, // 48 + 2·16
		{"mamba-130m", "blk.1.ssm_dt.weight", "[1536 48]"},
		{"mamba-130m", "blk.1.ssm_dt.bias", "[1536]"},
		{"mamba-130m", "blk.1.ssm_a", "[1536 16]"},
	} {
		if got := shapes[c.shape][c.tensor]; got != c.want {
			t.Errorf("%s: %s is %q, want %q", c.shape, c.tensor, got, c.want)
		}
	}
}

func TestShapesParams(t *testing.T) {
	for _, s := range Shapes() {
		want, ok := publishedParams[s.Name]
		if !ok {
			t.Errorf("%s: no published count", s.Name)
			continue
		}
		if got := s.Params(); got != want {
			t.Errorf("%s: %d parameters, published %d", s.Name, got, want)
		}
		if _, err := GGUFMetadata(s, tensor.F16); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
	}
}

// small returns a shape of each architecture small enough for a test, with
// the real vocabulary (which fixes Vocab).
func small(arch string) Shape {
	s := Shape{Name: "test-" + arch, Arch: arch, Layers: 2, Hidden: 64, Heads: 4, FFN: 96, Context: 32, NormEps: 1e-5}
	switch arch {
	case Llama:
		s.KVHeads, s.Vocab, s.RopeBase = 2, 32000, 10000
	case GPT2:
		s.Vocab = 50257
	case BERT:
		s.Vocab, s.TypeVocab = 30522, 2
	}
	return s
}

func writeGGUF(t *testing.T, s Shape, d tensor.DType, seed uint64) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteGGUF(&b, s, d, seed); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func readAll(t *testing.T, tt *gguf.Tensor) []float32 {
	t.Helper()
	raw, err := io.ReadAll(tt.Open())
	if err != nil {
		t.Fatal(err)
	}
	n, _ := tt.Shape.NumElements()
	x := make([]float32, n)
	if err := quant.Dequantize(x, raw, tt.DType); err != nil {
		t.Fatal(err)
	}
	return x
}

// Statistical tolerances: with ≥ 30k samples the sample std of N(0, 0.02)
// is within 2% of 0.02 and the mean within 0.001 with overwhelming
// probability; the Irwin–Hall sum is bounded by 2·sqrt(3)·σ·... = 3.46σ.
const (
	stdTol    = 0.02 * 0.03
	meanTol   = 0.001
	maxSigmas = 3.47
)

func TestWriteGGUF(t *testing.T) {
	for _, arch := range []string{Llama, GPT2, BERT} {
		s := small(arch)
		b := writeGGUF(t, s, tensor.F32, 7)
		f, err := gguf.NewFile(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		if got := f.Metadata; len(got) == 0 {
			t.Fatal("no metadata")
		}
		if a, _ := f.Metadata.Str("general.architecture"); a != arch {
			t.Errorf("%s: architecture %q", arch, a)
		}
		if n, _ := f.Metadata.Int(arch + ".block_count"); n != 2 {
			t.Errorf("%s: block_count %d", arch, n)
		}
		tok, _ := f.Metadata.Get("tokenizer.ggml.tokens")
		if a, _ := tok.Array(); a.Len() != s.Vocab {
			t.Errorf("%s: %d tokens, want %d", arch, a.Len(), s.Vocab)
		}
		want := map[string]int{Llama: 2 + 2*9 + 1, GPT2: 2 + 2*12 + 3, BERT: 5 + 2*16}[arch]
		if len(f.Tensors) != want {
			t.Errorf("%s: %d tensors, want %d", arch, len(f.Tensors), want)
		}
		for i := range f.Tensors {
			tt := &f.Tensors[i]
			x := readAll(t, tt)
			var sum, sq float64
			var mx float64
			center := 0.0
			if strings.Contains(tt.Name, "norm.weight") {
				center = 1
			}
			for _, v := range x {
				d := float64(v) - center
				sum += d
				sq += d * d
				mx = max(mx, math.Abs(d))
			}
			n := float64(len(x))
			mean, std := sum/n, math.Sqrt(sq/n-(sum/n)*(sum/n))
			if mx > maxSigmas*Sigma {
				t.Errorf("%s %s: |x−%g| reaches %g", arch, tt.Name, center, mx)
			}
			if len(x) >= 30000 && (math.Abs(mean) > meanTol || math.Abs(std-Sigma) > stdTol) {
				t.Errorf("%s %s: mean %g std %g, want 0 and %g", arch, tt.Name, mean, std, Sigma)
			}
			if len(tt.Shape) == 1 && tt.DType != tensor.F32 {
				t.Errorf("%s %s: 1-D tensor is %s", arch, tt.Name, tt.DType)
			}
		}
	}
}

// TestDeterministicAndTypes checks that a seed fixes the bytes, another seed
// changes them, and that the f16/bf16/q8_0 files hold the rounding of the f32
// file's values.
func TestDeterministicAndTypes(t *testing.T) {
	s := small(Llama)
	f32 := writeGGUF(t, s, tensor.F32, 1)
	if !bytes.Equal(f32, writeGGUF(t, s, tensor.F32, 1)) {
		t.Fatal("same seed, different bytes")
	}
	ref, err := gguf.NewFile(bytes.NewReader(f32), int64(len(f32)))
	if err != nil {
		t.Fatal(err)
	}
	other := writeGGUF(t, s, tensor.F32, 2)
	o, _ := gguf.NewFile(bytes.NewReader(other), int64(len(other)))
	if bytes.Equal(readRaw(t, &ref.Tensors[1]), readRaw(t, &o.Tensors[1])) {
		t.Error("seeds 1 and 2 give the same tensor")
	}
	for _, d := range []tensor.DType{tensor.F16, tensor.BF16, tensor.Q8_0} {
		b := writeGGUF(t, s, d, 1)
		f, err := gguf.NewFile(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		if ft, _ := f.Metadata.Int("general.file_type"); ft != map[tensor.DType]int64{tensor.F16: 1, tensor.BF16: 32, tensor.Q8_0: 7}[d] {
			t.Errorf("%s: file_type %d", d, ft)
		}
		for i := range f.Tensors {
			tt, rt := &f.Tensors[i], &ref.Tensors[i]
			x := readAll(t, rt)
			want := make([]byte, tt.Size)
			if len(tt.Shape) == 1 {
				want = readRaw(t, rt)
			} else if err := quant.Quantize(want, x, d); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(readRaw(t, tt), want) {
				t.Errorf("%s %s: not the rounding of the f32 values", d, tt.Name)
			}
		}
	}
}

func readRaw(t *testing.T, tt *gguf.Tensor) []byte {
	t.Helper()
	b, err := io.ReadAll(tt.Open())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestWriteHF(t *testing.T) {
	for _, arch := range []string{Llama, GPT2, BERT} {
		s := small(arch)
		dir := filepath.Join(t.TempDir(), "m")
		if err := WriteHF(dir, s, tensor.BF16, 3); err != nil {
			t.Fatal(err)
		}
		f, err := safetensors.Open(filepath.Join(dir, "model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := HFTensors(s, tensor.BF16)
		if len(f.Tensors) != len(want) {
			t.Fatalf("%s: %d tensors, want %d", arch, len(f.Tensors), len(want))
		}
		var params int64
		for i, tt := range f.Tensors {
			if tt.Name != want[i].Name || !tt.Shape.Equal(want[i].Shape) || tt.DType != want[i].DType {
				t.Errorf("%s: tensor %d is %s %s %v, want %s %s %v", arch, i, tt.Name, tt.DType, tt.Shape, want[i].Name, want[i].DType, want[i].Shape)
			}
			n, _ := tt.Shape.NumElements()
			params += n
		}
		f.Close()
		if params != s.Params() {
			t.Errorf("%s: %d parameters, Params says %d", arch, params, s.Params())
		}
		var cfg map[string]any
		b, err := os.ReadFile(filepath.Join(dir, "config.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &cfg); err != nil {
			t.Fatal(err)
		}
		if cfg["model_type"] != arch || cfg["torch_dtype"] != "bfloat16" || cfg["vocab_size"] != float64(s.Vocab) {
			t.Errorf("%s: config %v", arch, cfg)
		}
	}
}

func TestErrors(t *testing.T) {
	s := small(Llama)
	if err := WriteGGUF(io.Discard, s, tensor.Q4_0, 1); err == nil {
		t.Error("Q4_0 accepted")
	}
	if _, err := HFTensors(s, tensor.Q8_0); err == nil {
		t.Error("Q8_0 safetensors accepted")
	}
	bad := s
	bad.Vocab = 1000
	if err := WriteGGUF(io.Discard, bad, tensor.F32, 1); err == nil || !strings.Contains(err.Error(), "vocab") {
		t.Errorf("vocab mismatch: %v", err)
	}
	bad = s
	bad.Arch = "t5"
	if err := bad.Check(); err == nil {
		t.Error("t5 accepted")
	}
	bad = s
	bad.KVHeads = 3
	if err := bad.Check(); err == nil {
		t.Error("kv heads 3 of 4 accepted")
	}
}

// TestFillDistribution checks the generator itself over 1 Mi values: the
// moments of Irwin–Hall n=4 (mean 0, std σ, excess kurtosis −0.3).
func TestFillDistribution(t *testing.T) {
	x := make([]float32, 1<<20)
	fill(x, 42, 0, weight)
	var s1, s2, s4 float64
	for _, v := range x {
		d := float64(v)
		s1 += d
		s2 += d * d
		s4 += d * d * d * d
	}
	n := float64(len(x))
	mean, v := s1/n, s2/n
	kurt := s4/n/(v*v) - 3
	if math.Abs(mean) > 1e-4 || math.Abs(math.Sqrt(v)-Sigma) > 1e-4 || math.Abs(kurt+0.3) > 0.02 {
		t.Errorf("mean %g std %g excess kurtosis %g", mean, math.Sqrt(v), kurt)
	}
}
