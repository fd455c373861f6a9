package arch

import (
	"fmt"
	"math"
	"strings"
)

// LongRope is Phi-3's LongRoPE ("su" before transformers renamed it):
// per-pair divisors of the rotary frequencies, one set for sequences up to
// the original context and one past it, and a factor on cos and sin.
type LongRope struct {
	Short, Long []float32
	// OriginalContext is original_max_position_embeddings: sequences
	// longer than it use Long.
	OriginalContext int64
	// AttnFactor multiplies cos and sin: √(1 + ln s / ln original) for
	// s = max_position_embeddings / original > 1, else 1.
	AttnFactor float64
}

// LongRopeOf reads config.json's rope_scaling when its type is su or
// longrope (ok false when there is no rope_scaling); rotDim is the number
// of rotated dimensions of a head, which the factor lists must halve.
func LongRopeOf(c Config, rotDim int) (LongRope, bool, error) {
	rs, ok := c.Map("rope_scaling")
	if !ok {
		return LongRope{}, false, nil
	}
	typ, _ := rs.Str("type")
	if typ == "" {
		typ, _ = rs.Str("rope_type")
	}
	switch strings.ToLower(typ) {
	case "su", "longrope":
	case "":
		return LongRope{}, false, errUnsupported("config.json: rope_scaling has no type")
	default:
		return LongRope{}, false, errUnsupported("config.json: rope_scaling type %q", typ)
	}
	var r LongRope
	var err error
	if r.Short, err = factorList(rs, "short_factor", rotDim); err != nil {
		return LongRope{}, false, err
	}
	if r.Long, err = factorList(rs, "long_factor", rotDim); err != nil {
		return LongRope{}, false, err
	}
	orig, ok := c.Int("original_max_position_embeddings")
	if !ok || orig <= 1 {
		return LongRope{}, false, errUnsupported("config.json: LongRoPE needs original_max_position_embeddings > 1")
	}
	r.OriginalContext = orig
	maxPos, _ := c.Float("max_position_embeddings", "n_positions")
	r.AttnFactor = LongRopeAttnFactor(maxPos, float64(orig))
	return r, true, nil
}

// LongRopeAttnFactor is the cos/sin factor for a context maxPos extended
// from orig (transformers' and convert_hf_to_gguf.py's formula).
func LongRopeAttnFactor(maxPos, orig float64) float64 {
	s := maxPos / orig
	if s <= 1 {
		return 1
	}
	return math.Sqrt(1 + math.Log(s)/math.Log(orig))
}

// factorList reads rs[key] as rotDim/2 positive numbers.
func factorList(rs Config, key string, rotDim int) ([]float32, error) {
	list, ok := rs[key].([]any)
	if !ok {
		return nil, errUnsupported("config.json: rope_scaling.%s is missing or not a list", key)
	}
	if len(list) != rotDim/2 {
		return nil, errUnsupported("config.json: rope_scaling.%s has %d entries, want %d (half the rotary dimensions)", key, len(list), rotDim/2)
	}
	out := make([]float32, len(list))
	for i, v := range list {
		f, ok := Config{"v": v}.Float("v")
		if !ok || !(f > 0) || math.IsInf(f, 0) {
			return nil, errUnsupported("config.json: rope_scaling.%s[%d] = %v is not a positive number", key, i, v)
		}
		out[i] = float32(f)
	}
	return out, nil
}

// longRopeTensor is a Generated tensor holding one of the factor lists
// (convert_hf_to_gguf.py's rope_factors_long / rope_factors_short); on
// GGUF → HF the list goes back into rope_scaling.
func longRopeTensor(name, key string, pick func(LongRope) []float32) Generated {
	return Generated{GGUF: name + ".weight",
		Reason: "LongRoPE factors: config.json's rope_scaling." + key + " holds them",
		Make: func(c Config) ([]float32, error) {
			d, err := rotaryDims(c)
			if err != nil {
				return nil, err
			}
			r, ok, err := LongRopeOf(c, d)
			if err != nil || !ok {
				return nil, err
			}
			return pick(r), nil
		},
		Invert: func(values []float32, c Config) error {
			rs, ok := c.Map("rope_scaling")
			if !ok {
				rs = Config{"type": "longrope"}
				c["rope_scaling"] = map[string]any(rs)
			}
			list := make([]any, len(values))
			for i, v := range values {
				if !(v > 0) {
					return fmt.Errorf("factor %d is %v, not positive", i, v)
				}
				list[i] = F32(v)
			}
			rs[key] = list
			return nil
		}}
}
