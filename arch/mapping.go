package arch

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/tfconv/tfconv/tensor"
)

// Mapping is one output tensor and how it is made from one input tensor.
type Mapping struct {
	Name   string       // output name
	Source string       // input tensor name
	Shape  tensor.Shape // output shape, row-major
	// Transform rearranges the elements (dst and src have the same
	// length; src is laid out in the input's shape). nil: copied as is.
	Transform func(dst, src []float32)
	// Copy marks an output that duplicates an input already used by
	// another Mapping (GPT-2's output.weight is a copy of the embedding).
	Copy bool
	// Stack, when set, are the inputs stacked along a new outermost
	// dimension into this output, in order (Source is the first).
	Stack []string
	// Parts > 0: the output is part Part of Parts of Source, cut along its
	// outermost dimension (the inverse of Stack), or, when Interleaved,
	// the rows r ≡ Part (mod Parts) of axis 1 (Packed's alternating
	// roles).
	Part, Parts int
	// Half, 1 or 2, marks an output that is that half of Source along its
	// last dimension (Tensor.Half): Transform's dst is half as long as its
	// src, and two Mappings read Source.
	Half int
	// PadRows > 0: the output is Source with that many zero rows appended
	// along its outermost dimension (Tensor.PadTo).
	PadRows     int64
	Interleaved bool
	// Transposed: the alternating rows are those of Source's transpose
	// (its last two axes swapped; a dense Packed weight).
	Transposed bool
	// Blocks, when set, is the block type Source already holds (a Packed
	// weight): Source is its packed values and Scales its scales, and the
	// output is that type, the blocks copied, never dequantized.
	Blocks tensor.DType
	Scales string
	// OCP, GGUF → HF: the output is this part (BlocksSuffix: the values,
	// ScalesSuffix: the scales) of the Blocks-type blocks of Stack's
	// tensors, their rows alternating along axis 1 (Interleaved), in the
	// OCP layout a Packed weight has.
	OCP string
}

// Dropped is an input tensor left out of the output on purpose.
type Dropped struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
	// TiedTo names the tensor this one is a copy of (a tied head written
	// twice), when that is why it is dropped.
	TiedTo string `json:"tied_to,omitempty"`
	// Warn: a part of the model left out (Drop.Warn), said in a warning.
	Warn bool `json:"-"`
}

// DropWarnings are the warnings for the dropped tensors that are a part of
// the model left out (Drop.Warn): one per reason, with the count and the
// first tensor's name.
func DropWarnings(dropped []Dropped) []string {
	var reasons []string
	count, first := map[string]int{}, map[string]string{}
	for _, d := range dropped {
		if !d.Warn {
			continue
		}
		if count[d.Reason] == 0 {
			reasons, first[d.Reason] = append(reasons, d.Reason), d.Name
		}
		count[d.Reason]++
	}
	out := make([]string, len(reasons))
	for i, r := range reasons {
		out[i] = fmt.Sprintf("%d tensors left out (%s, …): %s", count[r], first[r], r)
	}
	return out
}

