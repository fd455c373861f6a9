package arch

import "github.com/tfconv/tfconv/tensor"

// The keys of a mixture's routing beyond the expert counts, shared by the
// families that route as DeepSeek-V3 does (deepseek2, dots1, minimax-m2).

// gatingFuncs are llama.cpp's expert_gating_func values (index) by
// config.json scoring_func.
var gatingFuncs = []string{"", "softmax", "sigmoid"}

// gatingFunc is expert_gating_func from config.json's scoring_func
// (softmax or sigmoid; another is refused, as the converter raises); need
// says what its absence does (Optional: no key, which llama.cpp reads as
// its own default per architecture).
func gatingFunc(need Need) Param {
	return Param{Key: "expert_gating_func", HF: []string{"scoring_func"}, Kind: tensor.KindUint32, Need: need,
		Derive: func(c Config) (tensor.Value, bool, error) {
			s, ok := c.Str("scoring_func")
			if !ok && need == Optional && !c.Has("scoring_func") {
				return tensor.Value{}, false, nil
			}
			for i, name := range gatingFuncs {
				if name != "" && name == s {
					return tensor.Uint32(uint32(i)), true, nil
				}
			}
			return tensor.Value{}, false, errUnsupported("config.json: scoring_func %q (softmax or sigmoid)", s)
		},
		Inverse: func(c Config, v tensor.Value, _ Meta) {
			if i, ok := v.Int(); ok && i > 0 && i < int64(len(gatingFuncs)) {
				c["scoring_func"] = gatingFuncs[i]
			}
		}}
}

// expertGroups are expert_group_count and expert_group_used_count, which
// the newer converter writes from n_group and topk_group whenever
// config.json states them (llama.cpp then chooses the experts within the
// best groups, as DeepSeek-V3's noaux_tc does).
func expertGroups() []Param {
	return []Param{u32("expert_group_count", Optional, "n_group"), u32("expert_group_used_count", Optional, "topk_group")}
}
