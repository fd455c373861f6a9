package arch

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tfconv/tfconv/tensor"
)

// Packed is a Hugging Face tensor that holds more than one GGUF tensor, or
// holds a GGUF block type's data already quantized, or both (gpt-oss's
// experts: mlp.experts.gate_up_proj has the gate and up rows alternating,
// stored as MXFP4 blocks). The family lists it in Family.Packed; its GGUF
// roles are in Family.Tensors as any other (what the model and GGUF → HF
// read).
type Packed struct {
	// HF is the Hugging Face pattern up to the suffix
	// ("model.layers.{bid}.mlp.experts.gate_up_proj").
	HF string
	// GGUF are the roles it holds, alternating along axis 1 (each
	// expert's rows): row r goes to GGUF[r mod len(GGUF)]. One role: the
	// tensor is that role whole.
	GGUF []Role
	// Blocks, when set, is the block type the weight is stored in: HF's
	// HF+BlocksSuffix holds the packed values and HF+ScalesSuffix the
	// shared scales, in the OCP microscaling layout (values two per byte,
	// the even one in the low nibble; one scale byte per block), and the
	// GGUF weight is that type, its blocks copied, never dequantized.
	Blocks tensor.DType
	// BiasSuffix is the suffix of the bias's HF name ("_bias"), split the
	// same way; "" when there is none.
	BiasSuffix string
	// DenseTransposed: the weight may also be stored unquantized under HF
	// itself, [n][in][out], transposed (what transformers saves of a
	// gpt-oss model it did not quantize); the GGUF roles take its
	// transpose's alternating rows, in its float type.
	DenseTransposed bool
	// MLX, when set, are the module patterns mlx-lm's sanitize splits the
	// tensor into, one per GGUF role in the same order (gpt_oss's
	// mlp.experts.gate_proj and up_proj, d78bf58): each an MLX mxfp4 layer
	// (".weight" the blocks viewed as uint32 codes, ".scales" the scale
	// bytes) with its ".bias", the rows of role k being those r ≡ k (mod
	// len(GGUF)) of the Hugging Face tensors. Blocks MXFP4 only.
	MLX []Role
}

// MLXSplit is one Hugging Face tensor of a Packed entry at one layer and
// the MLX tensors mlx-lm's sanitize splits it into (Packed.MLX), its rows
// alternating among them along axis 1: the blocks into the layers'
// uint32 codes, the scales into their scales, the bias into their biases.
type MLXSplit struct {
	HF  string
	MLX []string
	// Codes: HF holds OCP blocks [n][rows][blocks][16] bytes, MLX their
	// rows as uint32 codes [n][rows/k][blocks·4].
	Codes bool
}

// MLXSplits are the MLXSplits of the family's Packed entries with MLX names
// at layer bid (the bias's only where the entry has one).
func (f *Family) MLXSplits(bid int) []MLXSplit {
	var out []MLXSplit
	for i := range f.Packed {
		p := &f.Packed[i]
		if len(p.MLX) == 0 {
			continue
		}
		hf := expand(p.HF, bid)
		split := func(hfSuffix, mlxSuffix string, codes bool) {
			s := MLXSplit{HF: hf + hfSuffix, Codes: codes}
			for _, m := range p.MLX {
				s.MLX = append(s.MLX, expand(m, bid)+mlxSuffix)
			}
			out = append(out, s)
		}
		split(BlocksSuffix, ".weight", true)
		split(ScalesSuffix, ".scales", false)
		if p.BiasSuffix != "" {
			split(p.BiasSuffix, ".bias", false)
		}
	}
	return out
}

// The suffixes of a block-stored weight's two parts.
const (
	BlocksSuffix = "_blocks"
	ScalesSuffix = "_scales"
)

