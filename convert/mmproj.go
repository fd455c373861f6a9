package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/internal/atomicfile"
	"github.com/tfconv/tfconv/internal/progress"
	"github.com/tfconv/tfconv/tensor"
)

// Multimodal says what GGUF conversion writes of a checkpoint whose class
// has a projector in arch's table (arch.ProjectorFor: Gemma 3's
// Gemma3ForConditionalGeneration, …). Without one of these such a
// conversion is refused: neither half is lost silently.
type Multimodal uint8

// The multimodal choices (convert's flags).
const (
	// MultimodalUnset refuses a checkpoint with a projector.
	MultimodalUnset Multimodal = iota
	// MultimodalBoth writes the text model to DST and the projector to
	// "mmproj-" + DST's file name beside it, in one run: both appear or
	// neither (--mmproj).
	MultimodalBoth
	// MultimodalProjector writes only the projector, to DST (--mmproj-only:
	// the converter's own --mmproj).
	MultimodalProjector
	// MultimodalText writes the text model alone; Report.LeftOut says what
	// it left out (--text-only).
	MultimodalText
)

// Flag is the convert flag of m ("" for MultimodalUnset).
func (m Multimodal) Flag() string {
	switch m {
	case MultimodalBoth:
		return "--mmproj"
	case MultimodalProjector:
		return "--mmproj-only"
	case MultimodalText:
		return "--text-only"
	}
	return ""
}

// MmprojPrefix starts the name of the projector GGUF written beside the
// text model (llama.cpp's habit: mmproj-<model>.gguf).
const MmprojPrefix = "mmproj-"

// MmprojPath is the projector GGUF's path for text model output dst.
func MmprojPath(dst string) string {
	return filepath.Join(filepath.Dir(dst), MmprojPrefix+filepath.Base(dst))
}

// LeftOut is what a --text-only conversion did not write: the projector's
// tensors (they are also listed in Report.Dropped).
type LeftOut struct {
	Projector string `json:"projector"` // clip.projector_type
	Tensors   int    `json:"tensors"`
	Bytes     int64  `json:"bytes"` // in the checkpoint
	Reason    string `json:"reason"`
}

// projectorOf returns the projector of a Hugging Face checkpoint's class.
func projectorOf(c *checkpoint.Checkpoint) (*arch.Projector, error) {
	if c.Source == checkpoint.GGUF || c.LoRAConfig != nil {
		return nil, nil
	}
	raw, err := c.Config()
	if err != nil || raw == nil {
		return nil, err
	}
	p, ok := arch.ProjectorFor(Config(raw))
	if !ok {
		return nil, nil
	}
	return p, nil
}

// refuseMultimodal is the error for a checkpoint with a projector converted
// to GGUF without saying which half (or both) to write.
func refuseMultimodal(src string, p *arch.Projector) error {
	return tensor.Unsupported("convert: %s is a multimodal checkpoint (%s: a %s text model and a %s projector): "+
		"give --mmproj (the text GGUF and mmproj-<DST> beside it), --mmproj-only (the projector alone) or "+
		"--text-only (the text model alone)", src, strings.Join(p.HFClasses, ", "), p.Text, p.Type)
}

// ggufOutType resolves --outtype for Hugging Face → GGUF ("" is f16, auto
// the first tensor's float type), as convert_hf_to_gguf.py does.
func ggufOutType(c *checkpoint.Checkpoint, outType string) string {
	switch outType {
	case "":
		return OutF16
	case OutAuto:
		if len(c.Tensors) > 0 && c.Tensors[0].DType == tensor.F16 {
			return OutF16
		}
		return OutBF16
	}
	return outType
}

