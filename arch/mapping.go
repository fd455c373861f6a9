package arch

import (
	"fmt"
	"math"
	"slices"
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
	// Cut > 0 marks an output that is part Cut of Source (a Tensor.Split's
	// part along an axis, or a RowSplit's rows): Transform picks it, dst
	// shorter than src, and every part's Mapping reads Source, the one
	// with Cut 1 first.
	Cut int
	// PadRows > 0: the output is Source with that many zero rows appended
	// along its outermost dimension (Tensor.PadTo).
	PadRows     int64
	Interleaved bool
	// Join: Stack's tensors are concatenated along their outermost
	// dimension (which may differ), not stacked (a RowSplit's roles
	// joined back).
	Join bool
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
	var orig map[string]string // renamed → the checkpoint's name
	if f.MTPNames != nil {
		in, orig = renamed(in, func(n string) string { return f.MTPNames(n, int(f.Layers(c)), false) })
	}
	out, dropped, err := f.mapTensorsOf(c, in, true, qh, kh, f.Experts(c), nil)
	if err == nil && orig != nil {
		back := func(n string) string {
			if o, ok := orig[n]; ok {
				return o
			}
			return n
		}
		for i := range out {
			out[i].Source, out[i].Scales = back(out[i].Source), back(out[i].Scales)
			for j := range out[i].Stack {
				out[i].Stack[j] = back(out[i].Stack[j])
			}
		}
		for i := range dropped {
			dropped[i].Name = back(dropped[i].Name)
		}
	}
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
		if err := f.scale(c, &out[i]); err != nil {
			return nil, nil, err
		}
		if t, ok := f.FromHF(m.Source); ok && t.Tensor.Blocks != "" {
			idx, _, err := c.Ints(t.Tensor.Blocks)
			if err != nil {
				return nil, nil, err
			}
			if t.Layer < 0 || t.Layer >= len(idx) || idx[t.Layer] < 0 || idx[t.Layer] >= f.Layers(c) {
				return nil, nil, errUnsupported("config.json: %s %v does not number tensor %q's block", t.Tensor.Blocks, idx, m.Source)
			}
			t.Layer = int(idx[t.Layer])
			out[i].Name = t.Name(true)
		}
	}
	// A config the pattern refuses is the params' to refuse (LFM2's
	// layer_types); without a pattern every role is required.
	pattern, _ := f.LayerPattern(c)
	for _, n := range f.Required(int(f.Layers(c)), pattern, func(n string) bool { return have[n] }) {
		if !have[n] {
			return nil, nil, fmt.Errorf("arch: %s: missing tensor %q", f.Name, n)
		}
	}
	return out, dropped, nil
}

// scale makes m multiply its output's rows as its role's Tensor.Scales
// say for config c.
func (f *Family) scale(c Config, m *Mapping) error {
	if m.Cut != 0 || len(m.Stack) > 0 || m.Parts > 0 {
		return nil
	}
	mul, err := f.RowScaling(c, m.Source, m.Shape)
	if err != nil || mul == nil {
		return err
	}
	prev := m.Transform
	m.Transform = func(dst, src []float32) {
		if prev != nil {
			prev(dst, src)
		} else {
			copy(dst, src)
		}
		mul(dst)
	}
	return nil
}

