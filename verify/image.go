package verify

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/tfconv/tfconv/internal/progress"
	"github.com/tfconv/tfconv/model"
	"github.com/tfconv/tfconv/tensor"
	"github.com/tfconv/tfconv/vision"
)

// ImageOptions put an image into the comparison: both models see the same
// prompt with the image, each encoding it with its own vision encoder.
type ImageOptions struct {
	Image *vision.Image
	File  string // the image's name, for the report
	// Method is the preprocessing both sides use (one method for both, so
	// that only the models differ); nil: the reference encoder's default
	// (transformers' for a Hugging Face folder, mtmd's for an mmproj).
	Method *vision.Method
}

// ImageReport compares the image side of two vision-language models.
type ImageReport struct {
	File       string `json:"file"`
	Preprocess string `json:"preprocess"`
	RefEncoder string `json:"ref_encoder"`
	// CandEncoder is the candidate's vision encoder (its folder, or the
	// mmproj GGUF).
	CandEncoder string `json:"cand_encoder"`
	Projector   string `json:"projector"`
	Rows        int    `json:"rows"`   // feature rows (image tokens)
	Blocks      int    `json:"blocks"` // the tower's blocks
	First       int    `json:"first"`  // the first image position in the prompt
	// PixelsMaxAbs is the largest difference of the preprocessed pixels
	// (0 unless the two encoders normalize differently).
	PixelsMaxAbs float64 `json:"pixels_max_abs"`
	// Features compares the projector's outputs, the embeddings that go
	// into the text model (Layer is -1).
	Features Layer `json:"features"`
	// Tower compares the tower's hidden states: Layer 0 the patch
	// embeddings, then after each block (Layer l after block l−1), then
	// the states after the tower's own final steps where it has them
	// (Gemma 3's post-layernorm).
	Tower []Layer `json:"tower"`
	// FirstDivergentTowerLayer is the first tower state the divergence
	// rule flags, null when none.
	FirstDivergentTowerLayer *int `json:"first_divergent_tower_layer"`
}