// planMmproj plans the projector GGUF of a multimodal checkpoint as
// convert_hf_to_gguf.py --mmproj writes it: the tower's tensors (the
// projector's Prefixes) under their mmproj names, general.type "mmproj",
// the clip.* keys of the projector's Params, no vocabulary. The text
// model's tensors are dropped (they are the text GGUF's).
func planMmproj(c *checkpoint.Checkpoint, proj *arch.Projector, opts Options) (*plan, error) {
	top, err := c.RawConfig()
	if err != nil {
		return nil, err
	}
	pre, err := c.ProcessorConfig()
	if err != nil {
		return nil, err
	}
	cfg, err := proj.TowerConfig(top, pre)
	if err != nil {
		return nil, fmt.Errorf("convert: %w", err)
	}
	outType := ggufOutType(c, opts.OutType)
	ft, want, err := ggufFileType(outType)
	if err != nil {
		return nil, err
	}
	fam := &proj.Tower
	var infos []tensor.Info
	var text []Dropped
	for _, t := range c.Tensors {
		if !hasAnyPrefix(t.Name, proj.Prefixes) {
			text = append(text, Dropped{Name: t.Name, Reason: "the text model: written to the text GGUF, not the mmproj"})
			continue
		}
		if !t.DType.Float() || t.DType.Quantized() {
			return nil, tensor.Unsupported("convert: tensor %q is %v; Hugging Face input must be float", t.Name, t.DType)
		}
		infos = append(infos, t.Info)
	}
	if len(infos) == 0 {
		return nil, fmt.Errorf("convert: %s has no tensors under %s: no %s projector to write", c.Path, strings.Join(proj.Prefixes, " or "), proj.Type)
	}
	maps, dropped, err := fam.ToGGUF(cfg, infos)
	if err != nil {
		return nil, err
	}
	if len(proj.Order) > 0 {
		for _, m := range maps {
			if _, ok := proj.OrderKey(m.Name); !ok {
				return nil, fmt.Errorf("convert: %s projector: tensor %q has no place in its writer's order", proj.Type, m.Name)
			}
		}
		slices.SortStableFunc(maps, func(a, b arch.Mapping) int {
			ka, _ := proj.OrderKey(a.Name)
			kb, _ := proj.OrderKey(b.Name)
			return slices.Compare(ka[:], kb[:])
		})
	}
	p := &plan{format: GGUF, arch: arch.MmprojArch, outType: outType, dropped: append(dropped, text...), warn: arch.DropWarnings(dropped)}
	if p.jobs, err = jobsFor(c, maps, p.dropped, func(m Mapping, _ *checkpoint.Tensor) tensor.DType {
		return proj.TensorType(m.Name, m.Shape, want)
	}); err != nil {
		return nil, err
	}
	for _, j := range p.jobs {
		j.ggufBF16 = true
	}
	var total int64
	outs := make([]tensor.Info, len(p.jobs))
	for i, j := range p.jobs {
		outs[i] = j.out
		total += j.out.NumElements()
	}
	kv, err := fam.GGUFMetadata(cfg, ft)
	if err != nil {
		return nil, fmt.Errorf("convert: %s projector: %w", proj.Type, err)
	}
	who, warn, err := loadAuthorship(c, top, opts, total, func() string { return ggufSizeLabel(outs) })
	if err != nil {
		return nil, err
	}
	p.warn = append(p.warn, warn...)
	p.name = who
	if proj.Legacy {
		// the legacy writer's keys: the Params' own general.* ones, the
		// name the checkpoint's
		md := tensor.Metadata{{Key: keyArch, Value: tensor.String(arch.MmprojArch)}}
		for _, x := range kv {
			if x.Key == arch.GeneralName {
				x.Value = tensor.String(who.name)
			}
			md = append(md, x)
		}
		p.meta = md
		return p, nil
	}
	md := tensor.Metadata{{Key: keyArch, Value: tensor.String(arch.MmprojArch)}, {Key: keyType, Value: tensor.String("mmproj")}}
	md = append(md, who.kvs()...)
	md = append(md, kv...)
	md = append(md, tensor.KV{Key: keyQuantVersion, Value: tensor.Uint32(quantVersion)})
	p.meta = md
	return p, nil
}

