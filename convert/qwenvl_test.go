package convert

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/tfconv/tfconv/tensor"
)

// visionRecord is testdata/vision/F/llamacpp.json (gen_vision.gguf_record):
// per output ("text-f32", "mmproj-q8_0", …) of llama.cpp d32676d7's
// converter, every metadata key in order as [name, type, value] (tokenizer
// arrays longer than 16 as {len, sha256 of Python's json.dumps of the
// list}) and every tensor in file order.
type visionRecord struct {
	Outputs map[string]struct {
		Metadata [][3]json.RawMessage `json:"metadata"`
		Tensors  []struct {
			Name   string  `json:"name"`
			Type   string  `json:"type"`
			Shape  []int64 `json:"shape"`
			SHA256 string  `json:"sha256"`
		} `json:"tensors"`
		Command string `json:"command"`
	} `json:"outputs"`
}

// TestQwenVLText: the text halves of Qwen2_5_VLForConditionalGeneration
// (GGUF qwen2vl, M-RoPE sections) and Qwen3VLForConditionalGeneration
// (qwen3vl, with n_deepstack_layers) convert at f32, f16 and q8_0 to what
// llama.cpp d32676d7's converter writes from the same tiny checkpoints
// (testdata/vision/qwen2_5_vl, qwen3_vl; made by gen_qwenvl.py): every key
// and value in its order, every tensor's name, type, shape and bytes in file
// order (general.quantization_version's place aside: see below); the
// vision tower is left out and said in a warning.
func TestQwenVLText(t *testing.T) {
	t.Parallel()
	for _, fam := range []struct{ dir, arch, vision string }{
		{"qwen2_5_vl", "qwen2vl", "visual."},
		{"qwen3_vl", "qwen3vl", "model.visual."},
	} {
		var rec visionRecord
		b, err := os.ReadFile(filepath.Join("..", "testdata", "vision", fam.dir, "llamacpp.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &rec); err != nil {
			t.Fatal(err)
		}
		for _, ot := range []string{OutF32, OutF16, OutQ8_0} {
			t.Run(fam.dir+"/"+ot, func(t *testing.T) {
				t.Parallel()
				want, ok := rec.Outputs["text-"+ot]
				if !ok {
					t.Fatalf("llamacpp.json has no text-%s", ot)
				}
				out := filepath.Join(t.TempDir(), "out.gguf")
				rep, err := Run(filepath.Join("..", "testdata", "vision", fam.dir, "hf"), out, Options{OutType: ot})
				if err != nil {
					t.Fatal(err)
				}
				vision, warned := 0, false
				for _, d := range rep.Dropped {
					if strings.HasPrefix(d.Name, fam.vision) {
						vision++
					}
				}
				for _, w := range rep.Warnings {
					warned = warned || strings.Contains(w, "vision tower")
				}
				if vision == 0 || !warned {
					t.Errorf("%d vision tensors dropped, warnings %q: the tower must be left out and said", vision, rep.Warnings)
				}
				g := openGGUF(t, out)
				// d32676d7 writes general.quantization_version before the
				// tokenizer keys; tfconv keeps c392e509's place for it, the
				// end (testdata/arch/README.md): its value is checked, its
				// place is not.
				ours := slices.DeleteFunc(slices.Clone(g.Metadata), func(kv tensor.KV) bool { return kv.Key == keyQuantVersion })
				var theirs [][3]json.RawMessage
				for _, m := range want.Metadata {
					var key string
					_ = json.Unmarshal(m[0], &key)
					if key == keyQuantVersion {
						qv, _ := g.Metadata.Get(keyQuantVersion)
						var typ string
						_ = json.Unmarshal(m[1], &typ)
						if err := sameValue(qv, typ, m[2]); err != nil {
							t.Errorf("%s: %v", key, err)
						}
						continue
					}
					theirs = append(theirs, m)
				}
				if len(ours) != len(theirs) {
					t.Errorf("%d keys, the converter's %d", len(ours), len(theirs))
				}
				for i := 0; i < len(ours) && i < len(theirs); i++ {
					var key, typ string
					_ = json.Unmarshal(theirs[i][0], &key)
					_ = json.Unmarshal(theirs[i][1], &typ)
					if ours[i].Key != key {
						t.Errorf("key %d: %s, the converter's %s", i, ours[i].Key, key)
						continue
					}
					if err := sameValue(ours[i].Value, typ, theirs[i][2]); err != nil {
						t.Errorf("%s: %v", key, err)
					}
				}
				if len(g.Tensors) != len(want.Tensors) {
					t.Fatalf("%d tensors, the converter's %d", len(g.Tensors), len(want.Tensors))
				}
				for i := range g.Tensors {
					x, w := &g.Tensors[i], want.Tensors[i]
					shape := make([]int64, len(x.Shape))
					for j := range x.Shape {
						shape[len(shape)-1-j] = x.Shape[j] // gguf-py lists ggml's ne: innermost first
					}
					if x.Name != w.Name || !strings.EqualFold(x.DType.String(), w.Type) || fmt.Sprint(shape) != fmt.Sprint(w.Shape) {
						t.Errorf("tensor %d: %s %v %v, the converter's %s %s %v", i, x.Name, x.DType, shape, w.Name, w.Type, w.Shape)
						continue
					}
					xb, err := io.ReadAll(x.Open())
					if err != nil {
						t.Fatal(err)
					}
					if sum := sha256.Sum256(xb); hex.EncodeToString(sum[:]) != w.SHA256 {
						t.Errorf("%s: bytes differ from the converter's", x.Name)
					}
				}
			})
		}
	}
}

// sameValue compares a GGUF value with gguf_record's [type, value]: scalars
// as JSON (floats as float32), arrays element by element, or, for long
// tokenizer arrays, by length and the sha256 of Python's json.dumps.
func sameValue(v tensor.Value, typ string, raw json.RawMessage) error {
	if typ == "array" {
		a, ok := v.Array()
		if !ok {
			return fmt.Errorf("%v is not an array", v)
		}
		var digest struct {
			Len    int    `json:"len"`
			SHA256 string `json:"sha256"`
		}
		if json.Unmarshal(raw, &digest) == nil && digest.SHA256 != "" {
			sum := sha256.Sum256([]byte(pyDumps(a)))
			if a.Len() != digest.Len || hex.EncodeToString(sum[:]) != digest.SHA256 {
				return fmt.Errorf("%d entries (sha256 %x…), the converter's %d (%s…)", a.Len(), sum[:4], digest.Len, digest.SHA256[:8])
			}
			return nil
		}
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return err
		}
		if len(list) != a.Len() {
			return fmt.Errorf("%d entries, the converter's %d", a.Len(), len(list))
		}
		for i := range list {
			if err := sameScalar(a.Index(i), list[i]); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
		return nil
	}
	if !strings.EqualFold(v.Kind().String(), typ) {
		return fmt.Errorf("type %v, the converter's %s", v.Kind(), typ)
	}
	return sameScalar(v, raw)
}

func sameScalar(v tensor.Value, raw json.RawMessage) error {
	var want any
	if err := json.Unmarshal(raw, &want); err != nil {
		return err
	}
	switch w := want.(type) {
	case float64:
		if f, ok := v.Float(); ok && (f == w || float32(f) == float32(w)) {
			return nil
		}
		if n, ok := v.Int(); ok && float64(n) == w {
			return nil
		}
	case bool:
		if b, ok := v.BoolValue(); ok && b == w {
			return nil
		}
	case string:
		if s, ok := v.Str(); ok && s == w {
			return nil
		}
	}
	return fmt.Errorf("%v, the converter's %s", v, raw)
}

// pyDumps is Python's json.dumps of a list of strings or integers (", "
// between entries, ASCII only: other characters as \uXXXX escapes, UTF-16
// surrogate pairs beyond the BMP), the text gen_vision.gguf_record hashes.
func pyDumps(a tensor.Array) string {
	var sb strings.Builder
	sb.WriteByte('[')
	for i := 0; i < a.Len(); i++ {
		if i > 0 {
			sb.WriteString(", ")
		}
		x := a.Index(i)
		s, ok := x.Str()
		if !ok {
			if n, ok := x.Int(); ok {
				fmt.Fprint(&sb, n)
			} else if f, ok := x.Float(); ok && !math.IsInf(f, 0) {
				fmt.Fprint(&sb, f)
			}
			continue
		}
		sb.WriteByte('"')
		for _, r := range s {
			switch {
			case r == '"':
				sb.WriteString(`\"`)
			case r == '\\':
				sb.WriteString(`\\`)
			case r == '\n':
				sb.WriteString(`\n`)
			case r == '\r':
				sb.WriteString(`\r`)
			case r == '\t':
				sb.WriteString(`\t`)
			case r == '\b':
				sb.WriteString(`\b`)
			case r == '\f':
				sb.WriteString(`\f`)
			case r < 0x20 || (r > 0x7e && r != 0x7f):
				if r > 0xffff {
					r1, r2 := utf16.EncodeRune(r)
					fmt.Fprintf(&sb, `\u%04x\u%04x`, r1, r2)
				} else {
					fmt.Fprintf(&sb, `\u%04x`, r)
				}
			default:
				sb.WriteRune(r)
			}
		}
		sb.WriteByte('"')
	}
	sb.WriteByte(']')
	return sb.String()
}
