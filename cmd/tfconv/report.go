package main

import (
	_ "embed"
	"fmt"
	"html/template"
	"math"
	"strings"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/internal/atomicfile"
	"github.com/tfconv/tfconv/internal/page"
	"github.com/tfconv/tfconv/tensor"
)

//go:embed pages/inspect.js
var inspectScript string

//go:embed pages/quantize.js
var quantizeScript string

// reportContexts are the context lengths inspect's page sizes the memory
// at (KV cache f16, llama.cpp's default batches), beside --ctx when given.
var reportContexts = []int64{2048, 8192, 32768, 131072}

// tensorPlace is where a tensor sits: its layer ("" outside the layers,
// "encoder.3" in a stack) and its kind, the name without the layer prefix
// ("attn_q.weight", "self_attn.q_proj.weight").
type tensorPlace struct {
	Layer string `json:"layer"`
	Kind  string `json:"kind"`
}

func placeOf(name string) tensorPlace {
	stack, n, ok := checkpoint.LayerOf(name)
	if !ok {
		return tensorPlace{Kind: name}
	}
	layer := fmt.Sprint(n)
	if stack != "" {
		layer = stack + "." + layer
	}
	kind := name
	if i := strings.Index(name, "."+fmt.Sprint(n)+"."); i >= 0 {
		kind = name[i+len(fmt.Sprint(n))+2:]
	}
	return tensorPlace{Layer: layer, Kind: kind}
}

// kindJSON sums the tensors of one kind over the layers.
type kindJSON struct {
	Kind    string `json:"kind"`
	Tensors int    `json:"tensors"`
	Params  int64  `json:"params"`
	Bytes   int64  `json:"bytes"`
}

// inspectPageJSON is what inspect's page embeds: --json's figures whole,
// with the memory at several contexts and each tensor's place.
type inspectPageJSON struct {
	Inspect *inspectJSON `json:"inspect"`
	// MemoryAt is checkpoint.Summary.EstimateMemory at reportContexts
	// (and --ctx), KV cache f16; empty when the summary has no layers to
	// size a cache for.
	MemoryAt []*checkpoint.Memory `json:"memory_at"`
	Places   []tensorPlace        `json:"places"` // one per Inspect.Tensors
	Kinds    []kindJSON           `json:"kinds"`  // tensors of the numbered layers, by kind, in first-seen order
}

func inspectPage(j *inspectJSON, s *checkpoint.Summary, opts *inspectOptions) *inspectPageJSON {
	p := &inspectPageJSON{Inspect: j, MemoryAt: []*checkpoint.Memory{}, Places: []tensorPlace{}, Kinds: []kindJSON{}}
	ctxs := append([]int64(nil), reportContexts...)
	if opts.ctx > 0 && !containsInt(ctxs, opts.ctx) {
		ctxs = append(ctxs, opts.ctx)
	}
	if s.Layers > 0 && s.Projector == nil && s.Type != "imatrix" && s.Type != "adapter" {
		for _, n := range ctxs {
			m, err := s.EstimateMemory(checkpoint.MemoryOptions{Context: n, KVType: tensor.F16})
			if err != nil {
				break // a summary without the shapes a cache needs: no memory section
			}
			p.MemoryAt = append(p.MemoryAt, m)
		}
	}
	at := map[string]int{}
	for _, t := range j.Tensors {
		pl := placeOf(t.Name)
		p.Places = append(p.Places, pl)
		if pl.Layer == "" {
			continue
		}
		i, ok := at[pl.Kind]
		if !ok {
			i = len(p.Kinds)
			at[pl.Kind] = i
			p.Kinds = append(p.Kinds, kindJSON{Kind: pl.Kind})
		}
		k := &p.Kinds[i]
		k.Tensors++
		k.Params += t.Params
		k.Bytes += t.Bytes
	}
	return p
}

