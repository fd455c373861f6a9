package verify

import (
	"fmt"

	"github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/tensor"
)

// ConvertNames is the Canonicalizer tfconv diff uses: the canonical form is
// the Hugging Face one. A checkpoint with GGUF names (a GGUF file, or a
// native file converted from one) is mapped through its family's
// mapping (arch.Lookup(name).ToHF, what convert applies): HF names, HF
// shapes, and the element rearrangements the converter applies (LLaMA's
// Q/K row permutation undone, GPT-2's transposes). Checkpoints with HF names
// keep them, except the buffers the converter drops on purpose (which
// have no GGUF counterpart to compare with), with the multipliers the
// converter folds into the weights applied (arch.Family.RowScaling). Copies (a tied output weight
// written twice) are left out too: the tensor they copy is compared.
func ConvertNames(c *checkpoint.Checkpoint) ([]CanonicalTensor, error) {
	if c.Format != checkpoint.GGUF && c.Source != checkpoint.GGUF {
		return hfNames(c)
	}
	name, ok := c.Metadata.Str("general.architecture")
	if !ok {
		return nil, fmt.Errorf("verify: %s: GGUF metadata has no general.architecture", c.Path)
	}
	a, err := arch.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("verify: %s: %w", c.Path, err)
	}
	maps, dropped, err := a.ToHF(c.Metadata, weightInfos(c))
	if err != nil {
		return nil, fmt.Errorf("verify: %s: %w", c.Path, err)
	}
	out := make([]CanonicalTensor, 0, len(maps))
	for _, d := range dropped {
		if t, ok := c.Tensor(d.Name); ok && d.TiedTo != "" {
			out = append(out, CanonicalTensor{Name: d.Name, Tensor: t, Shape: t.Shape, TiedTo: d.TiedTo})
		}
	}
	for _, m := range maps {
		if m.Copy {
			continue
		}
		t, err := checkpoint.MappedTensor(c, m)
		if err != nil {
			return nil, fmt.Errorf("verify: the %s mapping: %w", name, err)
		}
		out = append(out, CanonicalTensor{Name: m.Name, Tensor: t, Shape: m.Shape, Transform: m.Transform})
	}
	return out, nil
}

// hfNames lists an HF-named checkpoint's tensors without those the
// converter drops on purpose; when the architecture has no GGUF form,
// every tensor is kept.
func hfNames(c *checkpoint.Checkpoint) ([]CanonicalTensor, error) {
	all, err := IdentityNames(c)
	if err != nil {
		return nil, err
	}
	cfg, err := c.Config()
	if err != nil || cfg == nil {
		return all, nil
	}
	mt, _ := cfg["model_type"].(string)
	a, err := arch.Lookup(mt)
	if err != nil {
		return all, nil
	}
	_, dropped, err := a.ToGGUF(arch.Config(cfg), weightInfos(c))
	if err != nil {
		return all, nil
	}
	drop := make(map[string]bool, len(dropped))
	for _, d := range dropped {
		drop[d.Name] = true
	}
	out := all[:0]
	for _, t := range all {
		if drop[t.Name] {
			continue
		}
		// The multipliers the converter folds into the weights (Falcon-H1's
		// μP ones) are in the canonical form, as in the GGUF and in its
		// GGUF → HF output.
		mul, err := a.RowScaling(arch.Config(cfg), t.Name, t.Shape)
		if err != nil {
			return nil, fmt.Errorf("verify: %s: %w", c.Path, err)
		}
		if mul != nil {
			t.Transform = func(dst, src []float32) {
				copy(dst, src)
				mul(dst)
			}
		}
		out = append(out, t)
	}
	return out, nil
}

// weightInfos is the Info of every weightTensors tensor.
func weightInfos(c *checkpoint.Checkpoint) []tensor.Info {
	ts := weightTensors(c)
	infos := make([]tensor.Info, len(ts))
	for i, t := range ts {
		infos[i] = t.Info
	}
	return infos
}

// archOf is the architecture of c under its GGUF name: general.architecture,
// or the one convert chooses for its config.json (arch.LookupConfig); ""
// when unknown.
func archOf(c *checkpoint.Checkpoint) string {
	if a, ok := c.Metadata.Str("general.architecture"); ok {
		return a
	}
	cfg, err := c.Config()
	if err != nil || cfg == nil {
		return ""
	}
	a, err := arch.LookupConfig(arch.Config(cfg))
	if err != nil {
		if mt, ok := cfg["model_type"].(string); ok {
			return mt
		}
		return ""
	}
	return a.Name
}
