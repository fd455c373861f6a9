package verify

import (
	"bufio"
	"bytes"
	"fmt"
	"html"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/tfconv/tfconv/internal/page"
)

// Plot geometry, in SVG user units (pixels at 100 % zoom).
const (
	plotW, plotH       = 900, 280
	plotL, plotR       = 70, 20 // left and right margins (axis labels)
	plotT, plotB       = 20, 58 // top and bottom margins (ticks, token labels, axis name)
	heatSize           = 380    // side of one attention heat map
	logFloor           = 1e-12  // values below are drawn at the floor of a log axis
	maxHeatmapPosition = 256    // larger attention maps are not drawn (one rect per cell)
	// maxBars is the most bars a per-position plot draws: beyond it the
	// positions are averaged in consecutive windows (a rolling mean), so
	// the page stays small (under 1 MB at any length) and readable.
	maxBars = 300
	// histBins is the number of log-spaced bins of the KLD histogram.
	histBins = 40
)

// verifyCSS is the report's own style, after the page shell's.
const verifyCSS = `
.pass{color:#11772d;font-weight:600} .fail{color:#b3001b;font-weight:600} .dep{background:#fde2e4}
.maps{display:flex;gap:24px;flex-wrap:wrap} figure{margin:0} figcaption{font-size:14px;text-align:center}
svg text{font:12px system-ui,sans-serif;fill:#333}
svg text.tok{font-size:10px}
.prompt{white-space:pre-wrap;margin:4px 0 12px;padding:6px 12px;border-left:3px solid #ccc;background:#fafafa;max-height:12em;overflow:auto}
`

// pageData is what the report embeds as JSON: the figures of --json
// that the page shows, under --json's names (the summary's fields are
// top-level in --json, here under "summary").
type pageData struct {
	Summary             Summary    `json:"summary"`
	Layers              []Layer    `json:"layers"`
	FirstDivergentLayer *int       `json:"first_divergent_layer"`
	Thresholds          Thresholds `json:"thresholds"`
	Pass                bool       `json:"pass"`
	// Labels are the tokens on the position axis ("" where none).
	Labels []string `json:"labels"`
}

