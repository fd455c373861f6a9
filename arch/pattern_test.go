package arch

import (
	"encoding/json"
	"strings"
	"testing"
)

func config(t *testing.T, s string) Config {
	t.Helper()
	var c Config
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	if err := d.Decode(&c); err != nil {
		t.Fatal(err)
	}
	return c
}

// pattern renders layers as one letter each: F full, S sliding, C chunked,
// lower case when the layer does not rotate.
func pattern(ls []Layer) string {
	var b strings.Builder
	for _, l := range ls {
		c := "FSC"[l.Mixer]
		if !l.Rope {
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
	return b.String()
}

func TestLayerPattern(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		f      *Family
		config string
		want   string
		window int
	}{
		{Llama, `{"num_hidden_layers": 3}`, "FFF", 0},
		{Llama, `{"model_type": "mistral", "num_hidden_layers": 3, "sliding_window": 8}`, "SSS", 8},
		{Llama, `{"model_type": "mistral", "num_hidden_layers": 2, "sliding_window": null}`, "FF", 0},
		{Llama, `{"model_type": "llama", "num_hidden_layers": 2, "sliding_window": 8}`, "FF", 0},
		{Gemma2, `{"num_hidden_layers": 4, "sliding_window": 16}`, "SFSF", 16},
		{Gemma3, `{"num_hidden_layers": 7, "sliding_window": 16}`, "SSSSSFS", 16},
		{Gemma3, `{"num_hidden_layers": 4, "sliding_window": 16, "sliding_window_pattern": 2}`, "SFSF", 16},
		{SmolLM3, `{"num_hidden_layers": 8}`, "FFFfFFFf", 0},
		{SmolLM3, `{"num_hidden_layers": 4, "no_rope_layers": [1, 0, 1, 1]}`, "FfFF", 0},
	} {
		ls, err := tc.f.LayerPattern(config(t, tc.config))
		if err != nil {
			t.Fatalf("%s %s: %v", tc.f.Name, tc.config, err)
		}
		if got := pattern(ls); got != tc.want {
			t.Errorf("%s %s: pattern %s, want %s", tc.f.Name, tc.config, got, tc.want)
		}
		for i, l := range ls {
			if l.Mixer == SlidingAttention && l.Window != tc.window {
				t.Errorf("%s %s: layer %d window %d, want %d", tc.f.Name, tc.config, i, l.Window, tc.window)
			}
		}
	}
}

func TestLayerTypes(t *testing.T) {
	t.Parallel()
	ms, ok, err := LayerTypes(config(t, `{"layer_types": ["sliding_attention", "full_attention", "chunked_attention"]}`), 3)
	if err != nil || !ok || len(ms) != 3 || ms[0] != SlidingAttention || ms[1] != FullAttention || ms[2] != ChunkedAttention {
		t.Fatalf("LayerTypes = %v %v %v", ms, ok, err)
	}
	if _, ok, err := LayerTypes(config(t, `{}`), 3); ok || err != nil {
		t.Fatalf("no layer_types: ok %v err %v", ok, err)
	}
	_, _, err = LayerTypes(config(t, `{"layer_types": ["full_attention", "mamba_x"]}`), 2)
	if err == nil || !strings.Contains(err.Error(), `layer_types[1] "mamba_x"`) {
		t.Fatalf("unknown kind: %v", err)
	}
	_, _, err = LayerTypes(config(t, `{"layer_types": ["full_attention"]}`), 2)
	if err == nil || !strings.Contains(err.Error(), "layer_types has 1 entries for 2 layers") {
		t.Fatalf("a list of another length: %v", err)
	}
	if _, _, err = LayerTypes(config(t, `{"layer_types": "full_attention"}`), 1); err == nil {
		t.Fatal("a string for layer_types: no error")
	}
}
