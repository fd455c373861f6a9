package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

const quantizeSrc = "../../testdata/quantize/bert-f32.gguf"

// bertQ4KMTypes are llama-quantize's Q4_K_M choices for the bert fixture
// (interop/bert/summary.json, files["bert-Q4_K_M.gguf"].tensor_types).
var bertQ4KMTypes = map[string]string{
	"token_embd.weight":        "Q6_K",
	"position_embd.weight":     "F32",
	"token_types.weight":       "F32",
	"blk.0.attn_v.weight":      "Q4_K",
	"blk.1.attn_v.weight":      "Q6_K",
	"blk.0.ffn_down.weight":    "Q4_K",
	"blk.1.ffn_down.weight":    "Q6_K",
	"blk.1.ffn_up.weight":      "Q4_K",
	"blk.0.attn_output.bias":   "F32",
	"blk.1.attn_output.weight": "Q4_K",
}

func TestQuantizeWritesAndReports(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "out.gguf")
	code, out, errs := run(t, "quantize", quantizeSrc, dst, "--type", "q4_k_m", "--json", "--threads", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep struct {
		Tensors []struct {
			Name   string   `json:"name"`
			Type   string   `json:"type"`
			Bytes  int64    `json:"bytes"`
			RMSE   float64  `json:"rmse"`
			MaxAbs float64  `json:"max_abs"`
			SQNR   *float64 `json:"sqnr_db"`
			Reason string   `json:"reason"`
		} `json:"tensors"`
		TotalBytes    int64   `json:"total_bytes"`
		BitsPerWeight float64 `json:"bits_per_weight"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	c, err := checkpoint.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if len(rep.Tensors) != len(c.Tensors) || len(c.Tensors) != 37 {
		t.Fatalf("%d reported, %d written", len(rep.Tensors), len(c.Tensors))
	}
	var sum int64
	for _, tr := range rep.Tensors {
		ct, ok := c.Tensor(tr.Name)
		if !ok || ct.DType.String() != tr.Type || ct.Size != tr.Bytes {
			t.Errorf("%s: report %s %d, file %v", tr.Name, tr.Type, tr.Bytes, ct)
		}
		if w, ok := bertQ4KMTypes[tr.Name]; ok && tr.Type != w {
			t.Errorf("%s: %s, llama.cpp %s", tr.Name, tr.Type, w)
		}
		if (tr.Type == "F32") != (tr.SQNR == nil) || (tr.SQNR != nil && (tr.RMSE <= 0 || *tr.SQNR < 20)) {
			t.Errorf("%s: rmse %v sqnr %v", tr.Name, tr.RMSE, tr.SQNR)
		}
		sum += tr.Bytes
	}
	if sum != rep.TotalBytes || rep.BitsPerWeight < 4.5 || rep.BitsPerWeight > 6.5 {
		t.Errorf("total %d (sum %d), %.3f bits per weight", rep.TotalBytes, sum, rep.BitsPerWeight)
	}
	if ft, _ := c.Metadata.Int("general.file_type"); ft != 15 || c.Metadata[len(c.Metadata)-1].Key != "general.file_type" {
		t.Errorf("general.file_type %d, last key %s", ft, c.Metadata[len(c.Metadata)-1].Key)
	}

	// Existing DST without --force: exit 2, file untouched; with --force the
	// table report is printed.
	before, _ := os.ReadFile(dst)
	code, _, errs = run(t, "quantize", quantizeSrc, dst, "--type", "q8_0")
	if after, _ := os.ReadFile(dst); code != 2 || !strings.Contains(errs, "--force") || string(after) != string(before) {
		t.Errorf("overwrite without --force: exit %d %q", code, errs)
	}
	code, out, errs = run(t, "quantize", quantizeSrc, dst, "--type", "q8_0", "--pure", "--force")
	if code != 0 || !strings.Contains(out, "blk.0.ffn_up.weight") || !strings.Contains(out, "bits per weight") {
		t.Errorf("--force: exit %d %q %q", code, out, errs)
	}
}

func TestQuantizeDryRunWritesNothing(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "out.gguf")
	code, out, errs := run(t, "quantize", quantizeSrc, dst, "--type", "q4_0", "--dry-run")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("dry run left %v", ents)
	}
	// llama-quantize's default Q4_0 policy: the token embedding stands in
	// for the missing output.weight and gets Q6_K.
	for _, want := range []string{"token_embd.weight\tQ6_K", "blk.0.ffn_up.weight\tQ4_0", "1-D", "would write 37 tensors"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out)
		}
	}
}

func TestQuantizeRefusals(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "in.gguf")
	b, err := os.ReadFile(quantizeSrc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"quantize", src, src, "--type", "q8_0", "--force"}, "refusing to overwrite the input"},
		{[]string{"quantize", src, filepath.Join(dir, "o.gguf")}, "--type is required"},
		{[]string{"quantize", src, filepath.Join(dir, "o.gguf"), "--type", "q9_9"}, "unknown type"},
		{[]string{"quantize", src, filepath.Join(dir, "o.gguf"), "--type", "int8"}, "no GGUF type"},
		{[]string{"quantize", src, filepath.Join(dir, "o"), "--to", "safetensors", "--type", "q4_0"}, "safetensors holds"},
		{[]string{"quantize", src, filepath.Join(dir, "o.safetensors"), "--type", "int8"}, "give a directory name"},
		{[]string{"quantize", src, filepath.Join(dir, "o.gguf"), "--type", "q8_0", "--tensor-type", "attn_v"}, "PATTERN=TYPE"},
		{[]string{"quantize", "../../testdata/quant/hf-tiny-llama/llama.safetensors", filepath.Join(dir, "o.gguf"), "--type", "q8_0"}, "has no config.json"},
		{[]string{"quantize", src}, "expected 2 argument"},
	} {
		code, _, errs := run(t, tc.args...)
		if code != 2 || !strings.Contains(errs, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q (want %q)", tc.args, code, errs, tc.msg)
		}
	}
	if got, _ := os.ReadFile(src); string(got) != string(b) {
		t.Error("input changed")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("refusals left files: %v", ents)
	}
}

func TestQuantizeNativeAndBF16(t *testing.T) {
	dir := t.TempDir()
	tfn := filepath.Join(dir, "out.tfn")
	if code, _, errs := run(t, "quantize", quantizeSrc, tfn, "--type", "q8_0"); code != 0 {
		t.Fatalf("native: %s", errs)
	}
	c, err := checkpoint.Open(tfn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Format != checkpoint.Native || c.Source != checkpoint.GGUF {
		t.Errorf("native output: format %s source %s", c.Format, c.Source)
	}
	if tt, _ := c.Tensor("blk.0.ffn_up.weight"); tt == nil || tt.DType != tensor.Q8_0 {
		t.Errorf("native tensor %v", tt)
	}
	// safetensors output is a Hugging Face directory: the GGUF is converted
	// to one first, and llama.cpp's rules still apply by GGUF name.
	st := filepath.Join(dir, "out-hf")
	if code, _, errs := run(t, "quantize", quantizeSrc, st, "--type", "bf16", "--to", "safetensors"); code != 0 {
		t.Fatalf("bf16: %s", errs)
	}
	s, err := checkpoint.Open(st)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for name, want := range map[string]tensor.DType{
		"encoder.layer.0.intermediate.dense.weight": tensor.BF16,
		"encoder.layer.0.intermediate.dense.bias":   tensor.F32,
		"embeddings.position_embeddings.weight":     tensor.F32, // position_embd.weight
		"embeddings.token_type_embeddings.weight":   tensor.F32, // token_types.weight
	} {
		if tt, _ := s.Tensor(name); tt == nil || tt.DType != want {
			t.Errorf("%s: %v, want %v", name, tt, want)
		}
	}
	if _, err := os.Stat(filepath.Join(st, "config.json")); err != nil {
		t.Error(err)
	}
}

// A Hugging Face directory quantizes to GGUF through convert's names and
// metadata, as convert_hf_to_gguf.py --outtype f32 followed by llama-quantize
// would, and nothing but DST is left beside it.
func TestQuantizeHFToGGUF(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "gpt2-q8_0.gguf")
	code, _, errs := run(t, "quantize", "../../testdata/convert/gpt2/hf", dst, "--type", "q8_0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	c, err := checkpoint.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if a, _ := c.Metadata.Str("general.architecture"); a != "gpt2" {
		t.Errorf("general.architecture %q", a)
	}
	for name, want := range map[string]tensor.DType{"blk.0.attn_qkv.weight": tensor.Q8_0, "blk.0.attn_norm.weight": tensor.F32, "position_embd.weight": tensor.F32} {
		if tt, ok := c.Tensor(name); !ok || tt.Info.DType != want {
			t.Errorf("%s: %v, want %v", name, tt, want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("scratch files left: %v", ents)
	}
}

// Quantizing a Hugging Face directory directly gives, byte for byte, what
// converting it to an f32 GGUF and quantizing that file gives (the direct
// path converts tensor by tensor and writes no f32 file).
func TestQuantizeHFEqualsTwoSteps(t *testing.T) {
	dir := t.TempDir()
	for _, fam := range []string{"qwen2", "mixtral"} {
		src := "../../testdata/arch/" + fam + "/hf"
		f32 := filepath.Join(dir, fam+"-f32.gguf")
		if code, _, errs := run(t, "convert", src, f32, "--outtype", "f32"); code != 0 {
			t.Fatal(errs)
		}
		for _, typ := range []string{"q4_k_m", "q8_0"} {
			a, b := filepath.Join(dir, fam+"-direct-"+typ+".gguf"), filepath.Join(dir, fam+"-two-"+typ+".gguf")
			if code, _, errs := run(t, "quantize", src, a, "--type", typ); code != 0 {
				t.Fatal(errs)
			}
			if code, _, errs := run(t, "quantize", f32, b, "--type", typ); code != 0 {
				t.Fatal(errs)
			}
			x, _ := os.ReadFile(a)
			y, _ := os.ReadFile(b)
			if len(x) == 0 || !bytes.Equal(x, y) {
				t.Errorf("%s %s: direct quantize (%d bytes) differs from convert then quantize (%d bytes)", fam, typ, len(x), len(y))
			}
		}
	}
}

// With ../shared present: quantizing llama.cpp's interop HF checkpoints
// directly gives llama.cpp's own convert + llama-quantize files byte for byte.
func TestQuantizeHFMatchesLlamaCpp(t *testing.T) {
	root := filepath.Join(sharedFixtures(t), "interop")
	for _, arch := range []string{"llama", "gpt2"} {
		for _, typ := range []string{"Q8_0", "Q4_K_M"} {
			dst := filepath.Join(t.TempDir(), "out.gguf")
			code, _, errs := run(t, "quantize", filepath.Join(root, arch, "hf"), dst, "--type", strings.ToLower(typ))
			if code != 0 {
				t.Fatalf("%s %s: exit %d: %s", arch, typ, code, errs)
			}
			got, err := os.ReadFile(dst)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join(root, arch, "gguf", arch+"-"+typ+".gguf"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s %s: differs from llama.cpp's file (%d vs %d bytes)", arch, typ, len(got), len(want))
			}
		}
	}
}

// quantizeReport is the part of quantize --json the requantization tests read.
type quantizeReport struct {
	Tensors []struct {
		Name string   `json:"name"`
		Type string   `json:"type"`
		SQNR *float64 `json:"sqnr_db"`
	} `json:"tensors"`
	MeasuredAgainst string `json:"measured_against"`
}

// Issue 14 item 3: quantizing an already quantized source measures the
// error against the quantized weights, not the originals. It is refused
// without --allow-requantize (llama-quantize's flag), and the report says
// what the error is measured against.
func TestQuantizeRequantize(t *testing.T) {
	dir := t.TempDir()
	q8 := "../../testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf"
	dst := filepath.Join(dir, "q4.gguf")
	code, _, errs := run(t, "quantize", q8, dst, "--type", "q4_k_m")
	if code != 2 || !strings.Contains(errs, "--allow-requantize") || !strings.Contains(errs, "Q8_0") {
		t.Errorf("requantize without the flag: exit %d, stderr %q", code, errs)
	}
	if _, err := os.Stat(dst); err == nil {
		t.Error("refused requantization wrote DST")
	}
	report := func(args ...string) quantizeReport {
		t.Helper()
		code, out, errs := run(t, append(args, "--json")...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		var r quantizeReport
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return r
	}
	if r := report("quantize", q8, dst, "--type", "q4_k_m", "--allow-requantize"); r.MeasuredAgainst != "dequantized Q8_0 source weights" {
		t.Errorf("measured_against %q", r.MeasuredAgainst)
	}
	code, out, _ := run(t, "quantize", q8, dst, "--type", "q4_k_m", "--allow-requantize", "--force")
	if code != 0 || !strings.Contains(out, "error measured against the dequantized Q8_0 source weights") {
		t.Errorf("table footer: exit %d:\n%s", code, out)
	}
	if r := report("quantize", quantizeSrc, filepath.Join(dir, "bert.gguf"), "--type", "q8_0"); r.MeasuredAgainst != "source weights" {
		t.Errorf("f32 source: measured_against %q", r.MeasuredAgainst)
	}

	// An int8 source counts as quantized too, and is decoded with its
	// scales: requantizing it to q8_0 keeps about the SQNR the int8 had.
	i8 := filepath.Join(dir, "bert-int8.tfn")
	if code, _, errs := run(t, "quantize", quantizeSrc, i8, "--type", "int8"); code != 0 {
		t.Fatalf("int8: %s", errs)
	}
	code, _, errs = run(t, "quantize", i8, filepath.Join(dir, "re.gguf"), "--type", "q8_0")
	if code != 2 || !strings.Contains(errs, "I8") || !strings.Contains(errs, "--allow-requantize") {
		t.Errorf("int8 source without the flag: exit %d, stderr %q", code, errs)
	}
	r := report("quantize", i8, filepath.Join(dir, "re.gguf"), "--type", "q8_0", "--allow-requantize")
	if r.MeasuredAgainst != "dequantized I8 source weights" {
		t.Errorf("int8 source: measured_against %q", r.MeasuredAgainst)
	}
	seen := map[string]bool{}
	for _, tr := range r.Tensors {
		seen[tr.Name] = true
		if tr.Name == "blk.0.ffn_up.weight" && (tr.Type != "Q8_0" || tr.SQNR == nil || *tr.SQNR < 35) {
			t.Errorf("%s: %s, SQNR %v dB", tr.Name, tr.Type, tr.SQNR)
		}
	}
	if seen["blk.0.ffn_up.weight.scale"] || !seen["blk.0.ffn_up.weight"] {
		t.Errorf("int8 scales are not dropped with their weights: %v", seen)
	}
	verifyArgs := []string{"--tokens", "15,250,999,3,87,512", "--pair", "q8_0"}
	if code, out, errs := run(t, append([]string{"verify", quantizeSrc, filepath.Join(dir, "re.gguf")}, verifyArgs...)...); code != 0 {
		t.Errorf("verify requantized int8: exit %d: %s%s", code, errs, out)
	}
}

// The mixtures llama-quantize makes with flags — an importance matrix
// (Q2_K_S needs one), --override-kv, IQ4 types as --token-embedding-type and
// --output-tensor-type — equal its files byte for byte: testdata/quantize/
// mixtures.json "TYPE+imatrix", made with testdata/quantize/
// mixtures.imatrix.dat from the repository root (llama-quantize records the
// path as given, so the run is from there too).
// unencodable returns the first type of a reference's tensors that tfconv
// cannot encode, or "".
func unencodable(tensors [][2]string) string {
	for _, tn := range tensors {
		if d, ok := tensor.Parse(tn[1]); ok && !quant.CanQuantize(d) && !quant.CanQuantizeWeighted(d) {
			return tn[1]
		}
	}
	return ""
}

func TestQuantizeMixturesWithFlags(t *testing.T) {
	var ref map[string]struct {
		SHA256    string      `json:"sha256"`
		Overrides []string    `json:"overrides"`
		Flags     []string    `json:"flags"` // passed as they are: llama-quantize's names are tfconv's
		Tensors   [][2]string `json:"tensors"`
		Refused   any         `json:"refused"` // true, or llama-quantize's message
	}
	// mixtures.json and every mixtures-FAMILY.json.
	files, _ := filepath.Glob("../../testdata/quantize/mixtures*.json")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &ref); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	out := filepath.Join(t.TempDir(), "q.gguf")
	t.Chdir("../..")
	n := 0
	for name, want := range ref {
		if msg, _ := want.Refused.(string); want.Refused == true || msg != "" {
			// llama-quantize refuses it without an importance matrix.
			typ, _, _ := strings.Cut(name, "-")
			if code, _, errs := run(t, "quantize", "testdata/quantize/mixtures-f16.gguf", out, "--type", strings.ToLower(typ), "--force"); code == 0 || !strings.Contains(errs, "importance matrix") {
				t.Errorf("%s: exit %d: %s", name, code, errs)
			}
			continue
		}
		parts := strings.Split(name, "+")
		if len(parts) == 1 || strings.HasPrefix(name, "8x ") {
			continue // no flags, or a plan only: quantize's TestKQuantMixtures*, TestIQ2MixturesPlans*
		}
		n++
		args := []string{"quantize", "testdata/quantize/mixtures-f16.gguf", out, "--type", strings.ToLower(parts[0]), "--force"}
		if slices.Contains(parts, "imatrix") {
			args = append(args, "--imatrix", "testdata/quantize/mixtures.imatrix.dat")
		}
		for _, o := range want.Overrides {
			args = append(args, "--override-kv", o)
		}
		args = append(args, want.Flags...)
		if typ := unencodable(want.Tensors); typ != "" {
			t.Errorf("%s: llama-quantize chose %s, which tfconv cannot encode", name, typ)
			continue
		}
		if code, _, errs := run(t, args...); code != 0 {
			t.Fatalf("%s: %s", name, errs)
		}
		data, _ := os.ReadFile(out)
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) != want.SHA256 {
			t.Errorf("%s: sha256 %x, llama-quantize's %s", name, sum, want.SHA256)
		}
	}
	if n < 11 {
		t.Fatalf("%d mixtures with flags in the reference", n)
	}
	if code, _, errs := run(t, "quantize", "testdata/quantize/mixtures-f16.gguf", out, "--type", "q2_k_s", "--force"); code == 0 || !strings.Contains(errs, "importance matrix") {
		t.Errorf("q2_k_s without --imatrix: exit %d: %s", code, errs)
	}
	for _, bad := range []string{"k=int:x", "k=float:", "k=bool:yes", "k=str:" + strings.Repeat("x", 128), "k=text:a", "=int:1", "k"} {
		if code, _, errs := run(t, "quantize", "testdata/quantize/mixtures-f16.gguf", out, "--type", "q8_0", "--force", "--override-kv", bad); code != 2 || !strings.Contains(errs, "--override-kv") {
			t.Errorf("--override-kv %.20q: exit %d: %s", bad, code, errs)
		}
	}
}
