package checkpoint

import (
	"fmt"

	"github.com/tfconv/tfconv/arch"
)

// MappedTensor is the tensor mapping m (one of arch.Family.ToHF's or
// ToGGUF's) reads from c, before m.Transform: its Source, or the tensors of
// m.Stack stacked along a new outermost dimension (joined along their
// existing one when m.Join: a RowSplit's roles put back together), one
// part of a stacked tensor (m.Parts), a packed weight's blocks or rows
// (PackedTensor), padded with zero rows (m.PadRows). Convert writes it; diff
// compares it, so that the two read a mapping alike.
func MappedTensor(c *Checkpoint, m arch.Mapping) (*Tensor, error) {
	t, ok := c.Tensor(m.Source)
	if !ok {
		return nil, fmt.Errorf("checkpoint: %s: missing tensor %q (needed for %q)", c.Path, m.Source, m.Name)
	}
	var err error
	switch {
	case m.Copy:
	case m.Blocks != 0 || m.Interleaved:
		t, err = PackedTensor(c, m)
	case len(m.Stack) > 0:
		parts := make([]*Tensor, len(m.Stack))
		for i, name := range m.Stack {
			if parts[i], ok = c.Tensor(name); !ok {
				return nil, fmt.Errorf("checkpoint: %s: missing tensor %q (needed for %q)", c.Path, name, m.Name)
			}
		}
		join := Stacked
		if m.Join {
			join = Concat
		}
		t, err = join(m.Name, parts)
	case m.Parts > 0:
		t, err = t.Part(m.Part, m.Parts)
	}
	if err == nil && m.PadRows > 0 {
		t, err = PaddedRows(t, t.Shape[0]+m.PadRows)
	}
	return t, err
}
