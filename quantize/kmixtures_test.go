package quantize

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/tensor"
)

// Every k-quant mixture llama-quantize offers without an importance matrix
// gives, on a model whose rows are 256 wide (no fallbacks, so every
// mixture rule shows), llama-quantize's file byte for byte: the types
// chosen per tensor and the whole file's sha256 (testdata/quantize/
// mixtures.json, made by llama-quantize c392e509: gen_mixtures.py).
func TestKQuantMixturesMatchLlamaQuantize(t *testing.T) {
	var ref map[string]struct {
		SHA256  string      `json:"sha256"`
		Tensors [][2]string `json:"tensors"`
		Refused any         `json:"refused"` // llama-quantize's refusal (iq3 files), or true (iq2 files): no imatrix
	}
	readMixtures(t, &ref)
	if len(ref) < 14 {
		t.Fatalf("%d reference mixtures", len(ref))
	}
	c := open(t, filepath.Join(testdata, "mixtures-f16.gguf"))
	for name, want := range ref {
		if strings.Contains(name, "+") {
			continue // with an importance matrix: cmd/tfconv's TestQuantizeMixturesWithFlags
		}
		if strings.HasPrefix(name, "70B ") || strings.HasPrefix(name, "8x ") || strings.HasPrefix(name, "plan ") {
			continue // plans only: TestKQuantMixturesPlans
		}
		if msg, ok := want.Refused.(string); ok && msg != "" {
			// llama-quantize: "Missing importance matrix for tensor X".
			_, err := Plan(c, Options{Target: target(t, strings.ToLower(name))})
			tn := strings.Fields(strings.SplitAfter(msg, "for tensor ")[1])[0]
			if err == nil || !strings.Contains(err.Error(), "importance matrix") || !strings.Contains(err.Error(), tn) {
				t.Errorf("%s: %v; llama-quantize refused: %s", name, err, msg)
			}
			continue
		}
		if refused, _ := want.Refused.(bool); refused {
			typ, _, _ := strings.Cut(name, "-")
			if _, err := Plan(c, Options{Target: target(t, strings.ToLower(typ))}); !errors.Is(err, tensor.ErrUnsupported) ||
				!strings.Contains(err.Error(), "importance matrix") {
				t.Errorf("%s: llama-quantize refuses; Plan: %v", name, err)
			}
			continue
		}
		t.Run(name, func(t *testing.T) {
			plan, err := Plan(c, Options{Target: target(t, strings.ToLower(name))})
			if err != nil {
				t.Fatal(err)
			}
			if len(plan) != len(want.Tensors) {
				t.Fatalf("%d choices, llama-quantize wrote %d tensors", len(plan), len(want.Tensors))
			}
			for i, ch := range plan {
				if ch.Tensor.Name != want.Tensors[i][0] || ch.Type.String() != want.Tensors[i][1] {
					t.Errorf("%s -> %v (%s); llama-quantize: %s -> %s", ch.Tensor.Name, ch.Type, ch.Reason, want.Tensors[i][0], want.Tensors[i][1])
				}
			}
			out := filepath.Join(t.TempDir(), "q.gguf")
			f, err := os.Create(out)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Write(f, c, plan, target(t, strings.ToLower(name)), GGUF, RunOptions{Threads: 2}); err != nil {
				t.Fatal(err)
			}
			f.Close()
			data, _ := os.ReadFile(out)
			sum := sha256.Sum256(data)
			if hex.EncodeToString(sum[:]) != want.SHA256 {
				t.Errorf("file sha256 %x, llama-quantize's %s", sum, want.SHA256)
			}
		})
	}
	if _, err := Plan(c, Options{Target: target(t, "q2_k_s")}); err == nil || !strings.Contains(err.Error(), "importance matrix") {
		t.Errorf("q2_k_s without an imatrix: %v", err)
	}
}

