package checkpoint

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

func TestStackedAndPart(t *testing.T) {
	var parts []*Tensor
	var all []byte
	for i := 0; i < 3; i++ {
		b := bytes.Repeat([]byte{byte(10 + i)}, 8) // two f32 each
		all = append(all, b...)
		parts = append(parts, MemTensor(tensor.Info{Name: "p" + string(rune('0'+i)), DType: tensor.F32, Shape: tensor.Shape{2}}, b))
	}
	s, err := Stacked("stack", parts)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Shape.Equal(tensor.Shape{3, 2}) || s.Size != 24 {
		t.Fatalf("shape %v size %d", s.Shape, s.Size)
	}
	got, err := s.ReadAll()
	if err != nil || !bytes.Equal(got, all) {
		t.Fatalf("ReadAll = %v, %v; want %v", got, err, all)
	}
	// Random access across the parts' boundaries.
	buf := make([]byte, 10)
	if _, err := s.Section().ReadAt(buf, 5); err != nil || !bytes.Equal(buf, all[5:15]) {
		t.Fatalf("ReadAt(5) = %v, %v; want %v", buf, err, all[5:15])
	}
	if _, err := s.Section().ReadAt(buf, 20); err != io.EOF {
		t.Fatalf("ReadAt past the end: %v, want EOF", err)
	}
	for i := 0; i < 3; i++ {
		p, err := s.Part(i, 3)
		if err != nil {
			t.Fatal(err)
		}
		b, err := p.ReadAll()
		if err != nil || !bytes.Equal(b, all[i*8:(i+1)*8]) || !p.Shape.Equal(tensor.Shape{2}) {
			t.Fatalf("part %d = %v %v, %v", i, b, p.Shape, err)
		}
	}
	if _, err := s.Part(3, 3); err == nil {
		t.Fatal("part 3 of 3 accepted")
	}
	if _, err := s.Part(0, 2); err == nil {
		t.Fatal("2 parts of a stack of 3 accepted")
	}
	odd := MemTensor(tensor.Info{Name: "odd", DType: tensor.F32, Shape: tensor.Shape{3}}, make([]byte, 12))
	if _, err := Stacked("stack", append(parts[:1:1], odd)); err == nil || !strings.Contains(err.Error(), `"odd"`) {
		t.Fatalf("stacking unequal shapes: %v", err)
	}
}