func containsInt(xs []int64, x int64) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// quantizeLayerJSON is the error of one layer's tensors.
type quantizeLayerJSON struct {
	Layer   string `json:"layer"`
	Tensors int    `json:"tensors"`
	Bytes   int64  `json:"bytes"`
	// MinSQNRdB is the worst tensor's SQNR (null when every tensor is
	// exact), WorstTensor its name; MeanSQNRdB the mean over the inexact
	// tensors; MaxRMSE the largest RMSE.
	MinSQNRdB   *float64 `json:"min_sqnr_db"`
	MeanSQNRdB  *float64 `json:"mean_sqnr_db"`
	WorstTensor string   `json:"worst_tensor"`
	MaxRMSE     float64  `json:"max_rmse"`
}

// quantizePageJSON is what quantize's page embeds: --json's report whole,
// each tensor's place and the error by layer ("" gathers the tensors
// outside the layers).
type quantizePageJSON struct {
	Quantize *quantizeJSON       `json:"quantize"`
	Places   []tensorPlace       `json:"places"`
	Layers   []quantizeLayerJSON `json:"layers"`
	Source   string              `json:"source"`
	Target   string              `json:"target"`
}

func quantizePage(j *quantizeJSON, src, target string) *quantizePageJSON {
	p := &quantizePageJSON{Quantize: j, Places: []tensorPlace{}, Layers: []quantizeLayerJSON{}, Source: src, Target: target}
	at := map[string]int{}
	sums := []float64{}
	counts := []int{}
	for _, t := range j.Tensors {
		pl := placeOf(t.Name)
		p.Places = append(p.Places, pl)
		i, ok := at[pl.Layer]
		if !ok {
			i = len(p.Layers)
			at[pl.Layer] = i
			p.Layers = append(p.Layers, quantizeLayerJSON{Layer: pl.Layer})
			sums, counts = append(sums, 0), append(counts, 0)
		}
		l := &p.Layers[i]
		l.Tensors++
		l.Bytes += t.Bytes
		l.MaxRMSE = math.Max(l.MaxRMSE, t.RMSE)
		if t.SQNRdB != nil {
			if l.MinSQNRdB == nil || *t.SQNRdB < *l.MinSQNRdB {
				v := *t.SQNRdB
				l.MinSQNRdB, l.WorstTensor = &v, t.Name
			}
			sums[i] += *t.SQNRdB
			counts[i]++
		}
	}
	for i := range p.Layers {
		if counts[i] > 0 {
			v := sums[i] / float64(counts[i])
			p.Layers[i].MeanSQNRdB = &v
		}
	}
	return p
}

// writePage writes a page to path whole or not at all.
func writePage(path string, force bool, pg page.Page, inputs ...string) error {
	f, err := atomicfile.Create(path, force, inputs...)
	if err != nil {
		return fmt.Errorf("--report %s: %w", path, err)
	}
	defer f.Abort()
	if err := page.Write(f, pg); err != nil {
		return err
	}
	return f.Commit()
}

func writeInspectReport(path string, force bool, p *inspectPageJSON) error {
	title := "tfconv inspect: " + p.Inspect.Path
	return writePage(path, force, page.Page{Title: title,
		Body:   template.HTML("<h1>tfconv inspect</h1>\n<p><code>" + template.HTMLEscapeString(p.Inspect.Path) + "</code></p>\n"),
		Data:   p,
		Script: inspectScript}, p.Inspect.Path)
}

func writeQuantizeReport(path string, force bool, p *quantizePageJSON, inputs ...string) error {
	title := "tfconv quantize: " + p.Source
	return writePage(path, force, page.Page{Title: title,
		Body: template.HTML("<h1>tfconv quantize</h1>\n<p><code>" + template.HTMLEscapeString(p.Source) + "</code> → " +
			template.HTMLEscapeString(p.Target) + "</p>\n"),
		Data:   p,
		Script: quantizeScript}, inputs...)
}