// readMixtures decodes mixtures.json and every mixtures-FAMILY.json (each
// written by gen_mixtures.py) into the map v points to.
func readMixtures(t *testing.T, v any) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(testdata, "mixtures*.json"))
	if err != nil || len(files) < 2 {
		t.Fatalf("mixtures files %v: %v", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
}

// Models too large to ship, whose plans llama-quantize's rules treat
// apart: llama.cpp takes an 80-layer llama with grouped-query attention for
// a 70B and gives its attn_v Q5_K where the mixture says Q3_K or Q4_K
// (mixtures.json "70B TYPE"); a model of 8 experts gets Q8_0 attn_v and
// attn_k and, under IQ4_XS, Q5_K attn_output, and its ffn_down layer is read
// from the stacked tensor's name ("8x TYPE"). The plan for such a model
// (names, shapes and metadata of llama-quantize's run; plans read no data)
// chooses what llama-quantize chose for every tensor.
func TestKQuantMixturesPlans(t *testing.T) {
	var ref map[string]struct {
		Metadata map[string]any `json:"metadata"`
		Tensors  [][3]any       `json:"tensors"`
		Refused  any            `json:"refused"`
	}
	readMixtures(t, &ref)
	for _, tc := range []struct{ key, typ, marker string }{
		{"70B Q4_K_M", "q4_k_m", "attn_v of a 70B model"},
		{"70B Q3_K_M", "q3_k_m", "attn_v of a 70B model"},
		{"8x IQ4_XS", "iq4_xs", "attn_v of an 8-expert model"},
		{"70B IQ3_M", "iq3_m", "attn_v of a 70B model"},
		{"70B IQ3_XS", "iq3_xs", "attn_v of a 70B model"},
		{"8x IQ3_M", "iq3_m", "use_more_bits, 8 experts)"},
		{"8x IQ3_XS", "iq3_xs", "ffn_up of the middle layers"},
		{"8x IQ3_S", "iq3_s", "attn_output of an 8-expert model"},
	} {
		typ := tc.key
		r, ok := ref[tc.key]
		if !ok || len(r.Tensors) == 0 {
			t.Fatalf("no %s reference", tc.key)
		}
		meta := tensor.Metadata{{Key: "general.architecture", Value: tensor.String(r.Metadata["general.architecture"].(string))}}
		for _, k := range slices.Sorted(maps.Keys(r.Metadata)) {
			if k != "general.architecture" {
				meta = append(meta, tensor.KV{Key: k, Value: tensor.Uint32(uint32(r.Metadata[k].(float64)))})
			}
		}
		var ts []*checkpoint.Tensor
		for _, x := range r.Tensors {
			var shape tensor.Shape
			for _, d := range x[2].([]any) {
				shape = append(shape, int64(d.(float64)))
			}
			info := tensor.Info{Name: x[0].(string), DType: tensor.F16, Shape: shape}
			if len(shape) == 1 {
				info.DType = tensor.F32
			}
			info.Size, _ = info.DType.ShapeBytes(shape)
			ts = append(ts, checkpoint.MemTensor(info, nil))
		}
		c := checkpoint.Assemble(tc.key+".gguf", checkpoint.GGUF, meta, ts)
		plan, err := Plan(c, Options{Target: target(t, tc.typ)})
		if err != nil {
			t.Fatal(err)
		}
		if len(plan) != len(r.Tensors) {
			t.Fatalf("%s: %d choices, llama-quantize wrote %d tensors", typ, len(plan), len(r.Tensors))
		}
		bumped := 0
		for i, ch := range plan {
			if ch.Tensor.Name != r.Tensors[i][0] || ch.Type.String() != r.Tensors[i][1] {
				t.Errorf("%s: %s -> %v (%s); llama-quantize: %s -> %s", typ, ch.Tensor.Name, ch.Type, ch.Reason, r.Tensors[i][0], r.Tensors[i][1])
			}
			if strings.HasSuffix(ch.Reason, tc.marker) {
				bumped++
			}
		}
		if bumped == 0 {
			t.Errorf("%s: no tensor chosen for %q", typ, tc.marker)
		}
	}
}