// ToGGUF maps the Hugging Face tensors in to GGUF tensors for config c: the
// output tensors in write order (each naming the HF tensor it is made
// from, with the layout change of its role) and the HF tensors dropped on
// purpose, with the reason. A tensor the family does not know is an error
// naming it, and so is a required tensor missing. The generated tensors
// (Generated) are not among the outputs: their values are the caller's to
// make.
func (f *Family) ToGGUF(c Config, in []tensor.Info) ([]Mapping, []Dropped, error) {
	qh, kh, err := f.HeadCounts(c)
	if err != nil {
		return nil, nil, err
	}
	out, dropped, err := f.mapTensors(in, true, qh, kh, f.Experts(c), nil)
	if err != nil {
		return nil, nil, err
	}
	have := map[string]bool{}
	for i, m := range out {
		have[m.Name] = true
		if t, ok := f.FromHF(m.Source); ok && t.Tensor.PadTo != "" && len(m.Shape) > 0 {
			if rows, ok := c.Int(t.Tensor.PadTo); ok && rows > m.Shape[0] {
				out[i].PadRows = rows - m.Shape[0]
				out[i].Shape[0] = rows
			}
		}
		if t, ok := f.FromHF(m.Source); ok && t.Tensor.Reshape != ReshapeNone {
			if out[i].Shape, err = t.Tensor.Reshape.gguf(m.Source, m.Shape, SSMGroups(c)); err != nil {
				return nil, nil, err
			}
		}
	}
	for _, n := range f.Required(int(f.Layers(c)), func(n string) bool { return have[n] }) {
		if !have[n] {
			return nil, nil, fmt.Errorf("arch: %s: missing tensor %q", f.Name, n)
		}
	}
	return out, dropped, nil
}

// ToHF is the inverse of ToGGUF for a GGUF of metadata md. The copies
// (Copies) and generated tensors are dropped with their reasons; whether a
// copy is really one, and what a generated tensor says in config.json,
// takes their data, which is the caller's to read.
func (f *Family) ToHF(md tensor.Metadata, in []tensor.Info) ([]Mapping, []Dropped, error) {
	nHead, err := mdInt(md, f.Name+".attention.head_count")
	if err != nil {
		return nil, nil, err
	}
	nKV, _ := mdInt(md, f.Name+".attention.head_count_kv")
	if v, ok := md.Get(f.Name + ".attention.head_count_kv"); ok {
		if a, ok := v.Array(); ok {
			// One entry per layer (Granite 4.0-H: 0 in its Mamba-2
			// layers): the attention layers' count.
			for i := 0; i < a.Len(); i++ {
				n, _ := a.Index(i).Int()
				nKV = max(nKV, n)
			}
		}
	}
	if nKV <= 0 {
		nKV = nHead // LlamaModel.permute's K head count
	}
	experts, _ := mdInt(md, f.Name+".expert_count")
	out, dropped, err := f.mapTensors(in, false, nHead, nKV, experts, nil)
	if err != nil {
		return nil, nil, err
	}
	for i, m := range out {
		if t, ok := f.FromGGUF(m.Source); ok && t.Tensor.Reshape != ReshapeNone && len(m.Stack) == 0 {
			n, err := m.Shape.NumElements()
			if err != nil {
				return nil, nil, fmt.Errorf("arch: tensor %q: %w", m.Source, err)
			}
			out[i].Shape = tensor.Shape{n}
		}
	}
	return out, dropped, nil
}

// gguf is the GGUF shape of the 1-D Hugging Face tensor name of shape
// shape, for a model of groups state-space groups.
func (r Reshape) gguf(name string, shape tensor.Shape, groups int64) (tensor.Shape, error) {
	if len(shape) != 1 {
		return nil, fmt.Errorf("arch: tensor %q has shape %v: want one dimension", name, shape)
	}
	switch r {
	case ReshapeColumn:
		return tensor.Shape{shape[0], 1}, nil
	case ReshapeGroups:
		if groups <= 0 || shape[0]%groups != 0 {
			return nil, fmt.Errorf("arch: tensor %q of %d elements does not split into %d groups", name, shape[0], groups)
		}
		return tensor.Shape{groups, shape[0] / groups}, nil
	}
	return shape.Clone(), nil
}

// SSMGroups is the number of groups a Mamba-2 mixer of config c shares B
// and C within (and normalises by): n_groups, as the families' configs
// name it (Granite 4.0 and Falcon-H1 prefix it with mamba_); 1 when none
// is stated, as the converter takes it.
func SSMGroups(c Config) int64 {
	if g, ok := c.Int("n_groups", "mamba_n_groups", "num_groups", "mamba_num_groups"); ok {
		return g
	}
	return 1
}