// WriteHTML writes r as a self-contained HTML page in the shell of
// tfconv's pages (internal/page): the summary, the layer table, and
// inline SVG plots of the KLD per position (its axis labelled with the
// input's tokens), the error per layer and the attention maps of both
// models side by side. No external resources; the figures shown are
// marked with data-fig and data-value, and embedded as JSON.
func WriteHTML(w io.Writer, r *Report) error {
	var body bytes.Buffer
	b := bufio.NewWriter(&body)
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	e := html.EscapeString
	ref := r.Ref
	if r.Baseline {
		ref = "baseline of " + ref
	}
	p("<h1>tfconv verify</h1>\n<p>reference <code>%s</code> (%s)<br>candidate <code>%s</code> (%s)</p>\n",
		e(ref), e(strings.Join(r.RefTypes, ", ")), e(r.Cand), e(strings.Join(r.CandTypes, ", ")))
	if r.Pass {
		p(`<p class="pass">PASS</p>`)
	} else {
		p(`<p class="fail">FAIL: %s</p>`, e(strings.Join(r.Failures, "; ")))
	}
	if r.Prompt != "" {
		what := "Input"
		switch {
		case r.DefaultPrompt:
			what = "Input (tfconv's built-in text: no --tokens, --prompt or --prompt-file was given)"
		case r.Chunks > 0:
			what = fmt.Sprintf("Input (the first of %d chunks)", r.Chunks)
		}
		p("<p>%s:</p>\n<blockquote class=prompt>%s</blockquote>\n", what, e(r.Prompt))
	}
	th := r.Thresholds
	p("<p>Thresholds (%s): mean KLD ≤ %g, top-1 ≥ %g, layer NMSE ≤ %g. First divergent layer: <b>%s</b>.</p>\n",
		e(th.Pair), th.MaxKLD, th.MinTop1, th.LayerNMSE, firstLayerText(r.FirstDivergentLayer))

	if r.Summary.Positions > 0 {
		p("<h2>Summary over %d positions</h2>\n<div class=scroll><table>\n", r.Summary.Positions)
		row := func(k, v string) { p("<tr><th>%s</th><td class=n>%s</td></tr>\n", k, v) }
		frow := func(k, name string, v float64, text string) {
			p("<tr><th>%s</th><td class=n%s>%s</td></tr>\n", k, fig(name, v), text)
		}
		frow("max |Δlogit|", "max_abs", r.MaxAbs, fmt.Sprintf("%.6g", r.MaxAbs))
		frow("RMS Δlogit", "rms", r.RMS, fmt.Sprintf("%.6g", r.RMS))
		row("cosine mean / min", fmt.Sprintf("<span%s>%.8f</span> / <span%s>%.8f</span>", fig("cosine_mean", r.CosineMean), r.CosineMean, fig("cosine_min", r.CosineMin), r.CosineMin))
		frow("mean KLD", "kld.mean", r.KLD.Mean, PlusMinus(r.KLD.Mean, r.KLD.MeanErr, r.Summary.Positions, "%.6g", "%.3g"))
		row("KLD median / p90 / p95", fmt.Sprintf("%.6g / %.6g / %.6g", r.KLD.Median, r.KLD.P90, r.KLD.P95))
		row("KLD p99 / p99.9 / max", fmt.Sprintf("%.6g / %.6g / %.6g", r.KLD.P99, r.KLD.P999, r.KLD.Max))
		p("<tr><th>same top token</th><td class=n><span%s>%s</span> %%</td></tr>\n", fig("top1", r.Top1),
			PlusMinus(100*r.Top1, 100*r.Top1Err, r.Summary.Positions, "%.3f", "%.3f"))
		row(fmt.Sprintf("top-%d overlap", r.TopK), fmt.Sprintf("%.3f %%", 100*r.TopKOverlap))
		row("Δp of the reference top token, mean / RMS", fmt.Sprintf("%.4f / %.4f %%", 100*r.DeltaP.Mean, 100*r.DeltaPRMS))
		if pp := r.PPL; pp != nil {
			row("perplexity ref / cand", fmt.Sprintf("%.4f / %.4f", pp.Ref, pp.Cand))
			row("PPL(cand)/PPL(ref)", PlusMinus(pp.Ratio, pp.Ratio*pp.LnRatioErr, pp.Count, "%.6f", "%.6f"))
		}
		p("</table></div>\n")

		vals := make([]float64, len(r.Positions))
		for i, pos := range r.Positions {
			vals[i] = pos.KLD
		}
		means, per := windowMeans(vals, maxBars)
		if per == 1 {
			p("<h2>KL divergence per position</h2>\n")
			logBars(b, means, "position", "KLD (nats, log scale)", nil, 0, 1, positionLabels(r.Positions))
		} else {
			p("<h2>KL divergence along the input (mean of every %d positions)</h2>\n", per)
			logBars(b, means, "position", "mean KLD (nats, log scale)", nil, 0, per, nil)
		}
		p("<h2>Distribution of the KL divergence (%d positions)</h2>\n", len(vals))
		histogram(b, vals)
	}

	if len(r.Layers) > 0 {
		p("<h2>Error per layer (hidden state after each block)</h2>\n")
		vals := make([]float64, len(r.Layers))
		mark := make([]bool, len(r.Layers))
		for i, l := range r.Layers {
			vals[i] = l.NMSE
			mark[i] = l.Departs
		}
		logBars(b, vals, "layer", "NMSE (log scale)", mark, r.Thresholds.LayerNMSE, 1, nil)
		p("<p>Red bars: blocks that depart (see the divergence rule); dashed line: the layer limit %g.</p>\n", r.Thresholds.LayerNMSE)
		p("<div class=scroll><table><tr><th>layer</th><th>cosine</th><th>NMSE</th><th>max abs</th></tr>\n")
		for _, l := range r.Layers {
			cls := ""
			if l.Departs {
				cls = ` class="dep"`
			}
			p("<tr%s><td class=n>%d</td><td class=n%s>%.8f</td><td class=n%s>%.3e</td><td class=n%s>%.4g</td></tr>\n", cls, l.Layer,
				fig("layer.cosine", l.Cosine), l.Cosine, fig("layer.nmse", l.NMSE), l.NMSE, fig("layer.max_abs", l.MaxAbs), l.MaxAbs)
		}
		p("</table></div>\n")
	}

	if a := r.Attention; a != nil && len(a.Ref) > 0 && len(a.Ref) <= maxHeatmapPosition {
		p("<h2>Attention, layer %d head %d</h2>\n<p>Rows are queries, columns keys; darker is more attention (softmax probability, 0 to the map's maximum).</p>\n<div class=maps>\n", a.Layer, a.Head)
		hi := 0.0
		for _, m := range [][][]float32{a.Ref, a.Cand} {
			for _, row := range m {
				for _, v := range row {
					hi = math.Max(hi, float64(v))
				}
			}
		}
		diff := make([][]float32, len(a.Ref))
		dmax := 0.0
		for i := range a.Ref {
			diff[i] = make([]float32, len(a.Ref[i]))
			for j := range a.Ref[i] {
				if i < len(a.Cand) && j < len(a.Cand[i]) {
					d := math.Abs(float64(a.Cand[i][j] - a.Ref[i][j]))
					diff[i][j] = float32(d)
					dmax = math.Max(dmax, d)
				}
			}
		}
		var toks []string // the input tokens, when the positions are they
		if l := positionLabels(r.Positions); len(l) == len(a.Ref) && r.Chunks == 0 {
			toks = l
		}
		heatmap(b, a.Ref, hi, "reference: "+r.Ref, [3]int{23, 64, 140}, toks)
		heatmap(b, a.Cand, hi, "candidate: "+r.Cand, [3]int{23, 64, 140}, toks)
		heatmap(b, diff, dmax, fmt.Sprintf("|candidate − reference| (max %.3g)", dmax), [3]int{179, 0, 27}, toks)
		p("</div>\n")
	}
	p("<p style=\"margin-top:32px;color:#777;font-size:13px\">KLD is KL(ref ‖ cand) per position with log-softmax in float64, as llama-perplexity --kl-divergence defines it; NMSE is Σ(cand−ref)²/Σref² over all positions and features of a block's output.</p>\n")
	if err := b.Flush(); err != nil {
		return err
	}
	layers := r.Layers
	if layers == nil {
		layers = []Layer{}
	}
	labels := positionLabels(r.Positions)
	if labels == nil {
		labels = []string{}
	}
	var data any = pageData{Summary: r.Summary, Layers: layers, FirstDivergentLayer: r.FirstDivergentLayer,
		Thresholds: r.Thresholds, Pass: r.Pass, Labels: labels}
	if _, err := page.EncodeData(data); err != nil {
		// A NaN or infinite figure (a model that overflowed) has no JSON
		// form; the page shows it all the same, with no data embedded.
		data = nil
	}
	return page.Write(w, page.Page{
		Title: "tfconv verify: " + r.Ref + " vs " + r.Cand,
		CSS:   verifyCSS,
		Body:  template.HTML(body.String()),
		Data:  data,
	})
}

