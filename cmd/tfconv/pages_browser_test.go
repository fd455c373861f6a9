package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// browserTimeout bounds one headless Chromium run: a page renders in well
// under a second; a cold start on a loaded 2-core machine takes a few.
const browserTimeout = 90 * time.Second

// screens are the window sizes the pages are photographed at: a phone
// (390 px wide, an iPhone 12-15) and a wide screen, tall enough to show
// most of a page.
var screens = [][2]int{{390, 2400}, {1440, 1800}}

// chromium is the headless browser the pages are opened in: $CHROMIUM,
// else Debian's chromium on PATH; "" when there is none.
func chromium() string {
	if c := os.Getenv("CHROMIUM"); c != "" {
		return c
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

func headless(t *testing.T, bin string, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
	defer cancel()
	home := t.TempDir() // a profile of its own: no state shared between runs
	args = append([]string{"--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-extensions", "--disable-background-networking", "--hide-scrollbars",
		"--user-data-dir=" + home, "--enable-logging=stderr", "--v=0"}, args...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "HOME="+home)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, e.String())
	}
	return o.String(), e.String()
}

// renderedFig is one element of the rendered DOM that carries a figure.
type renderedFig struct{ name, value, tensor string }

var (
	figTagRE  = regexp.MustCompile(`<[a-z]+\s[^>]*\bdata-fig="[^"]*"[^>]*>`)
	figAttrRE = regexp.MustCompile(`([a-z-]+)="([^"]*)"`)
	// Chromium 156 logs every console message, console.error and uncaught
	// exceptions ("Uncaught TypeError: …") alike, as
	// `[…:INFO:CONSOLE:1] "text", source: file:///… (1)`, with no level
	// to tell an error by. The pages log nothing, so any console line
	// from them fails.
	consoleErrRE = regexp.MustCompile(`(?m)^.*:CONSOLE[:(].*$`)
)

func renderedFigs(dom string) []renderedFig {
	var out []renderedFig
	for _, tag := range figTagRE.FindAllString(dom, -1) {
		var f renderedFig
		for _, a := range figAttrRE.FindAllStringSubmatch(tag, -1) {
			v := html.UnescapeString(a[2])
			switch a[1] {
			case "data-fig":
				f.name = v
			case "data-value":
				f.value = v
			case "data-name":
				f.tensor = v
			}
		}
		out = append(out, f)
	}
	return out
}

// sameFigure says whether a rendered value is the --json value: numbers
// by value (JavaScript and Go spell some differently, 1e+21 and 1e21),
// null as "null", strings as they are.
func sameFigure(got string, want any) bool {
	switch w := want.(type) {
	case nil:
		return got == "null"
	case float64:
		g, err := strconv.ParseFloat(got, 64)
		return err == nil && g == w
	case string:
		return got == w
	}
	return false
}

// openPage renders path in headless Chromium: no console error or
// uncaught exception, the shared script's data-rendered="ok" and its
// sort and filter self-test (page.js selftest) passed, every
// figure equal to what want(name, n-th occurrence, tensor) gives, and
// screenshots at each of screens into out.
func openPage(t *testing.T, bin, path, out string, want func(name string, i int, tensor string) (any, bool)) {
	t.Helper()
	url := "file://" + path
	dom, logs := headless(t, bin, "--dump-dom", url+"#selftest")
	if m := consoleErrRE.FindAllString(logs, -1); len(m) > 0 {
		t.Errorf("%s: console errors:\n%s", filepath.Base(path), strings.Join(m, "\n"))
	}
	if i := strings.Index(dom, `data-page-error="`); i >= 0 {
		t.Errorf("%s: script error: %.300s", filepath.Base(path), dom[i:])
	}
	if !strings.Contains(dom, `data-rendered="ok"`) {
		t.Errorf("%s: the page's scripts did not finish (no data-rendered=\"ok\")", filepath.Base(path))
	}
	selftest := regexp.MustCompile(`data-selftest="([^"]*)"`).FindStringSubmatch(dom)
	if selftest == nil {
		t.Errorf("%s: the sort and filter self-test did not run", filepath.Base(path))
	} else {
		t.Logf("%s: self-test: %s", filepath.Base(path), selftest[1])
	}
	figs := renderedFigs(dom)
	seen := map[string]int{}
	for _, f := range figs {
		i := seen[f.name]
		seen[f.name]++
		w, ok := want(f.name, i, f.tensor)
		if !ok {
			t.Errorf("%s: figure %s #%d (%s) has no --json counterpart", filepath.Base(path), f.name, i, f.tensor)
			continue
		}
		if !sameFigure(f.value, w) {
			t.Errorf("%s: figure %s #%d %s: page %q, --json %v", filepath.Base(path), f.name, i, f.tensor, f.value, w)
		}
	}
	names := make([]string, 0, len(seen))
	for n, c := range seen {
		names = append(names, fmt.Sprintf("%s×%d", n, c))
	}
	sort.Strings(names)
	t.Logf("%s: %d bytes, %d figures checked against --json: %s", filepath.Base(path), fileSize(t, path), len(figs), strings.Join(names, " "))
	if len(figs) == 0 {
		t.Errorf("%s: no figures rendered", filepath.Base(path))
	}
	base := strings.TrimSuffix(filepath.Base(path), ".html")
	for _, sc := range screens {
		shot := filepath.Join(out, fmt.Sprintf("%s-%d.png", base, sc[0]))
		headless(t, bin, "--screenshot="+shot, fmt.Sprintf("--window-size=%d,%d", sc[0], sc[1]), url)
		if st, err := os.Stat(shot); err != nil || st.Size() == 0 {
			t.Errorf("screenshot %s: %v", shot, err)
		} else {
			t.Logf("screenshot %s (%d bytes)", shot, st.Size())
		}
	}
}