// mdInt reads an integer GGUF KV.
func mdInt(md tensor.Metadata, key string) (int64, error) {
	v, ok := md.Get(key)
	if !ok {
		return 0, fmt.Errorf("arch: GGUF metadata has no %s", key)
	}
	i, ok := v.Int()
	if !ok {
		return 0, fmt.Errorf("arch: GGUF metadata %s is %v, not an integer", key, v.Kind())
	}
	return i, nil
}

// mapTensors maps in through f's schema in one direction, with the head
// counts qh, kh and the expert count the layouts and stacks split by; has
// tells the checkpoint's tensor names (nil: those of in).
func (f *Family) mapTensors(in []tensor.Info, toGGUF bool, qh, kh, experts int64, has func(string) bool) ([]Mapping, []Dropped, error) {
	var out []Mapping
	var dropped []Dropped
	aliased := map[string]string{} // GGUF name → the HF tensor converted to it
	stacks := stacker{}
	joins := map[string]*[2]tensor.Info{} // HF name → its GGUF halves met so far
	var renames map[string]string
	if !toGGUF && f.HFRename != nil {
		names := make(map[string]bool, len(in))
		for _, t := range in {
			names[t.Name] = true
		}
		renames = f.HFRename(Config{}, func(n string) bool { return names[n] })
	}
	byName := make(map[string]tensor.Info, len(in))
	for _, ti := range in {
		byName[ti.Name] = ti
	}
	if has == nil {
		has = func(n string) bool { _, ok := byName[n]; return ok }
	}
	unpack := unpacker{}
	var blocks []Mapping // written first, as the converter's generate_extra_tensors writes them
	for _, ti := range in {
		if toGGUF {
			if p, bid, part, ok := f.packedOf(ti.Name); ok {
				ms, err := p.mappings(ti, bid, part, byName)
				if err != nil {
					return nil, nil, err
				}
				if part == BlocksSuffix {
					blocks = append(blocks, ms...)
				} else {
					out = append(out, ms...)
				}
				continue
			}
			if d, ok := f.dropOf(ti.Name); ok {
				dropped = append(dropped, Dropped{Name: ti.Name, Reason: d.Reason, Warn: d.Warn})
				continue
			}
		}
		if !toGGUF {
			if p, k, bid, suffix, ok := f.packedRole(ti.Name); ok {
				ms, err := unpack.add(p, k, bid, suffix, ti)
				if err != nil {
					return nil, nil, err
				}
				out = append(out, ms...)
				continue
			}
			if c, ok := f.CopyOf(ti.Name); ok {
				dropped = append(dropped, Dropped{Name: ti.Name, Reason: c.Reason, TiedTo: c.Of})
				continue
			}
			if g, ok := f.generated(ti.Name); ok {
				// The caller states it in config.json (or fails).
				dropped = append(dropped, Dropped{Name: ti.Name, Reason: g.Reason})
				continue
			}
		}
		var m Match
		var ok bool
		if toGGUF {
			m, ok = f.FromHFIn(ti.Name, has)
		} else {
			m, ok = f.FromGGUF(ti.Name)
		}
		if !ok {
			return nil, nil, tensor.Unsupported("arch: %s: unexpected tensor %q: no mapping for it", f.Name, ti.Name)
		}
		if m.Tensor.Half != 0 {
			if toGGUF {
				ms, err := f.splitHalves(m, ti, qh, kh)
				if err != nil {
					return nil, nil, err
				}
				out = append(out, ms...)
				continue
			}
			mp, done, err := joinHalves(joins, m, ti, qh, kh)
			if err != nil {
				return nil, nil, err
			}
			if done {
				out = append(out, mp)
			}
			continue
		}
		if m.Tensor.Stack != 0 {
			n := stackCount(m.Tensor.Stack, qh, kh, experts)
			if n == 0 {
				// a stack no head or expert count sizes (AltUp's
				// projections): as many parts as the input holds
				n = f.partsIn(in, m, toGGUF, ti)
			}
			if toGGUF {
				if err := stacks.add(m, ti, n); err != nil {
					return nil, nil, err
				}
				if mp, done := stacks.take(m); done {
					out = append(out, mp)
				}
				continue
			}
			if len(ti.Shape) < 2 || ti.Shape[0] != n {
				return nil, nil, fmt.Errorf("arch: %s: tensor %q has shape %v: want %d stacked parts", f.Name, ti.Name, ti.Shape, n)
			}
			for x := 0; x < int(n); x++ {
				name := f.TensorPartName(m.Tensor.GGUF, m.Layer, x, m.Suffix)
				out = append(out, Mapping{Name: name, Source: ti.Name, Shape: ti.Shape[1:].Clone(), Part: x, Parts: int(n)})
			}
			continue
		}
		if toGGUF && m.Tensor.Aliases {
			if first, ok := aliased[m.Name(true)]; ok {
				dropped = append(dropped, Dropped{Name: ti.Name, Reason: "tied copy of " + first + ", which is converted"})
				continue
			}
			aliased[m.Name(true)] = ti.Name
		}
		tf, shape, err := m.Layout().Transform(ti.Name, ti.Shape, qh, kh, !toGGUF)
		if err != nil {
			return nil, nil, err
		}
		name := m.Name(toGGUF)
		if hf, ok := renames[m.Tensor.GGUF]; ok && !toGGUF {
			name = strings.Replace(hf, "{bid}", strconv.Itoa(m.Layer), 1) + m.Suffix
		}
		out = append(out, Mapping{Name: name, Source: ti.Name, Shape: shape, Transform: tf})
		if toGGUF {
			for _, c := range f.Copies {
				if c.Of == name && (c.UnlessHF == "" || !hasName(in, c.UnlessHF)) {
					out = append(out, Mapping{Name: c.GGUF, Source: ti.Name, Shape: shape.Clone(), Transform: tf, Copy: true})
				}
			}
		}
	}
	if err := stacks.complete(f.Name); err != nil {
		return nil, nil, err
	}
	for name, h := range joins {
		if h[0].Name == "" || h[1].Name == "" {
			return nil, nil, fmt.Errorf("arch: %s: %q lacks one of its two halves (has %q %q)", f.Name, name, h[0].Name, h[1].Name)
		}
	}
	if err := unpack.complete(f.Name); err != nil {
		return nil, nil, err
	}
	return append(blocks, out...), dropped, nil
}

