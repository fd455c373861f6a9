package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"

	"github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
	"github.com/tfconv/tfconv/tokenizer"
)

// family converts an architecture stated as data in package arch: the
// names, layout changes and metadata all come from its arch.Family.
type family struct{ f *arch.Family }

func init() {
	for _, f := range arch.Families() {
		if f.NoGGUF == "" {
			register(family{f})
		}
	}
}

func (a family) Name() string         { return a.f.Name }
func (a family) ModelTypes() []string { return a.f.ModelTypes }

// heads returns the head counts the Q/K permutations use: K's is
// num_key_value_heads when it is set (LlamaModel.permute).
func heads(nHead, nKV int64) (q, k int64) {
	if nKV <= 0 {
		nKV = nHead
	}
	return nHead, nKV
}

// layoutTransform returns the transform of one tensor for a layout change
// (inverse: GGUF → HF), with the shape of the input.
func layoutTransform(l arch.Layout, name string, shape tensor.Shape, qh, kh int64, inverse bool) (func(dst, src []float32), tensor.Shape, error) {
	switch l {
	case arch.LayoutPermuteQ, arch.LayoutPermuteK:
		h := qh
		if l == arch.LayoutPermuteK {
			h = kh
		}
		if len(shape) < 1 || len(shape) > 2 {
			return nil, nil, fmt.Errorf("convert: tensor %q: shape %v: want 1 or 2 dimensions", name, shape)
		}
		rows, cols := shape[0], int64(1)
		if len(shape) == 2 {
			cols = shape[1]
		}
		if h <= 0 || rows%(2*h) != 0 {
			return nil, nil, fmt.Errorf("convert: tensor %q: %d rows do not split into %d heads of even size", name, rows, h)
		}
		return permuteRows(int(h), int(rows), int(cols), inverse), shape.Clone(), nil
	case arch.LayoutNormPlusOne:
		d := float32(1)
		if inverse {
			d = -1
		}
		return func(dst, src []float32) {
			for i, v := range src {
				dst[i] = v + d
			}
		}, shape.Clone(), nil
	case arch.LayoutQKVGroups:
		rows, cols := int64(0), int64(1)
		if len(shape) >= 1 {
			rows = shape[0]
		}
		if len(shape) == 2 {
			cols = shape[1]
		}
		if len(shape) < 1 || len(shape) > 2 || qh <= 0 || kh <= 0 || qh%kh != 0 || rows%(qh+2*kh) != 0 {
			return nil, nil, fmt.Errorf("convert: tensor %q: shape %v does not split into q, k, v of %d/%d heads", name, shape, qh, kh)
		}
		return regroupQKV(int(qh), int(kh), int(rows/(qh+2*kh)), int(cols), inverse), shape.Clone(), nil
	case arch.LayoutTranspose:
		if len(shape) != 2 {
			return nil, nil, fmt.Errorf("convert: tensor %q: shape %v: want a matrix", name, shape)
		}
		return transpose(int(shape[0]), int(shape[1])), tensor.Shape{shape[1], shape[0]}, nil
	}
	return nil, shape.Clone(), nil
}

