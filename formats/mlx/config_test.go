package mlx

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

func decode(t testing.TB, s string) map[string]any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// The quantization object as mlx_lm.convert writes it with a mixed recipe:
// defaults, a layer of its own and a layer kept in float.
const mixedConfig = `{"model_type": "llama", "quantization": {"group_size": 64, "bits": 4, "mode": "affine",
	"model.layers.0.mlp.down_proj": {"group_size": 32, "bits": 8}, "lm_head": false},
	"quantization_config": {"group_size": 64, "bits": 4, "mode": "affine"}}`

func TestFromConfig(t *testing.T) {
	t.Parallel()
	q, err := FromConfig(decode(t, mixedConfig))
	if err != nil {
		t.Fatal(err)
	}
	if q.Bits != 4 || q.GroupSize != 64 || q.Mode != ModeAffine {
		t.Errorf("defaults %+v", q.Params)
	}
	if p, ok := q.For("model.layers.0.mlp.down_proj"); !ok || p.Bits != 8 || p.GroupSize != 32 || p.Mode != ModeAffine {
		t.Errorf("down_proj: %+v %v", p, ok)
	}
	if _, ok := q.For("lm_head"); ok {
		t.Error("lm_head is kept in float, For says quantized")
	}
	if p, ok := q.For("model.layers.1.self_attn.q_proj"); !ok || p != q.Params {
		t.Errorf("q_proj: %+v %v", p, ok)
	}
	if got := q.String(); got != "4-bit affine, group size 64 (1 layers their own, 1 kept in float)" {
		t.Errorf("String: %q", got)
	}
	// Written back, it reads the same (both keys, as mlx-lm writes them).
	cfg := map[string]any{}
	SetConfig(cfg, q)
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	back, err := FromConfig(decode(t, string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if back.String() != q.String() || *back.Layers["model.layers.0.mlp.down_proj"] != *q.Layers["model.layers.0.mlp.down_proj"] {
		t.Errorf("round trip: %s", b)
	}
	if !bytes.Contains(b, []byte(`"quantization_config":{"bits":4`)) {
		t.Errorf("no quantization_config copy: %s", b)
	}
	// No quantization: not an MLX-quantized checkpoint.
	if q, err := FromConfig(decode(t, `{"model_type": "llama"}`)); q != nil || err != nil {
		t.Errorf("plain config: %v %v", q, err)
	}
}

func TestFromConfigErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ cfg, want string }{
		{`{"quantization": 4}`, `"quantization" is json.Number`},
		{`{"quantization": {"bits": 4}}`, `quantization has no "group_size"`},
		{`{"quantization": {"bits": 4.5, "group_size": 64}}`, `quantization.bits is 4.5`},
		{`{"quantization": {"bits": "4", "group_size": 64}}`, `quantization.bits is string`},
		{`{"quantization": {"bits": 4, "group_size": 64, "x": 3}}`, `quantization.x is json.Number`},
		{`{"quantization": {"bits": 4, "group_size": 64, "x": {"bits": 8}}}`, `quantization.x has no "group_size"`},
	} {
		_, err := FromConfig(decode(t, c.cfg))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "mlx: config.json: ") {
			t.Errorf("%s: %v, want %q", c.cfg, err, c.want)
		}
	}
	for _, p := range []Params{{Bits: 7, GroupSize: 64}, {Bits: 4, GroupSize: 16}, {Bits: 4, GroupSize: 64, Mode: "mxfp4"}, {Bits: 8, GroupSize: 32, Mode: "nvfp4"}, {Bits: 4, GroupSize: 32, Mode: "int4"}} {
		if err := p.Check(); !errors.Is(err, tensor.ErrUnsupported) {
			t.Errorf("%+v: %v, want unsupported", p, err)
		}
	}
}

func info(name string, d tensor.DType, shape ...int64) tensor.Info {
	return tensor.Info{Name: name, DType: d, Shape: tensor.Shape(shape)}
}

