package convert

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/quantize"
	"github.com/tfconv/tfconv/tensor"
)

// Sources of the quantize tests (Quantize: tfconv quantize SRC DST).
const (
	tinyQ8 = "../testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf"
	gptq4  = "../testdata/gptq/gptq-4bit-actorder"
	awq4   = "../testdata/gptq/awq-4bit"
	fp8    = "../testdata/fp8/ct-channel"
)

// Issue 29 item 5: one requantize rule. Re-encoding an integer-quantized
// source (a ggml block type, int8, GPTQ, AWQ) into another quantized type
// needs --allow-requantize (QuantizeOptions.Requantize); a same-type copy,
// dequantizing and an FP8 source do not.
func TestRequantizeRule(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		src, typ, to string
		refused      string // what the refusal names besides the flag; "" = allowed
	}{
		{tinyQ8, "q4_k_m", "", "Q8_0"},
		{tinyQ8, "q8_0", "", ""}, // same type: every tensor copied
		{tinyQ8, "f16", "", ""},  // dequantizing
		{tinyQ8, "bf16", "", ""}, // dequantizing
		{tinyQ8, "f32", "", ""},  // dequantizing
		{tinyQ8, "copy", "", ""}, // llama-quantize's COPY
		{gptq4, "q8_0", "", "GPTQ 4-bit"},
		{gptq4, "q4_k_m", "", "GPTQ 4-bit"},
		{awq4, "q4_0", "", "AWQ 4-bit"},
		{gptq4, "f16", "", ""},
		{gptq4, "int8", "safetensors", "GPTQ 4-bit"},
		{tinyQ8, "int8", "safetensors", "Q8_0"},
		{fp8, "int8", "safetensors", ""}, // FP8 is a published precision, like bf16
	} {
		dst := filepath.Join(t.TempDir(), "out.gguf")
		if c.to == "safetensors" {
			dst = filepath.Join(t.TempDir(), "out")
		}
		target, err := quantize.ParseTarget(c.typ)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Quantize(c.src, dst, QuantizeOptions{Options: quantize.Options{Target: target}, To: c.to, DryRun: true})
		switch {
		case c.refused == "" && err != nil:
			t.Errorf("%s -> %s: %v", c.src, c.typ, err)
		case c.refused != "" && (err == nil || !strings.Contains(err.Error(), "--allow-requantize") ||
			!strings.Contains(err.Error(), c.refused) || !strings.Contains(err.Error(), c.src)):
			t.Errorf("%s -> %s without --allow-requantize: %v; want a refusal naming %s and the flag", c.src, c.typ, err, c.refused)
		}
		if c.refused == "" {
			continue
		}
		rep, err := Quantize(c.src, dst, QuantizeOptions{Options: quantize.Options{Target: target}, To: c.to, DryRun: true, Requantize: true})
		if err != nil {
			t.Errorf("%s -> %s with --allow-requantize: %v", c.src, c.typ, err)
		} else if want := "dequantized " + c.refused + " source weights"; rep.MeasuredAgainst != want {
			t.Errorf("%s -> %s: measured against %q, want %q", c.src, c.typ, rep.MeasuredAgainst, want)
		}
	}
}

