package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
	"github.com/tfconv/tfconv/tokenizer"
)

// generated returns the tensors the family computes from cfg, as jobs
// written before the others.
func generated(f *arch.Family, cfg Config) ([]*job, error) {
	var jobs []*job
	for _, g := range f.Generated {
		vals, err := g.Make(cfg)
		if err != nil {
			return nil, fmt.Errorf("convert: %s: %w", f.Name, err)
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

// configFromData states the generated tensors of the GGUF c in cfg (Llama
// 3's rope_freqs become rope_scaling), reading their values; one that
// cannot be stated is an error, since dropping it would change the model.
func configFromData(f *arch.Family, c *checkpoint.Checkpoint, cfg Config) error {
	for _, g := range f.Generated {
		t, ok := c.Tensor(g.GGUF)
		if !ok {
			continue
		}
		if len(t.Shape) != 1 || t.Shape[0] > 1<<16 {
			return fmt.Errorf("convert: %s: tensor %q has shape %v, want a short vector", f.Name, g.GGUF, t.Shape)
		}
		b, err := t.ReadAll()
		if err != nil {
			return err
		}
		vals := make([]float32, t.Shape[0])
		if err := quant.Dequantize(vals, b, t.DType); err != nil {
			return fmt.Errorf("convert: tensor %q: %w", g.GGUF, err)
		}
		if err := g.Invert(vals, cfg); err != nil {
			return fmt.Errorf("convert: %s: tensor %q (%s): %w", f.Name, g.GGUF, g.Reason, err)
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
func untieCopies(f *arch.Family, c *checkpoint.Checkpoint, maps []Mapping, dropped []Dropped, infos []tensor.Info) (
	[]Mapping, []Dropped, []tensor.Info, error) {
	var kept []Dropped
	tied := map[string]bool{}
	for _, d := range dropped {
		cp, ok := f.CopyOf(d.Name)
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
		case same && cp.HF == "" && !strings.HasPrefix(cp.GGUF, "output"):
			d.Reason += "; equal to it byte for byte" // not a head (RWKV-7's layer-0 copies)
			kept = append(kept, d)
			tied[d.Name] = true
		case same:
			d.Reason += "; equal to it byte for byte, so config.json ties them (tie_word_embeddings true)"
			kept = append(kept, d)
			tied[d.Name] = true
		case cp.HF != "":
			maps = append(maps, Mapping{Name: cp.HF, Source: d.Name, Shape: t.Shape.Clone()})
		default:
			return nil, nil, nil, tensor.Unsupported("convert: %s: tensor %q differs from %q, and the family has no Hugging Face name for an untied head",
				f.Name, d.Name, cp.Of)
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
