package quantize

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/tensor"
)

// Layer pruning as llama-quantize --prune-layers does it (llama.cpp after
// c392e509, src/llama-quant.cpp remap_layer; checked against the snapshot
// named in testdata/quantize/README.md): the tensors of the listed blocks
// are dropped, every later block is renumbered to close the gaps (blk.2 of
// a 4-block model pruned of 1 and 3 becomes blk.1), the tensors keep
// llama-quantize's order, and <arch>.block_count is set to the number of
// blocks left as a uint32, removed and appended after every other key (the
// way gguf_set_val_u32 re-sets a key). The mixture rules then see the new
// names; the importance matrix entry is still the input name's.
//
// Where tfconv differs on purpose: a layer that is not in the model, and a
// list that would leave no layer, are errors (llama-quantize ignores the
// first and writes a model of 0 blocks for the second), the list is parsed
// strictly (llama-quantize's stoi reads "2x" as 2), and the per-layer
// arrays llama.cpp reads (perLayerKeys) lose the pruned layers' entries;
// llama-quantize leaves them at their old length, and llama.cpp then
// refuses to load its output ("wrong array length").

// ParsePruneLayers parses a --prune-layers list, "1,3": non-negative block
// numbers separated by commas, returned sorted without repeats as
// llama-quantize uses them.
func ParsePruneLayers(s string) ([]int, error) {
	var ls []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("quantize: --prune-layers %q: %q is not a layer number (want comma-separated numbers from 0)", s, f)
		}
		ls = append(ls, n)
	}
	slices.Sort(ls)
	return slices.Compact(ls), nil
}

// CheckPrune reports why pruning the sorted, distinct layers prune from a
// model of nLayer blocks would not make a model, or nil.
func CheckPrune(prune []int, nLayer int) error {
	if nLayer <= 0 {
		return fmt.Errorf("quantize: --prune-layers: the model states no block count")
	}
	for _, l := range prune {
		if l < 0 || l >= nLayer {
			return fmt.Errorf("quantize: --prune-layers: layer %d is not in the model (its layers are 0 to %d)", l, nLayer-1)
		}
	}
	if len(prune) >= nLayer {
		return fmt.Errorf("quantize: --prune-layers: pruning %d of %d layers would leave none", len(prune), nLayer)
	}
	return nil
}

// pruneLayers drops the tensors of the pruned blocks from ts (in
// llama-quantize's order) and renames the rest as remap_layer does: a
// block below the first pruned one keeps its number, each later one takes
// the next number; renamed tensors are copies, mapped to their input names.
func pruneLayers(ts []*checkpoint.Tensor, prune []int) ([]*checkpoint.Tensor, map[*checkpoint.Tensor]string) {
	newNum := map[int]int{}
	next := 0
	for _, t := range llamaOrder(ts) {
		l := layerOf(t.Name)
		if l < 0 || slices.Contains(prune, l) {
			continue
		}
		if _, ok := newNum[l]; ok {
			continue
		}
		if l < prune[0] {
			newNum[l], next = l, l+1
		} else {
			newNum[l] = next
			next++
		}
	}
	var out []*checkpoint.Tensor
	orig := map[*checkpoint.Tensor]string{}
	for _, t := range ts {
		l := layerOf(t.Name)
		switch {
		case l < 0:
			out = append(out, t)
		case slices.Contains(prune, l):
		case newNum[l] == l:
			out = append(out, t)
		default:
			nt := *t
			nt.Name = "blk." + strconv.Itoa(newNum[l]) + strings.TrimPrefix(t.Name, "blk."+strconv.Itoa(l))
			orig[&nt] = t.Name
			out = append(out, &nt)
		}
	}
	return out, orig
}

// perLayerKeys are the metadata keys (after "<arch>.") llama.cpp reads as
// one value or one per layer (llama_model_loader::get_key_or_arr with the
// layer count).
var perLayerKeys = []string{
	"attention.head_count", "attention.head_count_kv", "feed_forward_length",
	"attention.sliding_window_pattern", "attention.recurrent_layers",
	"swiglu_clamp_exp", "swiglu_clamp_shexp",
}

// PruneMetadata is m for a model pruned of the sorted, distinct layers
// prune: the per-layer arrays of perLayerKeys without the pruned layers'
// entries (in place), and the <arch>.block_count key llama-quantize sets,
// which the writer appends last (RunOptions.Metadata, after the others).
func PruneMetadata(m tensor.Metadata, prune []int) (tensor.Metadata, tensor.KV, error) {
	arch, _ := m.Str("general.architecture")
	n, _ := m.Int(arch + ".block_count")
	if err := CheckPrune(prune, int(n)); err != nil {
		return nil, tensor.KV{}, err
	}
	out := slices.Clone(m)
	for i, kv := range out {
		key, ok := strings.CutPrefix(kv.Key, arch+".")
		if !ok || !slices.Contains(perLayerKeys, key) {
			continue
		}
		a, ok := kv.Value.Array()
		if !ok || a.Len() != int(n) {
			continue
		}
		src := reflect.ValueOf(a.Data)
		dst := reflect.MakeSlice(src.Type(), 0, src.Len()-len(prune))
		for j := range src.Len() {
			if !slices.Contains(prune, j) {
				dst = reflect.Append(dst, src.Index(j))
			}
		}
		out[i].Value = tensor.ArrayOf(dst.Interface())
	}
	return out, tensor.KV{Key: arch + ".block_count", Value: tensor.Uint32(uint32(int(n) - len(prune)))}, nil
}
