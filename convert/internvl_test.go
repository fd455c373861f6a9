package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// internVLHF and internVLChat are testdata/vision's tiny InternVL 3: the
// checkpoint transformers' InternVLForConditionalGeneration saved (the -hf
// layout) and the same weights in the original remote-code layout
// (InternVLChatModel), as OpenGVLab publishes both (gen_internvl.py).
var (
	internVLHF   = filepath.Join("..", "testdata", "vision", "internvl", "hf")
	internVLChat = filepath.Join("..", "testdata", "vision", "internvl_chat", "hf")
)

// TestInternVLMatchesLlamaCpp: the original layout's text GGUF and mmproj,
// at f32, f16 and q8_0, hold llama.cpp d32676d7's keys in order with its
// values and its tensors in order with its types, shapes and bytes; the
// mmproj is byte-identical to the converter's file where gen_internvl.py's
// output is at hand. The -hf layout's text GGUF matches the converter's
// too. Its mmproj the converter writes without a tensor (its filter takes
// none of the names transformers saves: the record says so, and this test
// fails once it does not); tfconv's holds the same keys as the original
// layout's but the two tile counts only that layout's config.json states,
// and the same tensors byte for byte.
func TestInternVLMatchesLlamaCpp(t *testing.T) {
	t.Parallel()
	matchesLlamaCpp(t, "internvl_chat", internVLChat, OutF32, OutF16, OutQ8_0)

	hf, chat := readLlamacppRecord(t, "internvl"), readLlamacppRecord(t, "internvl_chat")
	for _, ot := range []string{OutF32, OutF16, OutQ8_0} {
		t.Run("hf-"+ot, func(t *testing.T) {
			t.Parallel()
			if n := len(hf.Outputs["mmproj-"+ot].Tensors); n != 0 {
				t.Fatalf("llamacpp.json: the converter's -hf mmproj now has %d tensors: compare with it", n)
			}
			dst := filepath.Join(t.TempDir(), "internvl-"+ot+".gguf")
			rep, err := Run(internVLHF, dst, Options{OutType: ot, Multimodal: MultimodalBoth})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Mmproj == nil || rep.Mmproj.SelfCheck != "ok" {
				t.Fatalf("report's mmproj %+v", rep.Mmproj)
			}
			matchRecord(t, hf, "text-"+ot, dst)
			want := chat.Outputs["mmproj-"+ot]
			for _, k := range []string{"clip.vision.preproc_min_tiles", "clip.vision.preproc_max_tiles"} {
				want.Metadata = withoutRecordKey(want.Metadata, k)
			}
			// The tensors in the -hf file's order: the same names, types,
			// shapes and bytes as the original layout's.
			g := openGGUF(t, MmprojPath(dst))
			at := map[string]int{}
			for i, x := range g.Tensors {
				at[x.Name] = i
			}
			ts := want.Tensors
			want.Tensors = make([]struct {
				Name   string  `json:"name"`
				Type   string  `json:"type"`
				Shape  []int64 `json:"shape"`
				SHA256 string  `json:"sha256"`
			}, len(ts))
			for _, w := range ts {
				i, ok := at[w.Name]
				if !ok || i >= len(ts) {
					t.Fatalf("mmproj: no tensor %s (or more tensors than the converter's %d)", w.Name, len(ts))
				}
				want.Tensors[i] = w
			}
			matchRecord(t, &llamacppRecord{Outputs: map[string]recordOutput{"mmproj-" + ot: want}}, "mmproj-"+ot, MmprojPath(dst))
		})
	}
}

// TestInternVLModes: --text-only reports the whole tower left out (76 + 6
// tensors in the -hf layout, 66 in the original one with its fused qkv);
// GGUF → HF refuses the projector (its record states why); the text
// GGUFs of both layouts are one file.
func TestInternVLModes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var texts [][]byte
	for _, c := range []struct {
		src  string
		want int
	}{{internVLHF, 82}, {internVLChat, 66}} {
		dst := filepath.Join(dir, filepath.Base(filepath.Dir(c.src))+".gguf")
		rep, err := Run(c.src, dst, Options{OutType: OutF32, Multimodal: MultimodalText})
		if err != nil {
			t.Fatal(err)
		}
		if rep.LeftOut == nil || rep.LeftOut.Tensors != c.want || rep.LeftOut.Projector != "internvl" {
			t.Errorf("%s --text-only left out %+v, want %d tensors of the internvl projector", c.src, rep.LeftOut, c.want)
		}
		b, err := os.ReadFile(dst)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, b)
	}
	if !bytes.Equal(texts[0], texts[1]) {
		t.Errorf("the text GGUFs of the two layouts differ (%d and %d bytes)", len(texts[0]), len(texts[1]))
	}
	text := filepath.Join(dir, "both.gguf")
	if _, err := Run(internVLHF, text, Options{OutType: OutF32, Multimodal: MultimodalBoth}); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(text, filepath.Join(dir, "back"), Options{MmprojFile: MmprojPath(text)}); !errors.Is(err, tensor.ErrUnsupported) {
		t.Errorf("GGUF → HF with the InternVL mmproj: %v, want a refusal", err)
	}
}

// TestInternVLRefusals: config.json settings the mmproj cannot state, and a
// text model of another class, are refused naming the key.
func TestInternVLRefusals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, want string
		edit       func(c map[string]any)
	}{
		{"feature layer", "vision_feature_layer", func(c map[string]any) { c["vision_feature_layer"] = -2 }},
		{"full strategy", "vision_feature_select_strategy", func(c map[string]any) { c["vision_feature_select_strategy"] = "full" }},
		{"qk norm", "use_qk_norm", func(c map[string]any) { c["vision_config"].(map[string]any)["use_qk_norm"] = true }},
		{"rms tower", "norm_type", func(c map[string]any) { c["vision_config"].(map[string]any)["norm_type"] = "rms_norm" }},
		{"activation", "hidden_act", func(c map[string]any) { c["vision_config"].(map[string]any)["hidden_act"] = "relu" }},
		{"no ratio", "downsample_ratio", func(c map[string]any) { delete(c, "downsample_ratio") }},
		{"uneven tiles", "image_size", func(c map[string]any) { c["vision_config"].(map[string]any)["image_size"] = []any{56, 28} }},
		{"qwen3 text", "Qwen3ForCausalLM", func(c map[string]any) {
			c["text_config"].(map[string]any)["architectures"] = []any{"Qwen3ForCausalLM"}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ents, err := os.ReadDir(internVLHF)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), "reference") {
					continue
				}
				if err := os.Symlink(filepath.Join(must(filepath.Abs(internVLHF)), e.Name()), filepath.Join(dir, e.Name())); err != nil {
					t.Fatal(err)
				}
			}
			b, err := os.ReadFile(filepath.Join(internVLHF, "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			var c map[string]any
			if err := json.Unmarshal(b, &c); err != nil {
				t.Fatal(err)
			}
			tc.edit(c)
			b, _ = json.Marshal(c)
			os.Remove(filepath.Join(dir, "config.json"))
			if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644); err != nil {
				t.Fatal(err)
			}
			dst := filepath.Join(t.TempDir(), "x.gguf")
			_, err = Run(dir, dst, Options{OutType: OutF32, Multimodal: MultimodalBoth})
			if !errors.Is(err, tensor.ErrUnsupported) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want a refusal naming %s", err, tc.want)
			}
			if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("refused, yet %s exists", dst)
			}
		})
	}
}

func must(s string, err error) string {
	if err != nil {
		panic(err)
	}
	return s
}
