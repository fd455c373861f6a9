package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync"

	"github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// GGUF keys of a LoRA adapter (gguf-py Keys.Adapter).
const (
	keyAdapterType = "adapter.type"
	keyLoRAAlpha   = "adapter.lora.alpha"
)

// loraTarget is where one adapted weight goes in GGUF: its name and the
// layout change of its rows (llama.cpp's Q/K permutation, fused QKV
// regrouping), built for a matrix of the given shape.
func loraTarget(f *arch.Family, cfg Config, hfName string, shape tensor.Shape) (string, func(dst, src []float32), error) {
	if r := f.DropReason(hfName); r != "" {
		return "", nil, tensor.Unsupported("convert: the adapter changes %q, which GGUF leaves out (%s)", hfName, r)
	}
	m, ok := f.FromHF(hfName)
	if !ok {
		return "", nil, tensor.Unsupported("convert: %s: the adapter changes %q, which has no GGUF name", f.Name, hfName)
	}
	if m.Tensor.Stack != 0 {
		return "", nil, tensor.Unsupported("convert: the adapter changes %q, which GGUF stacks with others (experts): not supported", hfName)
	}
	switch m.Layout() {
	case arch.LayoutSame, arch.LayoutPermuteQ, arch.LayoutPermuteK, arch.LayoutQKVGroups:
	default:
		// A transpose or an offset would not carry over to the factors.
		return "", nil, tensor.Unsupported("convert: the adapter changes %q, whose GGUF layout is not a row reordering", hfName)
	}
	qh, kh, err := f.HeadCounts(arch.Config(cfg))
	if err != nil {
		return "", nil, fmt.Errorf("convert: %w", err)
	}
	tf, _, err := m.Layout().Transform(hfName, shape, qh, kh, false)
	if err != nil {
		return "", nil, err
	}
	return m.Name(true), tf, nil
}

