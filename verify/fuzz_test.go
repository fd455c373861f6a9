package verify

import (
	"bytes"
	"testing"
)

// FuzzReadBaseline: any bytes give a baseline or an error, never a panic,
// and an accepted baseline compares without panicking.
func FuzzReadBaseline(f *testing.F) {
	b, err := NewBaseline([]int{1, 2, 3}, nil, [][]float32{{0, 1, 2, 3}, {3, 2, 1, 0}, {1, 1, 1, 1}},
		[][][]float32{{{1, 2}, {3, 4}, {5, 6}}}, 2)
	if err != nil {
		f.Fatal(err)
	}
	var buf bytes.Buffer
	b.Write(&buf)
	f.Add(buf.Bytes())
	f.Add([]byte(`{"format":"tfconv-verify-baseline","version":1,"tokens":[1],"layers":1000000,"d_model":1000000,"layer_positions":[0],"hidden":"AAAA"}`))
	f.Add([]byte(`{"format":"tfconv-verify-baseline","version":1,"tokens":[1],"positions":[{"top":[99],"logits":[1],"logprobs":[0]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ReadBaseline(bytes.NewReader(data), "fuzz.json")
		if err != nil {
			return
		}
		logits := make([][]float32, len(b.Positions))
		for i := range logits {
			logits[i] = []float32{0, 1, 2, 3}
		}
		layers := [][][]float32{{{1, 2}, {3, 4}, {5, 6}}}
		CompareBaseline(b, logits, layers)
	})
}
