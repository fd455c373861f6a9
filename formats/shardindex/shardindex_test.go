package shardindex

import (
	"errors"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

func TestParse(t *testing.T) {
	idx, err := Parse([]byte(`{"metadata":{"total_size":24},"weight_map":{"a":"m-1.safetensors","b":"m-2.safetensors"},"x":[1,{"y":2}]}`), "i.json", "safetensors")
	if err != nil {
		t.Fatal(err)
	}
	if idx.WeightMap["b"] != "m-2.safetensors" || len(idx.WeightMap) != 2 || idx.Metadata["total_size"] == nil {
		t.Fatalf("%+v", idx)
	}
	bad := []struct{ in, msg string }{
		{`{"weight_map":{"a":1}}`, "must be a string"},
		{`{"weight_map":{"a":"x","a":"y"}}`, "appears twice in weight_map"},
		{`{"weight_map":{},"weight_map":{}}`, "appears twice"},
		{`{"weight_map":{"a":"../x"}}`, "not a plain file name"},
		{`{"weight_map":{"a":"x\\y"}}`, "not a plain file name"},
		{`{"weight_map":{"a":"x\u0000"}}`, "not a plain file name"},
		{`{"metadata":3,"weight_map":{}}`, "want an object"},
		{`{"x":` + strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1) + `,"weight_map":{}}`, "nested deeper"},
		{`{"weight_map":{}} {}`, "text after"},
		{`[]`, "not a JSON object"},
		{`{}`, `no "weight_map"`},
		{"{\"weight_map\":{\"\xff\":\"x\"}}", "not valid UTF-8"},
	}
	for _, b := range bad {
		_, err := Parse([]byte(b.in), "i.json", "pytorch")
		var fe *tensor.FormatError
		if err == nil || !errors.As(err, &fe) || !strings.Contains(err.Error(), b.msg) || fe.File != "i.json" || fe.Format != "pytorch" {
			t.Errorf("%s: %v, want a format error saying %q", b.in, err, b.msg)
		}
	}
}

// FuzzParse: any bytes give an index or a format error, never a panic, and
// an accepted index names only plain shard files.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"weight_map":{"a":"s.safetensors"}}`, `{"metadata":{"total_size":1},"weight_map":{}}`,
		`{"x":[[[]]],"weight_map":{"a":"b","c":"d"}}`, `{"weight_map":{"a":"../x"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		idx, err := Parse(b, "f.json", "safetensors")
		if err != nil {
			var fe *tensor.FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("not a format error: %v", err)
			}
			return
		}
		for _, shard := range idx.WeightMap {
			if !PlainName(shard) {
				t.Fatalf("accepted shard %q", shard)
			}
		}
	})
}
