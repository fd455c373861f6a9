package convert

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/tensor"
)

// TestMLXQuantizeMatchesMLXSave: quantize --to mlx of the smollm3 fixture
// (4 bits, group 64) writes every tensor byte for byte as mlx-lm's own
// save wrote it (testdata/mlx/smollm3-q4g64: mlx_lm.convert -q on MLX
// 846d176, gen_mlxlm.py; TestMLXMatchesMLXLM holds the same case by
// hash), and reads mlx-lm's directory back as the same float weights it
// reads its own.
func TestMLXQuantizeMatchesMLXSave(t *testing.T) {
	t.Parallel()
	ref := filepath.Join("..", "testdata", "mlx", "smollm3-q4g64")
	dir := filepath.Join(t.TempDir(), "mlx")
	if _, err := Run(filepath.Join("..", "testdata", "arch", "smollm3", "hf"), dir, Options{To: MLX, Bits: 4, GroupSize: 64}); err != nil {
		t.Fatal(err)
	}
	for _, open := range []func(string) (*checkpoint.Checkpoint, error){checkpoint.OpenStored, checkpoint.Open} {
		ours, err := open(dir)
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := open(ref)
		if err != nil {
			t.Fatal(err)
		}
		identicalTensors(t, ours, theirs)
		ours.Close()
		theirs.Close()
	}
}