func fileSize(t *testing.T, path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// jsonOf runs tfconv with args and decodes its --json.
func jsonOf(t *testing.T, args ...string) map[string]any {
	t.Helper()
	var j map[string]any
	if err := json.Unmarshal([]byte(runOK(t, args...)), &j); err != nil {
		t.Fatal(err)
	}
	return j
}

func rowsOf(v any) []map[string]any {
	var out []map[string]any
	for _, r := range v.([]any) {
		out = append(out, r.(map[string]any))
	}
	return out
}

func at(rows []map[string]any, i int, key string) (any, bool) {
	if i >= len(rows) {
		return nil, false
	}
	v, ok := rows[i][key]
	return v, ok
}

// The three pages open in headless Chromium without a console error, show
// --json's figures, and are photographed at phone and desktop widths
// into $TFCONV_PAGES_OUT, for CI to keep. Runs only when that is set
// (scripts/pages-check.sh), and skips without a Chromium (Debian's package
// "chromium", or $CHROMIUM).
func TestReportPagesInBrowser(t *testing.T) {
	out := os.Getenv("TFCONV_PAGES_OUT")
	if out == "" {
		// Nine browser starts take a minute or two on a loaded machine:
		// asked for by scripts/pages-check.sh (CI runs it), not by every
		// go test.
		t.Skip("set TFCONV_PAGES_OUT=DIR (scripts/pages-check.sh does) to open the pages in headless Chromium")
	}
	bin := chromium()
	if bin == "" {
		t.Skip("no chromium on PATH (Debian's package chromium; or set $CHROMIUM): the pages were not opened in a browser")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	out, _ = filepath.Abs(out)
	dir := t.TempDir()
	q4 := filepath.Join(dir, "q4.gguf")
	sample, _ := filepath.Abs(sampleGGUF)

	t.Run("inspect", func(t *testing.T) {
		page := filepath.Join(out, "inspect.html")
		runOK(t, "inspect", sample, "--report", page, "--force")
		j := jsonOf(t, "inspect", sample, "--json")
		var mem []map[string]any
		for _, n := range reportContexts {
			mem = append(mem, jsonOf(t, "inspect", sample, "--json", "--ctx", fmt.Sprint(n))["memory"].(map[string]any))
		}
		tensors := rowsOf(j["tensors"])
		dtypeOf := map[string]any{}
		kinds := map[string]map[string]float64{}
		var kindOrder []string
		for _, x := range tensors {
			name := x["name"].(string)
			dtypeOf[name] = x["dtype"]
			pl := placeOf(name)
			if pl.Layer == "" {
				continue
			}
			if kinds[pl.Kind] == nil {
				kinds[pl.Kind] = map[string]float64{}
				kindOrder = append(kindOrder, pl.Kind)
			}
			kinds[pl.Kind]["tensors"]++
			kinds[pl.Kind]["params"] += x["params"].(float64)
			kinds[pl.Kind]["bytes"] += x["bytes"].(float64)
		}
		openPage(t, bin, page, out, func(name string, i int, tensor string) (any, bool) {
			group, key, _ := strings.Cut(name, ".")
			switch group {
			case "memory":
				if i >= len(mem) {
					return nil, false
				}
				v, ok := mem[i][key]
				return v, ok
			case "layer":
				return at(rowsOf(j["layer_table"]), i, key)
			case "dtype":
				return at(rowsOf(j["dtypes"]), i, key)
			case "tensor":
				return at(tensors, i, key)
			case "kind":
				if i >= len(kindOrder) {
					return nil, false
				}
				return kinds[kindOrder[i]][key], true
			case "map":
				v, ok := dtypeOf[tensor]
				return v, ok
			}
			v, ok := j[name]
			return v, ok
		})
	})

	t.Run("quantize", func(t *testing.T) {
		page := filepath.Join(out, "quantize.html")
		args := []string{"quantize", sample, q4, "q4_k_m", "--allow-requantize", "--force"}
		runOK(t, append(args, "--report", page)...)
		j := jsonOf(t, append(args, "--json")...)
		tensors := rowsOf(j["tensors"])
		typeOf := map[string]any{}
		byType := map[string]map[string]float64{}
		var p quantizeJSON
		b, _ := json.Marshal(j)
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		for _, x := range tensors {
			typeOf[x["name"].(string)] = x["type"]
			ty := x["type"].(string)
			if byType[ty] == nil {
				byType[ty] = map[string]float64{}
			}
			byType[ty]["tensors"]++
			byType[ty]["bytes"] += x["bytes"].(float64)
		}
		types := make([]string, 0, len(byType))
		for ty := range byType {
			types = append(types, ty)
		}
		sort.Strings(types)
		var layers []map[string]any // the layers' rows, as the test's own sums of --json
		for _, l := range quantizePage(&p, "", "").Layers {
			if l.Layer != "" {
				layers = append(layers, asJSON(t, l).(map[string]any))
			}
		}
		openPage(t, bin, page, out, func(name string, i int, tensor string) (any, bool) {
			group, key, _ := strings.Cut(name, ".")
			switch group {
			case "tensor":
				return at(tensors, i, key)
			case "layer":
				return at(layers, i, key)
			case "type":
				if i >= len(types) {
					return nil, false
				}
				return byType[types[i]][key], true
			case "map":
				v, ok := typeOf[tensor]
				return v, ok
			case "tensor_count":
				return float64(len(tensors)), true
			}
			v, ok := j[name]
			return v, ok
		})
	})

	t.Run("verify", func(t *testing.T) {
		page := filepath.Join(out, "verify.html")
		if _, err := os.Stat(q4); err != nil {
			runOK(t, "quantize", sample, q4, "q4_k_m", "--allow-requantize", "--force")
		}
		args := []string{"verify", sample, q4, "--prompt", "The best way", "--attn-layer", "1"}
		runOK(t, append(args, "--report", page, "--force")...)
		j := jsonOf(t, append(args, "--json")...)
		openPage(t, bin, page, out, func(name string, i int, tensor string) (any, bool) {
			group, key, _ := strings.Cut(name, ".")
			switch {
			case name == "kld.mean":
				return j["kld"].(map[string]any)["mean"], true
			case group == "layer":
				return at(rowsOf(j["layers"]), i, key)
			}
			v, ok := j[name]
			return v, ok
		})
	})
}

// The browser check's own parts: Chromium 156's console lines (copied from
// its stderr on a page that calls console.error and then throws) are
// caught, its other logging is not, and figures compare by value.
func TestBrowserCheckParts(t *testing.T) {
	logs := `[14179:14179:1128/014106.971031:INFO:CONSOLE:1] "boom-console", source: file:///tmp/bad.html (1)
[14179:14179:1128/014106.976446:INFO:CONSOLE:1] "Uncaught TypeError: Cannot read properties of null (reading 'x')", source: file:///tmp/bad.html (1)
[14179:14190:1128/014106.5:ERROR:bus.cc(407)] Failed to connect to the bus: Could not parse server address
`
	if n := len(consoleErrRE.FindAllString(logs, -1)); n != 2 {
		t.Errorf("%d console lines caught, want 2", n)
	}
	figs := renderedFigs(`<td data-fig="tensor.bytes" data-value="1024" class="n">1,024</td><td style="background:#fff" title="a" data-fig="map.type" data-name="blk.0.a&amp;b" data-value="Q4_K"></td>`)
	if len(figs) != 2 || figs[0] != (renderedFig{"tensor.bytes", "1024", ""}) || figs[1] != (renderedFig{"map.type", "Q4_K", "blk.0.a&b"}) {
		t.Errorf("figures %+v", figs)
	}
	for _, c := range []struct {
		got  string
		want any
		ok   bool
	}{{"1e+21", 1e21, true}, {"0.1", 0.1, true}, {"0.1", 0.10000000000000002, false}, {"null", nil, true}, {"Q4_K", "Q4_K", true}, {"3", "3", true}, {"3", 4.0, false}} {
		if sameFigure(c.got, c.want) != c.ok {
			t.Errorf("sameFigure(%q, %v) = %v", c.got, c.want, !c.ok)
		}
	}
}
