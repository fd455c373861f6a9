package output

import (
	"bytes"
	"testing"
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
