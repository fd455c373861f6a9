package quant

import (
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// Every finite E4M3 value encodes to its own code; a value halfway between
// two goes to the even code, as torch's cast rounds; beyond 448 saturates.
func TestEncodeE4M3(t *testing.T) {
	tab := fp8Tables[tensor.F8_E4M3]
	for c := range 256 {
		if c&0x7F == 0x7F {
			continue // NaN
		}
		if got := EncodeE4M3(tab[c]); got != byte(c) {
			t.Errorf("code %#x (%g) encodes to %#x", c, tab[c], got)
		}
	}
	for c := 0; c < 0x7E; c++ {
		mid := (tab[c] + tab[c+1]) / 2
		want := byte(c)
		if c%2 == 1 {
			want = byte(c + 1)
		}
		if got := EncodeE4M3(mid); got != want {
			t.Errorf("midpoint of %#x and %#x (%g) encodes to %#x, want %#x", c, c+1, mid, got, want)
		}
		if got := EncodeE4M3(-mid); got != want|0x80 {
			t.Errorf("-%g encodes to %#x", mid, got)
		}
	}
	if EncodeE4M3(1e9) != 0x7E || EncodeE4M3(-500) != 0xFE {
		t.Error("no saturation at ±448")
	}
}

// PackCT packs as pack_to_int32: offset, low bits first, padded rows.
func TestPackCT(t *testing.T) {
	// 4 bits, one row of 9 values: two words, the second padded.
	got := PackCT([]float32{-8, -7, 0, 1, 7, 2, 3, 4, -1}, 1, 9, 4, false)
	want := []byte{0x10, 0x98, 0xAF, 0xCB, 0x07, 0, 0, 0} // +8: 0 1 8 9 15 10 11 12 | 7
	if string(got) != string(want) {
		t.Errorf("packed % x, want % x", got, want)
	}
	// 8 bits down a column of 5: words [2, 1].
	got = PackCT([]float32{-128, 127, 0, 1, -1}, 5, 1, 8, true)
	want = []byte{0x00, 0xFF, 0x80, 0x81, 0x7F, 0, 0, 0}
	if string(got) != string(want) {
		t.Errorf("packed % x, want % x", got, want)
	}
}