// packedOf finds the Packed entry and layer of an HF tensor name, and which
// part of it the name is (BlocksSuffix, ScalesSuffix or the BiasSuffix).
func (f *Family) packedOf(name string) (p *Packed, bid int, part string, ok bool) {
	for i := range f.Packed {
		p := &f.Packed[i]
		if p.DenseTransposed {
			if pat, b, _ := SplitName(name + ".weight"); pat == p.HF {
				return p, b, "", true
			}
		}
		for _, s := range []string{BlocksSuffix, ScalesSuffix, p.BiasSuffix} {
			if s == "" || (p.Blocks == 0 && s != p.BiasSuffix) {
				continue
			}
			base, found := strings.CutSuffix(name, s)
			if !found {
				continue
			}
			pat, b, _ := SplitName(base + ".weight")
			if pat+".weight" == p.HF+".weight" {
				return p, b, s, true
			}
		}
	}
	return nil, 0, "", false
}

// packedMappings maps the HF tensor ti, a part of Packed p at layer bid, to
// GGUF: the block weight (named by its blocks part, reading the scales
// part in) cut into p's roles, or the bias cut the same way. The scales
// part maps to nothing (the blocks' mappings read it); byName gives the
// other tensors' infos.
func (p *Packed) mappings(ti tensor.Info, bid int, part string, byName map[string]tensor.Info) ([]Mapping, error) {
	n := int64(len(p.GGUF))
	hf := strings.Replace(p.HF, "{bid}", strconv.Itoa(bid), 1)
	if part == ScalesSuffix {
		if _, ok := byName[hf+BlocksSuffix]; !ok {
			return nil, fmt.Errorf("arch: tensor %q has no %q beside it", ti.Name, hf+BlocksSuffix)
		}
		return nil, nil
	}
	if part == "" {
		// Dense, [n][in][out·len(GGUF)]: the roles are the transpose's rows.
		if len(ti.Shape) != 3 || ti.Shape[2]%n != 0 {
			return nil, fmt.Errorf("arch: tensor %q has shape %v: not [experts][in][out] with out split into %d", ti.Name, ti.Shape, n)
		}
		var out []Mapping
		for k, role := range p.GGUF {
			out = append(out, Mapping{Name: expand(role, bid) + ".weight", Source: ti.Name, Part: k, Parts: int(n),
				Interleaved: true, Transposed: true, Shape: tensor.Shape{ti.Shape[0], ti.Shape[2] / n, ti.Shape[1]}})
		}
		return out, nil
	}
	if len(ti.Shape) < 2 || ti.Shape[1]%n != 0 {
		return nil, fmt.Errorf("arch: tensor %q has shape %v: its rows do not split into %d", ti.Name, ti.Shape, n)
	}
	var out []Mapping
	for k, role := range p.GGUF {
		m := Mapping{Source: ti.Name, Part: k, Parts: int(n), Interleaved: true}
		switch part {
		case BlocksSuffix:
			sc, ok := byName[hf+ScalesSuffix]
			bs := int64(p.Blocks.BlockSize())
			if !ok || len(ti.Shape) != 4 || len(sc.Shape) != 3 || !sc.Shape.Equal(ti.Shape[:3]) || ti.Shape[3]*2 != bs {
				return nil, fmt.Errorf("arch: tensor %q (shape %v) and %q (%v) are not %v blocks and their scales",
					ti.Name, ti.Shape, hf+ScalesSuffix, sc.Shape, p.Blocks)
			}
			m.Name = expand(role, bid) + ".weight"
			m.Scales, m.Blocks = sc.Name, p.Blocks
			m.Shape = tensor.Shape{ti.Shape[0], ti.Shape[1] / n, ti.Shape[2] * bs}
		default:
			m.Name = expand(role, bid) + ".bias"
			m.Shape = append(tensor.Shape{ti.Shape[0], ti.Shape[1] / n}, ti.Shape[2:]...)
		}
		out = append(out, m)
	}
	return out, nil
}