// RowScaling is the multiplication of Hugging Face weight name's rows that
// the converter applies for config c (its role's Tensor.Scales: Falcon-H1's
// μP multipliers), over the weight's elements of the given shape (rows
// outermost), in place; nil when it applies none. Convert folds it into the
// GGUF weight; diff applies it to a Hugging Face checkpoint, whose GGUF form
// and GGUF → HF output hold the products.
func (f *Family) RowScaling(c Config, name string, shape tensor.Shape) (func(x []float32), error) {
	t, ok := f.FromHF(name)
	if !ok || t.Tensor.Scales == nil || len(shape) == 0 {
		return nil, nil
	}
	scales, err := t.Tensor.Scales(c)
	if err != nil {
		return nil, fmt.Errorf("%s: tensor %q: %w", f.Name, name, err)
	}
	rows := shape[0]
	n, err := shape.NumElements()
	if err != nil {
		return nil, fmt.Errorf("arch: %s: tensor %q: %w", f.Name, name, err)
	}
	cols := n / max(rows, 1)
	for _, s := range scales {
		if to := s.To; s.From < 0 || s.From > rows || to < 0 || to > rows || to != 0 && to < s.From {
			return nil, fmt.Errorf("arch: %s: tensor %q: rows %d to %d of %d to scale", f.Name, name, s.From, s.To, rows)
		}
	}
	return func(x []float32) {
		for _, s := range scales {
			to := s.To
			if to == 0 {
				to = rows
			}
			for j := s.From * cols; j < to*cols; j++ {
				x[j] *= s.Factor
			}
		}
	}, nil
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
	if hs, err := mdInt(md, f.Name+".wkv.head_size"); err == nil && nHead == 0 && hs > 0 {
		// RWKV's heads (head_count 0): the ones its r_k is cut by
		// (LayoutFlatten)
		if d, err := mdInt(md, f.Name+".embedding_length"); err == nil && d%hs == 0 {
			nHead = d / hs
		}
	}
	nKV, _ := mdInt(md, f.Name+".attention.head_count_kv")
	if v, ok := md.Get(f.Name + ".attention.head_count_kv"); ok {
		// A per-layer array (Nemotron-H: 0 in the layers without
		// attention): the attention layers' count.
		if a, ok := v.Array(); ok {
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
	var c Config
	if len(f.Splits) > 0 || f.MTPNames != nil {
		if c, err = f.HFConfig(md); err != nil {
			return nil, nil, err
		}
	}
	out, dropped, err := f.mapTensorsOf(c, in, false, nHead, nKV, experts, nil)
	if err != nil {
		return nil, nil, err
	}
	for i, m := range out {
		if t, ok := f.FromGGUF(m.Source); ok && t.Tensor.Reshape != ReshapeNone && len(m.Stack) == 0 &&
			(t.Tensor.Reshape != ReshapeBiasColumn || strings.HasSuffix(m.Source, ".bias")) {
			n, err := m.Shape.NumElements()
			if err != nil {
				return nil, nil, fmt.Errorf("arch: tensor %q: %w", m.Source, err)
			}
			out[i].Shape = tensor.Shape{n}
		}
	}
	if f.MTPNames != nil {
		n := int(f.Layers(c))
		for i := range out {
			out[i].Name = f.MTPNames(out[i].Name, n, true)
		}
	}
	return out, dropped, nil
}

// renamed is in with each tensor named by name(its name), and the
// original of each name changed (the mappings made of them name the
// renamed sources, which ToGGUF puts back).
func renamed(in []tensor.Info, name func(string) string) ([]tensor.Info, map[string]string) {
	out := make([]tensor.Info, len(in))
	orig := map[string]string{}
	for i, t := range in {
		out[i] = t
		if out[i].Name = name(t.Name); out[i].Name != t.Name {
			orig[out[i].Name] = t.Name
		}
	}
	return out, orig
}

// gguf is the GGUF shape of the 1-D Hugging Face tensor name of shape
// shape, for a model of groups state-space groups.
func (r Reshape) gguf(name string, shape tensor.Shape, groups int64) (tensor.Shape, error) {
	if r == ReshapeBiasColumn && !strings.HasSuffix(name, ".bias") {
		return shape.Clone(), nil
	}
	if len(shape) != 1 {
		return nil, fmt.Errorf("arch: tensor %q has shape %v: want one dimension", name, shape)
	}
	switch r {
	case ReshapeColumn, ReshapeBiasColumn:
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
// counts qh, kh and the expert count the layouts and stacks split by.
func (f *Family) mapTensors(in []tensor.Info, toGGUF bool, qh, kh, experts int64) ([]Mapping, []Dropped, error) {
	return f.mapTensorsOf(nil, in, toGGUF, qh, kh, experts, nil)
}

// mapTensorsOf is mapTensors for config c, which the RowSplits and
// Tensor.Split's widths read (nil: none is at hand); has tells the
// checkpoint's tensor names (Tensor.With; nil: those of in).
func (f *Family) mapTensorsOf(c Config, in []tensor.Info, toGGUF bool, qh, kh, experts int64, has func(string) bool) ([]Mapping, []Dropped, error) {
	var out []Mapping
	var dropped []Dropped
	aliased := map[string]string{} // GGUF name → the HF tensor converted to it
	stacks := stacker{}
	joins := map[string][]tensor.Info{} // HF name → its GGUF parts met so far (Tensor.Split)
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
	if has == nil {
		has = func(n string) bool { _, ok := byName[n]; return ok }
	}
	layers := -1 // the decoder's (Drop.PastLayers), when the config says
	if n, ok := c.Int("num_hidden_layers"); ok && n >= 0 && n < 1<<16 {
		layers = int(n)
	}
	unpack := unpacker{}
	join := joiner{}
	var blocks []Mapping // written first, as the converter's generate_extra_tensors writes them
	for _, ti := range in {
		if s, bid, ok := f.splitOf(ti.Name); ok && toGGUF {
			ms, err := s.mappings(c, ti, bid)
			if err != nil {
				return nil, nil, err
			}
			out = append(out, ms...)
			continue
		}
		if s, k, bid, ok := f.splitRole(ti.Name); ok && !toGGUF {
			ms, err := join.add(c, s, k, bid, ti)
			if err != nil {
				return nil, nil, err
			}
			out = append(out, ms...)
			continue
		}
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
			if d, ok := f.dropOf(ti.Name, layers); ok {
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
		if m.Tensor.Split != nil {
			if toGGUF {
				ms, err := f.splitParts(m, ti, qh, kh, c)
				if err != nil {
					return nil, nil, err
				}
				out = append(out, ms...)
				continue
			}
			mp, done, err := f.joinParts(joins, m, ti, qh, kh)
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
			if len(m.Tensor.Parts) > 0 {
				n = int64(len(m.Tensor.Parts))
			}
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
		mp := Mapping{Name: name, Source: ti.Name, Shape: shape, Transform: tf}
		if !toGGUF {
			out = append(out, mp)
			continue
		}
		var before, after []Mapping
		for _, c := range f.Copies {
			if c.Of == name && (c.UnlessHF == "" || !hasName(in, c.UnlessHF)) {
				cp := Mapping{Name: c.GGUF, Source: ti.Name, Shape: shape.Clone(), Transform: tf, Copy: true}
				if c.Before {
					before = append(before, cp)
				} else {
					after = append(after, cp)
				}
			}
		}
		out = append(append(append(out, before...), mp), after...)
	}
	if err := stacks.complete(f.Name); err != nil {
		return nil, nil, err
	}
	for name, parts := range joins {
		for i, p := range parts {
			if p.Name == "" {
				return nil, nil, fmt.Errorf("arch: %s: %q lacks its part %d (Tensor.Split)", f.Name, name, i+1)
			}
		}
	}
	if err := unpack.complete(f.Name); err != nil {
		return nil, nil, err
	}
	if err := join.complete(f.Name); err != nil {
		return nil, nil, err
	}
	return append(blocks, out...), dropped, nil
}

// HFTensorToGGUF maps one Hugging Face tensor of the family alone: the
// GGUF tensors made from it (one per part of a Tensor.Split), each with
// its transform, for a runtime that reads the Hugging Face form in the
// GGUF's (model's Llama 4 experts). Head permutations are not applied (no
// head counts are given). has tells the checkpoint's other tensor names
// (Tensor.With).
func (f *Family) HFTensorToGGUF(ti tensor.Info, has func(string) bool) ([]Mapping, error) {
	out, _, err := f.mapTensorsOf(nil, []tensor.Info{ti}, true, 0, 0, 0, has)
	return out, err
}

// splitRoles returns the roles that share t's HF tensor (Tensor.Split),
// in part order.
func (f *Family) splitRoles(t *Tensor) ([]*Tensor, error) {
	var out []*Tensor
	for i := range f.Tensors {
		u := &f.Tensors[i]
		if u.Split != nil && len(u.HF) > 0 && len(t.HF) > 0 && u.HF[0] == t.HF[0] && u.With == t.With {
			for len(out) < u.Split.Part {
				out = append(out, nil)
			}
			if u.Split.Part < 1 || out[u.Split.Part-1] != nil {
				return nil, fmt.Errorf("arch: %s: %q: part %d stated twice or out of range", f.Name, t.HF[0], u.Split.Part)
			}
			out[u.Split.Part-1] = u
		}
	}
	if len(out) < 2 || slices.Contains(out, nil) {
		return nil, fmt.Errorf("arch: %s: the roles of %q are not two or more numbered parts", f.Name, t.HF[0])
	}
	return out, nil
}

// joinedShape is the shape of the Hugging Face tensor the parts of t's
// Split make, from their Shapes sized by size.
func (f *Family) joinedShape(t *Tensor, size func(Dim) int64) tensor.Shape {
	roles, err := f.splitRoles(t)
	if err != nil {
		return nil
	}
	part := func(u *Tensor) tensor.Shape {
		s := make(tensor.Shape, len(u.Shape))
		for i, x := range u.Shape {
			s[i] = size(x)
		}
		return s
	}
	out := part(roles[0])
	if len(out) == 0 {
		return out
	}
	switch {
	case t.Split.Last:
		for _, u := range roles[1:] {
			out[len(out)-1] += part(u)[len(out)-1]
		}
	case t.Split.Rows && len(out) >= 2:
		for _, u := range roles[1:] {
			out[len(out)-2] += part(u)[len(out)-2]
		}
	case t.Split.Groups != 0 && len(out) >= 2:
		w := int64(0)
		for _, u := range roles {
			w += part(u)[1]
		}
		out = append(tensor.Shape{out[0] * w}, out[2:]...)
	default:
		for _, u := range roles[1:] {
			out[0] += part(u)[0]
		}
	}
	return out
}

// cutPlan is how a Split tensor's elements fall into its parts: runs
// repeats of every part in turn, part p spanning widths[p]·unit elements
// of a run.
type cutPlan struct {
	runs, unit int
	widths     []int
}

func (c cutPlan) offset(p int) int {
	o := 0
	for _, w := range c.widths[:p] {
		o += w
	}
	return o * c.unit
}

func (c cutPlan) run() int { return c.offset(len(c.widths)) }

// cut copies part p of src into dst.
func (c cutPlan) cut(dst, src []float32, p int) {
	w, off, run := c.widths[p]*c.unit, c.offset(p), c.run()
	for r := 0; r < c.runs; r++ {
		copy(dst[r*w:(r+1)*w], src[r*run+off:r*run+off+w])
	}
}

// paste copies part p from src into its place in dst.
func (c cutPlan) paste(dst, src []float32, p int) {
	w, off, run := c.widths[p]*c.unit, c.offset(p), c.run()
	for r := 0; r < c.runs; r++ {
		copy(dst[r*run+off:r*run+off+w], src[r*w:(r+1)*w])
	}
}

// elems is the element count of a shape read from a checked header.
func elems(s tensor.Shape) int64 {
	n := int64(1)
	for _, x := range s {
		n *= x
	}
	return n
}

// groupCount is the runs of a Split along the first axis.
func groupCount(d Dim, qh, kh int64) int64 {
	switch d {
	case DimHeads:
		return qh
	case DimKVHeads:
		return kh
	}
	return 1
}

// splitParts maps HF tensor ti, several roles in one (Tensor.Split), to
// its GGUF tensors in part order (as the converter writes them), each with
// its role's layout change. c sizes the parts whose Split names a Width.
func (f *Family) splitParts(m Match, ti tensor.Info, qh, kh int64, c Config) ([]Mapping, error) {
	roles, err := f.splitRoles(m.Tensor)
	if err != nil {
		return nil, err
	}
	sp := m.Tensor.Split
	if sp.Axis > 0 {
		return axisParts(m, roles, ti, qh, kh)
	}
	axis := 0
	switch {
	case sp.Last:
		axis = len(ti.Shape) - 1
	case sp.Rows:
		axis = len(ti.Shape) - 2
	}
	// A bias cut along its only axis (Qwen2.5-VL's fused qkv bias) is
	// parts of rows too.
	if len(ti.Shape) < 2 && (len(ti.Shape) == 0 || sp.Last || sp.Rows || sp.Groups != 0) {
		return nil, fmt.Errorf("arch: tensor %q has shape %v: not a tensor of %d parts", ti.Name, ti.Shape, len(roles))
	}
	groups := groupCount(sp.Groups, qh, kh)
	if groups <= 0 || ti.Shape[axis]%groups != 0 {
		return nil, fmt.Errorf("arch: tensor %q has shape %v: its axis %d is not %d runs of its parts", ti.Name, ti.Shape, axis, groups)
	}
	run := ti.Shape[axis] / groups
	plan := cutPlan{widths: make([]int, len(roles))}
	rest := run
	for i, u := range roles {
		switch {
		case u.Split.Width != "":
			w, ok := c.Int(u.Split.Width)
			if !ok || w <= 0 || w > run {
				return nil, errUnsupported("config.json: %s %d does not size a part of %q %v", u.Split.Width, w, ti.Name, ti.Shape)
			}
			plan.widths[i] = int(w)
		case run%int64(len(roles)) != 0:
			return nil, fmt.Errorf("arch: tensor %q has shape %v: its axis %d does not divide into %d parts", ti.Name, ti.Shape, axis, len(roles))
		default:
			plan.widths[i] = int(run) / len(roles)
		}
		rest -= int64(plan.widths[i])
	}
	if rest != 0 {
		return nil, fmt.Errorf("arch: tensor %q has shape %v: its parts are %v wide, not %d", ti.Name, ti.Shape, plan.widths, run)
	}
	switch {
	case sp.Last:
		plan.runs, plan.unit = int(elems(ti.Shape[:axis])), 1
	case sp.Rows:
		plan.runs, plan.unit = int(elems(ti.Shape[:axis])), int(ti.Shape[axis+1])
	default:
		plan.runs, plan.unit = int(groups), int(elems(ti.Shape[1:]))
	}
	out := make([]Mapping, len(roles))
	for p, role := range roles {
		shape := ti.Shape.Clone()
		if sp.Groups != 0 && !sp.Last && !sp.Rows {
			shape = append(tensor.Shape{groups, int64(plan.widths[p])}, ti.Shape[1:]...)
		} else {
			shape[axis] = int64(plan.widths[p])
		}
		rm := Match{Tensor: role, Layer: m.Layer, Index: -1, Suffix: m.Suffix}
		tf, oshape, err := rm.Layout().Transform(ti.Name, shape, qh, kh, false)
		if err != nil {
			return nil, err
		}
		p := p
		cut := func(dst, src []float32) { plan.cut(dst, src, p) }
		tfp := cut
		if tf != nil {
			tfp = func(dst, src []float32) {
				tmp := make([]float32, len(dst))
				plan.cut(tmp, src, p)
				tf(dst, tmp)
			}
		}
		out[p] = Mapping{Name: rm.Name(true), Source: ti.Name, Shape: oshape, Transform: tfp, Cut: p + 1}
	}
	return out, nil
}

// joinParts gathers the GGUF parts of one HF tensor (Tensor.Split); once
// all have come it returns the mapping that stacks them (in part order)
// and puts each back in its place, its role's layout change undone.
func (f *Family) joinParts(joins map[string][]tensor.Info, m Match, ti tensor.Info, qh, kh int64) (Mapping, bool, error) {
	roles, err := f.splitRoles(m.Tensor)
	if err != nil {
		return Mapping{}, false, err
	}
	name := m.Name(false)
	parts := joins[name]
	if parts == nil {
		parts = make([]tensor.Info, len(roles))
		joins[name] = parts
	}
	p := m.Tensor.Split.Part - 1
	if parts[p].Name != "" {
		return Mapping{}, false, fmt.Errorf("arch: tensor %q: a second part %d of %q", ti.Name, p+1, name)
	}
	parts[p] = ti
	for _, x := range parts {
		if x.Name == "" {
			return Mapping{}, false, nil
		}
	}
	sp := m.Tensor.Split
	if sp.Axis > 0 {
		return joinAxisParts(m, roles, parts, name)
	}
	tfs := make([]func(dst, src []float32), len(roles))
	hfShapes := make([]tensor.Shape, len(roles))
	for i, role := range roles {
		rm := Match{Tensor: role, Layer: m.Layer, Index: -1, Suffix: m.Suffix}
		if tfs[i], hfShapes[i], err = rm.Layout().Transform(parts[i].Name, parts[i].Shape, qh, kh, true); err != nil {
			return Mapping{}, false, err
		}
	}
	// The parts agree on every axis but the cut one (and, with runs, on
	// the runs).
	first := hfShapes[0]
	axis := 0
	switch {
	case sp.Last:
		axis = len(first) - 1
	case sp.Rows:
		axis = len(first) - 2
	case sp.Groups != 0:
		axis = 1
	}
	plan := cutPlan{widths: make([]int, len(roles))}
	shape := first.Clone()
	shape[axis] = 0
	for i, s := range hfShapes {
		if len(s) != len(first) || len(s) <= axis {
			return Mapping{}, false, fmt.Errorf("arch: tensors %q %v and %q %v are not parts of one tensor", parts[0].Name, parts[0].Shape, parts[i].Name, parts[i].Shape)
		}
		for a := range s {
			if a != axis && s[a] != first[a] {
				return Mapping{}, false, fmt.Errorf("arch: tensors %q %v and %q %v are not parts of one tensor", parts[0].Name, parts[0].Shape, parts[i].Name, parts[i].Shape)
			}
		}
		plan.widths[i] = int(s[axis])
		shape[axis] += s[axis]
	}
	switch {
	case sp.Last:
		plan.runs, plan.unit = int(elems(first[:axis])), 1
	case sp.Rows:
		plan.runs, plan.unit = int(elems(first[:axis])), int(first[axis+1])
	case sp.Groups != 0:
		plan.runs, plan.unit = int(first[0]), int(elems(first[2:]))
		shape = append(tensor.Shape{first[0] * shape[1]}, shape[2:]...)
	default:
		plan.runs, plan.unit = 1, int(elems(first[1:]))
	}
	stack := make([]string, len(parts))
	sizes := make([]int, len(parts))
	for i, x := range parts {
		stack[i] = x.Name
		sizes[i] = int(elems(hfShapes[i]))
	}
	join := func(dst, src []float32) {
		off := 0
		for i, n := range sizes {
			part := src[off : off+n]
			if tfs[i] != nil {
				tmp := make([]float32, n)
				tfs[i](tmp, part)
				part = tmp
			}
			plan.paste(dst, part, i)
			off += n
		}
	}
	return Mapping{Name: name, Source: parts[0].Name, Stack: stack, Shape: shape, Transform: join}, true, nil
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

// For returns the rules for a checkpoint whose config.json is c: r, with
// SpacePrefixFromConfig set when c's class is one of
// SpacePrefixFromConfigFor.
func (r VocabRules) For(c Config) VocabRules {
	for _, cls := range configClasses(c) {
		for _, f := range r.SpacePrefixFromConfigFor {
			if cls == f {
				r.SpacePrefixFromConfig = true
			}
		}
	}
	return r
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
	if r.AddBOS != nil {
		out.Set("tokenizer.ggml.add_bos_token", tensor.Bool(*r.AddBOS))
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

// axisParts is splitParts for a Split with an Axis: part p is index p of
// that axis (runs: the elements before it; unit: the elements after it),
// its shape the tensor's without the axis.
func axisParts(m Match, roles []*Tensor, ti tensor.Info, qh, kh int64) ([]Mapping, error) {
	axis := m.Tensor.Split.Axis - 1
	if axis >= len(ti.Shape) && m.Suffix == ".bias" {
		// a bias has no such axis: it is the first part's, whole
		rm := Match{Tensor: roles[0], Layer: m.Layer, Index: -1, Suffix: m.Suffix}
		return []Mapping{{Name: rm.Name(true), Source: ti.Name, Shape: ti.Shape.Clone()}}, nil
	}
	if axis >= len(ti.Shape) || ti.Shape[axis] != int64(len(roles)) {
		return nil, fmt.Errorf("arch: tensor %q has shape %v: its axis %d does not hold its %d parts", ti.Name, ti.Shape, axis+1, len(roles))
	}
	plan := cutPlan{runs: int(elems(ti.Shape[:axis])), unit: int(elems(ti.Shape[axis+1:])), widths: make([]int, len(roles))}
	for i := range plan.widths {
		plan.widths[i] = 1
	}
	shape := append(ti.Shape[:axis:axis], ti.Shape[axis+1:]...)
	out := make([]Mapping, len(roles))
	for p, role := range roles {
		rm := Match{Tensor: role, Layer: m.Layer, Index: -1, Suffix: m.Suffix}
		tf, oshape, err := rm.Layout().Transform(ti.Name, shape.Clone(), qh, kh, false)
		if err != nil {
			return nil, err
		}
		if tf != nil {
			return nil, fmt.Errorf("arch: tensor %q: a part of an Axis split with a layout change", ti.Name)
		}
		p := p
		out[p] = Mapping{Name: rm.Name(true), Source: ti.Name, Shape: oshape, Transform: func(dst, src []float32) { plan.cut(dst, src, p) }, Cut: p + 1}
	}
	return out, nil
}

// joinAxisParts is joinParts for a Split with an Axis: the parts, of one
// shape, stacked back along it.
func joinAxisParts(m Match, roles []*Tensor, parts []tensor.Info, name string) (Mapping, bool, error) {
	axis := m.Tensor.Split.Axis - 1
	first := parts[0].Shape
	for _, x := range parts[1:] {
		if !x.Shape.Equal(first) {
			return Mapping{}, false, fmt.Errorf("arch: tensors %q %v and %q %v are not parts of one tensor", parts[0].Name, first, x.Name, x.Shape)
		}
	}
	if axis > len(first) {
		return Mapping{}, false, fmt.Errorf("arch: tensor %q has shape %v: no axis %d to stack its parts along", parts[0].Name, first, axis+1)
	}
	shape := append(append(first[:axis:axis], int64(len(roles))), first[axis:]...)
	plan := cutPlan{runs: int(elems(first[:axis])), unit: int(elems(first[axis:])), widths: make([]int, len(roles))}
	for i := range plan.widths {
		plan.widths[i] = 1
	}
	stack := make([]string, len(parts))
	for i, x := range parts {
		stack[i] = x.Name
	}
	n := int(elems(first))
	join := func(dst, src []float32) {
		for p := range parts {
			plan.paste(dst, src[p*n:(p+1)*n], p)
		}
	}
	return Mapping{Name: name, Source: stack[0], Stack: stack, Shape: shape, Transform: join}, true, nil
}