// HFTensorToGGUF maps one Hugging Face tensor of the family alone: the
// GGUF tensors made from it (two for a role pair kept side by side,
// Tensor.Half), each with its transform, for a runtime that reads the
// Hugging Face form in the GGUF's (model's Llama 4 experts). Head
// permutations are not applied (no head counts are given). has tells the
// checkpoint's other tensor names (Tensor.With).
func (f *Family) HFTensorToGGUF(ti tensor.Info, has func(string) bool) ([]Mapping, error) {
	out, _, err := f.mapTensors([]tensor.Info{ti}, true, 0, 0, 0, has)
	return out, err
}

// halves returns the two roles (Half 1 and 2) that share t's HF pattern.
func (f *Family) halves(t *Tensor) ([2]*Tensor, error) {
	var out [2]*Tensor
	for i := range f.Tensors {
		u := &f.Tensors[i]
		if u.Half >= 1 && u.Half <= 2 && len(u.HF) > 0 && len(t.HF) > 0 && u.HF[0] == t.HF[0] && u.With == t.With {
			out[u.Half-1] = u
		}
	}
	if out[0] == nil || out[1] == nil {
		return out, fmt.Errorf("arch: %s: the roles of %q are not two halves", f.Name, t.HF[0])
	}
	return out, nil
}