func TestLayers(t *testing.T) {
	t.Parallel()
	q, err := FromConfig(decode(t, mixedConfig))
	if err != nil {
		t.Fatal(err)
	}
	infos := []tensor.Info{
		info("model.embed_tokens.weight", tensor.U32, 1000, 8),
		info("model.embed_tokens.scales", tensor.BF16, 1000, 1),
		info("model.embed_tokens.biases", tensor.BF16, 1000, 1),
		info("model.layers.0.mlp.down_proj.weight", tensor.U32, 64, 32),
		info("model.layers.0.mlp.down_proj.scales", tensor.F16, 64, 4),
		info("model.layers.0.mlp.down_proj.biases", tensor.F16, 64, 4),
		info("model.norm.weight", tensor.BF16, 64),
		info("lm_head.weight", tensor.BF16, 1000, 64),
	}
	ls, err := Layers(q, infos)
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 2 || !ls[0].Shape.Equal(tensor.Shape{1000, 64}) || !ls[1].Shape.Equal(tensor.Shape{64, 128}) || ls[1].Params.Bits != 8 {
		t.Fatalf("layers %+v", ls)
	}
	for _, c := range []struct {
		change func([]tensor.Info)
		want   string
	}{
		{func(in []tensor.Info) { in[1].Name = "x" }, `quantized tensor "model.embed_tokens.weight" has no "model.embed_tokens.scales"`},
		{func(in []tensor.Info) { in[2].Name = "x" }, `has no "model.embed_tokens.biases"`},
		{func(in []tensor.Info) { in[0].Shape = tensor.Shape{1000, 9} }, `tensor "model.embed_tokens.weight" has 9 words per row; 64 columns at 4 bits`},
		{func(in []tensor.Info) { in[2].DType = tensor.F32 }, `scales and biases share a type`},
		{func(in []tensor.Info) { in[1].DType = tensor.I32 }, `tensor "model.embed_tokens.scales" is I32`},
		{func(in []tensor.Info) { in[1].Shape = tensor.Shape{999, 1}; in[2].Shape = tensor.Shape{999, 1} }, `differ before the last dimension`},
		{func(in []tensor.Info) { in[7].DType = tensor.U32 }, `keeps layer "lm_head" in float`},
	} {
		in := append([]tensor.Info(nil), infos...)
		for i := range in {
			in[i].Shape = in[i].Shape.Clone()
		}
		c.change(in)
		if _, err := Layers(q, in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, want %q", err, c.want)
		}
	}
}

// fpConfig is an mxfp4 checkpoint with an nvfp4 and an mxfp8 layer, as
// mlx_lm.convert --q-mode and a quant predicate write it.
const fpConfig = `{"quantization": {"group_size": 32, "bits": 4, "mode": "mxfp4",
	"model.layers.0.mlp.down_proj": {"group_size": 16, "bits": 4, "mode": "nvfp4"},
	"model.layers.0.mlp.up_proj": {"group_size": 32, "bits": 8, "mode": "mxfp8"}}}`

// TestLayersFP: MLX's floating-point modes are layers of uint32 codes and
// uint8 scales, no biases, each with its mode's own group size and bits.
func TestLayersFP(t *testing.T) {
	t.Parallel()
	q, err := FromConfig(decode(t, fpConfig))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := q.String(), "4-bit mxfp4, group size 32 (2 layers their own)"; got != want {
		t.Errorf("String: %q, want %q", got, want)
	}
	infos := []tensor.Info{
		info("model.embed_tokens.weight", tensor.U32, 1000, 8),
		info("model.embed_tokens.scales", tensor.U8, 1000, 2),
		info("model.layers.0.mlp.down_proj.weight", tensor.U32, 64, 16),
		info("model.layers.0.mlp.down_proj.scales", tensor.U8, 64, 8),
		info("model.layers.0.mlp.up_proj.weight", tensor.U32, 128, 16),
		info("model.layers.0.mlp.up_proj.scales", tensor.U8, 128, 2),
		info("model.norm.weight", tensor.BF16, 64),
	}
	ls, err := Layers(q, infos)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		mode  string
		shape tensor.Shape
	}{{"mxfp4", tensor.Shape{1000, 64}}, {"nvfp4", tensor.Shape{64, 128}}, {"mxfp8", tensor.Shape{128, 64}}}
	if len(ls) != len(want) {
		t.Fatalf("%d layers, want %d", len(ls), len(want))
	}
	for i, w := range want {
		if ls[i].Params.Mode != w.mode || !ls[i].Shape.Equal(w.shape) || ls[i].Biases.Name != "" {
			t.Errorf("layer %d: %s %v biases %q, want %s %v and none", i, ls[i].Params.Mode, ls[i].Shape, ls[i].Biases.Name, w.mode, w.shape)
		}
	}
	for _, c := range []struct {
		change func([]tensor.Info) []tensor.Info
		want   string
	}{
		{func(in []tensor.Info) []tensor.Info {
			return append(in, info("model.embed_tokens.biases", tensor.U8, 1000, 2))
		}, `layer "model.embed_tokens" is mxfp4, which has no biases, but the checkpoint has "model.embed_tokens.biases"`},
		{func(in []tensor.Info) []tensor.Info { in[1].DType = tensor.BF16; return in }, `tensor "model.embed_tokens.scales" is BF16, want u8 (mxfp4 scales)`},
		{func(in []tensor.Info) []tensor.Info { in[3].Shape[1] = 4; return in }, `tensor "model.layers.0.mlp.down_proj.weight" has 16 words per row; 64 columns at 4 bits (group size 16, 4 groups) need 8`},
	} {
		in := append([]tensor.Info(nil), infos...)
		for i := range in {
			in[i].Shape = in[i].Shape.Clone()
		}
		if _, err := Layers(q, c.change(in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, want %q", err, c.want)
		}
	}
	for _, bad := range []string{
		`{"quantization": {"group_size": 64, "bits": 4, "mode": "mxfp4"}}`,
		`{"quantization": {"group_size": 16, "bits": 8, "mode": "nvfp4"}}`,
	} {
		q, err := FromConfig(decode(t, bad))
		if err != nil {
			t.Fatal(err)
		}
		_, err = Layers(q, infos[:2])
		if !errors.Is(err, tensor.ErrUnsupported) || !strings.Contains(err.Error(), "takes") {
			t.Errorf("%s: %v, want unsupported naming the mode's group size and bits", bad, err)
		}
	}
}