// fig is a figure's data-* attributes: its --json name and exact value.
func fig(name string, v float64) string {
	return fmt.Sprintf(` data-fig="%s" data-value="%s"`, name, strconv.FormatFloat(v, 'g', -1, 64))
}

func firstLayerText(l *int) string {
	if l == nil {
		return "none"
	}
	return fmt.Sprint(*l)
}

// windowMeans averages vals over consecutive windows so that at most max
// values remain; per is the window length (1: vals unchanged).
func windowMeans(vals []float64, max int) (means []float64, per int) {
	per = (len(vals) + max - 1) / max
	if per <= 1 {
		return vals, 1
	}
	for i := 0; i < len(vals); i += per {
		end := min(i+per, len(vals))
		sum := 0.0
		for _, v := range vals[i:end] {
			sum += v
		}
		means = append(means, sum/float64(end-i))
	}
	return means, per
}

// histogram draws how many values fall in each of histBins log-spaced bins
// between the smallest positive value (at least logFloor) and the largest;
// exact zeros are counted apart.
func histogram(w io.Writer, vals []float64) {
	lo, hi, zeros := math.Inf(1), 0.0, 0
	for _, v := range vals {
		if v > 0 {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		} else {
			zeros++
		}
	}
	if hi == 0 {
		fmt.Fprintf(w, "<p>All %d values are exactly 0.</p>\n", len(vals))
		return
	}
	lo = math.Max(lo, logFloor)
	l0, l1 := math.Log10(lo), math.Log10(hi)
	if l1-l0 < 1e-9 {
		l1 = l0 + 1
	}
	counts := make([]int, histBins)
	peak := 0
	for _, v := range vals {
		if v <= 0 {
			continue
		}
		i := int(float64(histBins) * (math.Log10(math.Max(v, lo)) - l0) / (l1 - l0))
		i = min(max(i, 0), histBins-1)
		counts[i]++
		peak = max(peak, counts[i])
	}
	iw, ih := float64(plotW-plotL-plotR), float64(plotH-plotT-plotB)
	fmt.Fprintf(w, `<div class=plot><svg width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="KLD histogram">`+"\n", plotW, plotH, plotW, plotH)
	fmt.Fprintf(w, `<rect x="%d" y="%d" width="%g" height="%g" fill="#fafafa" stroke="#bbb"/>`+"\n", plotL, plotT, iw, ih)
	bw := iw / histBins
	for i, c := range counts {
		h := ih * float64(c) / float64(peak)
		edge := math.Pow(10, l0+(l1-l0)*float64(i)/histBins)
		fmt.Fprintf(w, `<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="#2c6fbb"><title>KLD ≥ %.3g: %d positions</title></rect>`+"\n",
			plotL+bw*float64(i)+1, plotT+ih-h, bw-2, h, edge, c)
	}
	for i := 0; i <= histBins; i += histBins / 5 {
		fmt.Fprintf(w, `<text x="%.1f" y="%d" text-anchor="middle">%.2g</text>`+"\n", plotL+bw*float64(i), plotT+int(ih)+16, math.Pow(10, l0+(l1-l0)*float64(i)/histBins))
	}
	fmt.Fprintf(w, `<text x="%d" y="%g" text-anchor="end" dominant-baseline="middle">%d</text>`+"\n", plotL-6, float64(plotT), peak)
	fmt.Fprintf(w, `<text x="%g" y="%d" text-anchor="middle">KLD (nats, log-spaced bins)</text>`+"\n", plotL+iw/2, plotH-6)
	fmt.Fprintf(w, `<text x="14" y="%g" text-anchor="middle" transform="rotate(-90 14 %g)">positions</text>`+"\n", plotT+ih/2, plotT+ih/2)
	fmt.Fprintf(w, "</svg></div>\n")
	if zeros > 0 {
		fmt.Fprintf(w, "<p>%d positions have a KLD of exactly 0 (not drawn).</p>\n", zeros)
	}
}

