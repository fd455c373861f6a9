package arch

import (
	"encoding/binary"
	"math"
	"os"
	"testing"
)

// TestExpfTorch holds expf to torch's float32 exp bit for bit
// (testdata/expf-torch.bin: half of the values are ones where torch's
// result is not the correctly rounded one).
func TestExpfTorch(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/expf-torch.bin")
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 2000*8 {
		t.Fatalf("expf-torch.bin: %d bytes", len(b))
	}
	bad := 0
	for i := 0; i+8 <= len(b); i += 8 {
		x := math.Float32frombits(binary.LittleEndian.Uint32(b[i:]))
		want := math.Float32frombits(binary.LittleEndian.Uint32(b[i+4:]))
		if got := expf(x); math.Float32bits(got) != math.Float32bits(want) {
			if bad < 5 {
				t.Errorf("expf(%v) = %v, torch %v", x, got, want)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d differ from torch", bad, len(b)/8)
	}
}

// TestLogOfExpf: A_log written back from a GGUF's A gives torch the same A
// (exp of it), over the range Mamba's A_log takes (log 1 to log 16) and
// beyond.
func TestLogOfExpf(t *testing.T) {
	t.Parallel()
	for i := 0; i < 20000; i++ {
		a := float32(-3 + 9*float64(i)/20000)
		y := expf(a)
		if got := expf(logOfExpf(y)); got != y {
			t.Fatalf("a = %v: exp(logOfExpf(%v)) = %v", a, y, got)
		}
	}
}
