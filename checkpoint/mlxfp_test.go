package checkpoint

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/formats/mlx"
	"github.com/tfconv/tfconv/formats/safetensors"
	"github.com/tfconv/tfconv/tensor"
)

// writeMLXFP writes an MLX directory with config.json config and the
// given tensors (name, info and body), in that order.
func writeMLXFP(t testing.TB, dir, config string, infos []tensor.Info, body map[string][]byte) error {
	t.Helper()
	_, err := safetensors.WriteFolder(dir, false, map[string][]byte{"config.json": []byte(config)}, infos, 1<<30, mlx.Metadata,
		func(next func(string) (io.Writer, error)) error {
			for _, in := range infos {
				w, err := next(in.Name)
				if err != nil {
					return err
				}
				if _, err := w.Write(body[in.Name]); err != nil {
					return err
				}
			}
			return nil
		})
	return err
}

// TestMLXFPModesMatchMLX: an MLX directory whose layers are mxfp4, mxfp8
// and nvfp4 (the mode at the top of "quantization", the others per layer)
// reads each layer as the bf16 weight MLX's own mx::dequantize gives for
// MLX's own mx::quantize output (MLX 846d176, ../quant/testdata/mlx), byte
// for byte.
func TestMLXFPModesMatchMLX(t *testing.T) {
	t.Parallel()
	for _, typ := range []string{"f32", "bf16"} {
		ref, err := safetensors.Open(filepath.Join("..", "quant", "testdata", "mlx", "mlxfp-"+typ+".safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		defer ref.Close()
		read := func(name string) ([]byte, tensor.Info) {
			tt, ok := ref.Tensor(name)
			if !ok {
				t.Fatalf("no %q", name)
			}
			b, err := io.ReadAll(tt.Open())
			if err != nil {
				t.Fatal(err)
			}
			return b, tt.Info
		}
		var infos []tensor.Info
		body := map[string][]byte{}
		want := map[string][]byte{}
		for _, mode := range []string{"mxfp4", "mxfp8", "nvfp4"} {
			for _, part := range []string{".weight", ".scales"} {
				b, in := read(mode + part)
				in.Name = "model.layers.0." + mode + part
				infos = append(infos, in)
				body[in.Name] = b
			}
			want["model.layers.0."+mode+".weight"], _ = read(mode + ".dequantized")
		}
		config := `{"model_type": "llama", "quantization": {"group_size": 32, "bits": 4, "mode": "mxfp4",
			"model.layers.0.mxfp8": {"group_size": 32, "bits": 8, "mode": "mxfp8"},
			"model.layers.0.nvfp4": {"group_size": 16, "bits": 4, "mode": "nvfp4"}}}`
		dir := filepath.Join(t.TempDir(), "m")
		if err := writeMLXFP(t, dir, config, infos, body); err != nil {
			t.Fatal(err)
		}
		c, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if len(c.Tensors) != 3 {
			t.Fatalf("%s: %d tensors, want the 3 weights", typ, len(c.Tensors))
		}
		for name, w := range want {
			tt, ok := c.Tensor(name)
			if !ok || tt.DType != tensor.BF16 || !tt.Shape.Equal(tensor.Shape{16, 128}) {
				t.Fatalf("%s: %s: %v", typ, name, tt)
			}
			got, err := tt.ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, w) {
				t.Errorf("%s: %s differs from MLX's dequantize", typ, name)
			}
		}
		if s, _ := c.SourceInfo.Str(SourceInfoQuantScheme); !strings.Contains(s, "mxfp4") {
			t.Errorf("scheme %q", s)
		}
	}
}

// TestMLXFPMalformed: a floating-point layer that does not fit its mode,
// and mlx-lm's activation quantization, are errors naming the tensor or
// key and the path.
func TestMLXFPMalformed(t *testing.T) {
	t.Parallel()
	infos := []tensor.Info{
		{Name: "a.weight", DType: tensor.U32, Shape: tensor.Shape{2, 4}},
		{Name: "a.scales", DType: tensor.U8, Shape: tensor.Shape{2, 1}},
	}
	body := map[string][]byte{"a.weight": make([]byte, 32), "a.scales": {127, 130}, "a.biases": make([]byte, 2)}
	for _, c := range []struct {
		config string
		change func([]tensor.Info) []tensor.Info
		want   string
	}{
		{`{"quantization": {"group_size": 32, "bits": 4, "mode": "nvfp4"}}`, nil, `mode "nvfp4" is not supported with 4 bits and group size 32`},
		{`{"quantization": {"group_size": 16, "bits": 4, "mode": "nvfp4"}}`, nil, `tensor "a.weight" has 4 words per row; 16 columns at 4 bits`},
		{`{"quantization": {"group_size": 32, "bits": 4, "mode": "mxfp4"}}`, func(in []tensor.Info) []tensor.Info {
			return append(in, tensor.Info{Name: "a.biases", DType: tensor.U8, Shape: tensor.Shape{2, 1}})
		}, `which has no biases, but the checkpoint has "a.biases"`},
		{`{"quantization": {"group_size": 32, "bits": 4, "mode": "mxfp4"}, "quantize_activations": true}`, nil, `"quantize_activations" is true`},
	} {
		in := append([]tensor.Info(nil), infos...)
		if c.change != nil {
			in = c.change(in)
		}
		dir := filepath.Join(t.TempDir(), "m")
		if err := writeMLXFP(t, dir, c.config, in, body); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), dir) {
			t.Errorf("%s: %v, want %q and the path", c.config, err, c.want)
		}
	}
}