// PackedMappings are the GGUF tensors the family's Packed entries make of
// the Hugging Face tensors in (what ToGGUF maps them to; the model reads a
// checkpoint's packed experts through them).
func (f *Family) PackedMappings(in []tensor.Info) ([]Mapping, error) {
	byName := make(map[string]tensor.Info, len(in))
	for _, ti := range in {
		byName[ti.Name] = ti
	}
	var out []Mapping
	for _, ti := range in {
		if p, bid, part, ok := f.packedOf(ti.Name); ok {
			ms, err := p.mappings(ti, bid, part, byName)
			if err != nil {
				return nil, err
			}
			out = append(out, ms...)
		}
	}
	return out, nil
}

// packedRole finds the Packed entry holding GGUF tensor name: the entry,
// the role's index among its GGUF roles, the layer and the suffix.
func (f *Family) packedRole(name string) (p *Packed, k, bid int, suffix string, ok bool) {
	pat, bid, suffix := SplitName(name)
	for i := range f.Packed {
		for k, r := range f.Packed[i].GGUF {
			if r == pat && (suffix == ".weight" || (suffix == ".bias" && f.Packed[i].BiasSuffix != "")) {
				return &f.Packed[i], k, bid, suffix, true
			}
		}
	}
	return nil, 0, 0, "", false
}

// unpacker gathers the GGUF tensors of Packed entries (GGUF → HF) until
// every role of one has come, then maps them to the Hugging Face tensors.
type unpacker map[string][]tensor.Info // by HF name + suffix: the roles' tensors, in role order

// add records ti, role k of p at layer bid; once p's roles are all there it
// returns the HF mappings: the block weight's values and scales (OCP
// parts) or the bias, the roles' rows alternating again.
func (u unpacker) add(p *Packed, k, bid int, suffix string, ti tensor.Info) ([]Mapping, error) {
	hf := strings.Replace(p.HF, "{bid}", strconv.Itoa(bid), 1)
	key := hf + suffix
	if u[key] == nil {
		u[key] = make([]tensor.Info, len(p.GGUF))
	}
	u[key][k] = ti
	var names []string
	for _, t := range u[key] {
		if t.Name == "" {
			return nil, nil
		}
		if !t.Shape.Equal(u[key][0].Shape) || len(t.Shape) < 2 {
			return nil, fmt.Errorf("arch: tensors %q %v and %q %v do not alternate into %q", u[key][0].Name, u[key][0].Shape, t.Name, t.Shape, hf)
		}
		names = append(names, t.Name)
	}
	delete(u, key)
	sh := u0(ti.Shape, len(names))
	if suffix == ".bias" {
		return []Mapping{{Name: hf + p.BiasSuffix, Source: names[0], Stack: names, Interleaved: true, Shape: sh}}, nil
	}
	if p.Blocks == 0 {
		return nil, fmt.Errorf("arch: %q: a packed weight without a block type", hf)
	}
	bs := int64(p.Blocks.BlockSize())
	if len(sh) != 3 || sh[2]%bs != 0 {
		return nil, fmt.Errorf("arch: tensor %q has shape %v: not rows of %v blocks", ti.Name, ti.Shape, p.Blocks)
	}
	g := sh[2] / bs
	return []Mapping{
		{Name: hf + BlocksSuffix, Source: names[0], Stack: names, Interleaved: true, Blocks: p.Blocks, OCP: BlocksSuffix,
			Shape: tensor.Shape{sh[0], sh[1], g, bs / 2}},
		{Name: hf + ScalesSuffix, Source: names[0], Stack: names, Interleaved: true, Blocks: p.Blocks, OCP: ScalesSuffix,
			Shape: tensor.Shape{sh[0], sh[1], g}},
	}, nil
}

// u0 is shape with axis 1 n times as long.
func u0(shape tensor.Shape, n int) tensor.Shape {
	out := shape.Clone()
	out[1] *= int64(n)
	return out
}

// complete fails on a packed tensor with roles missing.
func (u unpacker) complete(family string) error {
	for key, ts := range u {
		for k, t := range ts {
			if t.Name == "" {
				return fmt.Errorf("arch: %s: %q lacks its part %d", family, key, k)
			}
		}
	}
	return nil
}
