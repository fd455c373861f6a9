package quant

import (
	"encoding/json"
	"math"
	"os"
	"strconv"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// Every code of every 8-bit float format torch has decodes to the float32
// torch gives it (testdata/fp8/decode.json, made by torch 2.6's own casts).
func TestDecodeFP8MatchesTorch(t *testing.T) {
	b, err := os.ReadFile("../testdata/fp8/decode.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref map[string][]string
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	for name, d := range map[string]tensor.DType{"float8_e4m3fn": tensor.F8_E4M3, "float8_e5m2": tensor.F8_E5M2,
		"float8_e4m3fnuz": tensor.F8_E4M3FNUZ, "float8_e5m2fnuz": tensor.F8_E5M2FNUZ} {
		if len(ref[name]) != 256 {
			t.Fatalf("%s: %d reference codes", name, len(ref[name]))
		}
		codes := make([]byte, 256)
		for i := range codes {
			codes[i] = byte(i)
		}
		got := make([]float32, 256)
		if n := DecodeFP8(got, codes, d); n != 256 {
			t.Fatalf("%s: decoded %d", name, n)
		}
		nans := 0
		for i, h := range ref[name] {
			bits, _ := strconv.ParseUint(h, 16, 32)
			want := math.Float32frombits(uint32(bits))
			if want != want {
				nans++
				if got[i] == got[i] {
					t.Errorf("%s: code %#02x is %v, torch gives NaN", name, i, got[i])
				}
				continue
			}
			if math.Float32bits(got[i]) != uint32(bits) {
				t.Errorf("%s: code %#02x is %v, torch gives %v", name, i, got[i], want)
			}
		}
		t.Logf("%s: 256 codes, %d NaN", name, nans)
	}
	// E8M0 (torch 2.6 lacks it): powers of two by definition.
	got := make([]float32, 3)
	DecodeFP8(got, []byte{127, 0, 254}, tensor.F8_E8M0)
	if got[0] != 1 || got[1] != float32(math.Ldexp(1, -127)) || got[2] != float32(math.Ldexp(1, 127)) {
		t.Errorf("e8m0: %v", got)
	}
}
