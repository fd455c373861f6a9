package quant

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/formats/safetensors"
	"github.com/tfconv/tfconv/internal/fixtures"
	"github.com/tfconv/tfconv/tensor"
)

var update = flag.Bool("update", false, "copy the tensors the tests need from ../../shared/fixtures into testdata/quant")

// llamaQuantTypes are the types llama-quantize --pure wrote from the f32
// fixture (interop/<arch>/gguf/<arch>-<TYPE>.gguf).
var llamaQuantTypes = []tensor.DType{
	tensor.Q8_0, tensor.Q4_0, tensor.Q4_1, tensor.Q5_0, tensor.Q5_1,
	tensor.Q2_K, tensor.Q3_K, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K,
}

// shippedTensors are copied into testdata/quant/llama/ by -update.
var shippedTensors = []string{"blk.0.attn_k.weight", "blk.1.attn_output.weight"}

// sharedFixtures returns shared/fixtures beside the clone, or "".
func sharedFixtures() string { return fixtures.Dir() }

func readAll(t testing.TB, r io.Reader) []byte {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func f32s(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// blockDiff counts the blocks of type t that differ between a and b.
func blockDiff(a, b []byte, t tensor.DType) (diff, total int) {
	bb := int(t.BlockBytes())
	for o := 0; o+bb <= len(a); o += bb {
		total++
		if !bytes.Equal(a[o:o+bb], b[o:o+bb]) {
			diff++
		}
	}
	return diff, total
}

// checkQuantized quantizes src and compares with want, the bytes llama.cpp
// wrote; it also checks that our decoder reproduces want's values within
// the type's tolerance of src.
func checkQuantized(t *testing.T, name string, src []float32, want []byte, dt tensor.DType) {
	t.Helper()
	got := make([]byte, len(want))
	if err := Quantize(got, src, dt); err != nil {
		t.Fatalf("%s %v: %v", name, dt, err)
	}
	if d, n := blockDiff(got, want, dt); d != 0 {
		t.Errorf("%s %v: %d of %d blocks differ from llama-quantize", name, dt, d, n)
	}
	dec := make([]float32, len(src))
	if err := Dequantize(dec, want, dt); err != nil {
		t.Fatal(err)
	}
	checkDequantError(t, name, src, dec, dt)
}

func TestQuantizeMatchesLlamaCppShipped(t *testing.T) {
	if *update {
		updateTestdata(t)
	}
	for _, name := range shippedTensors {
		src := f32s(readFile(t, filepath.Join("..", "testdata", "quant", "llama", name+".F32.bin")))
		for _, dt := range llamaQuantTypes {
			want := readFile(t, filepath.Join("..", "testdata", "quant", "llama", name+"."+dt.String()+".bin"))
			checkQuantized(t, name, src, want, dt)
		}
	}
}

func readFile(t testing.TB, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func openGGUF(t testing.TB, p string) *gguf.File {
	t.Helper()
	f, err := gguf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestQuantizeMatchesLlamaCpp quantizes every tensor of each F32 fixture
// and compares with the file llama-quantize --pure wrote.
func TestQuantizeMatchesLlamaCpp(t *testing.T) {
	root := sharedFixtures()
	if root == "" {
		t.Skip("shared fixtures not present; TestQuantizeMatchesLlamaCppShipped covers the shipped subset")
	}
	for _, arch := range []string{"llama", "gpt2", "bert"} {
		dir := filepath.Join(root, "interop", arch, "gguf")
		f32 := openGGUF(t, filepath.Join(dir, arch+"-f32.gguf"))
		for _, dt := range llamaQuantTypes {
			t.Run(arch+"/"+dt.String(), func(t *testing.T) {
				t.Parallel() // the k-quant searches dominate the package's test time
				q := openGGUF(t, filepath.Join(dir, arch+"-"+dt.String()+".gguf"))
				checked := 0
				for i := range q.Tensors {
					qt := &q.Tensors[i]
					if qt.DType != dt {
						continue
					}
					st, ok := f32.Tensor(qt.Name)
					if !ok || st.DType != tensor.F32 {
						t.Fatalf("%s: no F32 source tensor", qt.Name)
					}
					src := f32s(readAll(t, st.Open()))
					want := readAll(t, qt.Open())
					checkQuantized(t, qt.Name, src, want, dt)
					checked++
				}
				if checked == 0 {
					t.Fatalf("no %v tensors in the fixture", dt)
				}
			})
		}
	}
}

// updateTestdata copies the shipped tensors' bytes out of the llama.cpp
// fixtures (byte for byte; nothing is computed by this package).
func updateTestdata(t *testing.T) {
	root := sharedFixtures()
	if root == "" {
		t.Fatal("-update needs ../../shared/fixtures")
	}
	dir := filepath.Join(root, "interop", "llama", "gguf")
	out := filepath.Join("..", "testdata", "quant", "llama")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dt := range append([]tensor.DType{tensor.F32}, llamaQuantTypes...) {
		file := "llama-f32.gguf"
		if dt != tensor.F32 {
			file = "llama-" + dt.String() + ".gguf"
		}
		f := openGGUF(t, filepath.Join(dir, file))
		for _, name := range shippedTensors {
			tt, ok := f.Tensor(name)
			if !ok || tt.DType != dt {
				t.Fatalf("%s: %s missing or not %v", file, name, dt)
			}
			if err := os.WriteFile(filepath.Join(out, name+"."+dt.String()+".bin"), readAll(t, tt.Open()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	hfDir := filepath.Join("..", "testdata", "quant", "hf-tiny-llama")
	if err := os.MkdirAll(hfDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"llama", "llama-float16", "llama-bfloat16"} {
		b := readFile(t, filepath.Join(root, "hf-tiny", v, "model.safetensors"))
		if err := os.WriteFile(filepath.Join(hfDir, v+".safetensors"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// checkHalfFiles converts every tensor of the float32 safetensors file to
// f16 and bf16 and compares with the files transformers wrote.
func checkHalfFiles(t *testing.T, f32Path, f16Path, bf16Path string) {
	src := openST(t, f32Path)
	for _, c := range []struct {
		path string
		dt   tensor.DType
	}{{f16Path, tensor.F16}, {bf16Path, tensor.BF16}} {
		h := openST(t, c.path)
		n := 0
		for i := range src.Tensors {
			st := &src.Tensors[i]
			if st.DType != tensor.F32 {
				continue
			}
			ht, ok := h.Tensor(st.Name)
			if !ok {
				t.Errorf("%s: %s missing", c.path, st.Name)
				continue
			}
			if ht.DType != c.dt {
				t.Errorf("%s: %s is %v, want %v", c.path, st.Name, ht.DType, c.dt)
				continue
			}
			x := f32s(readAll(t, st.Open()))
			want := readAll(t, ht.Open())
			got := make([]byte, 2*len(x))
			if err := Quantize(got, x, c.dt); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s %v: %s differs from transformers' bytes (%s)", c.path, c.dt, st.Name, firstDiff(got, want))
			}
			// Decoding transformers' bytes and encoding again is the identity.
			back := make([]float32, len(x))
			if err := Dequantize(back, want, c.dt); err != nil {
				t.Fatal(err)
			}
			if err := Quantize(got, back, c.dt); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s %v: %s: decode+encode is not the identity", c.path, c.dt, st.Name)
			}
			n++
		}
		if n == 0 {
			t.Errorf("%s: no tensors compared", c.path)
		}
	}
}

func firstDiff(a, b []byte) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("first difference at byte %d: %#x vs %#x", i, a[i], b[i])
		}
	}
	return fmt.Sprintf("lengths %d vs %d", len(a), len(b))
}

func openST(t testing.TB, p string) *safetensors.File {
	t.Helper()
	f, err := safetensors.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestHalfMatchesTransformersShipped(t *testing.T) {
	d := filepath.Join("..", "testdata", "quant", "hf-tiny-llama")
	checkHalfFiles(t, filepath.Join(d, "llama.safetensors"), filepath.Join(d, "llama-float16.safetensors"), filepath.Join(d, "llama-bfloat16.safetensors"))
}

func TestHalfMatchesTransformers(t *testing.T) {
	root := sharedFixtures()
	if root == "" {
		t.Skip("shared fixtures not present; TestHalfMatchesTransformersShipped covers hf-tiny/llama")
	}
	for _, arch := range []string{"gpt2", "llama", "bert", "marian"} {
		t.Run("hf-tiny/"+arch, func(t *testing.T) {
			d := filepath.Join(root, "hf-tiny")
			checkHalfFiles(t, filepath.Join(d, arch, "model.safetensors"),
				filepath.Join(d, arch+"-float16", "model.safetensors"), filepath.Join(d, arch+"-bfloat16", "model.safetensors"))
		})
	}
	t.Run("interop/llama", func(t *testing.T) {
		d := filepath.Join(root, "interop", "llama")
		checkHalfFiles(t, filepath.Join(d, "hf", "model.safetensors"),
			filepath.Join(d, "hf-f16", "model.safetensors"), filepath.Join(d, "hf-bf16", "model.safetensors"))
	})
}
