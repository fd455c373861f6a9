package convert

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/tensor"
)

// rewriteGGUF copies the GGUF src to dst with edit applied to each tensor's
// bytes.
func rewriteGGUF(t *testing.T, src, dst string, edit func(name string, b []byte)) {
	t.Helper()
	c, err := checkpoint.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	infos := make([]tensor.Info, len(c.Tensors))
	for i, tt := range c.Tensors {
		infos[i] = tensor.Info{Name: tt.Name, DType: tt.DType, Shape: tt.Shape}
	}
	f, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := gguf.NewWriter(f, c.Metadata, infos)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range c.Tensors {
		b, err := io.ReadAll(tt.Open())
		if err != nil {
			t.Fatal(err)
		}
		edit(tt.Name, b)
		bw, err := w.Next(tt.Name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bw.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestGPT2TiedHeadToHF: GGUF → HF of a GPT-2 makes config.json and the
// tensors agree. llama.cpp's GGUF carries output.weight as a copy of
// token_embd.weight: equal byte for byte, it is dropped and the head tied
// (tie_word_embeddings true, no lm_head.weight), and the drop says so; a
// GGUF whose output.weight differs gets lm_head.weight, those bytes, untied.
func TestGPT2TiedHeadToHF(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	g := filepath.Join(dir, "gpt2.gguf")
	if _, err := Run(shippedGPT2, g, Options{OutType: OutF32}); err != nil {
		t.Fatal(err)
	}
	untied := filepath.Join(dir, "gpt2-untied.gguf")
	rewriteGGUF(t, g, untied, func(name string, b []byte) {
		if name == "output.weight" {
			b[0] ^= 0x40 // one weight changed
		}
	})
	for _, c := range []struct {
		src  string
		tied bool
	}{{g, true}, {untied, false}} {
		hf := filepath.Join(dir, filepath.Base(c.src)+"-hf")
		rep, err := Run(c.src, hf, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var cfg map[string]any
		b, _ := os.ReadFile(filepath.Join(hf, "config.json"))
		if err := json.Unmarshal(b, &cfg); err != nil {
			t.Fatal(err)
		}
		if cfg["tie_word_embeddings"] != c.tied {
			t.Errorf("%s: tie_word_embeddings %v, want %v", c.src, cfg["tie_word_embeddings"], c.tied)
		}
		out, err := checkpoint.Open(hf)
		if err != nil {
			t.Fatal(err)
		}
		head, hasHead := out.Tensor("lm_head.weight")
		if hasHead == c.tied {
			t.Errorf("%s: lm_head.weight present %v, want %v", c.src, hasHead, !c.tied)
		}
		tiedDrop := false
		for _, d := range rep.Dropped {
			if d.Name == "output.weight" {
				tiedDrop = d.TiedTo == "token_embd.weight" && strings.Contains(d.Reason, "tie_word_embeddings true")
			}
		}
		if tiedDrop != c.tied {
			t.Errorf("%s: dropped %+v", c.src, rep.Dropped)
		}
		if hasHead {
			src, _ := checkpoint.Open(c.src)
			want, _ := src.Tensor("output.weight")
			wb, _ := io.ReadAll(want.Open())
			gb, _ := io.ReadAll(head.Open())
			if head.DType != want.DType || !head.Shape.Equal(want.Shape) || !bytes.Equal(gb, wb) {
				t.Errorf("%s: lm_head.weight %v %v is not output.weight %v %v", c.src, head.DType, head.Shape, want.DType, want.Shape)
			}
			src.Close()
		}
		out.Close()
	}
}
