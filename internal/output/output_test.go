package output

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestJSONNilSlicesAreEmptyLists(t *testing.T) {
	type inner struct {
		IDs  []int    `json:"ids"`
		Skip []string `json:"skip,omitempty"`
	}
	v := struct {
		Top    []string            `json:"top"`
		Nested *inner              `json:"nested"`
		Rows   []inner             `json:"rows"`
		ByName map[string][]int    `json:"by_name"`
		Any    any                 `json:"any"`
		Raw    []byte              `json:"raw"`
		None   *inner              `json:"none"`
		Deep   map[string]*inner   `json:"deep"`
		Empty  map[string][]string `json:"empty"`
	}{Nested: &inner{}, Rows: []inner{{}}, ByName: map[string][]int{"a": nil}, Any: inner{},
		Deep: map[string]*inner{"x": {}}}
	var b bytes.Buffer
	if err := JSONLine(&b, v); err != nil {
		t.Fatal(err)
	}
	want := `{"top":[],"nested":{"ids":[]},"rows":[{"ids":[]}],"by_name":{"a":[]},"any":{"ids":[]},"raw":null,"none":null,"deep":{"x":{"ids":[]}},"empty":null}` + "\n"
	if b.String() != want {
		t.Errorf("got  %s\nwant %s", b.String(), want)
	}
}

// TestRenderBoxedHeadersAndWidth: a boxed table keeps its headers exactly as
// written (tablewriter's auto-format made "SQNR dB" "SQNR D B") and fits the
// width it is given, wrapping long cells instead of running past it.
func TestRenderBoxedHeadersAndWidth(t *testing.T) {
	t.Parallel()
	tb := NewTable("tensor", "type", "SQNR dB", "bits/weight")
	tb.Row("blk.0.attn_q.weight", "Q4_K", "21.37", "4.500")
	tb.Row("blk.0.ffn_down.weight_with_a_rather_long_name_that_will_not_fit", "Q6_K", "28.90", "6.563")
	for _, width := range []int{0, 48} {
		var b bytes.Buffer
		if err := tb.RenderBoxed(&b, width); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, h := range []string{"SQNR dB", "bits/weight", "tensor"} {
			if !strings.Contains(out, h) {
				t.Errorf("width %d: header %q not printed as written:\n%s", width, h, out)
			}
		}
		widest := 0
		for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
			widest = max(widest, utf8.RuneCountInString(l))
		}
		if width > 0 && widest > width {
			t.Errorf("width %d: a line of %d columns:\n%s", width, widest, out)
		}
		if width == 0 && widest < 80 {
			t.Errorf("no width limit: widest line %d columns, want the long name on one line:\n%s", widest, out)
		}
		if !strings.Contains(strings.ReplaceAll(out, " ", ""), "28.90") {
			t.Errorf("width %d: a value lost:\n%s", width, out)
		}
	}
}
