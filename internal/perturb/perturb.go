package perturb

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/formats/safetensors"
	"github.com/tfconv/tfconv/tensor"
)

// Write copies the single-file safetensors checkpoint in dir (config.json and
// its tensors) into out, an existing empty directory, with row `row` of the
// F32 tensor name multiplied by factor.
func Write(dir, out, name string, row int, factor float32) error {
	c, err := checkpoint.Open(dir)
	if err != nil {
		return err
	}
	defer c.Close()
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
	var infos []tensor.Info
	for _, x := range c.Tensors {
		infos = append(infos, x.Info)
	}
	w, err := safetensors.NewWriter(f, infos, c.Metadata)
	if err != nil {
		return err
	}
	found := false
	for _, x := range c.Tensors {
		raw, err := x.ReadAll()
		if err != nil {
			return err
		}
		if x.Name == name {
			if x.DType != tensor.F32 {
				return fmt.Errorf("perturb: %s is %v, want F32", name, x.DType)
			}
			cols := int(x.Shape.RowLen())
			if row < 0 || (row+1)*cols*4 > len(raw) {
				return fmt.Errorf("perturb: %s has no row %d", name, row)
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
		return fmt.Errorf("perturb: no tensor %s in %s", name, dir)
	}
	return f.Close()
}