// TestMLXQuantizeMoEMatchesMLXSave: quantize --to mlx --bits 4
// --group-size 32 of the Qwen3-MoE fixture writes what mlx-lm d78bf58's
// own save writes for it (testdata/mlx/qwen3moe-q4g32, gen_mlxlm.py):
// each layer's experts stacked
// into mlp.switch_mlp.{gate,up,down}_proj, 3-D codes, scales and biases
// by mx::quantize, the router mlp.gate at 8 bits and group 64 (qwen3_moe's
// quant_predicate, a per-layer entry in config.json), tensor for tensor,
// byte for byte; read back (checkpoint.Open), each weight is MLX's
// dequantization of its own, the experts under Hugging Face's names again
// (one [out][in] tensor per expert, through the family record).
func TestMLXQuantizeMoEMatchesMLXSave(t *testing.T) {
	t.Parallel()
	ref := filepath.Join("..", "testdata", "mlx", "qwen3moe-q4g32")
	dir := filepath.Join(t.TempDir(), "mlx")
	if _, err := Run(filepath.Join("..", "testdata", "arch", "qwen3moe", "hf"), dir, Options{To: MLX, Bits: 4, GroupSize: 32}); err != nil {
		t.Fatal(err)
	}
	// stored: codes, scales and biases of 3 projections × 2 layers;
	// opened: none, the 4 experts' weights of each instead
	for i, open := range []func(string) (*checkpoint.Checkpoint, error){checkpoint.OpenStored, checkpoint.Open} {
		ours, err := open(dir)
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := open(ref)
		if err != nil {
			t.Fatal(err)
		}
		identicalTensors(t, ours, theirs)
		stacked, experts := 0, 0
		for _, tt := range theirs.Tensors {
			if strings.Contains(tt.Name, ".switch_mlp.") && len(tt.Shape) == 3 {
				stacked++
			}
			if strings.Contains(tt.Name, ".mlp.experts.") && len(tt.Shape) == 2 {
				experts++
			}
		}
		if want, wantE := []int{18, 0}[i], []int{0, 24}[i]; stacked != want || experts != wantE {
			t.Errorf("%d stacked expert tensors, %d per expert; want %d, %d", stacked, experts, want, wantE)
		}
		ours.Close()
		theirs.Close()
	}
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Quantization map[string]any `json:"quantization"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if g, ok := cfg.Quantization["model.layers.1.mlp.gate"].(map[string]any); !ok || g["bits"] != 8.0 || g["group_size"] != 64.0 {
		t.Errorf("config.json quantization: %v, want model.layers.1.mlp.gate 8 bits, group 64", cfg.Quantization)
	}
}

// TestMLXQuantizeMoEFamiliesMatchMLXSave: quantize --to mlx --bits 4
// --group-size 32 of the Mixtral, Qwen2-MoE and OLMoE fixtures writes, tensor
// for tensor, what MLX 846d176 writes for them as mlx-lm d78bf58's sanitize
// lays each out (refprog/mlxsavemoe.cpp; testdata/mlx/moe-mlxsave.json
// records each tensor's dtype, shape and sha256): the experts stacked into
// switch_mlp (Mixtral's w1, w2, w3 as gate_proj, down_proj, up_proj under
// block_sparse_moe), no router override; read back, the experts are Hugging
// Face's one tensor per expert again.
func TestMLXQuantizeMoEFamiliesMatchMLXSave(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "mlx", "moe-mlxsave.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Families map[string]struct {
			Tensors map[string]struct {
				DType  string  `json:"dtype"`
				Shape  []int64 `json:"shape"`
				SHA256 string  `json:"sha256"`
			} `json:"tensors"`
		} `json:"families"`
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.Families) != 3 {
		t.Fatalf("%d families recorded, want 3", len(rec.Families))
	}
	for fam, want := range rec.Families {
		t.Run(fam, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "mlx")
			if _, err := Run(filepath.Join("..", "testdata", "arch", fam, "hf"), dir, Options{To: MLX, Bits: 4, GroupSize: 32}); err != nil {
				t.Fatal(err)
			}
			ours, err := checkpoint.OpenStored(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer ours.Close()
			if len(ours.Tensors) != len(want.Tensors) {
				t.Fatalf("%d tensors, MLX wrote %d", len(ours.Tensors), len(want.Tensors))
			}
			stacked := 0
			for name, w := range want.Tensors {
				mine, ok := ours.Tensor(name)
				if !ok {
					t.Fatalf("no tensor %q (MLX wrote it)", name)
				}
				b, err := mine.ReadAll()
				if err != nil {
					t.Fatal(err)
				}
				sum := sha256.Sum256(b)
				if !strings.EqualFold(mine.DType.String(), w.DType) || !mine.Shape.Equal(tensor.Shape(w.Shape)) || hex.EncodeToString(sum[:]) != w.SHA256 {
					t.Errorf("tensor %q: %v %v differs from MLX's %s %v", name, mine.DType, mine.Shape, w.DType, w.Shape)
				}
				if strings.Contains(name, ".switch_mlp.") {
					stacked++
				}
			}
			if stacked != 18 {
				t.Errorf("%d switch_mlp tensors, want 18 (3 matrices × codes, scales, biases × 2 layers)", stacked)
			}
			back, err := checkpoint.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer back.Close()
			experts := 0
			for _, x := range back.Tensors {
				if strings.Contains(x.Name, ".switch_mlp.") {
					t.Errorf("%s read back stacked", x.Name)
				}
				if strings.Contains(x.Name, ".experts.") {
					experts++
				}
			}
			if experts != 24 {
				t.Errorf("%d expert weights read back, want 24 (4 experts × 3 × 2 layers)", experts)
			}
		})
	}
}

// TestMLXMatchesMLXLM: tfconv's MLX output equals what mlx-lm's own
// conversion writes (testdata/mlx/mlxlm.json: mlx_lm.convert of mlx-lm
// d78bf58 on MLX 846d176's Python bindings, gen_mlxlm.py), tensor for
// tensor (name, dtype, shape and the sha256 of the bytes), with the same
// quantization in config.json: affine 4 and 8 bits, mxfp4, nvfp4 and mxfp8
// of a dense model,
// a Qwen3-MoE's switch_mlp with its router's override, and gpt-oss
// converted unquantized (its MXFP4 experts loaded by mlx-lm as mxfp4
// layers and saved: tfconv copies them).
func TestMLXMatchesMLXLM(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "mlx", "mlxlm.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Cases map[string]struct {
			Fixture            string
			Quantization       map[string]any `json:"quantization"`
			QuantizationConfig map[string]any `json:"quantization_config"`
			Tensors            map[string]struct {
				DType  string `json:"dtype"`
				Shape  []int64
				SHA256 string `json:"sha256"`
			}
		}
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatal(err)
	}
	opts := map[string]Options{
		"smollm3-q4g64":  {To: MLX, Bits: 4, GroupSize: 64},
		"smollm3-q8g32":  {To: MLX, Bits: 8, GroupSize: 32},
		"smollm3-mxfp4":  {To: MLX, MLXMode: "mxfp4"},
		"smollm3-nvfp4":  {To: MLX, MLXMode: "nvfp4"},
		"smollm3-mxfp8":  {To: MLX, MLXMode: "mxfp8"},
		"qwen3moe-q4g32": {To: MLX, Bits: 4, GroupSize: 32},
		"gptoss":         {To: MLX},
	}
	if len(rec.Cases) != len(opts) {
		t.Fatalf("%d cases recorded, want %d", len(rec.Cases), len(opts))
	}
	for name, c := range rec.Cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			o, ok := opts[name]
			if !ok {
				t.Fatalf("no options for case %q", name)
			}
			dir := filepath.Join(t.TempDir(), "mlx")
			if _, err := Run(filepath.Join("..", filepath.FromSlash(c.Fixture)), dir, o); err != nil {
				t.Fatal(err)
			}
			ours, err := checkpoint.OpenStored(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer ours.Close()
			if len(ours.Tensors) != len(c.Tensors) {
				t.Errorf("%d tensors, mlx-lm wrote %d", len(ours.Tensors), len(c.Tensors))
			}
			for _, x := range ours.Tensors {
				want, ok := c.Tensors[x.Name]
				if !ok {
					t.Errorf("%s: not written by mlx-lm", x.Name)
					continue
				}
				b, err := x.ReadAll()
				if err != nil {
					t.Fatal(err)
				}
				sum := sha256.Sum256(b)
				dt, _ := x.DType.SafetensorsName()
				if dt != want.DType || !x.Shape.Equal(tensor.Shape(want.Shape)) || hex.EncodeToString(sum[:]) != want.SHA256 {
					t.Errorf("%s: %s %v %x, mlx-lm %s %v %s", x.Name, dt, x.Shape, sum[:6], want.DType, want.Shape, want.SHA256[:12])
				}
			}
			cfg, err := ours.Config()
			if err != nil {
				t.Fatal(err)
			}
			for key, want := range map[string]map[string]any{"quantization": c.Quantization, "quantization_config": c.QuantizationConfig} {
				g, _ := json.Marshal(cfg[key])
				w, _ := json.Marshal(want)
				if string(g) != string(w) {
					t.Errorf("config.json %s: %s, mlx-lm %s", key, g, w)
				}
			}
		})
	}
}
