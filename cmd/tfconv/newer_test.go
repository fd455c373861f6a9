package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/tensor"
)

// newerRef is testdata/quantize/newer.json (gen_newer.py): what a
// llama-quantize newer than c392e509 wrote for MXFP4_MOE and
// --prune-layers.
type newerRef struct {
	Commit string `json:"llama_cpp_commit"`
	Cases  map[string]struct {
		Args       []string    `json:"args"`
		Input      string      `json:"input"`
		SHA256     string      `json:"sha256"`
		KV         [][2]string `json:"kv"`
		BlockCount *int        `json:"block_count"`
		Tensors    [][3]string `json:"tensors"` // name, type, sha256 of the data
		Exit       int         `json:"exit"`
		LastLine   string      `json:"last_line"`
		// UnprunedTyped, for a pruning case, is llama-quantize on the
		// unpruned input with each renamed tensor's input tensor forced
		// (--tensor-type) to the type the pruned file gave its new name:
		// the data a correct pruning keeps, by input name.
		UnprunedTyped *struct {
			Tensors [][3]string `json:"tensors"`
		} `json:"unpruned_typed"`
	} `json:"cases"`
}

// ggufKinds lists a GGUF file's keys with their value types as gguf-py
// names them ("UINT32", "ARRAY[STRING]").
func ggufKinds(m tensor.Metadata) [][2]string {
	var out [][2]string
	for _, kv := range m {
		k := strings.ToUpper(kv.Value.Kind().String())
		if a, ok := kv.Value.Array(); ok {
			k += "[" + strings.ToUpper(a.Elem.String()) + "]"
		}
		out = append(out, [2]string{kv.Key, k})
	}
	return out
}

// ggufTensors lists a GGUF file's tensors as newer.json does: name, type
// and the sha256 of the data bytes, in file order.
func ggufTensors(t *testing.T, f *gguf.File) [][3]string {
	var out [][3]string
	for i := range f.Tensors {
		h := sha256.New()
		if _, err := io.Copy(h, f.Tensors[i].Open()); err != nil {
			t.Fatal(err)
		}
		out = append(out, [3]string{f.Tensors[i].Name, f.Tensors[i].DType.String(), hex.EncodeToString(h.Sum(nil))})
	}
	return out
}