// CompareImage runs ref and cand, each with its vision encoder (rv, cv),
// on a prompt holding io's image and compares the tower's states, the
// image features and the logits. The prompt (o.Tokens or o.Prompt) holds
// the image placeholder or model.MediaMarker once; without one,
// MediaMarker followed by DefaultText. The reference builds the prompt
// with the image (its tokenizer, its encoder's expansion) and the
// candidate runs those same tokens.
func CompareImage(ref, cand *model.Model, rv, cv *model.Vision, io ImageOptions, o Options) (*Report, error) {
	rc, cc := ref.Config(), cand.Config()
	if rc.Vocab != cc.Vocab {
		return nil, fmt.Errorf("verify: %s has a vocabulary of %d, %s of %d", ref.Path, rc.Vocab, cand.Path, cc.Vocab)
	}
	if rc.Layers != cc.Layers {
		return nil, fmt.Errorf("verify: %s has %d blocks, %s has %d", ref.Path, rc.Layers, cand.Path, cc.Layers)
	}
	if io.Image == nil {
		return nil, errors.New("verify: no image")
	}
	if o.Text != "" {
		return nil, errors.New("verify: an image is compared on a prompt or tokens, not a perplexity text")
	}
	rvc, cvc := rv.Config(), cv.Config()
	if rvc.Projector != cvc.Projector || rvc.DModel != cvc.DModel || rvc.Layers != cvc.Layers {
		return nil, fmt.Errorf("verify: the vision encoders differ in shape: %s is %s (width %d, %d layers), %s is %s (width %d, %d layers)",
			rv.Path, rvc.Projector, rvc.DModel, rvc.Layers, cv.Path, cvc.Projector, cvc.DModel, cvc.Layers)
	}
	method := rv.DefaultMethod()
	if io.Method != nil {
		method = *io.Method
	}
	rep := &Report{Ref: ref.Path, Cand: cand.Path}
	if len(o.Tokens) == 0 && o.Prompt == "" {
		o.Prompt = model.MediaMarker + "\n" + strings.TrimSpace(DefaultText)
		rep.DefaultPrompt = true
	}
	// The precision pair is the coarsest weight type of either side's text
	// model and encoder (llama.cpp's converter keeps a projection F16 in
	// an f32 mmproj).
	rt := WeightTypes(append(append([]tensor.Info(nil), ref.Tensors...), rv.Tensors...))
	ct := WeightTypes(append(append([]tensor.Info(nil), cand.Tensors...), cv.Tensors...))
	rep.RefTypes, rep.CandTypes = typeNames(rt), typeNames(ct)
	th := o.thresholds(rt, ct)

	prompt := func() model.ImagePrompt {
		return model.ImagePrompt{Tokens: o.Tokens, Text: o.Prompt, Image: io.Image, Method: method, TowerStates: true}
	}
	meter := progress.New(o.Progress, "verify", 2, progress.Items, "models run")
	rr, err := ref.ImageInput(rv, prompt())
	if err != nil {
		return nil, fmt.Errorf("verify: %s: %w", ref.Path, err)
	}
	cp := prompt()
	cp.Like = rr // one input, tokenized by the reference
	cr, err := cand.ImageInput(cv, cp)
	if err != nil {
		return nil, fmt.Errorf("verify: %s: %w", cand.Path, err)
	}
	if rr.Count != cr.Count {
		return nil, fmt.Errorf("verify: the image gives %d feature rows in %s, %d in %s", rr.Count, rv.Path, cr.Count, cv.Path)
	}
	img := &ImageReport{File: io.File, Preprocess: method.String(), RefEncoder: rv.Path, CandEncoder: cv.Path,
		Projector: rvc.Projector, Rows: rr.Count, First: rr.First, Blocks: rvc.Layers}
	if len(rr.Pixels) != len(cr.Pixels) {
		return nil, fmt.Errorf("verify: the image preprocesses to %d values for %s, %d for %s", len(rr.Pixels), rv.Path, len(cr.Pixels), cv.Path)
	}
	for i := range rr.Pixels {
		img.PixelsMaxAbs = math.Max(img.PixelsMaxAbs, math.Abs(float64(rr.Pixels[i]-cr.Pixels[i])))
	}
	feat, err := CompareLayers([][][]float32{rowsOf(rr.Features, rc.DModel)}, [][][]float32{rowsOf(cr.Features, cc.DModel)})
	if err != nil {
		return nil, fmt.Errorf("verify: image features: %w", err)
	}
	img.Features = feat[0]
	img.Features.Layer = -1
	if len(rr.States) != len(cr.States) {
		return nil, fmt.Errorf("verify: the towers gave %d and %d hidden states", len(rr.States), len(cr.States))
	}
	rs, cs := make([][][]float32, len(rr.States)), make([][][]float32, len(cr.States))
	for i := range rr.States {
		rs[i], cs[i] = rowsOf(rr.States[i], rvc.DModel), rowsOf(cr.States[i], cvc.DModel)
	}
	if img.Tower, err = CompareLayers(rs, cs); err != nil {
		return nil, fmt.Errorf("verify: tower: %w", err)
	}
	img.FirstDivergentTowerLayer = MarkDivergent(img.Tower, th.LayerNMSE)
	rep.Image = img

	rtr := &model.Trace{AttnLayer: o.AttnLayer, AttnHead: o.AttnHead}
	ctr := &model.Trace{AttnLayer: o.AttnLayer, AttnHead: o.AttnHead}
	ro, err := ref.Forward(rr.Input, rtr)
	if err != nil {
		return nil, fmt.Errorf("verify: %s: %w", ref.Path, err)
	}
	meter.Add(1)
	co, err := cand.Forward(cr.Input, ctr)
	if err != nil {
		return nil, fmt.Errorf("verify: %s: %w", cand.Path, err)
	}
	meter.Add(1)
	meter.Finish()
	// An image position's next token is no target: the image's ids are
	// placeholders, not text either model predicts.
	seq := append([]int(nil), rr.Input.Tokens...)
	for i, e := range rr.Input.Embeds {
		if e != nil {
			seq[i] = -1
		}
	}
	cmp := NewComparer(o.TopK)
	for t := range ro.Logits {
		target := -1
		if t+1 < len(seq) {
			target = seq[t+1]
		}
		if err := cmp.Add(ro.Logits[t], co.Logits[t], target); err != nil {
			return nil, err
		}
	}
	if rep.Layers, err = compareTraces(rtr, ctr); err != nil {
		return nil, err
	}
	if rtr.Attention != nil && ctr.Attention != nil {
		rep.Attention = &Attention{Layer: o.AttnLayer, Head: o.AttnHead, Ref: rtr.Attention, Cand: ctr.Attention}
	}
	rep.Tokens = rr.Input.Tokens
	rep.Summary = cmp.Summary()
	rep.Positions = cmp.Positions()
	rep.label(ref.Tokenizer(), "", rep.Tokens)
	rep.Prompt = o.Prompt
	rep.finish(th)
	if l := img.Features; l.NMSE > th.LayerNMSE || math.IsNaN(l.NMSE) {
		rep.Failures = append(rep.Failures, fmt.Sprintf("image features NMSE %.3g is above %.3g (%s)", l.NMSE, th.LayerNMSE, th.Pair))
		rep.Pass = false
	}
	return rep, nil
}

// rowsOf cuts x into rows of width d (one row when d does not divide it).
func rowsOf(x []float32, d int) [][]float32 {
	if d <= 0 || len(x)%d != 0 {
		return [][]float32{x}
	}
	out := make([][]float32, len(x)/d)
	for i := range out {
		out[i] = x[i*d : (i+1)*d]
	}
	return out
}

// FilesImage loads ref and cand with their vision encoders (a Hugging Face
// folder holds its own; a GGUF text model takes an mmproj: refMmproj,
// candMmproj) and compares them on the image: tfconv verify REF CAND
// --image FILE.
func FilesImage(ref, cand, refMmproj, candMmproj string, io ImageOptions, o FileOptions) (*Report, error) {
	if err := checkReportDest(o, ref, cand); err != nil {
		return nil, err
	}
	load := func(path, mmproj string) (*model.Model, *model.Vision, error) {
		m, err := model.Load(path, model.LoadOptions{Threads: o.Threads, Progress: o.Progress})
		if err != nil {
			return nil, nil, err
		}
		src := mmproj
		if src == "" {
			if m.Config().Naming == "gguf" {
				return nil, nil, fmt.Errorf("verify: --image: %s is a GGUF text model: give its vision encoder (llama.cpp's mmproj GGUF) with --mmproj or --ref-mmproj", path)
			}
			src = path
		}
		v, err := model.LoadVision(src, model.LoadOptions{Threads: o.Threads})
		if err != nil {
			return nil, nil, err
		}
		return m, v, nil
	}
	mr, vr, err := load(ref, refMmproj)
	if err != nil {
		return nil, err
	}
	mc, vc, err := load(cand, candMmproj)
	if err != nil {
		return nil, err
	}
	rep, err := CompareImage(mr, mc, vr, vc, io, o.Options)
	if err != nil {
		return nil, err
	}
	return rep, writeReport(rep, o, ref, cand)
}