// splitHalves maps HF tensor ti, two roles side by side along its last
// dimension, to the two GGUF tensors, first half first (as the converter
// writes them), each with its role's layout change.
func (f *Family) splitHalves(m Match, ti tensor.Info, qh, kh int64) ([]Mapping, error) {
	roles, err := f.halves(m.Tensor)
	if err != nil {
		return nil, err
	}
	axis := m.Tensor.halfAxis(len(ti.Shape))
	if len(ti.Shape) < 2 || ti.Shape[axis]%2 != 0 {
		return nil, fmt.Errorf("arch: tensor %q has shape %v: its dimension %d does not halve", ti.Name, ti.Shape, axis)
	}
	half := ti.Shape.Clone()
	half[axis] /= 2
	// block: the elements of one half's run along the axis, which
	// alternate with the other half's.
	block := int(half[axis])
	for _, d := range half[axis+1:] {
		block *= int(d)
	}
	out := make([]Mapping, 2)
	for h, role := range roles {
		rm := Match{Tensor: role, Layer: m.Layer, Index: -1, Suffix: m.Suffix}
		tf, shape, err := rm.Layout().Transform(ti.Name, half, qh, kh, false)
		if err != nil {
			return nil, err
		}
		cut := func(dst, src []float32) {
			for r := 0; r < len(dst)/block; r++ {
				copy(dst[r*block:(r+1)*block], src[(2*r+h)*block:(2*r+h+1)*block])
			}
		}
		tfh := cut
		if tf != nil {
			tfh = func(dst, src []float32) {
				tmp := make([]float32, len(dst))
				cut(tmp, src)
				tf(dst, tmp)
			}
		}
		out[h] = Mapping{Name: rm.Name(true), Source: ti.Name, Shape: shape, Transform: tfh, Half: h + 1}
	}
	return out, nil
}

// joinHalves gathers the two GGUF halves of one HF tensor (Tensor.Half);
// once both have come it returns the mapping that stacks them (first half
// first) and interleaves them back along the last dimension, each with
// its role's layout change undone.
func joinHalves(joins map[string]*[2]tensor.Info, m Match, ti tensor.Info, qh, kh int64) (Mapping, bool, error) {
	name := m.Name(false)
	h := joins[name]
	if h == nil {
		h = &[2]tensor.Info{}
		joins[name] = h
	}
	if m.Tensor.Half < 1 || m.Tensor.Half > 2 || h[m.Tensor.Half-1].Name != "" {
		return Mapping{}, false, fmt.Errorf("arch: tensor %q: a second half %d of %q", ti.Name, m.Tensor.Half, name)
	}
	h[m.Tensor.Half-1] = ti
	if h[0].Name == "" || h[1].Name == "" {
		return Mapping{}, false, nil
	}
	if !h[0].Shape.Equal(h[1].Shape) {
		return Mapping{}, false, fmt.Errorf("arch: tensors %q %v and %q %v are not halves of one tensor", h[0].Name, h[0].Shape, h[1].Name, h[1].Shape)
	}
	tf, half, err := m.Layout().Transform(ti.Name, h[0].Shape, qh, kh, true)
	if err != nil {
		return Mapping{}, false, err
	}
	axis := m.Tensor.halfAxis(len(half))
	if len(half) < 2 {
		return Mapping{}, false, fmt.Errorf("arch: tensor %q has shape %v: not half of a tensor", ti.Name, half)
	}
	w := int(half[axis])
	for _, d := range half[axis+1:] {
		w *= int(d)
	}
	shape := half.Clone()
	shape[axis] *= 2
	join := func(dst, src []float32) {
		n := len(src) / 2
		tmp := make([]float32, n)
		for j := 0; j < 2; j++ {
			part := src[j*n : (j+1)*n]
			if tf != nil {
				tf(tmp, part)
				part = tmp
			}
			for r := 0; r < n/w; r++ {
				copy(dst[(2*r+j)*w:(2*r+j+1)*w], part[r*w:(r+1)*w])
			}
		}
	}
	return Mapping{Name: name, Source: h[0].Name, Stack: []string{h[0].Name, h[1].Name}, Shape: shape, Transform: join}, true, nil
}

