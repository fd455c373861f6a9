package quantize

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every k-quant mixture llama-quantize offers without an importance matrix
// gives, on a model whose rows are 256 wide (no fallbacks, so every
// mixture rule shows), llama-quantize's file byte for byte: the types
// chosen per tensor and the whole file's sha256 (testdata/quantize/
// mixtures.json, made by llama-quantize c392e509: gen_mixtures.py).
func TestKQuantMixturesMatchLlamaQuantize(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testdata, "mixtures.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref map[string]struct {
		SHA256  string      `json:"sha256"`
		Tensors [][2]string `json:"tensors"`
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref) < 11 {
		t.Fatalf("%d reference mixtures", len(ref))
	}
	c := open(t, filepath.Join(testdata, "mixtures-f16.gguf"))
	for name, want := range ref {
		if strings.Contains(name, "+") {
			continue // with an importance matrix: cmd/tfconv's TestQuantizeImatrixKMixtures
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
