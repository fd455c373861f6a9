package ctensors

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseConfig: any quantization_config gives a layout or an error,
// never a panic, and a layout it gives has sizes in range.
func FuzzParseConfig(f *testing.F) {
	for _, dir := range []string{"w4a16", "w4a16-asym", "w8a16", "w8a8-int", "fp8-block", "nvfp4"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "ct", dir, "config.json"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"quantization_config":{"format":"pack-quantized","config_groups":{"a":{"weights":{"num_bits":4}},"b":{"weights":{"num_bits":8}}}}}`))
	f.Add([]byte(`{"quantization_config":{"format":"pack-quantized","config_groups":{"a":{"weights":{"num_bits":1e30,"block_structure":[0,-1]}}}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var cfg map[string]any
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		if d.Decode(&cfg) != nil {
			return
		}
		qc, _ := cfg["quantization_config"].(map[string]any)
		cc, err := ParseConfig(qc)
		if err != nil {
			return
		}
		if cc.Bits < 0 || cc.Bits > 1<<20 || cc.GroupSize < 0 || cc.GroupSize > 1<<20 || cc.Block[0] < 0 || cc.Block[1] < 0 {
			t.Fatalf("accepted %+v", cc)
		}
		_ = cc.String()
	})
}
