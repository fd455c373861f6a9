package arch

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tfconv/tfconv/tensor"
)

// RowSplit is a Hugging Face weight that holds several GGUF roles with
// its rows in an order of their own, which the converter regroups into
// the roles one after another (Qwen3-Next's in_proj_qkvz: per key head
// q, k, v and z rows, written as attn_qkv — all q, all k, all v — and
// attn_gate — all z).
type RowSplit struct {
	// HF is the Hugging Face pattern without its ".weight" suffix.
	HF string
	// GGUF are the roles, in the order the converter writes them.
	GGUF []Role
	// Rows gives, for config c, the Hugging Face row each GGUF row comes
	// from (the roles' rows one after another: a permutation of the HF
	// rows) and each role's row count.
	Rows func(c Config) (order []int64, counts []int64, err error)
}

// splitOf finds the RowSplit whose HF pattern names the weight name.
func (f *Family) splitOf(name string) (*RowSplit, int, bool) {
	pat, bid, suffix := SplitName(name)
	if suffix != ".weight" {
		return nil, 0, false
	}
	for i := range f.Splits {
		if f.Splits[i].HF == pat {
			return &f.Splits[i], bid, true
		}
	}
	return nil, 0, false
}

// splitRole finds the RowSplit holding GGUF weight name, and the role's
// index among its roles.
func (f *Family) splitRole(name string) (*RowSplit, int, int, bool) {
	pat, bid, suffix := SplitName(name)
	if suffix != ".weight" {
		return nil, 0, 0, false
	}
	for i := range f.Splits {
		for k, r := range f.Splits[i].GGUF {
			if r == pat {
				return &f.Splits[i], k, bid, true
			}
		}
	}
	return nil, 0, 0, false
}

// rows checks s's row order for a [rows][cols…] tensor named name.
func (s *RowSplit) rows(c Config, name string, rows int64) (order, counts, offsets []int64, err error) {
	if c == nil {
		return nil, nil, nil, fmt.Errorf("arch: tensor %q: its rows regroup by config.json, which is not at hand", name)
	}
	if order, counts, err = s.Rows(c); err != nil {
		return nil, nil, nil, err
	}
	if int64(len(order)) != rows || len(counts) != len(s.GGUF) {
		return nil, nil, nil, fmt.Errorf("arch: tensor %q has %d rows; config.json makes %d", name, rows, len(order))
	}
	var off int64
	for _, n := range counts {
		offsets = append(offsets, off)
		off += n
	}
	if off != rows {
		return nil, nil, nil, fmt.Errorf("arch: tensor %q has %d rows; its roles take %d", name, rows, off)
	}
	return order, counts, offsets, nil
}

// splitMappings are the GGUF roles of HF weight ti (a RowSplit's), each
// picking its rows (Mapping.Cut).
func (s *RowSplit) mappings(c Config, ti tensor.Info, bid int) ([]Mapping, error) {
	if len(ti.Shape) != 2 {
		return nil, fmt.Errorf("arch: tensor %q has shape %v: want a matrix", ti.Name, ti.Shape)
	}
	order, counts, offsets, err := s.rows(c, ti.Name, ti.Shape[0])
	if err != nil {
		return nil, err
	}
	cols := ti.Shape[1]
	out := make([]Mapping, len(s.GGUF))
	for k, role := range s.GGUF {
		pick := order[offsets[k] : offsets[k]+counts[k]]
		out[k] = Mapping{Name: expand(role, bid) + ".weight", Source: ti.Name, Shape: tensor.Shape{counts[k], cols}, Cut: k + 1,
			Transform: func(dst, src []float32) {
				for i, r := range pick {
					copy(dst[int64(i)*cols:int64(i+1)*cols], src[r*cols:(r+1)*cols])
				}
			}}
	}
	return out, nil
}

// joiner gathers the GGUF roles of RowSplits (GGUF → HF) until each of one
// has come, then joins them back into the Hugging Face weight.
type joiner map[string][]tensor.Info // by HF name: the roles' tensors, in role order

func (j joiner) add(c Config, s *RowSplit, k, bid int, ti tensor.Info) ([]Mapping, error) {
	hf := strings.Replace(s.HF, "{bid}", strconv.Itoa(bid), 1) + ".weight"
	if j[hf] == nil {
		j[hf] = make([]tensor.Info, len(s.GGUF))
	}
	j[hf][k] = ti
	var names []string
	var rows int64
	for _, t := range j[hf] {
		if t.Name == "" {
			return nil, nil
		}
		if len(t.Shape) != 2 || t.Shape[1] != j[hf][0].Shape[1] {
			return nil, fmt.Errorf("arch: tensors %q %v and %q %v do not join into %q", j[hf][0].Name, j[hf][0].Shape, t.Name, t.Shape, hf)
		}
		names = append(names, t.Name)
		rows += t.Shape[0]
	}
	delete(j, hf)
	order, _, _, err := s.rows(c, hf, rows)
	if err != nil {
		return nil, err
	}
	cols := ti.Shape[1]
	return []Mapping{{Name: hf, Source: names[0], Stack: names, Join: true, Shape: tensor.Shape{rows, cols},
		Transform: func(dst, src []float32) {
			for i, r := range order {
				copy(dst[r*cols:(r+1)*cols], src[int64(i)*cols:int64(i+1)*cols])
			}
		}}}, nil
}

func (j joiner) complete(family string) error {
	for hf, ts := range j {
		return fmt.Errorf("arch: %s: %q lacks some of its parts (has %v)", family, hf, ts)
	}
	return nil
}

// SplitMappings are the GGUF roles the family's RowSplits make of the
// Hugging Face weights in, for config c (what ToGGUF maps them to; the
// model reads a checkpoint's in_proj_qkvz through them).
func (f *Family) SplitMappings(c Config, in []tensor.Info) ([]Mapping, error) {
	var out []Mapping
	for _, ti := range in {
		if s, bid, ok := f.splitOf(ti.Name); ok {
			ms, err := s.mappings(c, ti, bid)
			if err != nil {
				return nil, err
			}
			out = append(out, ms...)
		}
	}
	return out, nil
}
