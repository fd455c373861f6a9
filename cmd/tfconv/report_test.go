package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/internal/page"
)

// pageData reads a page's embedded JSON into v.
func pageData(t *testing.T, path string, v any) []byte {
	t.Helper()
	h, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := page.Data(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatal(err)
	}
	return h
}

// asJSON is v as generic JSON values, to compare what two encodings hold.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func runOK(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := run(t, args...)
	if code != 0 {
		t.Fatalf("%s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return out
}

// The inspect page embeds --json whole, the memory at each context as
// --ctx N --json gives it, and parameters by kind that add up.
func TestInspectReport(t *testing.T) {
	t.Parallel()
	report := filepath.Join(t.TempDir(), "inspect.html")
	runOK(t, "inspect", sampleGGUF, "--report", report)
	var want, got struct {
		Inspect  any               `json:"inspect"`
		MemoryAt []json.RawMessage `json:"memory_at"`
		Places   []tensorPlace     `json:"places"`
		Kinds    []kindJSON        `json:"kinds"`
	}
	if err := json.Unmarshal([]byte(runOK(t, "inspect", sampleGGUF, "--json")), &want.Inspect); err != nil {
		t.Fatal(err)
	}
	pageData(t, report, &got)
	if !reflect.DeepEqual(got.Inspect, want.Inspect) {
		t.Errorf("page's inspect data differs from --json:\n%v\n%v", got.Inspect, want.Inspect)
	}
	if len(got.MemoryAt) != len(reportContexts) {
		t.Fatalf("%d memory rows, want %d", len(got.MemoryAt), len(reportContexts))
	}
	for i, n := range reportContexts {
		var j struct {
			Memory any `json:"memory"`
		}
		if err := json.Unmarshal([]byte(runOK(t, "inspect", sampleGGUF, "--json", "--ctx", fmt.Sprint(n))), &j); err != nil {
			t.Fatal(err)
		}
		var m any
		if err := json.Unmarshal(got.MemoryAt[i], &m); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(m, j.Memory) {
			t.Errorf("memory at %d: page %v, --ctx %v", n, m, j.Memory)
		}
	}
	var ij struct {
		Tensors []tensorJSON `json:"tensors"`
	}
	if err := json.Unmarshal([]byte(runOK(t, "inspect", sampleGGUF, "--json")), &ij); err != nil {
		t.Fatal(err)
	}
	if len(got.Places) != len(ij.Tensors) {
		t.Fatalf("%d places for %d tensors", len(got.Places), len(ij.Tensors))
	}
	var layered int64
	for i, x := range ij.Tensors {
		if got.Places[i] != placeOf(x.Name) {
			t.Errorf("%s: place %+v", x.Name, got.Places[i])
		}
		if got.Places[i].Layer != "" {
			layered += x.Params
		}
	}
	var kinds int64
	for _, k := range got.Kinds {
		kinds += k.Params
	}
	if kinds != layered || len(got.Kinds) == 0 {
		t.Errorf("kinds add up to %d parameters, the layers' tensors %d", kinds, layered)
	}
	if p := placeOf("blk.3.attn_q.weight"); p != (tensorPlace{"3", "attn_q.weight"}) {
		t.Errorf("placeOf(blk.3.attn_q.weight) = %+v", p)
	}
	if p := placeOf("model.encoder.layers.11.fc1.weight"); p != (tensorPlace{"encoder.11", "fc1.weight"}) {
		t.Errorf("placeOf(model.encoder.layers.11.fc1.weight) = %+v", p)
	}
	// An existing report is kept without --force.
	if code, _, errOut := run(t, "inspect", sampleGGUF, "--report", report); code == 0 || !strings.Contains(errOut, "--force") {
		t.Errorf("second --report without --force: exit %d: %s", code, errOut)
	}
	runOK(t, "inspect", sampleGGUF, "--report", report, "--force")
}

// The quantize page embeds --json's report whole, and the error by layer
// is that of the report's tensors.
func TestQuantizeReport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	report := filepath.Join(dir, "quantize.html")
	args := []string{"quantize", sampleGGUF, filepath.Join(dir, "q.gguf"), "q4_k_m", "--allow-requantize", "--dry-run"}
	runOK(t, append(args, "--report", report)...)
	var want quantizeJSON
	if err := json.Unmarshal([]byte(runOK(t, append(args, "--json")...)), &want); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Quantize any                 `json:"quantize"`
		Layers   []quantizeLayerJSON `json:"layers"`
	}
	pageData(t, report, &got)
	if !reflect.DeepEqual(got.Quantize, asJSON(t, want)) {
		t.Errorf("page's quantize data differs from --json")
	}
	byLayer := map[string][]quantizeTensorJSON{}
	for _, x := range want.Tensors {
		l := placeOf(x.Name).Layer
		byLayer[l] = append(byLayer[l], x)
	}
	if len(got.Layers) != len(byLayer) || len(got.Layers) < 2 {
		t.Fatalf("%d layers on the page, %d in the report", len(got.Layers), len(byLayer))
	}
	for _, l := range got.Layers {
		xs := byLayer[l.Layer]
		worst, rmse, bytes := math.Inf(1), 0.0, int64(0)
		for _, x := range xs {
			bytes += x.Bytes
			rmse = math.Max(rmse, x.RMSE)
			if x.SQNRdB != nil {
				worst = math.Min(worst, *x.SQNRdB)
			}
		}
		if l.Tensors != len(xs) || l.Bytes != bytes || l.MaxRMSE != rmse || (l.MinSQNRdB == nil) != math.IsInf(worst, 1) ||
			(l.MinSQNRdB != nil && *l.MinSQNRdB != worst) {
			t.Errorf("layer %q: %+v; report: %d tensors, %d bytes, max RMSE %g, worst SQNR %g", l.Layer, l, len(xs), bytes, rmse, worst)
		}
	}
}

