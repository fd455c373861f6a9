package synth

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/tfconv/tfconv/formats/safetensors"
	"github.com/tfconv/tfconv/tensor"
)

// Perturb copies the single-file Hugging Face checkpoint in dir (config.json
// and model.safetensors) into out, an existing empty directory, with row
// `row` of the F32 tensor name multiplied by factor: a model damaged in one
// known place, for the tests that check verify finds and locates the damage.
// It goes through the project's own safetensors writer, so the copy differs
// from the original in exactly that row.
func Perturb(dir, out, name string, row int, factor float32) error {
	src, err := safetensors.Open(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		return err
	}
	defer src.Close()
	cfg, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "config.json"), cfg, 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(out, "model.safetensors"))
	if err != nil {
		return err
	}
	defer f.Close()
	infos := make([]tensor.Info, len(src.Tensors))
	for i, x := range src.Tensors {
		infos[i] = x.Info
	}
	w, err := safetensors.NewWriter(f, infos, src.Metadata)
	if err != nil {
		return err
	}
	found := false
	for i := range src.Tensors {
		x := &src.Tensors[i]
		raw, err := io.ReadAll(x.Open())
		if err != nil {
			return err
		}
		if x.Name == name {
			if x.DType != tensor.F32 {
				return fmt.Errorf("synth: perturb: %s is %v, want F32", name, x.DType)
			}
			cols := int(x.Shape.RowLen())
			if row < 0 || (row+1)*cols*4 > len(raw) {
				return fmt.Errorf("synth: perturb: %s has no row %d", name, row)
			}
			for i := row * cols; i < (row+1)*cols; i++ {
				v := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
				binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v*factor))
			}
			found = true
		}
		bw, err := w.Next(x.Name)
		if err != nil {
			return err
		}
		if _, err := bw.Write(raw); err != nil {
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("synth: perturb: no tensor %s in %s", name, dir)
	}
	return f.Close()
}
