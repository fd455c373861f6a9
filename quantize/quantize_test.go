package quantize

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/internal/fixtures"
	"github.com/tfconv/tfconv/tensor"
)

// f32Source returns the llama.cpp converter's f32 GGUF of arch: bert is
// shipped in testdata/quantize, llama and gpt2 come from shared/fixtures.
func f32Source(t *testing.T, arch string) string {
	t.Helper()
	if arch == "bert" {
		return filepath.Join(testdata, "bert-f32.gguf")
	}
	return filepath.Join(fixtures.Require(t), "interop", arch, "gguf", arch+"-f32.gguf")
}

func open(t *testing.T, path string) *checkpoint.Checkpoint {
	t.Helper()
	c, err := checkpoint.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// target maps a llama.cpp file suffix to the --type name that makes it.
func target(t *testing.T, ref string) Target {
	t.Helper()
	tg, err := ParseTarget(strings.ToLower(ref))
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// TestPureMatchesLlamaCpp quantizes the f32 GGUF with --pure to every type
// and compares the whole GGUF with llama-quantize's: key order, file type,
// tensor order, types and every tensor's bytes.
func TestPureMatchesLlamaCpp(t *testing.T) {
	exp := loadExpected(t)
	for _, arch := range []string{"bert", "llama", "gpt2"} {
		t.Run(arch, func(t *testing.T) {
			c := open(t, f32Source(t, arch))
			for _, ref := range refTypes {
				if ref == "Q4_K_M" {
					continue
				}
				tg := target(t, ref)
				plan, err := Plan(c, Options{Target: tg, Pure: true})
				if err != nil {
					t.Fatal(err)
				}
				var buf bytes.Buffer
				if _, err := Write(&buf, c, plan, tg, GGUF, RunOptions{Threads: 3}); err != nil {
					t.Fatalf("%s: %v", ref, err)
				}
				compareGGUF(t, ref, buf.Bytes(), exp[arch][ref], true)
			}
		})
	}
}

func compareGGUF(t *testing.T, ref string, b []byte, want refFile, hashes bool) {
	t.Helper()
	// llama-quantize's whole file, as its summary.json hashes it: header,
	// key order, tensor order, padding and data.
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != want.SHA256 {
		t.Errorf("%s: output file differs from llama.cpp's (sha256 %x, want %s)", ref, sum, want.SHA256)
	}
	f, err := gguf.NewFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("%s: reading our output: %v", ref, err)
	}
	var keys []string
	for _, kv := range f.Metadata {
		keys = append(keys, kv.Key)
	}
	if strings.Join(keys, ",") != strings.Join(want.KVKeys, ",") {
		t.Errorf("%s: kv order\n got %v\nwant %v", ref, keys, want.KVKeys)
	}
	if ft, _ := f.Metadata.Int("general.file_type"); ft != want.FileType {
		t.Errorf("%s: general.file_type %d, want %d", ref, ft, want.FileType)
	}
	if qv, _ := f.Metadata.Int("general.quantization_version"); qv != 2 {
		t.Errorf("%s: general.quantization_version %d, want 2", ref, qv)
	}
	if len(f.Tensors) != len(want.Tensors) {
		t.Fatalf("%s: %d tensors, want %d", ref, len(f.Tensors), len(want.Tensors))
	}
	diff := 0
	for i := range f.Tensors {
		got, w := &f.Tensors[i], want.Tensors[i]
		if got.Name != w.Name || got.DType.String() != w.Type {
			t.Errorf("%s: tensor %d is %s %v, want %s %s", ref, i, got.Name, got.DType, w.Name, w.Type)
			continue
		}
		if !hashes {
			continue
		}
		h := sha256.New()
		if _, err := io.Copy(h, got.Open()); err != nil {
			t.Fatal(err)
		}
		if hex.EncodeToString(h.Sum(nil)) != w.SHA256 {
			diff++
			t.Errorf("%s: %s (%v): bytes differ from llama.cpp's", ref, got.Name, got.DType)
		}
	}
	if diff == 0 && !t.Failed() {
		t.Logf("%s: %d tensors identical to llama.cpp", ref, len(f.Tensors))
	}
}

// TestMixedPlanMatchesLlamaCpp checks llama-quantize's default (non-pure)
// policies: Q4_K_M on the interop models, and Q4_0, Q8_0, Q4_K_M on the
// trained tiny-fortunes model (where Q4_0 gives output.weight Q6_K). Plans
// need only names and shapes, so requantized files serve as input where the
// f32 file is not shipped.
func TestMixedPlanMatchesLlamaCpp(t *testing.T) {
	exp := loadExpected(t)
	cases := []struct {
		model, src string
		refs       []string
	}{
		{"bert", filepath.Join(testdata, "bert-f32.gguf"), []string{"Q4_K_M"}},
		{"llama", "../testdata/gguf/llama-Q2_K.gguf", []string{"Q4_K_M"}},
		{"gpt2", "", []string{"Q4_K_M"}},
		{"tiny-fortunes", "../testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf", []string{"Q8_0", "Q4_0", "Q4_K_M"}},
	}
	for _, tc := range cases {
		t.Run(tc.model, func(t *testing.T) {
			src := tc.src
			if src == "" {
				src = f32Source(t, tc.model)
			}
			c := open(t, src)
			for _, ref := range tc.refs {
				plan, err := Plan(c, Options{Target: target(t, ref)})
				if err != nil {
					t.Fatal(err)
				}
				want := exp[tc.model][ref].Tensors
				if len(plan) != len(want) {
					t.Fatalf("%s: %d choices, want %d", ref, len(plan), len(want))
				}
				for i, ch := range plan {
					if ch.Tensor.Name != want[i].Name || ch.Type.String() != want[i].Type {
						t.Errorf("%s: %s -> %v (%s), llama.cpp: %s -> %s", ref, ch.Tensor.Name, ch.Type, ch.Reason, want[i].Name, want[i].Type)
					}
				}
			}
		})
	}
}

// TestMixedWriteMatchesLlamaCpp writes the Q4_K_M mixture of bert and
// compares the file with llama-quantize's, bytes included.
func TestMixedWriteMatchesLlamaCpp(t *testing.T) {
	exp := loadExpected(t)
	c := open(t, f32Source(t, "bert"))
	tg := target(t, "Q4_K_M")
	plan, err := Plan(c, Options{Target: tg})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := Write(&buf, c, plan, tg, GGUF, RunOptions{Threads: 2}); err != nil {
		t.Fatal(err)
	}
	compareGGUF(t, "Q4_K_M", buf.Bytes(), exp["bert"]["Q4_K_M"], true)
}

func report(t *testing.T, c *checkpoint.Checkpoint, opts Options) *Report {
	t.Helper()
	plan, err := Plan(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(plan, nil, RunOptions{Threads: 4})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func find(rep *Report, name string) TensorReport {
	for _, tr := range rep.Tensors {
		if tr.Name == name {
			return tr
		}
	}
	return TensorReport{}
}

// TestReportErrors checks the measured error orders the types as their bit
// widths do and that kept tensors are exact; the totals add up.
func TestReportErrors(t *testing.T) {
	c := open(t, f32Source(t, "bert"))
	q8 := report(t, c, Options{Target: target(t, "Q8_0"), Pure: true})
	q4 := report(t, c, Options{Target: target(t, "Q4_0"), Pure: true})
	const name = "blk.0.ffn_up.weight"
	a, b := find(q8, name), find(q4, name)
	if !(a.RMSE > 0 && a.RMSE < b.RMSE && a.MaxAbs < b.MaxAbs && a.SQNR > b.SQNR) {
		t.Errorf("Q8_0 %+v not better than Q4_0 %+v", a, b)
	}
	// Q8_0 keeps about 8 bits per value: its SQNR is near 6 dB per bit.
	if a.SQNR < 35 || b.SQNR > a.SQNR-15 {
		t.Errorf("SQNR Q8_0 %.1f dB, Q4_0 %.1f dB", a.SQNR, b.SQNR)
	}
	norm := find(q8, "blk.0.attn_output_norm.weight")
	if norm.Type != tensor.F32 || norm.RMSE != 0 || !math.IsInf(norm.SQNR, 1) || norm.Reason != "1-D" {
		t.Errorf("norm: %+v", norm)
	}
	var bytesSum, elems int64
	for _, tr := range q8.Tensors {
		bytesSum += tr.Bytes
		elems += tr.Elements
	}
	if bytesSum != q8.TotalBytes || elems != q8.TotalElements || math.Abs(q8.BitsPerWeight-float64(bytesSum)*8/float64(elems)) > 1e-12 {
		t.Errorf("totals %d %d %v", q8.TotalBytes, q8.TotalElements, q8.BitsPerWeight)
	}
	// Sizes are the ggml block sizes: 34 bytes per 32 values for Q8_0.
	if a.Bytes != a.Elements/32*34 {
		t.Errorf("Q8_0 size %d for %d values", a.Bytes, a.Elements)
	}
}

// TestOptions covers the flags llama-quantize has: overrides, kept output,
// embedding type.
func TestOptions(t *testing.T) {
	c := open(t, "../testdata/gguf/llama-Q2_K.gguf")
	ov, err := ParseOverride("attn_v=q8_0")
	if err != nil {
		t.Fatal(err)
	}
	ov2, err := ParseOverride(`blk\.0\.ffn_(up|gate)=Q5_K`)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := Plan(c, Options{Target: target(t, "q4_k_m"), Overrides: []Override{ov, ov2}, KeepOutput: true, EmbeddingType: tensor.Q8_0})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]tensor.DType{
		"blk.0.attn_v.weight":   tensor.Q8_0,
		"blk.1.attn_v.weight":   tensor.Q8_0,
		"blk.0.ffn_up.weight":   tensor.Q5_K,
		"blk.0.ffn_gate.weight": tensor.Q5_K,
		"blk.1.ffn_up.weight":   tensor.Q4_K,
		"blk.1.ffn_down.weight": tensor.Q6_K,
		"token_embd.weight":     tensor.Q8_0,
		"output.weight":         tensor.Q2_K, // kept as in the input
	}
	for _, ch := range plan {
		if w, ok := want[ch.Tensor.Name]; ok && ch.Type != w {
			t.Errorf("%s: %v (%s), want %v", ch.Tensor.Name, ch.Type, ch.Reason, w)
		}
		if ch.Tensor.Name == "output.weight" && (!ch.Copy || ch.Reason != "--keep-output") {
			t.Errorf("output.weight: %+v", ch)
		}
	}
	for _, bad := range []string{"attn_v", "=q8_0", "attn_v=q9_9", "(=q8_0"} {
		if _, err := ParseOverride(bad); err == nil {
			t.Errorf("ParseOverride(%q) accepted", bad)
		}
	}
	// llama-quantize's ftypes LLAMA_FTYPE_MOSTLY_IQ1_S = 24, IQ1_M = 31.
	for name, want := range map[string]Target{"IQ1_S": {Name: "iq1_s", Type: tensor.IQ1_S, FileType: 24}, "iq1_m": {Name: "iq1_m", Type: tensor.IQ1_M, FileType: 31}} {
		if got, err := ParseTarget(name); err != nil || got != want {
			t.Errorf("ParseTarget(%q) = %+v, %v; want %+v", name, got, err, want)
		}
	}
	if _, err := ParseTarget("iq1_xs"); err == nil {
		t.Error("iq1_xs accepted")
	}
}

// TestFallback checks llama.cpp's table for rows the block size does not
// divide: Q4_K->Q5_0, Q5_K->Q5_1, Q6_K->Q8_0, Q2_K/Q3_K/IQ4_XS->IQ4_NL, and F16
// when even 32 does not divide the row; every plan then runs.
func TestFallback(t *testing.T) {
	path := filepath.Join(t.TempDir(), "odd.gguf")
	infos := []tensor.Info{
		{Name: "blk.0.ffn_up.weight", DType: tensor.F32, Shape: tensor.Shape{4, 96}},
		{Name: "blk.0.ffn_gate.weight", DType: tensor.F32, Shape: tensor.Shape{4, 40}},
	}
	var buf bytes.Buffer
	w, err := gguf.NewWriter(&buf, tensor.Metadata{{Key: "general.architecture", Value: tensor.String("llama")}}, infos)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range infos {
		bw, _ := w.Next(in.Name)
		data := make([]byte, in.Shape[0]*in.Shape[1]*4)
		for i := 0; i < len(data); i += 4 {
			data[i+3] = 0x3f // 0.5
		}
		bw.Write(data)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	c := open(t, path)
	for _, tc := range []struct {
		typ       string
		up, gate  tensor.DType
		encodable bool
	}{
		{"q4_k", tensor.Q5_0, tensor.F16, true},
		{"q5_k", tensor.Q5_1, tensor.F16, true},
		{"q6_k", tensor.Q8_0, tensor.F16, true},
		{"q2_k", tensor.IQ4_NL, tensor.F16, true},
		{"q3_k", tensor.IQ4_NL, tensor.F16, true},
		{"iq4_xs", tensor.IQ4_NL, tensor.F16, true},
		{"q8_0", tensor.Q8_0, tensor.F16, true},
	} {
		plan, err := Plan(c, Options{Target: target(t, tc.typ), Pure: true})
		if err != nil {
			t.Fatal(err)
		}
		if plan[0].Tensor.Name != "blk.0.ffn_gate.weight" || plan[0].Type != tc.gate || plan[1].Type != tc.up {
			t.Errorf("%s: %v %v, want gate %v up %v", tc.typ, plan[0].Type, plan[1].Type, tc.gate, tc.up)
		}
		if !strings.HasPrefix(plan[0].Reason, "fallback: row length 40") {
			t.Errorf("%s: reason %q", tc.typ, plan[0].Reason)
		}
		_, err = Run(plan, nil, RunOptions{})
		if tc.encodable && err != nil {
			t.Errorf("%s: %v", tc.typ, err)
		}
		if !tc.encodable && !errors.Is(err, tensor.ErrUnsupported) {
			t.Errorf("%s: Run error %v, want ErrUnsupported", tc.typ, err)
		}
	}
}

// TestInt8Safetensors writes per-row int8 and reads it back: an I8 tensor
// and its "<name>.scale" F32 companion with one value per row.
func TestInt8Safetensors(t *testing.T) {
	c := open(t, f32Source(t, "bert"))
	tg := target(t, "int8")
	plan, err := Plan(c, Options{Target: tg})
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(c, plan, tg, GGUF); !errors.Is(err, tensor.ErrUnsupported) {
		t.Errorf("int8 to GGUF: %v", err)
	}
	path := filepath.Join(t.TempDir(), "out.safetensors")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Write(f, c, plan, tg, Safetensors, RunOptions{})
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	out := open(t, path)
	q, ok1 := out.Tensor("blk.0.ffn_up.weight")
	s, ok2 := out.Tensor("blk.0.ffn_up.weight.scale")
	if !ok1 || !ok2 || q.DType != tensor.I8 || s.DType != tensor.F32 || !s.Shape.Equal(tensor.Shape{1024}) {
		t.Fatalf("int8 output: %v %v", q, s)
	}
	if tr := find(rep, "blk.0.ffn_up.weight"); tr.Bytes != 1024*256+1024*4 || !(tr.SQNR > 35) {
		t.Errorf("int8 report %+v", tr)
	}
}

// TestSafetensorsInputToGGUF refuses conversion work and says what to use.
func TestSafetensorsInputToGGUF(t *testing.T) {
	c := open(t, "../testdata/quant/hf-tiny-llama/llama.safetensors")
	tg := target(t, "q8_0")
	plan, err := Plan(c, Options{Target: tg})
	if err != nil {
		t.Fatal(err)
	}
	err = Check(c, plan, tg, GGUF)
	if err == nil || !strings.Contains(err.Error(), "tfconv convert") {
		t.Errorf("got %v", err)
	}
}