var figRE = regexp.MustCompile(`data-fig="([^"]+)" data-value="([^"]+)"`)

// verify's page shows --json's figures (marked with data-fig) and labels
// its position axis with the prompt's tokens.
func TestVerifyReportFigures(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	report, cand := filepath.Join(dir, "verify.html"), filepath.Join(dir, "q4.gguf")
	runOK(t, "quantize", sampleGGUF, cand, "q4_k_m", "--allow-requantize")
	args := []string{"verify", sampleGGUF, cand, "--prompt", "The best way"}
	runOK(t, append(args, "--report", report)...)
	var j map[string]any
	if err := json.Unmarshal([]byte(runOK(t, append(args, "--json")...)), &j); err != nil {
		t.Fatal(err)
	}
	var d struct {
		Summary map[string]any   `json:"summary"`
		Layers  []map[string]any `json:"layers"`
		Labels  []string         `json:"labels"`
	}
	h := pageData(t, report, &d)
	for k, v := range d.Summary {
		// --json's "positions" is the list (Report.Positions hides the
		// summary's count of the same name).
		if k != "positions" && !reflect.DeepEqual(j[k], v) {
			t.Errorf("summary %s: page %v, --json %v", k, v, j[k])
		}
	}
	if !reflect.DeepEqual(asJSON(t, d.Layers), j["layers"]) {
		t.Errorf("layers differ from --json")
	}
	if len(d.Labels) < 2 || d.Labels[1] != "▁The" {
		t.Errorf("position labels %q", d.Labels)
	}
	if !strings.Contains(string(h), `class=tok>▁The</text>`) {
		t.Errorf("the KLD plot's axis has no token labels")
	}
	layer := 0
	n := 0
	for _, m := range figRE.FindAllStringSubmatch(string(h), -1) {
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			t.Fatalf("%s: %v", m[1], err)
		}
		var want any
		switch name := m[1]; {
		case name == "kld.mean":
			want = j["kld"].(map[string]any)["mean"]
		case strings.HasPrefix(name, "layer."):
			want = j["layers"].([]any)[layer].(map[string]any)[strings.TrimPrefix(name, "layer.")]
			if name == "layer.max_abs" {
				layer++
			}
		default:
			want = j[name]
		}
		if want != v || (v == 0 && m[1] == "kld.mean") {
			t.Errorf("%s: page %v, --json %v", m[1], v, want)
		}
		n++
	}
	if n < 6 {
		t.Errorf("%d figures marked", n)
	}
}
