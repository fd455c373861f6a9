package main

import (
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
)

func TestLayerPatternRow(t *testing.T) {
	t.Parallel()
	kinds := func(spec string, window int, noRope, moe map[int]bool) []checkpoint.LayerKind {
		var ls []checkpoint.LayerKind
		for i, c := range spec {
			m := map[rune]string{'F': "full_attention", 'S': "sliding_attention", 'C': "chunked_attention", 'M': "mamba"}[c]
			w := 0
			if c == 'S' || c == 'C' {
				w = window
			}
			ls = append(ls, checkpoint.LayerKind{Layer: i, Mixer: m, Window: w, Rope: !noRope[i], MoE: moe[i]})
		}
		return ls
	}
	for _, tc := range []struct {
		ls   []checkpoint.LayerKind
		want string
	}{
		{kinds("FFFF", 0, nil, nil), ""},
		{kinds("FFFF", 0, nil, map[int]bool{0: true, 1: true, 2: true, 3: true}), ""},
		{kinds("SFSFSF", 128, nil, nil), "sliding_attention (128): 0-4/2; full_attention: 1-5/2"},
		{kinds("SSSSSFS", 4, nil, nil), "sliding_attention (4): 0-4,6; full_attention: 5"},
		{kinds("CCCFCCCF", 8192, map[int]bool{3: true, 7: true}, map[int]bool{1: true, 3: true, 5: true, 7: true}),
			"chunked_attention (8192): 0-2,4-6; full_attention: 3,7; no RoPE: 3,7; experts: 1-7/2"},
		{kinds("FFF", 0, nil, map[int]bool{1: true, 2: true}), "full_attention: 0-2; experts: 1-2"},
		// a recurrent pattern is shown even when uniform; its layers do not rotate
		{kinds("MMMM", 0, map[int]bool{0: true, 1: true, 2: true, 3: true}, nil), "mamba: 0-3"},
		{kinds("MMMFMMMF", 0, map[int]bool{0: true, 1: true, 2: true, 4: true, 5: true, 6: true}, nil),
			"mamba: 0-2,4-6; full_attention: 3,7"},
	} {
		if got := layerPatternRow(tc.ls); got != tc.want {
			t.Errorf("layerPatternRow = %q, want %q", got, tc.want)
		}
	}
}
