package convert

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
)

// TestMLXQuantizeMatchesMLXSave: quantize --to mlx of the smollm3 fixture
// (4 bits, group 64) writes every tensor byte for byte as MLX itself wrote
// it (testdata/mlx/smollm3-q4g64: mx::quantize of each 2-D weight and
// mx::save_safetensors, MLX 846d176; its README has the command), and
// reads MLX's directory back as the same float weights it reads its own.
func TestMLXQuantizeMatchesMLXSave(t *testing.T) {
	t.Parallel()
	ref := filepath.Join("..", "testdata", "mlx", "smollm3-q4g64")
	dir := filepath.Join(t.TempDir(), "mlx")
	if _, err := Run(filepath.Join("..", "testdata", "arch", "smollm3", "hf"), dir, Options{To: MLX, Bits: 4, GroupSize: 64}); err != nil {
		t.Fatal(err)
	}
	for _, open := range []func(string) (*checkpoint.Checkpoint, error){checkpoint.OpenStored, checkpoint.Open} {
		ours, err := open(dir)
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := open(ref)
		if err != nil {
			t.Fatal(err)
		}
		if len(ours.Tensors) != len(theirs.Tensors) {
			t.Fatalf("%d tensors, MLX wrote %d", len(ours.Tensors), len(theirs.Tensors))
		}
		for _, tt := range theirs.Tensors {
			mine, ok := ours.Tensor(tt.Name)
			if !ok {
				t.Fatalf("no tensor %q (MLX wrote it)", tt.Name)
			}
			a, err := mine.ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			b, err := tt.ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			if mine.DType != tt.DType || !mine.Shape.Equal(tt.Shape) || !bytes.Equal(a, b) {
				t.Errorf("tensor %q: %v %v differs from MLX's %v %v", tt.Name, mine.DType, mine.Shape, tt.DType, tt.Shape)
			}
		}
		ours.Close()
		theirs.Close()
	}
}