// stackCount is the number of parts of a stacked role; 0 when no head or
// expert count sizes it (partsIn).
func stackCount(d Dim, qh, kh, experts int64) int64 {
	switch d {
	case DimKVHeads:
		return kh
	case DimExperts:
		return experts
	case DimAltupExtra:
		return 0
	}
	return qh
}

// partsIn is the part count of m's stack as the input states it: HF's
// highest index + 1 among the tensors of m's role and layer, or the GGUF
// tensor's outermost dimension.
func (f *Family) partsIn(in []tensor.Info, m Match, toGGUF bool, ti tensor.Info) int64 {
	if !toGGUF {
		if len(ti.Shape) == 0 {
			return 0
		}
		return ti.Shape[0]
	}
	var n int64
	for _, t := range in {
		if o, ok := f.FromHF(t.Name); ok && o.Tensor == m.Tensor && o.Layer == m.Layer && o.Suffix == m.Suffix {
			n = max(n, int64(o.Index)+1)
		}
	}
	return n
}

// stacker gathers the HF parts of stacked roles (one tensor per head or
// expert) until all have come; the stacked GGUF tensor is written where
// its last part is met, as llama.cpp's converter writes it.
type stacker map[string]*stack // by GGUF name

type stack struct {
	names []string // HF names by index
	shape tensor.Shape
	done  bool // written
}

func (s stacker) add(m Match, ti tensor.Info, n int64) error {
	key := m.Name(true)
	if m.Index < 0 || int64(m.Index) >= n {
		return fmt.Errorf("arch: tensor %q: index %d out of %d parts of %q", ti.Name, m.Index, n, key)
	}
	if m.Layout() != LayoutSame {
		return fmt.Errorf("arch: tensor %q: a stacked role cannot change layout", ti.Name)
	}
	st := s[key]
	if st == nil {
		st = &stack{names: make([]string, n), shape: ti.Shape.Clone()}
		s[key] = st
	}
	if st.names[m.Index] != "" {
		return fmt.Errorf("arch: tensors %q and %q are both part %d of %q", st.names[m.Index], ti.Name, m.Index, key)
	}
	if !ti.Shape.Equal(st.shape) {
		return fmt.Errorf("arch: tensor %q has shape %v, the other parts of %q %v", ti.Name, ti.Shape, key, st.shape)
	}
	st.names[m.Index] = ti.Name
	return nil
}

// take returns the mapping of m's stack once every part has come.
func (s stacker) take(m Match) (Mapping, bool) {
	key := m.Name(true)
	st := s[key]
	for _, p := range st.names {
		if p == "" {
			return Mapping{}, false
		}
	}
	st.done = true
	shape := append(tensor.Shape{int64(len(st.names))}, st.shape...)
	return Mapping{Name: key, Source: st.names[0], Stack: st.names, Shape: shape}, true
}

// complete fails on a stack with parts missing.
func (s stacker) complete(family string) error {
	for key, st := range s {
		if st.done {
			continue
		}
		var missing []int
		for i, p := range st.names {
			if p == "" {
				missing = append(missing, i)
			}
		}
		return fmt.Errorf("arch: %s: %q lacks parts %v of %d", family, key, missing, len(st.names))
	}
	return nil
}

// CopyOf returns the Copy that writes GGUF tensor name, if it is one.
func (f *Family) CopyOf(name string) (Copy, bool) {
	for _, c := range f.Copies {
		if c.GGUF == name {
			return c, true
		}
	}
	return Copy{}, false
}

func (f *Family) generated(name string) (Generated, bool) {
	for _, g := range f.Generated {
		if g.GGUF == name {
			return g, true
		}
	}
	return Generated{}, false
}