// FuzzMLXFP: any codes and scale bytes of an mxfp4, mxfp8 or nvfp4 layer,
// with any shapes, open and read, or are refused with an error: never a
// panic.
func FuzzMLXFP(f *testing.F) {
	f.Add(uint8(0), int64(2), int64(4), int64(1), []byte{1, 2, 3, 0xff}, []byte{127, 255})
	f.Add(uint8(1), int64(1), int64(8), int64(1), []byte{0x7f, 0xff, 0x80}, []byte{0})
	f.Add(uint8(2), int64(3), int64(2), int64(1), []byte{0x5a}, []byte{0x7f, 0xff, 0x38})
	f.Add(uint8(2), int64(1), int64(0), int64(0), []byte{}, []byte{})
	modes := []string{"mxfp4", "mxfp8", "nvfp4"}
	f.Fuzz(func(t *testing.T, mode uint8, rows, words, groups int64, codes, scales []byte) {
		if rows < 0 || rows > 64 || words < 0 || words > 64 || groups < 0 || groups > 64 {
			return
		}
		m := modes[int(mode)%len(modes)]
		fp := mlx.FPModes[m]
		config := fmt.Sprintf(`{"quantization": {"group_size": %d, "bits": %d, "mode": %q}}`, fp.GroupSize, fp.Bits, m)
		infos := []tensor.Info{
			{Name: "a.weight", DType: tensor.U32, Shape: tensor.Shape{rows, words}},
			{Name: "a.scales", DType: tensor.U8, Shape: tensor.Shape{rows, groups}},
		}
		body := map[string][]byte{"a.weight": fill(codes, int(4*rows*words)), "a.scales": fill(scales, int(rows*groups))}
		dir := filepath.Join(t.TempDir(), "m")
		if err := writeMLXFP(t, dir, config, infos, body); err != nil {
			t.Fatal(err)
		}
		c, err := Open(dir)
		if err != nil {
			return
		}
		defer c.Close()
		if tt, ok := c.Tensor("a.weight"); ok {
			b, err := tt.ReadAll()
			if err == nil && int64(len(b)) != tt.Size {
				t.Fatalf("%d bytes read, %d declared", len(b), tt.Size)
			}
		}
	})
}

// fill repeats b to n bytes (zeros when b is empty).
func fill(b []byte, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		if len(b) > 0 {
			out[i] = b[i%len(b)]
		}
	}
	return out
}

