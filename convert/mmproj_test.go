package convert

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/formats/safetensors"
	"github.com/tfconv/tfconv/tensor"
)

// gemma3VL is the tiny Gemma3ForConditionalGeneration of testdata/vision.
var gemma3VL = filepath.Join("..", "testdata", "vision", "gemma3", "hf")

// llamacppRecord is testdata/vision/F/llamacpp.json (gen_vision.py): what
// llama.cpp d32676d7's convert_hf_to_gguf.py wrote from F/hf, per output
// ("text-f32", "mmproj-q8_0", …): every key in order with its value, every
// tensor in order with its type, shape and sha256.
type llamacppRecord struct {
	Outputs map[string]recordOutput `json:"outputs"`
}

// recordOutput is one output of a llamacpp.json.
type recordOutput = struct {
	Command  string  `json:"command"`
	Refused  string  `json:"refused"`
	Metadata [][]any `json:"metadata"`
	Tensors  []struct {
		Name   string  `json:"name"`
		Type   string  `json:"type"`
		Shape  []int64 `json:"shape"`
		SHA256 string  `json:"sha256"`
	} `json:"tensors"`
}

// placeless are the text GGUF's keys whose values matchRecord compares but
// not their places: the newer converter writes general.quantization_version
// before the tokenizer keys, and a LlamaModel's add_space_prefix (from
// tokenizer_config.json) before them too; tfconv keeps c392e509's places
// for every family (testdata/arch/README.md), the space prefix last.
var placeless = []string{keyQuantVersion, "tokenizer.ggml.add_space_prefix"}

// matchRecord holds the GGUF at path to output out of a llamacpp.json: the
// keys in the converter's order with its values, the tensors in its order
// with its types and bytes (sha256); a text GGUF ("text-…") without the
// places of its placeless keys.
func matchRecord(t *testing.T, ref *llamacppRecord, out, path string) {
	t.Helper()
	want, ok := ref.Outputs[out]
	if !ok || want.Refused != "" {
		t.Fatalf("llamacpp.json has no %s (refused: %q)", out, want.Refused)
	}
	kind := strings.SplitN(out, "-", 2)[0]
	g := openGGUF(t, path)
	md, wmd := g.Metadata, want.Metadata
	if kind == "text" {
		for _, k := range placeless {
			var w []any
			for _, kv := range wmd {
				if kv[0] == k {
					w = kv
				}
			}
			v, ok := g.Metadata.Get(k)
			if (w == nil) != !ok || (ok && !sameValue(v, w[2])) {
				t.Errorf("%s: %s %v, the converter's %v", out, k, v, w)
			}
			md, wmd = withoutKey(md, k), withoutRecordKey(wmd, k)
		}
	}
	if len(md) != len(wmd) {
		var keys []string
		for _, kv := range md {
			keys = append(keys, kv.Key)
		}
		t.Errorf("%s: %d keys %v, the converter's %d", out, len(md), keys, len(wmd))
	}
	for i := 0; i < min(len(md), len(wmd)); i++ {
		kv, w := md[i], wmd[i]
		if kv.Key != w[0].(string) || !sameValue(kv.Value, w[2]) {
			t.Errorf("%s: key %d: %s = %v, the converter's %s = %v", out, i, kv.Key, kv.Value, w[0], w[2])
			continue
		}
		// A long array is recorded as its length and the sha256 of
		// Python's json.dumps of it (gen_vision.gguf_record).
		if d, ok := w[2].(map[string]any); ok {
			a, _ := kv.Value.Array()
			if sum := sha256.Sum256([]byte(pyDumps(a))); hex.EncodeToString(sum[:]) != d["sha256"] {
				t.Errorf("%s: %s: sha256 %x…, the converter's %v", out, kv.Key, sum[:4], d["sha256"])
			}
		}
	}
	if len(g.Tensors) != len(want.Tensors) {
		t.Fatalf("%s: %d tensors, the converter's %d", out, len(g.Tensors), len(want.Tensors))
	}
	for i := range g.Tensors {
		x, w := &g.Tensors[i], want.Tensors[i]
		b, err := io.ReadAll(x.Open())
		if err != nil {
			t.Fatal(err)
		}
		shape := make([]int64, len(x.Shape))
		for j := range x.Shape {
			shape[len(shape)-1-j] = x.Shape[j] // gguf-py lists ggml's ne: innermost first
		}
		sum := sha256.Sum256(b)
		if x.Name != w.Name || !strings.EqualFold(x.DType.String(), w.Type) || (w.Shape != nil && fmt.Sprint(shape) != fmt.Sprint(w.Shape)) || hex.EncodeToString(sum[:]) != w.SHA256 {
			t.Errorf("%s: tensor %d: %s %v %v sha256 %x; the converter's %s %s %v %.12s", out, i, x.Name, x.DType, shape, sum[:6], w.Name, w.Type, w.Shape, w.SHA256)
		}
	}
}

