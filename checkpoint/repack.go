package checkpoint

import (
	"fmt"
	"io"

	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/formats/native"
	"github.com/tfconv/tfconv/formats/safetensors"
	"github.com/tfconv/tfconv/tensor"
)

// This file repackages a checkpoint into another container without changing
// a byte of tensor data or a tensor name: the lossless path. Renaming tensors
// and mapping metadata between ecosystems is conversion, which lives with the
// architectures, not here.

// WriteNative writes c to w as a native file: every tensor byte for byte in
// the checkpoint's order, its metadata, the format it came from and the side
// files (config.json, tokenizer files) it has. Memory stays at one copy
// buffer whatever the checkpoint size.
func WriteNative(w io.Writer, c *Checkpoint) error {
	h := native.Header{Source: string(c.Source), SourceInfo: c.SourceInfo, Metadata: c.Metadata}
	var aux []native.AuxSpec
	var auxData [][]byte
	for _, name := range c.AuxNames() {
		b, err := c.ReadAux(name)
		if err != nil {
			return err
		}
		aux = append(aux, native.AuxSpec{Name: name, Size: int64(len(b))})
		auxData = append(auxData, b)
	}
	specs := make([]native.TensorSpec, len(c.Tensors))
	for i, t := range c.Tensors {
		specs[i] = native.TensorSpec{Info: t.Info, Attrs: t.Attrs}
	}
	nw, err := native.NewWriter(w, h, aux, specs)
	if err != nil {
		return err
	}
	for i, a := range aux {
		bw, err := nw.NextAux(a.Name)
		if err != nil {
			return err
		}
		if _, err := bw.Write(auxData[i]); err != nil {
			return err
		}
	}
	if err := copyTensors(c, nw.Next); err != nil {
		return err
	}
	return nw.Close()
}

// WriteGGUF writes c as one GGUF v3 file with the same metadata and tensors.
// The checkpoint's metadata must be GGUF metadata: a GGUF file or a native
// file made from one.
func WriteGGUF(w io.Writer, c *Checkpoint) error {
	if c.Source != GGUF {
		return fmt.Errorf("checkpoint: %s: metadata came from %q, not GGUF; repackaging into GGUF needs conversion", c.Path, c.Source)
	}
	gw, err := gguf.NewWriter(w, c.Metadata, infos(c))
	if err != nil {
		return err
	}
	if err := copyTensors(c, gw.Next); err != nil {
		return err
	}
	return gw.Close()
}

// WriteSafetensors writes c as one safetensors file with the same
// __metadata__ and tensors, laid out in the checkpoint's order.
func WriteSafetensors(w io.Writer, c *Checkpoint) error {
	if !c.HuggingFace() {
		return fmt.Errorf("checkpoint: %s: metadata came from %q, not safetensors; repackaging into safetensors needs conversion", c.Path, c.Source)
	}
	sw, err := safetensors.NewWriter(w, infos(c), c.Metadata)
	if err != nil {
		return err
	}
	if err := copyTensors(c, sw.Next); err != nil {
		return err
	}
	return sw.Close()
}

func infos(c *Checkpoint) []tensor.Info {
	out := make([]tensor.Info, len(c.Tensors))
	for i, t := range c.Tensors {
		out[i] = tensor.Info{Name: t.Name, DType: t.DType, Shape: t.Shape}
	}
	return out
}

// copyBufSize is the copy buffer: large enough for full-speed sequential
// reads, small next to any tensor worth streaming.
const copyBufSize = 1 << 20

// copyTensors streams every tensor's bytes (verified where the source has
// checksums) into the writer's body for it.
func copyTensors(c *Checkpoint, next func(string) (io.Writer, error)) error {
	buf := make([]byte, copyBufSize)
	for _, t := range c.Tensors {
		bw, err := next(t.Name)
		if err != nil {
			return err
		}
		n, err := io.CopyBuffer(bw, t.Open(), buf)
		if err != nil {
			return fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		if n != t.Size {
			return fmt.Errorf("tensor %q: copied %d of %d bytes", t.Name, n, t.Size)
		}
	}
	return nil
}