// mapFamily maps in through f's schema in one direction.
func (a family) mapFamily(in []tensor.Info, toGGUF bool, qh, kh, experts int64) ([]Mapping, []Dropped, error) {
	var out []Mapping
	var dropped []Dropped
	aliased := map[string]string{} // GGUF name → the HF tensor converted to it
	stacks := stacker{}
	var renames map[string]string
	if !toGGUF {
		renames = a.hfRenames(arch.Config{}, in)
	}
	for _, ti := range in {
		if toGGUF {
			if r := a.f.DropReason(ti.Name); r != "" {
				dropped = append(dropped, Dropped{Name: ti.Name, Reason: r})
				continue
			}
		}
		if !toGGUF {
			if c, ok := a.copyByName(ti.Name); ok {
				dropped = append(dropped, Dropped{Name: ti.Name, Reason: c.Reason, TiedTo: c.Of})
				continue
			}
			if g, ok := a.generatedByName(ti.Name); ok {
				// configFromData states it in config.json (or fails).
				dropped = append(dropped, Dropped{Name: ti.Name, Reason: g.Reason})
				continue
			}
		}
		var m arch.Match
		var ok bool
		if toGGUF {
			m, ok = a.f.FromHF(ti.Name)
		} else {
			m, ok = a.f.FromGGUF(ti.Name)
		}
		if !ok {
			return nil, nil, tensor.Unsupported("convert: %s: unexpected tensor %q: no mapping for it", a.f.Name, ti.Name)
		}
		if m.Tensor.Stack != 0 {
			n := stackCount(m.Tensor.Stack, qh, kh, experts)
			if toGGUF {
				if err := stacks.add(m, ti, n); err != nil {
					return nil, nil, err
				}
				if mp, done := stacks.take(m, n); done {
					out = append(out, mp)
				}
				continue
			}
			if len(ti.Shape) < 2 || ti.Shape[0] != n {
				return nil, nil, fmt.Errorf("convert: %s: tensor %q has shape %v: want %d stacked parts", a.f.Name, ti.Name, ti.Shape, n)
			}
			for x := 0; x < int(n); x++ {
				name := a.f.TensorPartName(m.Tensor.GGUF, m.Layer, x, m.Suffix)
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
		tf, shape, err := layoutTransform(m.Layout(), ti.Name, ti.Shape, qh, kh, !toGGUF)
		if err != nil {
			return nil, nil, err
		}
		name := m.Name(toGGUF)
		if hf, ok := renames[m.Tensor.GGUF]; ok && !toGGUF {
			name = strings.Replace(hf, "{bid}", strconv.Itoa(m.Layer), 1) + m.Suffix
		}
		out = append(out, Mapping{Name: name, Source: ti.Name, Shape: shape, Transform: tf})
		if toGGUF {
			for _, c := range a.f.Copies {
				if c.Of == name && (c.UnlessHF == "" || !hasName(in, c.UnlessHF)) {
					out = append(out, Mapping{Name: c.GGUF, Source: ti.Name, Shape: shape.Clone(), Transform: tf, Copy: true})
				}
			}
		}
	}
	if err := stacks.complete(a.f.Name); err != nil {
		return nil, nil, err
	}
	return out, dropped, nil
}

// stackCount is the number of parts of a stacked role.
func stackCount(d arch.Dim, qh, kh, experts int64) int64 {
	switch d {
	case arch.DimKVHeads:
		return kh
	case arch.DimExperts:
		return experts
	}
	return qh
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

func (s stacker) add(m arch.Match, ti tensor.Info, n int64) error {
	key := m.Name(true)
	if m.Index < 0 || int64(m.Index) >= n {
		return fmt.Errorf("convert: tensor %q: index %d out of %d parts of %q", ti.Name, m.Index, n, key)
	}
	if m.Layout() != arch.LayoutSame {
		return fmt.Errorf("convert: tensor %q: a stacked role cannot change layout", ti.Name)
	}
	st := s[key]
	if st == nil {
		st = &stack{names: make([]string, n), shape: ti.Shape.Clone()}
		s[key] = st
	}
	if st.names[m.Index] != "" {
		return fmt.Errorf("convert: tensors %q and %q are both part %d of %q", st.names[m.Index], ti.Name, m.Index, key)
	}
	if !ti.Shape.Equal(st.shape) {
		return fmt.Errorf("convert: tensor %q has shape %v, the other parts of %q %v", ti.Name, ti.Shape, key, st.shape)
	}
	st.names[m.Index] = ti.Name
	return nil
}

// take returns the mapping of m's stack once every part has come.
func (s stacker) take(m arch.Match, n int64) (Mapping, bool) {
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
		return fmt.Errorf("convert: %s: %q lacks parts %v of %d", family, key, missing, len(st.names))
	}
	return nil
}

func (a family) ToGGUF(cfg Config, in []tensor.Info) ([]Mapping, []Dropped, error) {
	qh, kh, err := a.f.HeadCounts(arch.Config(cfg))
	if err != nil {
		return nil, nil, fmt.Errorf("convert: %w", err)
	}
	out, dropped, err := a.mapFamily(in, true, qh, kh, a.f.Experts(arch.Config(cfg)))
	if err != nil {
		return nil, nil, err
	}
	have := map[string]bool{}
	for _, m := range out {
		have[m.Name] = true
	}
	has := func(n string) bool { return have[n] }
	if err := requireTensors(out, a.f.Required(int(a.f.Layers(arch.Config(cfg))), has)...); err != nil {
		return nil, nil, err
	}
	return out, dropped, nil
}

func (a family) GGUFMetadata(cfg Config, fileType uint32) (tensor.Metadata, error) {
	md, err := a.f.GGUFMetadata(arch.Config(cfg), fileType)
	if err != nil {
		return nil, fmt.Errorf("convert: %w", err)
	}
	return md, nil
}

func (a family) ToHF(md tensor.Metadata, in []tensor.Info) ([]Mapping, []Dropped, error) {
	nHead, err := mdUint(md, a.f.Name+".attention.head_count")
	if err != nil {
		return nil, nil, err
	}
	nKV, _ := mdUint(md, a.f.Name+".attention.head_count_kv")
	qh, kh := heads(nHead, nKV)
	experts, _ := mdUint(md, a.f.Name+".expert_count")
	return a.mapFamily(in, false, qh, kh, experts)
}

func (a family) HFConfig(md tensor.Metadata, in []tensor.Info) (Config, error) {
	c, err := a.f.HFConfigOf(md, in)
	if err != nil {
		return nil, fmt.Errorf("convert: %w", err)
	}
	return Config(c), nil
}

// generated returns the tensors the family computes from cfg, as jobs
// written before the others.
func (a family) generated(cfg Config) ([]*job, error) {
	var jobs []*job
	for _, g := range a.f.Generated {
		vals, err := g.Make(arch.Config(cfg))
		if err != nil {
			return nil, fmt.Errorf("convert: %s: %w", a.f.Name, err)
		}
		if vals == nil {
			continue
		}
		data := make([]byte, 4*len(vals))
		if err := quant.Quantize(data, vals, tensor.F32); err != nil {
			return nil, err
		}
		info := tensor.Info{Name: g.GGUF, DType: tensor.F32, Shape: tensor.Shape{int64(len(vals))}}
		src := checkpoint.MemTensor(info, data)
		jobs = append(jobs, &job{out: info, src: src, m: Mapping{Name: g.GGUF, Source: g.GGUF, Shape: info.Shape}})
	}
	return jobs, nil
}

func (a family) generatedByName(name string) (arch.Generated, bool) {
	for _, g := range a.f.Generated {
		if g.GGUF == name {
			return g, true
		}
	}
	return arch.Generated{}, false
}

// regroupQKV returns the row regrouping of a fused QKV projection of heads
// query and groups key/value heads of d rows each (cols columns): Hugging
// Face's group g holds heads/groups query heads, then one key and one value
// head; llama.cpp's layout is every query head, every key head, every value
// head. inverse undoes it.
func regroupQKV(heads, groups, d, cols int, inverse bool) func(dst, src []float32) {
	per := heads / groups
	return func(dst, src []float32) {
		move := func(hf, gg int) {
			from, to := hf*d, gg*d
			if inverse {
				from, to = to, from
			}
			copy(dst[to*cols:(to+d)*cols], src[from*cols:(from+d)*cols])
		}
		for g := 0; g < groups; g++ {
			base := g * (per + 2)
			for j := 0; j < per; j++ {
				move(base+j, g*per+j)
			}
			move(base+per, heads+g)
			move(base+per+1, heads+groups+g)
		}
	}
}

// vocabMetadata applies the family's own tokenizer settings to the
// tokenizer's GGUF keys: fixed special ids after the tokenizer's own, and
// add_space_prefix (last, as the converters write it) overridden, taken
// from tokenizer_config.json's add_prefix_space (cfgPrefix, nil when it
// states none) or left out.
func vocabMetadata(r arch.VocabRules, md tensor.Metadata, cfgPrefix *bool) tensor.Metadata {
	const keySpace = "tokenizer.ggml.add_space_prefix"
	space, hasSpace := md.Get(keySpace)
	out := make(tensor.Metadata, 0, len(md)+len(r.SpecialIDs)+1)
	for _, kv := range md {
		if kv.Key != keySpace {
			out = append(out, kv)
		}
	}
	for _, s := range r.SpecialIDs {
		out.Set("tokenizer.ggml."+s.Kind+"_token_id", tensor.Uint32(s.ID))
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
	return out
}

// hfRenames applies the family's HFRename for the GGUF tensors in (config
// entries go to c).
func (a family) hfRenames(c arch.Config, in []tensor.Info) map[string]string {
	if a.f.HFRename == nil {
		return nil
	}
	names := infoByName(in)
	return a.f.HFRename(c, func(n string) bool { _, ok := names[n]; return ok })
}

// configFromData states the generated tensors of the GGUF c in cfg (Llama
// 3's rope_freqs become rope_scaling), reading their values; one that
// cannot be stated is an error, since dropping it would change the model.
func (a family) configFromData(c *checkpoint.Checkpoint, cfg Config) error {
	for _, g := range a.f.Generated {
		t, ok := c.Tensor(g.GGUF)
		if !ok {
			continue
		}
		if len(t.Shape) != 1 || t.Shape[0] > 1<<16 {
			return fmt.Errorf("convert: %s: tensor %q has shape %v, want a short vector", a.f.Name, g.GGUF, t.Shape)
		}
		b, err := t.ReadAll()
		if err != nil {
			return err
		}
		vals := make([]float32, t.Shape[0])
		if err := quant.Dequantize(vals, b, t.DType); err != nil {
			return fmt.Errorf("convert: tensor %q: %w", g.GGUF, err)
		}
		if err := g.Invert(vals, arch.Config(cfg)); err != nil {
			return fmt.Errorf("convert: %s: tensor %q (%s): %w", a.f.Name, g.GGUF, g.Reason, err)
		}
	}
	return nil
}

// untieCopies makes GGUF → HF agree with the tensors about a tied head.
// ToHF drops each copy (GPT-2's and BLOOM's output.weight); here a copy
// equal to its original byte for byte (dtype, shape and data) stays dropped
// and is left out of the infos config.json is built from, so the head is
// tied (tie_word_embeddings true), and the drop says so; any other is
// written as the family's Copy.HF (lm_head.weight), with the head untied.
func (a family) untieCopies(c *checkpoint.Checkpoint, maps []Mapping, dropped []Dropped, infos []tensor.Info) (
	[]Mapping, []Dropped, []tensor.Info, error) {
	var kept []Dropped
	tied := map[string]bool{}
	for _, d := range dropped {
		cp, ok := a.copyByName(d.Name)
		if !ok || d.TiedTo == "" {
			kept = append(kept, d)
			continue
		}
		t, ok1 := c.Tensor(d.Name)
		of, ok2 := c.Tensor(cp.Of)
		if !ok1 || !ok2 {
			kept = append(kept, d)
			continue
		}
		same, err := sameTensor(t, of)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("convert: comparing %q with %q: %w", d.Name, cp.Of, err)
		}
		switch {
		case same:
			d.Reason += "; equal to it byte for byte, so config.json ties them (tie_word_embeddings true)"
			kept = append(kept, d)
			tied[d.Name] = true
		case cp.HF != "":
			maps = append(maps, Mapping{Name: cp.HF, Source: d.Name, Shape: t.Shape.Clone()})
		default:
			return nil, nil, nil, tensor.Unsupported("convert: %s: tensor %q differs from %q, and the family has no Hugging Face name for an untied head",
				a.f.Name, d.Name, cp.Of)
		}
	}
	var cfgInfos []tensor.Info
	for _, ti := range infos {
		if !tied[ti.Name] {
			cfgInfos = append(cfgInfos, ti)
		}
	}
	return maps, kept, cfgInfos, nil
}

// sameTensor reports whether a and b have the same dtype, shape and bytes.
func sameTensor(a, b *checkpoint.Tensor) (bool, error) {
	if a.DType != b.DType || !a.Shape.Equal(b.Shape) || a.Size != b.Size {
		return false, nil
	}
	ra, rb := a.Open(), b.Open()
	const chunk = 1 << 20
	ba, bb := make([]byte, chunk), make([]byte, chunk)
	for off := int64(0); off < a.Size; {
		n := min(chunk, a.Size-off)
		if _, err := io.ReadFull(ra, ba[:n]); err != nil {
			return false, err
		}
		if _, err := io.ReadFull(rb, bb[:n]); err != nil {
			return false, err
		}
		if !bytes.Equal(ba[:n], bb[:n]) {
			return false, nil
		}
		off += n
	}
	return true, nil
}

func (a family) copyByName(name string) (arch.Copy, bool) {
	for _, c := range a.f.Copies {
		if c.GGUF == name {
			return c, true
		}
	}
	return arch.Copy{}, false
}

func hasName(in []tensor.Info, name string) bool {
	for _, t := range in {
		if t.Name == name {
			return true
		}
	}
	return false
}

// configAddPrefixSpace is tokenizer_config.json's add_prefix_space, nil
// when the file or the key is absent or null.
func configAddPrefixSpace(src tokenizer.Source) (*bool, error) {
	b, err := src.ReadAux("tokenizer_config.json")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var tc struct {
		AddPrefixSpace *bool `json:"add_prefix_space"`
	}
	if err := json.Unmarshal(b, &tc); err != nil {
		return nil, fmt.Errorf("convert: tokenizer_config.json: %w", err)
	}
	return tc.AddPrefixSpace, nil
}