func readLlamacppRecord(t *testing.T, fam string) *llamacppRecord {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "vision", fam, "llamacpp.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r llamacppRecord
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// sameValue reports whether our GGUF value v is the value the record
// states (JSON: numbers as float64, arrays as lists; the tokenizer's long
// arrays as {len, sha256}, of which the length is compared here and the
// whole file below).
func sameValue(v tensor.Value, want any) bool {
	switch w := want.(type) {
	case string:
		s, ok := v.Str()
		return ok && s == w
	case bool:
		b, ok := v.BoolValue()
		return ok && b == w
	case float64:
		f, ok := v.Float()
		return ok && f == w
	case []any:
		a, ok := v.Array()
		if !ok || a.Len() != len(w) {
			return false
		}
		for i := range w {
			if !sameValue(a.Index(i), w[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		a, ok := v.Array()
		n, _ := w["len"].(float64)
		return ok && float64(a.Len()) == n
	}
	return false
}

// TestGemma3VLMatchesLlamaCpp: tfconv's text GGUF (--mmproj writes it and
// the projector in one run) and its mmproj GGUF of the tiny
// Gemma3ForConditionalGeneration hold, at f32, f16 and q8_0, the keys in
// llama.cpp d32676d7's order with its values, and its tensors in its order
// with its types, shapes and bytes (sha256); where the converter's files
// themselves are at hand (/work/fixtures-out, gen_vision.py's output) they
// are byte-identical for the mmproj, general.name included (both folders
// are "hf"); the text GGUF differs from it only in the place of
// general.quantization_version, as every newer family's.
func TestGemma3VLMatchesLlamaCpp(t *testing.T) {
	t.Parallel()
	matchesLlamaCpp(t, "gemma3", gemma3VL, OutF32, OutF16, OutQ8_0)
}

// matchesLlamaCpp converts the multimodal checkpoint src with --mmproj at
// each outtype and holds both outputs to testdata/vision/fam/llamacpp.json:
// the keys in the converter's order with its values (the text GGUF's
// general.quantization_version compared, its place not), the tensors in
// its order with its types, shapes and sha256; and the mmproj byte for
// byte to the converter's own file where gen_*.py's output is at hand
// (/work/fixtures-out/vision/fam).
func matchesLlamaCpp(t *testing.T, fam, src string, outTypes ...string) {
	ref := readLlamacppRecord(t, fam)
	for _, ot := range outTypes {
		t.Run(ot, func(t *testing.T) {
			t.Parallel()
			dst := filepath.Join(t.TempDir(), fam+"-"+ot+".gguf")
			rep, err := Run(src, dst, Options{OutType: ot, Multimodal: MultimodalBoth})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Mmproj == nil || rep.Mmproj.Output != MmprojPath(dst) || rep.Mmproj.SelfCheck != "ok" {
				t.Fatalf("report's mmproj %+v, want %s checked", rep.Mmproj, MmprojPath(dst))
			}
			for kind, path := range map[string]string{"text": dst, "mmproj": MmprojPath(dst)} {
				matchRecord(t, ref, kind+"-"+ot, path)
				// The converter's own mmproj file, when gen_vision.py's output
				// is here (the text file differs in that one key's place).
				if kind == "text" {
					continue
				}
				theirs := filepath.Join("/work/fixtures-out/vision", fam, fam+"-"+kind+"-"+ot+".gguf")
				if tb, err := os.ReadFile(theirs); err == nil {
					ob, err := os.ReadFile(path)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(ob, tb) {
						t.Errorf("%s: %d bytes, not byte-identical to %s (%d bytes)", kind, len(ob), theirs, len(tb))
					}
				}
			}
		})
	}
}

func withoutKey(md tensor.Metadata, key string) tensor.Metadata {
	var out tensor.Metadata
	for _, kv := range md {
		if kv.Key != key {
			out = append(out, kv)
		}
	}
	return out
}

func withoutRecordKey(md [][]any, key string) [][]any {
	var out [][]any
	for _, kv := range md {
		if kv[0] != key {
			out = append(out, kv)
		}
	}
	return out
}

// TestGemma3VLModes: without a flag the conversion is refused naming the
// three; --mmproj-only writes the projector alone to DST; --text-only the
// text model, reporting what it left out; --mmproj leaves neither file
// when one destination is taken.
func TestGemma3VLModes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dst := filepath.Join(dir, "m.gguf")
	_, err := Run(gemma3VL, dst, Options{OutType: OutF32})
	if err == nil || !errors.Is(err, tensor.ErrUnsupported) {
		t.Fatalf("%v, want a refusal", err)
	}
	for _, f := range []string{"--mmproj", "--mmproj-only", "--text-only"} {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("refusal %q does not name %s", err, f)
		}
	}
	if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("refused, yet %s exists", dst)
	}

	rep, err := Run(gemma3VL, dst, Options{OutType: OutF32, Multimodal: MultimodalProjector})
	if err != nil {
		t.Fatal(err)
	}
	g := openGGUF(t, dst)
	if a, _ := g.Metadata.Get("general.architecture"); !sameValue(a, "clip") || len(g.Tensors) != 39 || rep.Arch != "clip" {
		t.Errorf("--mmproj-only: architecture %v, %d tensors, report arch %s; want clip, 39", a, len(g.Tensors), rep.Arch)
	}

	text := filepath.Join(dir, "t.gguf")
	rep, err = Run(gemma3VL, text, Options{OutType: OutF32, Multimodal: MultimodalText})
	if err != nil {
		t.Fatal(err)
	}
	// 39 tensors of the tower and projector: 5 + 2·16 + 2 (patch, position, blocks, post-LN, projector's 2).
	const towerBytes = 4 * (32*3*16*16 + 32 + 16*32 + 2*(4*(32*32+32)+2*2*32+64*32+64+32*64+32) + 2*32 + 32*64 + 32)
	if rep.LeftOut == nil || rep.LeftOut.Tensors != 39 || rep.LeftOut.Bytes != towerBytes || rep.LeftOut.Projector != "gemma3" {
		t.Errorf("--text-only left out %+v, want 39 tensors, %d bytes of the gemma3 projector", rep.LeftOut, towerBytes)
	}
	if g := openGGUF(t, text); len(g.Tensors) != 80 {
		t.Errorf("--text-only: %d tensors, want the text model's 80", len(g.Tensors))
	}

	// A taken mmproj destination: refused before anything is written.
	both := filepath.Join(dir, "b.gguf")
	if err := os.WriteFile(MmprojPath(both), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(gemma3VL, both, Options{OutType: OutF32, Multimodal: MultimodalBoth}); err == nil {
		t.Fatal("--mmproj over an existing mmproj file without --force: no error")
	}
	if _, err := os.Stat(both); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the text GGUF was written though the mmproj could not be")
	}
	if b, _ := os.ReadFile(MmprojPath(both)); string(b) != "mine" {
		t.Errorf("the existing file was changed")
	}
	// A checkpoint without a projector takes none of the flags.
	if _, err := Run(filepath.Join("..", "testdata", "arch", "gemma3", "hf"), filepath.Join(dir, "x.gguf"),
		Options{Multimodal: MultimodalBoth}); err == nil || !strings.Contains(err.Error(), "--mmproj") {
		t.Errorf("--mmproj on a text-only checkpoint: %v, want a refusal naming the flag", err)
	}
}

// TestGemma3VLRoundTrip: HF → (text GGUF, mmproj GGUF) at f32 → HF puts the
// Gemma3ForConditionalGeneration folder back together: the same tensor
// names, and every tensor byte-identical to the fixture's but where the
// converter rounds (Gemma's (1 + w) norms, w + 1 − 1 in float32, within
// half an ulp of 1 + w; the projection, which the mmproj keeps F16); its
// config.json states the class, the text model, the tower and the image
// tokens as the fixture's does; the processor's files are written.
func TestGemma3VLRoundTrip(t *testing.T) {
	t.Parallel()
	out, identical, total := vlRoundTrip(t, gemma3VL, func(name string, a float64) (float64, bool) {
		switch {
		case strings.HasSuffix(name, "norm.weight") && !strings.HasPrefix(name, "vision_tower."):
			return 0x1p-24 * 4, true // (w + 1) − 1: half an ulp of 1 + w (|1 + w| < 4 here)
		case name == "multi_modal_projector.mm_input_projection_weight":
			return 0x1p-11, true // float16's relative rounding (|w| < 1 here)
		}
		return 0, false
	})
	t.Logf("%d of %d tensors byte-identical", identical, total)
	vlConfigMatches(t, gemma3VL, out, []string{"architectures", "model_type", "mm_tokens_per_image", "boi_token_index", "eoi_token_index", "image_token_index"}, map[string]string{
		"vision_config": "hidden_size intermediate_size num_hidden_layers num_attention_heads image_size patch_size layer_norm_eps model_type hidden_act vision_use_head num_channels",
		"text_config":   "hidden_size intermediate_size num_hidden_layers num_attention_heads num_key_value_heads head_dim vocab_size sliding_window rope_theta rope_local_base_freq query_pre_attn_scalar rms_norm_eps model_type",
	}, "preprocessor_config.json", "processor_config.json")
}

// vlRoundTrip converts the multimodal folder src to a text GGUF and its
// mmproj at f32 and back to Hugging Face (convert's --mmproj both ways),
// and holds every tensor of the result to src's: the same names, types
// and shapes, the bytes identical, or for a tensor tol names (its
// tolerance, from the fixture's value) within it. It returns the output
// folder and how many tensors came back byte-identical, of how many.
func vlRoundTrip(t *testing.T, src string, tol func(name string, a float64) (float64, bool)) (out string, identical, total int) {
	t.Helper()
	dir := t.TempDir()
	text := filepath.Join(dir, "text.gguf")
	if _, err := Run(src, text, Options{OutType: OutF32, Multimodal: MultimodalBoth}); err != nil {
		t.Fatal(err)
	}
	out = filepath.Join(dir, "hf")
	if _, err := Run(text, out, Options{OutType: OutF32, MmprojFile: MmprojPath(text)}); err != nil {
		t.Fatal(err)
	}
	orig, err := safetensors.Open(filepath.Join(src, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	back, err := safetensors.Open(filepath.Join(out, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	if len(orig.Tensors) != len(back.Tensors) {
		t.Errorf("%d tensors, the fixture has %d", len(back.Tensors), len(orig.Tensors))
	}
	for i := range orig.Tensors {
		x := &orig.Tensors[i]
		y, ok := back.Tensor(x.Name)
		if !ok || y.DType != x.DType || !y.Shape.Equal(x.Shape) {
			t.Errorf("%s: missing or %+v, the fixture's %v %v", x.Name, y, x.DType, x.Shape)
			continue
		}
		xb, _ := io.ReadAll(x.Open())
		yb, _ := io.ReadAll(y.Open())
		if bytes.Equal(xb, yb) {
			identical++
			continue
		}
		for k := 0; k+4 <= len(xb); k += 4 {
			a := float64(math.Float32frombits(binary.LittleEndian.Uint32(xb[k:])))
			b := float64(math.Float32frombits(binary.LittleEndian.Uint32(yb[k:])))
			if d, ok := tol(x.Name, a); !ok {
				t.Errorf("%s: bytes differ from the fixture's", x.Name)
				break
			} else if math.Abs(a-b) > d {
				t.Errorf("%s[%d]: %g, the fixture's %g", x.Name, k/4, b, a)
				break
			}
		}
	}
	return out, identical, len(orig.Tensors)
}

// vlConfigMatches holds the config.json GGUF → HF wrote in out to src's:
// the top-level keys top, each sub-object's keys (space-separated), and
// the processor files named, whole.
func vlConfigMatches(t *testing.T, src, out string, top []string, subs map[string]string, files ...string) {
	t.Helper()
	read := func(p string) map[string]any {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	want, got := read(filepath.Join(src, "config.json")), read(filepath.Join(out, "config.json"))
	for _, k := range top {
		if !reflect.DeepEqual(got[k], want[k]) {
			t.Errorf("config.json %s: %v, the fixture's %v", k, got[k], want[k])
		}
	}
	for obj, keys := range subs {
		g, _ := got[obj].(map[string]any)
		w, _ := want[obj].(map[string]any)
		for _, k := range strings.Fields(keys) {
			if !reflect.DeepEqual(g[k], w[k]) {
				t.Errorf("config.json %s.%s: %v, the fixture's %v", obj, k, g[k], w[k])
			}
		}
	}
	for _, f := range files {
		if g, w := read(filepath.Join(out, f)), read(filepath.Join(src, f)); !reflect.DeepEqual(g, w) {
			t.Errorf("%s %v, the fixture's %v", f, g, w)
		}
	}
}