// Issue 29 item 11: --type f32 dequantizes in one step, each weight the
// exact value of its Q8_0 block, and copy writes every tensor as it is,
// keeping the input's general.file_type, as llama-quantize's COPY does.
func TestDequantizeAndCopy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in, err := checkpoint.Open(tinyQ8)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	for _, typ := range []string{"f32", "COPY"} {
		target, err := quantize.ParseTarget(typ)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, typ+".gguf")
		if _, err := Quantize(tinyQ8, dst, QuantizeOptions{Options: quantize.Options{Target: target}}); err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		out, err := checkpoint.Open(dst)
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		if len(out.Tensors) != len(in.Tensors) {
			t.Fatalf("%s: %d tensors, input %d", typ, len(out.Tensors), len(in.Tensors))
		}
		ft, _ := out.Metadata.Int("general.file_type")
		inFT, _ := in.Metadata.Int("general.file_type")
		if want := map[string]int64{"f32": 0, "COPY": inFT}[typ]; ft != want {
			t.Errorf("%s: general.file_type %d, want %d", typ, ft, want)
		}
		q8 := 0
		for _, it := range in.Tensors {
			ot, ok := out.Tensor(it.Name)
			if !ok {
				t.Fatalf("%s: no tensor %q", typ, it.Name)
			}
			ib, err := it.ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			ob, err := ot.ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			if typ == "COPY" {
				if ot.DType != it.DType || !bytes.Equal(ib, ob) {
					t.Errorf("COPY: %s is %v (%d bytes), input %v", it.Name, ot.DType, len(ob), it.DType)
				}
				continue
			}
			if ot.DType != tensor.F32 {
				t.Errorf("f32: %s is %v", it.Name, ot.DType)
				continue
			}
			if it.DType != tensor.Q8_0 {
				continue
			}
			q8++
			want := make([]float32, it.NumElements())
			if err := quant.Dequantize(want, ib, it.DType); err != nil {
				t.Fatal(err)
			}
			got := make([]float32, ot.NumElements())
			if err := quant.Dequantize(got, ob, tensor.F32); err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("f32: %s[%d] = %g, the Q8_0 block holds %g", it.Name, i, got[i], want[i])
				}
			}
		}
		if typ == "f32" && q8 == 0 {
			t.Error("no Q8_0 tensor in the input")
		}
	}
	// COPY cannot keep ggml types in a Hugging Face directory, nor convert
	// a Hugging Face checkpoint.
	copyT, _ := quantize.ParseTarget("copy")
	if _, err := Quantize(tinyQ8, filepath.Join(dir, "hf"), QuantizeOptions{Options: quantize.Options{Target: copyT}, To: "safetensors"}); err == nil {
		t.Error("copy to safetensors accepted")
	}
	if _, err := Quantize(gptq4, filepath.Join(dir, "c.gguf"), QuantizeOptions{Options: quantize.Options{Target: copyT}}); err == nil {
		t.Error("copy of a Hugging Face checkpoint accepted")
	}
	o := quantize.Options{Target: copyT, OutputType: tensor.Q8_0}
	if _, err := Quantize(tinyQ8, filepath.Join(dir, "c.gguf"), QuantizeOptions{Options: o, DryRun: true}); err == nil {
		t.Error("copy with --output-tensor-type accepted")
	}
}

// Issue 29 item 10: quantize guesses the output format from DST exactly as
// convert does: one function (convert.OutputFormat), the same answers.
func TestOutputFormatAsConvert(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct {
		dst, to string
		want    quantize.Format // "": refused
	}{
		{"m.gguf", "", quantize.GGUF},
		{"M.GGUF", "", quantize.GGUF},
		{"m.tfn", "", quantize.Native},
		{"model-q8", "", quantize.Safetensors}, // a folder to be, as convert makes it
		{dir, "", quantize.Safetensors},
		{"m.bin", "", quantize.Safetensors},
		{"m.safetensors", "", ""},
		{"m.bin", "gguf", quantize.GGUF},
		{"m.gguf", "safetensors", ""},
		{"m.gguf", "zip", ""},
	} {
		got, err := QuantizeFormat(c.dst, c.to)
		if (err == nil) != (c.want != "") || got != c.want {
			t.Errorf("QuantizeFormat(%q, %q) = %q, %v; want %q", c.dst, c.to, got, err, c.want)
		}
		conv, cerr := OutputFormat(c.dst, Format(c.to))
		if (cerr == nil) != (err == nil) || string(conv) != string(got) {
			t.Errorf("%q --to %q: quantize guesses %q (%v), convert %q (%v)", c.dst, c.to, got, err, conv, cerr)
		}
	}
}