// logBars draws values as bars on a log10 axis; marked bars are red, and a
// limit > 0 is drawn as a dashed line. Bar i stands for x from i·per.
func logBars(w io.Writer, vals []float64, xlabel, ylabel string, mark []bool, limit float64, per int, labels []string) {
	lo, hi := math.Inf(1), 0.0
	for _, v := range vals {
		if v > 0 {
			lo = math.Min(lo, v)
			hi = math.Max(hi, v)
		}
	}
	if hi > 0 && limit > 0 {
		lo = math.Min(lo, limit)
		hi = math.Max(hi, limit)
	}
	if hi == 0 {
		fmt.Fprintf(w, "<p>All values are exactly 0: nothing to plot.</p>\n")
		return
	}
	lo = math.Max(lo, logFloor)
	d0, d1 := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if d1 <= d0 {
		d1 = d0 + 1
	}
	iw, ih := float64(plotW-plotL-plotR), float64(plotH-plotT-plotB)
	y := func(v float64) float64 {
		if v < math.Pow(10, d0) {
			v = math.Pow(10, d0)
		}
		return plotT + ih*(1-(math.Log10(v)-d0)/(d1-d0))
	}
	fmt.Fprintf(w, `<div class=plot><svg width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`+"\n", plotW, plotH, plotW, plotH, html.EscapeString(ylabel))
	fmt.Fprintf(w, `<rect x="%d" y="%d" width="%g" height="%g" fill="#fafafa" stroke="#bbb"/>`+"\n", plotL, plotT, iw, ih)
	step := 1.0
	if d1-d0 > 8 {
		step = math.Ceil((d1 - d0) / 8)
	}
	for d := d0; d <= d1; d += step {
		yy := y(math.Pow(10, d))
		fmt.Fprintf(w, `<line x1="%d" x2="%g" y1="%.1f" y2="%.1f" stroke="#e3e3e3"/><text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">1e%d</text>`+"\n",
			plotL, plotL+iw, yy, yy, plotL-6, yy, int(d))
	}
	n := len(vals)
	bw := iw / float64(n)
	for i, v := range vals {
		x := plotL + bw*float64(i)
		top := y(v)
		color := "#2c6fbb"
		if mark != nil && mark[i] {
			color = "#c8102e"
		}
		h := plotT + ih - top
		if v <= 0 {
			h = 0
		}
		label := ""
		if i < len(labels) && labels[i] != "" {
			label = " " + labels[i]
		}
		fmt.Fprintf(w, `<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s"><title>%s %d%s: %.4g</title></rect>`+"\n",
			x+bw*0.1, top, math.Max(bw*0.8, 0.5), h, color, xlabel, i*per, html.EscapeString(label), v)
	}
	if limit > 0 {
		fmt.Fprintf(w, `<line x1="%d" x2="%g" y1="%.1f" y2="%.1f" stroke="#c8102e" stroke-dasharray="6 4" stroke-width="1.5"/>`+"\n", plotL, plotL+iw, y(limit), y(limit))
	}
	// X ticks: at most ~12 labels.
	every := 1
	for n/every > 12 {
		every *= 2
	}
	for i := 0; i < n; i += every {
		fmt.Fprintf(w, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", plotL+bw*(float64(i)+0.5), plotT+int(ih)+16, i*per)
		if i < len(labels) && labels[i] != "" {
			fmt.Fprintf(w, `<text x="%.1f" y="%d" text-anchor="middle" class=tok>%s</text>`+"\n", plotL+bw*(float64(i)+0.5), plotT+int(ih)+29, html.EscapeString(shortLabel(labels[i])))
		}
	}
	fmt.Fprintf(w, `<text x="%g" y="%d" text-anchor="middle">%s</text>`+"\n", plotL+iw/2, plotH-6, xlabel)
	fmt.Fprintf(w, `<text x="14" y="%g" text-anchor="middle" transform="rotate(-90 14 %g)">%s</text>`+"\n", plotT+ih/2, plotT+ih/2, html.EscapeString(ylabel))
	fmt.Fprintf(w, "</svg></div>\n")
}

// heatmap draws m[i][j] as a grid shaded from white (0) to rgb (hi).
// positionLabels are the tokens at the positions, for a plot's x axis: the
// input token where known, else the one predicted next; nil when the
// report has no token texts.
func positionLabels(ps []Position) []string {
	var out []string
	any := false
	for _, p := range ps {
		l := p.TokenText
		if l == "" && p.TargetText != "" {
			l = "→" + p.TargetText
		}
		any = any || l != ""
		out = append(out, l)
	}
	if !any {
		return nil
	}
	return out
}

// shortLabel keeps an axis label to 8 characters.
func shortLabel(s string) string {
	if r := []rune(s); len(r) > 8 {
		return string(r[:7]) + "…"
	}
	return s
}

// heatmap draws m; labels, when given and the cells are tall enough to
// read them, name the rows (queries) and columns (keys) by their tokens.
func heatmap(w io.Writer, m [][]float32, hi float64, caption string, rgb [3]int, labels []string) {
	n := len(m)
	if n == 0 {
		return
	}
	cols := len(m[0])
	cell := float64(heatSize) / math.Max(float64(n), float64(cols))
	pad := 30.0
	if cell < 9 || len(labels) < max(n, cols) {
		labels = nil
	}
	if labels != nil {
		pad = 80
	}
	W, H := pad+cell*float64(cols)+4, pad+cell*float64(n)+4
	fmt.Fprintf(w, `<figure><svg width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s">`+"\n", W, H, W, H, html.EscapeString(caption))
	fmt.Fprintf(w, `<text x="%g" y="12" text-anchor="middle">key →</text><text x="10" y="%g" text-anchor="middle" transform="rotate(-90 10 %g)">query →</text>`+"\n",
		pad+cell*float64(cols)/2, pad+cell*float64(n)/2, pad+cell*float64(n)/2)
	for i, row := range m {
		for j, v := range row {
			t := 0.0
			if hi > 0 {
				t = math.Min(math.Max(float64(v)/hi, 0), 1)
			}
			if t == 0 {
				continue
			}
			c := func(k int) int { return int(math.Round(255 + (float64(rgb[k])-255)*t)) }
			fmt.Fprintf(w, `<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="rgb(%d,%d,%d)"/>`, pad+cell*float64(j), pad+cell*float64(i), cell+0.05, cell+0.05, c(0), c(1), c(2))
		}
		fmt.Fprintln(w)
	}
	for i := 0; labels != nil && i < max(n, cols); i++ {
		c := pad + cell*(float64(i)+0.5)
		l := html.EscapeString(shortLabel(labels[i]))
		if i < n {
			fmt.Fprintf(w, `<text x="%g" y="%.1f" text-anchor="end" dominant-baseline="middle" class=tok>%s</text>`, pad-3, c, l)
		}
		if i < cols {
			fmt.Fprintf(w, `<text x="%.1f" y="%g" text-anchor="start" dominant-baseline="middle" transform="rotate(-90 %.1f %g)" class=tok>%s</text>`, c, pad-3, c, pad-3, l)
		}
	}
	fmt.Fprintf(w, `<rect x="%g" y="%g" width="%.2f" height="%.2f" fill="none" stroke="#999"/>`+"\n", pad, pad, cell*float64(cols), cell*float64(n))
	fmt.Fprintf(w, "</svg><figcaption>%s</figcaption></figure>\n", html.EscapeString(caption))
}