// squeeze drops dimensions of size 1, as the converter's numpy squeeze()
// does before writing.
func squeeze(s tensor.Shape) tensor.Shape {
	var out tensor.Shape
	for _, d := range s {
		if d != 1 {
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		out = tensor.Shape{1}
	}
	return out
}

// baseConfig reads the base model's config.json: base is a Hugging Face
// directory or its config.json (only the config is needed, as for
// convert_lora_to_gguf.py --base); "" falls back to the adapter's
// base_model_name_or_path when that is a local directory.
func baseConfig(base string, ad *checkpoint.Checkpoint) (Config, string, error) {
	if base == "" {
		bm := ad.LoRAConfig.BaseModel
		for _, d := range []string{bm, filepath.Join(filepath.Dir(ad.Path), bm)} {
			if bm != "" && fileExists(filepath.Join(d, "config.json")) {
				base = d
				break
			}
		}
		if base == "" {
			return nil, "", fmt.Errorf("convert: %s: the base model's config.json is needed (its architecture and head counts); "+
				"give the base model's directory with --base (adapter_config.json names %q, which is not a local directory)", ad.Path, bm)
		}
	}
	p := base
	if st, err := os.Stat(base); err == nil && st.IsDir() {
		p = filepath.Join(base, "config.json")
	} else if err == nil && filepath.Ext(base) != ".json" {
		return nil, "", fmt.Errorf("convert: --base %s: want the base model's Hugging Face directory (its config.json is read)", base)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, "", fmt.Errorf("convert: --base %s: %w", base, err)
	}
	var raw map[string]any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&raw); err != nil {
		return nil, "", fmt.Errorf("convert: --base %s: %w", p, err)
	}
	return Config(raw), base, nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// planLoRAToGGUF writes a PEFT LoRA adapter as the GGUF adapter llama.cpp's
// convert_lora_to_gguf.py writes (llama-cli --lora loads it): for each
// adapted weight NAME, NAME.lora_a = A (rank × in) and NAME.lora_b = B
// (out × rank), in the adapter file's order, with B's rows reordered as the
// weight's are (Q/K permutation), every factor F32 (the converter keeps
// tensors not named *.weight in F32 whatever the outtype), and the keys
// general.architecture, general.type = adapter, adapter.type = lora,
// general.name, adapter.lora.alpha, general.quantization_version.
//
// rsLoRA: llama.cpp scales by alpha/rank, PEFT's rsLoRA by alpha/√rank.
// The converter writes lora_alpha unchanged, giving a file llama.cpp
// applies at the wrong scale; tfconv writes alpha·√rank instead (so that
// llama.cpp computes PEFT's scale) and says so in a warning.
func planLoRAToGGUF(c *checkpoint.Checkpoint, opts Options) (*plan, error) {
	l, err := c.LoRA()
	if err != nil {
		return nil, err
	}
	cfg, _, err := baseConfig(opts.Base, c)
	if err != nil {
		return nil, err
	}
	a, err := lookupConfig(cfg, opts.Arch)
	if err != nil {
		return nil, err
	}
	outType := opts.OutType
	if outType == "" {
		outType = OutF16
	}
	want := tensor.F32
	if outType != OutAuto {
		if _, want, err = ggufFileType(outType); err != nil {
			return nil, err
		}
	}
	p := &plan{format: GGUF, arch: a.Name, outType: outType}
	for i := range l.Pairs {
		pr := &l.Pairs[i]
		name, tf, err := loraTarget(a, cfg, pr.Base, pr.B.Shape)
		if err != nil {
			return nil, err
		}
		for _, f := range []struct {
			t  *checkpoint.Tensor
			sf string
			tf func(dst, src []float32)
		}{{pr.A, ".lora_a", nil}, {pr.B, ".lora_b", tf}} {
			shape := squeeze(f.t.Shape)
			out := tensor.Info{Name: name + f.sf, Shape: shape}
			out.DType = arch.GGUFTensorType(out.Name, shape, want)
			if pr.A.DType != pr.B.DType && out.DType != tensor.F32 {
				out.DType = tensor.F32 // the converter casts mismatched factors to float32
			}
			p.jobs = append(p.jobs, &job{out: out, src: f.t, m: Mapping{Name: out.Name, Source: f.t.Name, Shape: shape, Transform: f.tf}})
		}
	}
	if err := finishJobs(p.jobs); err != nil {
		return nil, err
	}
	alpha := float32(c.LoRAConfig.Alpha)
	if c.LoRAConfig.RSLoRA {
		alpha = float32(c.LoRAConfig.Alpha * math.Sqrt(float64(c.LoRAConfig.R)))
		p.warn = append(p.warn, fmt.Sprintf("rsLoRA: adapter.lora.alpha is written as lora_alpha·√r = %g (not %g as convert_lora_to_gguf.py "+
			"writes it), so that llama.cpp's alpha/rank scale equals PEFT's alpha/√rank", alpha, c.LoRAConfig.Alpha))
	}
	p.meta = tensor.Metadata{
		{Key: keyArch, Value: tensor.String(a.Name)},
		{Key: keyType, Value: tensor.String("adapter")},
		{Key: keyAdapterType, Value: tensor.String("lora")},
		{Key: keyName, Value: tensor.String(modelName(c))},
		{Key: keyLoRAAlpha, Value: tensor.Float32(alpha)},
		{Key: keyQuantVersion, Value: tensor.Uint32(quantVersion)},
	}
	return p, nil
}

// MergeOptions control MergeLoRA.
type MergeOptions struct {
	// Options of the output (To, OutType, Force, Arch, Progress, ...), as
	// for Run with the merged model as the source.
	Options
	// Scale multiplies the adapter's own scale (lora_alpha/r, or
	// lora_alpha/√r with rsLoRA); 0 means 1. llama.cpp's --lora-scaled.
	Scale float64
}

// MergeLoRA writes the base checkpoint with a PEFT LoRA adapter merged in,
// W' = W + scale·(B·A) for every adapted weight, in any output format (dst
// and opts as for Run). Base may be a Hugging Face checkpoint or a GGUF
// (float weights: f32, f16, bf16); each merged weight keeps the base's
// dtype. The merge streams: each merged tensor is computed when the writer
// reaches it, so memory is about one tensor. A base whose tensor is
// missing or has another shape than the adapter's B·A is refused, naming it.
func MergeLoRA(base, adapter, dst string, opts MergeOptions) (*Report, error) {
	ad, err := checkpoint.Open(adapter)
	if err != nil {
		return nil, err
	}
	defer ad.Close()
	if ad.LoRAConfig == nil {
		return nil, fmt.Errorf("merge-lora: %s is not a PEFT adapter directory (no %s)", adapter, checkpoint.LoRAConfigName)
	}
	l, err := ad.LoRA()
	if err != nil {
		return nil, err
	}
	b, err := checkpoint.Open(base)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	if b.LoRAConfig != nil {
		return nil, fmt.Errorf("merge-lora: the base %s is itself an adapter", base)
	}
	scale := opts.Scale
	if scale == 0 {
		scale = 1
	}
	// For a GGUF base, each weight's GGUF name and row layout.
	var ga *arch.Family
	var gcfg Config
	if !b.HuggingFace() {
		if b.Source != checkpoint.GGUF {
			return nil, tensor.Unsupported("merge-lora: %s: the base must be a Hugging Face checkpoint or a GGUF", base)
		}
		name, _ := b.Metadata.Str(keyArch)
		if ga, err = arch.Lookup(name); err != nil {
			return nil, err
		}
		infos := make([]tensor.Info, len(b.Tensors))
		for i, t := range b.Tensors {
			infos[i] = t.Info
		}
		if gcfg, err = ga.HFConfigOf(b.Metadata, infos); err != nil {
			return nil, fmt.Errorf("merge-lora: %s: %w", base, err)
		}
	}
	repl := map[string]*checkpoint.Tensor{}
	ov := mergeOverflow{byName: map[string]quant.OverflowError{}}
	for i := range l.Pairs {
		pr := &l.Pairs[i]
		want := pr.Shape()
		name := pr.Base
		var tf func(dst, src []float32)
		if ga != nil {
			if name, tf, err = loraTarget(ga, gcfg, pr.Base, want); err != nil {
				return nil, err
			}
		}
		t, ok := b.Tensor(name)
		if !ok {
			return nil, fmt.Errorf("merge-lora: the base %s has no tensor %q, which the adapter changes", base, name)
		}
		if !t.Shape.Equal(want) {
			return nil, fmt.Errorf("merge-lora: tensor %q of the base %s is %v, but the adapter's B·A is %v: not the adapter's base model",
				name, base, t.Shape, want)
		}
		switch t.DType {
		case tensor.F32, tensor.F16, tensor.BF16:
		default:
			return nil, tensor.Unsupported("merge-lora: tensor %q of the base %s is %v; merge into a float (f32, f16, bf16) base", name, base, t.DType)
		}
		repl[name] = mergedTensor(t, pr, scale*pr.Scale, tf, opts.AllowOverflow, &ov)
	}
	view, err := b.WithTensors(repl)
	if err != nil {
		return nil, err
	}
	rep, err := runOn(view, base, dst, opts.Options, []string{base, adapter})
	if err != nil {
		return nil, err
	}
	// A merged weight that overflowed the base's dtype is ±Inf in the
	// view already: the report takes its count from the merge.
	if len(ov.byName) > 0 {
		for i := range rep.Tensors {
			if o, ok := ov.byName[rep.Tensors[i].SourceName]; ok {
				rep.Tensors[i].Overflow, rep.Tensors[i].OverflowMaxAbs = o.Count, o.MaxAbs
			}
		}
		rep.Warnings = append(rep.Warnings, overflowWarnings(rep.Tensors)...)
	}
	rep.LoRA = &LoRAReport{Adapter: adapter, Rank: ad.LoRAConfig.R, Alpha: ad.LoRAConfig.Alpha, RSLoRA: ad.LoRAConfig.RSLoRA,
		Scale: scale * l.Pairs[0].Scale, Merged: len(l.Pairs)}
	return rep, nil
}

// LoRAReport says what merge-lora merged.
type LoRAReport struct {
	Adapter string  `json:"adapter"`
	Rank    int64   `json:"rank"`
	Alpha   float64 `json:"alpha"`
	RSLoRA  bool    `json:"rslora"`
	Scale   float64 `json:"scale"`  // applied to B·A: the adapter's scale times --scale
	Merged  int     `json:"merged"` // weights changed
}

// mergeOverflow records the merged weights whose values went beyond the
// base's dtype (allowed by Options.AllowOverflow), by base tensor name.
type mergeOverflow struct {
	mu     sync.Mutex
	byName map[string]quant.OverflowError
}

// mergedTensor is base weight t with pr merged in, computed when read: the
// base's dtype and shape, W' = W + s·(B·A) with tf applied to B·A (the
// GGUF row layout) first. A merged value beyond the base's dtype is an
// error unless allow, when it is recorded in ov.
func mergedTensor(t *checkpoint.Tensor, pr *checkpoint.LoRAPair, s float64, tf func(dst, src []float32),
	allow bool, ov *mergeOverflow) *checkpoint.Tensor {
	return checkpoint.LazyTensor(t.Info, t.File, func() ([]byte, error) {
		w, err := readF32(t)
		if err != nil {
			return nil, err
		}
		a, err := readF32(pr.A)
		if err != nil {
			return nil, err
		}
		bm, err := readF32(pr.B)
		if err != nil {
			return nil, err
		}
		out, in, r := int(pr.B.Shape[0]), int(pr.A.Shape[1]), int(pr.Rank)
		d := make([]float32, out*in)
		loraDelta(d, bm, a, out, in, r, s)
		if tf != nil {
			p := make([]float32, len(d))
			tf(p, d)
			d = p
		}
		for i := range w {
			w[i] += d[i]
		}
		buf := make([]byte, t.Size)
		err = quant.Quantize(buf, w, t.DType)
		if o := (*quant.OverflowError)(nil); errors.As(err, &o) {
			if !allow {
				return nil, fmt.Errorf("tensor %q: the merged weights do not fit the base's %v: %w; merge into an f32 or bf16 copy of the base "+
					"(tfconv convert BASE --outtype f32), or --allow-overflow writes them as ±Inf", t.Name, t.DType, err)
			}
			ov.mu.Lock()
			ov.byName[t.Name] = *o
			ov.mu.Unlock()
		} else if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		return buf, nil
	})
}

// loraDelta sets d (out × in) to s·(B·A) as PEFT's merge computes it in
// float32 on the CPU: each B[i,:]·A[:,j] accumulated over k = 0…r-1 with a
// fused multiply-add rounded to float32 at every step (OpenBLAS's sgemm;
// the float64 product of two float32 values is exact, so one float64 add
// then rounding is that step), then multiplied by float32(s) in float32.
// Against PEFT v0.12's merge_and_unload this is bit-identical at rank 4 and
// within 1 ulp at rank 8 (measured: testdata/lora/README.md); summing in
// float64 and rounding once is further off.
func loraDelta(d, b, a []float32, out, in, r int, s float64) {
	s32 := float32(s)
	for i := 0; i < out; i++ {
		di := d[i*in : (i+1)*in]
		clear(di)
		for k := 0; k < r; k++ {
			bik := float64(b[i*r+k])
			for j, v := range a[k*in : (k+1)*in] {
				di[j] = float32(float64(di[j]) + bik*float64(v))
			}
		}
		for j := range di {
			di[j] = float32(di[j] * s32)
		}
	}
}

// readF32 reads a whole float tensor as float32.
func readF32(t *checkpoint.Tensor) ([]float32, error) {
	raw := make([]byte, t.Size)
	if _, err := io.ReadFull(t.Open(), raw); err != nil {
		return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	out := make([]float32, t.NumElements())
	if err := quant.Dequantize(out, raw, t.DType); err != nil {
		return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	return out, nil
}