func hasName(in []tensor.Info, name string) bool {
	for _, t := range in {
		if t.Name == name {
			return true
		}
	}
	return false
}

// Apply applies the family's own tokenizer settings to the tokenizer's
// GGUF keys md: fixed special ids after the tokenizer's own, and
// add_space_prefix (last, as the converters write it) overridden, taken
// from tokenizer_config.json's add_prefix_space (cfgPrefix, nil when it
// states none; SpacePrefixFromConfig) or left out; the ids IDsFromConfig
// names in config.json (cfg) set over the tokenizer's own.
func (r VocabRules) Apply(md tensor.Metadata, cfgPrefix *bool, cfg Config) (tensor.Metadata, error) {
	const keySpace = "tokenizer.ggml.add_space_prefix"
	space, hasSpace := md.Get(keySpace)
	md, err := r.specialTokens(md)
	if err != nil {
		return nil, err
	}
	out := make(tensor.Metadata, 0, len(md)+len(r.SpecialIDs)+1)
	for _, kv := range md {
		if kv.Key != keySpace {
			out = append(out, kv)
		}
	}
	for _, s := range r.SpecialIDs {
		out.Set("tokenizer.ggml."+s.Kind+"_token_id", tensor.Uint32(s.ID))
	}
	for _, s := range r.IDsFromConfig {
		if id, ok := cfg.Int(s.Key); ok && id >= 0 && id <= math.MaxUint32 {
			out.Set("tokenizer.ggml."+s.Kind+"_token_id", tensor.Uint32(uint32(id)))
		}
	}
	switch {
	case r.NoAddSpacePrefix:
	case r.AddSpacePrefix != nil:
		out = append(out, tensor.KV{Key: keySpace, Value: tensor.Bool(*r.AddSpacePrefix)})
	case r.SpacePrefixFromConfig && cfgPrefix != nil:
		out = append(out, tensor.KV{Key: keySpace, Value: tensor.Bool(*cfgPrefix)})
	case hasSpace:
		out = append(out, tensor.KV{Key: keySpace, Value: space})
	}
	return out, nil
}

// specialTokens sets r.SpecialTokens' kinds the tokenizer's keys md lack
// to the id of their text in tokenizer.ggml.tokens, after the last special
// id md states (where the converter's SpecialVocab adds them).
func (r VocabRules) specialTokens(md tensor.Metadata) (tensor.Metadata, error) {
	if len(r.SpecialTokens) == 0 {
		return md, nil
	}
	v, _ := md.Get("tokenizer.ggml.tokens")
	toks, _ := v.Array()
	var add []tensor.KV
	for _, s := range r.SpecialTokens {
		key := "tokenizer.ggml." + s.Kind + "_token_id"
		if _, ok := md.Get(key); ok || hasKey(add, key) {
			continue
		}
		id := -1
		for i := 0; i < toks.Len(); i++ {
			if t, _ := toks.Index(i).Str(); t == s.Text {
				id = i
				break
			}
		}
		if id < 0 {
			return nil, errUnsupported("tokenizer: no token %q, which the converter reads as the %s token", s.Text, s.Kind)
		}
		add = append(add, tensor.KV{Key: key, Value: tensor.Uint32(uint32(id))})
	}
	at := 0
	for i, kv := range md {
		if strings.HasPrefix(kv.Key, "tokenizer.ggml.") && strings.HasSuffix(kv.Key, "_token_id") {
			at = i + 1
		}
	}
	if at == 0 {
		at = len(md)
	}
	out := make(tensor.Metadata, 0, len(md)+len(add))
	out = append(out, md[:at]...)
	out = append(out, add...)
	return append(out, md[at:]...), nil
}

func hasKey(kvs []tensor.KV, key string) bool {
	for _, kv := range kvs {
		if kv.Key == key {
			return true
		}
	}
	return false
}