// TestMLXNVFP4GGUFExact: an MLX nvfp4 layer is carried into GGUF NVFP4
// blocks only when every scale byte reads the same in MLX and ggml (below
// 0x7f); its per-tensor factor is 1.
func TestMLXNVFP4GGUFExact(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		scales []byte
		want   bool
	}{{[]byte{0x38, 0x7e, 0x00, 0x01}, true}, {[]byte{0x38, 0x7f, 0x00, 0x01}, false}, {[]byte{0x38, 0xb8, 0x00, 0x01}, false}} {
		infos := []tensor.Info{
			{Name: "a.weight", DType: tensor.U32, Shape: tensor.Shape{1, 8}},
			{Name: "a.scales", DType: tensor.U8, Shape: tensor.Shape{1, 4}},
		}
		dir := filepath.Join(t.TempDir(), "m")
		body := map[string][]byte{"a.weight": make([]byte, 32), "a.scales": c.scales}
		if err := writeMLXFP(t, dir, `{"quantization": {"group_size": 16, "bits": 4, "mode": "nvfp4"}}`, infos, body); err != nil {
			t.Fatal(err)
		}
		ck, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		w, _ := ck.Tensor("a.weight")
		if w.NVFP4 == nil {
			t.Fatal("no NVFP4 layer on the MLX nvfp4 weight")
		}
		got, err := w.NVFP4.GGUFExact()
		if err != nil || got != c.want {
			t.Errorf("scales %x: GGUFExact %v %v, want %v", c.scales, got, err, c.want)
		}
		if s, err := w.NVFP4.Scale(); s != 1 || err != nil {
			t.Errorf("Scale %v %v, want 1", s, err)
		}
		ck.Close()
	}
}

// FuzzMLXGptOssSplit: a gpt-oss MLX directory whose experts mlx-lm's
// sanitize split (gate_proj, up_proj: mxfp4 layers with biases), with any
// shapes and bytes, opens and reads back as Hugging Face's packed
// gate_up_proj tensors, or is refused with an error: never a panic.
func FuzzMLXGptOssSplit(f *testing.F) {
	f.Add(int64(2), int64(4), int64(4), int64(1), int64(4), true, []byte{1, 2, 3}, []byte{127}) // a valid split
	f.Add(int64(2), int64(4), int64(2), int64(1), int64(4), true, []byte{1, 2, 3}, []byte{127})
	f.Add(int64(1), int64(1), int64(3), int64(1), int64(1), false, []byte{0xff}, []byte{0, 255})
	f.Add(int64(2), int64(4), int64(4), int64(0), int64(3), true, []byte{}, []byte{})
	f.Fuzz(func(t *testing.T, experts, rows, words, groups, upRows int64, bias bool, codes, scales []byte) {
		for _, n := range []int64{experts, rows, words, groups, upRows} {
			if n < 0 || n > 16 {
				return
			}
		}
		config := `{"model_type": "gpt_oss", "architectures": ["GptOssForCausalLM"], "num_local_experts": 2,
			"quantization": {"group_size": 32, "bits": 4, "mode": "mxfp4"}}`
		var infos []tensor.Info
		body := map[string][]byte{}
		for _, m := range []struct {
			name string
			rows int64
		}{{"gate_proj", rows}, {"up_proj", upRows}} {
			p := "model.layers.0.mlp.experts." + m.name
			infos = append(infos,
				tensor.Info{Name: p + ".weight", DType: tensor.U32, Shape: tensor.Shape{experts, m.rows, words}},
				tensor.Info{Name: p + ".scales", DType: tensor.U8, Shape: tensor.Shape{experts, m.rows, groups}})
			body[p+".weight"] = fill(codes, int(4*experts*m.rows*words))
			body[p+".scales"] = fill(scales, int(experts*m.rows*groups))
			if bias {
				infos = append(infos, tensor.Info{Name: p + ".bias", DType: tensor.F32, Shape: tensor.Shape{experts, m.rows}})
				body[p+".bias"] = fill(codes, int(4*experts*m.rows))
			}
		}
		dir := filepath.Join(t.TempDir(), "m")
		if err := writeMLXFP(t, dir, config, infos, body); err != nil {
			t.Fatal(err)
		}
		c, err := Open(dir)
		if err != nil {
			if experts == 2 && rows == 4 && words == 4 && groups == 1 && upRows == 4 {
				t.Fatalf("a valid split is refused: %v", err)
			}
			return
		}
		defer c.Close()
		for _, tt := range c.Tensors {
			b, err := tt.ReadAll()
			if err == nil && int64(len(b)) != tt.Size {
				t.Fatalf("%s: %d bytes read, %d declared", tt.Name, len(b), tt.Size)
			}
		}
		if experts == 2 && rows == 4 && words == 4 && groups == 1 && upRows == 4 {
			// the split read back: blocks [2][8][1][16] alternating gate's and up's rows
			blk, ok := c.Tensor("model.layers.0.mlp.experts.gate_up_proj_blocks")
			if !ok || !blk.Shape.Equal(tensor.Shape{2, 8, 1, 16}) {
				t.Fatalf("gate_up_proj_blocks: %v %v", ok, blk)
			}
		}
	})
}
