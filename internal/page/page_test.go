package page

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// Strings in the data cannot close the script element or open a comment,
// and the data reads back as it went in.
func TestWriteEscapesData(t *testing.T) {
	in := map[string]any{"s": "</script><script>alert(1)</script><!-- & \u2028", "n": 1.5}
	var b bytes.Buffer
	if err := Write(&b, Page{Title: "a </title> b", Body: "<h1>x</h1>", Data: in, Script: "P.el('p');"}); err != nil {
		t.Fatal(err)
	}
	h := b.String()
	if n := strings.Count(h, "</script>"); n != 4 { // data, shared, page, done
		t.Errorf("%d </script> in the page, want 4", n)
	}
	if strings.Contains(h, "alert(1)</") || strings.Contains(h, "<!-- &") || !strings.Contains(h, "<title>a &lt;/title&gt; b</title>") {
		t.Errorf("unescaped:\n%s", h)
	}
	raw, err := Data(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("data read back %v, want %v", out, in)
	}
	for _, bad := range []string{"http://", "https://", "//cdn", "@import", "src="} {
		if strings.Contains(h, bad) {
			t.Errorf("page refers outside itself: %q", bad)
		}
	}
}