func hasAnyPrefix(name string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// leftOut sums the projector's tensors a --text-only plan dropped.
func leftOut(c *checkpoint.Checkpoint, proj *arch.Projector, dropped []Dropped) *LeftOut {
	lo := &LeftOut{Projector: proj.Type, Reason: "--text-only: the " + proj.Type + " projector (vision tower and projection) was not converted; --mmproj writes it"}
	size := map[string]int64{}
	for _, t := range c.Tensors {
		size[t.Name] = t.Size
	}
	for _, d := range dropped {
		if arch.IsMmprojDrop(d.Reason) {
			lo.Tensors++
			lo.Bytes += size[d.Name]
		}
	}
	return lo
}

// runBoth is Run with MultimodalBoth: the text GGUF to dst and the
// projector to MmprojPath(dst), planned and checked before anything is
// written, each written to a temporary beside its destination and renamed
// into place only once both are whole (atomicfile.Group).
func runBoth(c *checkpoint.Checkpoint, proj *arch.Projector, src, dst string, opts Options, inputs []string) (*Report, error) {
	start := time.Now()
	if opts.SplitMaxBytes > 0 || !opts.Part.Whole() || opts.Resume || opts.VocabOnly {
		return nil, fmt.Errorf("convert: --mmproj writes two whole files; --split-max-size, --part, --resume and --vocab-only do not apply (convert each half with --text-only or --mmproj-only)")
	}
	text, err := planToGGUF(c, opts)
	if err != nil {
		return nil, err
	}
	mm, err := planMmproj(c, proj, opts)
	if err != nil {
		return nil, err
	}
	// The tower is not left out here: it is the mmproj's (the text
	// report still lists it among its dropped, with that reason).
	text.warn = slices.DeleteFunc(text.warn, func(w string) bool {
		return slices.ContainsFunc(text.dropped, func(d Dropped) bool { return arch.IsMmprojDrop(d.Reason) && strings.HasSuffix(w, ": "+d.Reason) })
	})
	for _, p := range []*plan{text, mm} {
		if err := checkGGUFJobs(src, p.jobs); err != nil {
			return nil, err
		}
	}
	// One check over both halves' reads: the group commits after both.
	checkSources(c, append(append([]*job(nil), text.jobs...), mm.jobs...))
	if dir, named := defaultDir(dst, GGUF); named {
		dst = filepath.Join(dir, defaultName(text, false))
	} else if strings.Contains(filepath.Base(dst), "{") {
		dst = filepath.Join(filepath.Dir(dst), fillTemplate(filepath.Base(dst), text.outType))
	}
	mdst := MmprojPath(dst)
	if opts.planOnly {
		return nil, fmt.Errorf("convert: --mmproj has no plan of its own: plan each half")
	}
	g, err := atomicfile.NewGroup([]string{dst, mdst}, opts.Force, inputs...)
	if err != nil {
		return nil, fmt.Errorf("convert: %w", err)
	}
	if opts.DryRun {
		tr, mr := newReport(src, dst, GGUF, text, []string{dst}), newReport(src, mdst, GGUF, mm, []string{mdst})
		for _, r := range []*Report{tr, mr} {
			r.DryRun, r.SelfCheck, r.SelfCheckLine = true, "dry run", "dry run: nothing written"
		}
		tr.Mmproj = mr
		return tr, nil
	}
	defer g.Abort()
	replaced := map[string]bool{}
	for _, p := range []string{dst, mdst} {
		if exists(p) {
			replaced[p] = true
		}
	}
	var total int64
	for _, p := range []*plan{text, mm} {
		for _, j := range p.jobs {
			j.allowOverflow = opts.AllowOverflow
			total += j.out.Size
		}
	}
	prog := progress.New(opts.Progress, "convert", total, progress.Bytes, "")
	for _, w := range []struct {
		path string
		p    *plan
	}{{dst, text}, {mdst, mm}} {
		f, err := g.Create(w.path)
		if err != nil {
			prog.Finish()
			return nil, err
		}
		if err := writeGGUFTo(f, w.p, prog); err != nil {
			prog.Finish()
			return nil, err
		}
	}
	prog.Finish()
	if err := g.Commit(); err != nil {
		return nil, err
	}
	reps := make([]*Report, 2)
	for i, w := range []struct {
		path string
		p    *plan
	}{{dst, text}, {mdst, mm}} {
		line, err := selfCheck(w.path, w.p.jobs)
		if err != nil {
			return nil, err
		}
		reps[i] = newReport(src, w.path, GGUF, w.p, []string{w.path})
		reps[i].SelfCheck, reps[i].SelfCheckLine = "ok", line
		if replaced[w.path] {
			reps[i].Replaced = []string{filepath.Base(w.path)}
		}
		reps[i].Seconds = time.Since(start).Seconds()
	}
	reps[0].Mmproj = reps[1]
	return reps[0], nil
}

// projectorClasses lists the classes of arch's projector table.
func projectorClasses() []string {
	var out []string
	for _, p := range arch.Projectors() {
		out = append(out, p.HFClasses...)
	}
	return out
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// planToHFMultimodal is planToHF for a text GGUF and its mmproj
// (Options.MmprojFile): the text model's tensors under "language_model."
// (the names transformers saves a multimodal class's text half under),
// the tower's under its own names with the record's layouts undone, and
// one config.json (Projector.HFConfig) with the processor's files. The
// mmproj checkpoint returned is the caller's to close once written.
func planToHFMultimodal(c *checkpoint.Checkpoint, opts Options) (*plan, *checkpoint.Checkpoint, error) {
	mm, err := checkpoint.Open(opts.MmprojFile)
	if err != nil {
		return nil, nil, err
	}
	p, err := planHFMultimodal(c, mm, opts)
	if err != nil {
		mm.Close()
		return nil, nil, err
	}
	return p, mm, nil
}

func planHFMultimodal(c, mm *checkpoint.Checkpoint, opts Options) (*plan, error) {
	if a, _ := mm.Metadata.Str(keyArch); mm.Source != checkpoint.GGUF || a != arch.MmprojArch {
		return nil, fmt.Errorf("convert: %s is not an mmproj GGUF (general.architecture %q, want %q)", opts.MmprojFile, a, arch.MmprojArch)
	}
	typ, _ := mm.Metadata.Str("clip.projector_type")
	proj, ok := arch.ProjectorByType(typ)
	if !ok {
		return nil, tensor.Unsupported("convert: %s: projector type %q has no record in tfconv (known: %s)", opts.MmprojFile, typ, strings.Join(projectorTypes(), ", "))
	}
	if proj.NoHF != "" {
		return nil, tensor.Unsupported("convert: %s: the %s projector does not convert back to Hugging Face: %s", opts.MmprojFile, typ, proj.NoHF)
	}
	if proj.FeatureLayer {
		// LLaVA's legacy mmproj holds the tower only up to the layer the
		// projector reads (no later layers, no final LayerNorm): the
		// checkpoint cannot be put back whole.
		return nil, tensor.Unsupported("convert: %s: projector type %q (%s) does not convert back to Hugging Face: its mmproj leaves out the tower's layers past the one the projector reads and its final LayerNorm", opts.MmprojFile, typ, strings.Join(proj.HFClasses, ", "))
	}
	if proj.HFModelType == "" {
		return nil, tensor.Unsupported("convert: %s: GGUF → HF of a %s projector is not supported yet (its record states no Hugging Face config); convert the text GGUF alone", opts.MmprojFile, typ)
	}
	textArch, _ := c.Metadata.Str(keyArch)
	if opts.Arch != "" {
		textArch = opts.Arch
	}
	if textArch != proj.Text {
		return nil, fmt.Errorf("convert: %s is a %s projector, whose text model is %s; %s is %s", opts.MmprojFile, typ, proj.Text, c.Path, textArch)
	}
	p, err := planToHF(c, opts)
	if err != nil {
		return nil, err
	}
	for _, j := range p.jobs {
		j.out.Name = "language_model." + j.out.Name
	}
	types, err := hfOutType(c, opts.OutType)
	if err != nil {
		return nil, err
	}
	infos := make([]tensor.Info, len(mm.Tensors))
	for i, t := range mm.Tensors {
		infos[i] = t.Info
	}
	maps, dropped, err := proj.ToHF(mm.Metadata, infos)
	if err != nil {
		return nil, fmt.Errorf("convert: %s: %w", opts.MmprojFile, err)
	}
	jobs, err := jobsFor(mm, maps, dropped, func(_ Mapping, src *checkpoint.Tensor) tensor.DType { return types.of(src.DType) })
	if err != nil {
		return nil, fmt.Errorf("convert: %s: %w", opts.MmprojFile, err)
	}
	p.jobs = append(p.jobs, jobs...)
	p.dropped = append(p.dropped, dropped...)
	var text Config
	d := json.NewDecoder(bytes.NewReader(p.files["config.json"]))
	d.UseNumber()
	if err := d.Decode(&text); err != nil {
		return nil, fmt.Errorf("convert: config.json: %w", err)
	}
	tokens := map[string]int64{}
	if v, ok := c.Metadata.Get("tokenizer.ggml.tokens"); ok {
		if a, ok := v.Array(); ok {
			for i := 0; i < a.Len(); i++ {
				if s, ok := a.Index(i).Str(); ok {
					if _, dup := tokens[s]; !dup {
						tokens[s] = int64(i)
					}
				}
			}
		}
	}
	cfg, err := proj.HFConfig(text, mm.Metadata, func(s string) (int64, bool) { id, ok := tokens[s]; return id, ok })
	if err != nil {
		return nil, fmt.Errorf("convert: %w", err)
	}
	cfg["torch_dtype"] = text["torch_dtype"]
	if p.files["config.json"], err = marshalConfig(cfg); err != nil {
		return nil, err
	}
	for name, f := range proj.HFProcessorFiles(mm.Metadata) {
		if p.files[name], err = marshalConfig(f); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// projectorTypes lists the clip.projector_type values of arch's table.
func projectorTypes() []string {
	var out []string
	for _, p := range arch.Projectors() {
		out = append(out, p.Type)
	}
	return out
}