// tfconv quantize --type mxfp4_moe and --prune-layers against llama-quantize
// of a newer llama.cpp (newer.json's commit) on the same inputs. Each output
// has llama-quantize's tensor names and types in its order and its metadata
// keys in order with their types (with --imatrix the newer tool writes the
// two imatrix counts as uint32, where c392e509 and tfconv write int32: its
// --override-kv int became uint32). The data of every tensor is
// llama-quantize's: byte for byte its file's where no block was renamed
// (every MXFP4_MOE file, pruning of the last layer: the whole file is
// identical); for a renamed block, its encoding of the input block the new
// one stands for (unpruned_typed), since llama-quantize itself reads a
// renamed tensor's data by its new name and so keeps the wrong blocks
// (newer.json: pruning layer 0 and layer 7 give one and the same file). The
// lists tfconv refuses on purpose (a layer the model does not have; every
// layer), which llama-quantize takes, are errors here; deepseek2's 16-wide
// latent, for which llama-quantize has no Q8_0 fallback, takes F16 here.
func TestQuantizeMatchesNewerLlamaQuantize(t *testing.T) {
	b, err := os.ReadFile("../../testdata/quantize/newer.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref newerRef
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	if p0, p7 := ref.Cases["mixtures Q8_0 prune 0"], ref.Cases["mixtures Q8_0 prune 7"]; p0.SHA256 == "" || p0.SHA256 != p7.SHA256 {
		t.Errorf("newer.json: llama-quantize's pruning of layer 0 and of layer 7 differ (%s, %s): the tool now reads the right blocks; compare whole files", p0.SHA256, p7.SHA256)
	}
	out := filepath.Join(t.TempDir(), "q.gguf")
	t.Chdir("../..")
	identical, renamedChecked := 0, 0
	for _, name := range slices.Sorted(maps.Keys(ref.Cases)) {
		want := ref.Cases[name]
		n := len(want.Args)
		flags := want.Args[1 : n-3]
		args := append([]string{"quantize", want.Input, out, "--type", strings.ToLower(want.Args[n-1]), "--force"}, flags...)
		code, stdout, errs := run(t, args...)
		switch {
		case want.Exit != 0:
			// llama-quantize: "no tensor type fallback is defined for type q8_0".
			if code != 0 || !strings.Contains(stdout, "fallback: row length 16") {
				t.Errorf("%s: llama-quantize failed (%s); tfconv: exit %d %s", name, want.LastLine, code, errs)
			}
			continue
		case strings.HasSuffix(name, " prune 9"):
			// llama-quantize ignores the missing layer and keeps all 8.
			if code == 0 || !strings.Contains(errs, "layer 9 is not in the model") || want.BlockCount == nil || *want.BlockCount != 8 {
				t.Errorf("%s: exit %d: %s (llama-quantize's block_count %v)", name, code, errs, want.BlockCount)
			}
			continue
		case strings.HasSuffix(name, " prune all"):
			// llama-quantize writes a model of 0 blocks.
			if code == 0 || !strings.Contains(errs, "would leave none") || want.BlockCount == nil || *want.BlockCount != 0 {
				t.Errorf("%s: exit %d: %s (llama-quantize's block_count %v)", name, code, errs, want.BlockCount)
			}
			continue
		}
		if code != 0 {
			t.Errorf("%s: exit %d: %s", name, code, errs)
			continue
		}
		f, err := gguf.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		got := ggufTensors(t, f)
		kinds := ggufKinds(f.Metadata)
		f.Close()
		// The input block each output block stands for.
		inputName := func(n string) string { return n }
		if i := slices.Index(flags, "--prune-layers"); i >= 0 {
			prune, err := quantizePruneList(flags[i+1])
			if err != nil || want.BlockCount == nil {
				t.Fatalf("%s: %v", name, err)
			}
			var kept []int
			for l := 0; l < *want.BlockCount+len(prune); l++ {
				if !slices.Contains(prune, l) {
					kept = append(kept, l)
				}
			}
			inputName = func(n string) string {
				rest, ok := strings.CutPrefix(n, "blk.")
				num, tail, _ := strings.Cut(rest, ".")
				j, err := strconv.Atoi(num)
				if !ok || err != nil || j >= len(kept) {
					return n
				}
				return "blk." + strconv.Itoa(kept[j]) + "." + tail
			}
		}
		unpruned := map[string]string{}
		if want.UnprunedTyped != nil {
			for _, x := range want.UnprunedTyped.Tensors {
				unpruned[x[0]] = x[2]
			}
		}
		if len(got) != len(want.Tensors) {
			t.Errorf("%s: %d tensors, llama-quantize %d", name, len(got), len(want.Tensors))
			continue
		}
		anyRenamed := false
		for i, g := range got {
			w := want.Tensors[i]
			if g[0] != w[0] || g[1] != w[1] {
				t.Errorf("%s: tensor %d: tfconv %s %s, llama-quantize %s %s", name, i, g[0], g[1], w[0], w[1])
				continue
			}
			wantData := w[2]
			if in := inputName(g[0]); in != g[0] {
				anyRenamed = true
				wantData = unpruned[in]
				renamedChecked++
			}
			if g[2] != wantData {
				t.Errorf("%s: %s (input %s) data sha256 %s, llama-quantize's encoding of it %s", name, g[0], inputName(g[0]), g[2], wantData)
			}
		}
		wantKinds := slices.Clone(want.KV)
		if strings.Contains(name, "+imatrix") {
			for i, kv := range wantKinds {
				if kv[0] == "quantize.imatrix.entries_count" || kv[0] == "quantize.imatrix.chunks_count" {
					if kv[1] != "UINT32" {
						t.Errorf("%s: llama-quantize wrote %s as %s", name, kv[0], kv[1])
					}
					wantKinds[i][1] = "INT32"
				}
			}
		}
		if !slices.Equal(kinds, wantKinds) {
			t.Errorf("%s: keys %v\nllama-quantize %v", name, kinds, wantKinds)
			continue
		}
		data, _ := os.ReadFile(out)
		sum := sha256.Sum256(data)
		same := hex.EncodeToString(sum[:]) == want.SHA256
		if same {
			identical++
		}
		if wantSame := !anyRenamed && !strings.Contains(name, "+imatrix"); same != wantSame {
			t.Errorf("%s: file sha256 %x, llama-quantize's %s (identical expected: %v)", name, sum, want.SHA256, wantSame)
		}
	}
	t.Logf("%d files byte-identical, %d renamed tensors equal to llama-quantize's encoding of their input block (llama.cpp %s)",
		identical, renamedChecked, ref.Commit)
	if identical != 5 || renamedChecked != 225 {
		t.Errorf("%d files byte-identical, %d renamed tensors checked; newer.json has 5 and 225", identical, renamedChecked)
	}
}

// quantizePruneList parses a --prune-layers value as the test's reference
// tool does (non-negative numbers, commas).
func quantizePruneList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// --prune-layers refuses, before writing anything, a list it cannot read, a
// layer the model does not have, pruning every layer, safetensors output
// and --target-bpw.
func TestQuantizePruneLayersErrors(t *testing.T) {
	src := "../../testdata/quantize/mixtures-f16.gguf"
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--prune-layers", "1,x"}, `"x" is not a layer number`},
		{[]string{"--prune-layers", "2x"}, `"2x" is not a layer number`},
		{[]string{"--prune-layers", "-1"}, `"-1" is not a layer number`},
		{[]string{"--prune-layers", "3,8"}, "layer 8 is not in the model (its layers are 0 to 7)"},
		{[]string{"--prune-layers", "7,6,5,4,3,2,1,0"}, "pruning 8 of 8 layers would leave none"},
		{[]string{"--prune-layers", "1", "--target-bpw", "4", "--calib", src}, "do not go together"},
	} {
		out := filepath.Join(dir, "q.gguf")
		code, _, errs := run(t, append([]string{"quantize", src, out, "--type", "q8_0"}, c.args...)...)
		if code == 0 || !strings.Contains(errs, c.msg) {
			t.Errorf("%v: exit %d: %s", c.args, code, errs)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%v: wrote %s", c.args, out)
		}
	}
	code, _, errs := run(t, "quantize", src, filepath.Join(dir, "hf"), "--type", "f16", "--to", "safetensors", "--prune-layers", "1")
	if code == 0 || !strings.Contains(errs, "not safetensors") {
		t.Errorf("safetensors output: exit %d: %s", code, errs)
	}
}
