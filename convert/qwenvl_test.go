package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/tfconv/tfconv/tensor"
)

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
	for _, fam := range []struct {
		dir, vision string
		mode        Multimodal // MultimodalBoth where the class has a projector
	}{
		{"qwen2_5_vl", "visual.", MultimodalBoth},
		{"qwen3_vl", "model.visual.", MultimodalBoth},
	} {
		ref := readLlamacppRecord(t, fam.dir)
		for _, ot := range []string{OutF32, OutF16, OutQ8_0} {
			t.Run(fam.dir+"/"+ot, func(t *testing.T) {
				t.Parallel()
				out := filepath.Join(t.TempDir(), "out.gguf")
				rep, err := Run(filepath.Join("..", "testdata", "vision", fam.dir, "hf"), out, Options{OutType: ot, Multimodal: fam.mode})
				if err != nil {
					t.Fatal(err)
				}
				vision := 0
				for _, d := range rep.Dropped {
					if strings.HasPrefix(d.Name, fam.vision) {
						vision++
					}
				}
				if vision == 0 {
					t.Errorf("the text GGUF kept the vision tower (%s…)", fam.vision)
				}
				matchRecord(t, ref, "text-"+ot, out)
				if fam.mode != MultimodalBoth {
					if !slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.Contains(w, "vision tower") }) {
						t.Errorf("warnings %q: the tower left out must be said", rep.Warnings)
					}
					return
				}
				if rep.Mmproj == nil || rep.Mmproj.SelfCheck != "ok" {
					t.Fatalf("report's mmproj %+v", rep.Mmproj)
				}
				if slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.Contains(w, "vision tower") }) {
					t.Errorf("--mmproj warns %q: nothing is left out", rep.Warnings)
				}
				// --text-only says it left the whole tower out.
				text := filepath.Join(t.TempDir(), "text.gguf")
				trep, err := Run(filepath.Join("..", "testdata", "vision", fam.dir, "hf"), text, Options{OutType: ot, Multimodal: MultimodalText})
				if err != nil {
					t.Fatal(err)
				}
				if trep.LeftOut == nil || trep.LeftOut.Tensors != vision || trep.LeftOut.Bytes <= 0 {
					t.Errorf("--text-only left out %+v, want the %d tensors under %s", trep.LeftOut, vision, fam.vision)
				}
				matchRecord(t, ref, "mmproj-"+ot, MmprojPath(out))
				// The converter's own files, when gen_qwenvl.py's output is
				// here: the mmproj byte for byte (general.name "Hf" from
				// both folders' name hf).
				theirs := filepath.Join("/work/fixtures-out/vision", fam.dir, fam.dir+"-mmproj-"+ot+".gguf")
				if tb, err := os.ReadFile(theirs); err == nil {
					ob, err := os.ReadFile(MmprojPath(out))
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(ob, tb) {
						t.Errorf("mmproj: %d bytes, not byte-identical to %s (%d bytes)", len(ob), theirs, len(tb))
					}
				}
			})
		}
	}
}

// pyFloat is Python's repr of f, as json.dumps writes a float: the
// shortest digits that read back as f, positional from 1e-4 to below 1e16
// (with ".0" when integral), else d.ddde±XX; NaN and ±Infinity as json.dumps
// spells them.
func pyFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	if a := math.Abs(f); a != 0 && (a < 1e-4 || a >= 1e16) {
		return strconv.FormatFloat(f, 'e', -1, 64)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
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
			} else if f, ok := x.Float(); ok {
				sb.WriteString(pyFloat(f))
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

// TestQwenVLRefusals: a config.json the converter would refuse, or whose
// GGUF would compute otherwise, is refused naming the key: window
// attention blocks that are not every n-th (llama.cpp's qwen2.5vl_merger has
// only that pattern), a deepstack layer outside the tower, a rope_scaling
// other than M-RoPE's.
func TestQwenVLRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, dir, key string
		edit           func(cfg, vision, text map[string]any)
	}{
		{"window-pattern", "qwen2_5_vl", "fullatt_block_indexes", func(_, v, _ map[string]any) { v["fullatt_block_indexes"] = []any{1, 2} }},
		{"no-window-pattern", "qwen2_5_vl", "fullatt_block_indexes", func(_, v, _ map[string]any) { delete(v, "fullatt_block_indexes") }},
		{"deepstack-outside", "qwen3_vl", "deepstack_visual_indexes", func(_, v, _ map[string]any) { v["deepstack_visual_indexes"] = []any{1, 7} }},
		{"yarn", "qwen2_5_vl", "rope_scaling", func(_, _, tx map[string]any) {
			tx["rope_scaling"] = map[string]any{"rope_type": "yarn", "factor": 4.0, "mrope_section": []any{2, 3, 3}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := filepath.Join("..", "testdata", "vision", tc.dir, "hf")
			dir := withConfigs(t, src, "x/"+tc.dir, nil)
			p := filepath.Join(dir, "config.json")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			var cfg map[string]any
			if err := json.Unmarshal(b, &cfg); err != nil {
				t.Fatal(err)
			}
			tc.edit(cfg, cfg["vision_config"].(map[string]any), cfg["text_config"].(map[string]any))
			if b, err = json.Marshal(cfg); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "out.gguf")
			_, err = Run(dir, out, Options{OutType: OutF32, Multimodal: MultimodalBoth})
			if err == nil || !strings.Contains(err.Error(), tc.key) {
				t.Fatalf("err = %v, want a refusal naming %s", err, tc.key)
			}
			for _, f := range []string{out, MmprojPath(out)} {
				if _, err := os.Stat(f); err == nil {
					t.Errorf("refused, yet %s was written", f)
				}
			}
		})
	}
}

// TestQwenVLNoHFBack: GGUF → HF with --mmproj of a Qwen-VL pair is refused
// saying why (the record cannot write Qwen-VL's config.json back yet), and
// writes nothing, rather than a config.json transformers would misread.
func TestQwenVLNoHFBack(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	text := filepath.Join(dir, "q.gguf")
	if _, err := Run(filepath.Join("..", "testdata", "vision", "qwen2_5_vl", "hf"), text, Options{OutType: OutF32, Multimodal: MultimodalBoth}); err != nil {
		t.Fatal(err)
	}
	back := filepath.Join(dir, "back")
	_, err := Run(text, back, Options{MmprojFile: MmprojPath(text)})
	if err == nil || !strings.Contains(err.Error(), "does not convert back") {
		t.Fatalf("err = %v, want a refusal saying the projector does not convert back", err)
	}
	if _, err := os.Stat(back); err == nil {
		t.Errorf("refused, yet %s was written", back)
	}
}