func TestQuantizable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		shape tensor.Shape
		want  bool
	}{
		{"model.layers.0.self_attn.q_proj.weight", tensor.Shape{64, 64}, true},
		{"model.embed_tokens.weight", tensor.Shape{1000, 64}, true},
		{"model.norm.weight", tensor.Shape{64}, false},
		{"model.layers.0.self_attn.q_proj.bias", tensor.Shape{64, 64}, false},
		{"model.layers.0.mlp.down_proj.weight", tensor.Shape{64, 96}, false}, // 96 % 64
		{"model.layers.0.mlp.experts.weight", tensor.Shape{4, 64, 128}, true},
	} {
		if got := Quantizable(c.name, c.shape, 64); got != c.want {
			t.Errorf("%s %v: %v", c.name, c.shape, got)
		}
	}
}

// FuzzFromConfig: any config.json, with any tensor list beside it, is read
// or refused with an error, never a panic.
func FuzzFromConfig(f *testing.F) {
	f.Add([]byte(mixedConfig), int64(32), int64(4))
	f.Add([]byte(`{"quantization": {"bits": 3, "group_size": 128}}`), int64(12), int64(1))
	f.Add([]byte(`{"quantization": {"bits": 4, "group_size": 64, "a": true}}`), int64(0), int64(-1))
	f.Add([]byte(fpConfig), int64(8), int64(2))
	f.Add([]byte(`{"quantization": {"bits": 8, "group_size": 32, "mode": "mxfp8"}}`), int64(8), int64(1))
	f.Fuzz(func(t *testing.T, cfg []byte, words, groups int64) {
		d := json.NewDecoder(bytes.NewReader(cfg))
		d.UseNumber()
		var m map[string]any
		if d.Decode(&m) != nil {
			return
		}
		q, err := FromConfig(m)
		if err != nil || q == nil {
			return
		}
		ls, err := Layers(q, []tensor.Info{
			info("a.weight", tensor.U32, 3, words),
			info("a.scales", tensor.F16, 3, groups),
			info("a.biases", tensor.F16, 3, groups),
		})
		if err == nil && len(ls) == 1 && ls[0].Shape[1] != groups*int64(ls[0].Params.GroupSize) {
			t.Fatalf("shape %v from %d groups of %d", ls[0].Shape, groups, ls[0].Params.GroupSize)
		}
		// The floating-point modes' layout: uint8 scales, no biases.
		ls, err = Layers(q, []tensor.Info{info("a.weight", tensor.U32, 3, words), info("a.scales", tensor.U8, 3, groups)})
		if err == nil && len(ls) == 1 && ls[0].Shape[1] != groups*int64(ls[0].Params.GroupSize) {
			t.Fatalf("shape %v from %d groups of %d", ls[0].Shape, groups, ls[0].Params.GroupSize)
		}
	})
}
