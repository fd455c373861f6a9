package checkpoint

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tfconv/tfconv/tensor"
)

// modelOptAlgo is the quant_algo of a checkpoint NVIDIA ModelOpt exported
// (export_hf_checkpoint): config.json's quantization_config with
// quant_method "modelopt", or, in older exports, hf_quant_config.json's
// {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": …}}.
// ok is false for any other checkpoint.
func (c *Checkpoint) modelOptAlgo(qc map[string]any) (algo string, ok bool, err error) {
	if m, _ := qc["quant_method"].(string); strings.EqualFold(m, "modelopt") {
		algo, _ = qc["quant_algo"].(string)
		return algo, true, nil
	}
	if qc != nil {
		return "", false, nil
	}
	b, err := c.ReadAux("hf_quant_config.json")
	if err != nil {
		return "", false, nil
	}
	var h struct {
		Producer struct {
			Name string `json:"name"`
		} `json:"producer"`
		Quantization struct {
			Algo string `json:"quant_algo"`
		} `json:"quantization"`
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return "", false, fmt.Errorf("checkpoint: %s: hf_quant_config.json: %w", c.Path, err)
	}
	if !strings.EqualFold(h.Producer.Name, "modelopt") {
		return "", false, nil
	}
	return h.Quantization.Algo, true, nil
}

// unpackModelOpt presents a ModelOpt checkpoint dequantized: FP8 (an
// F8_E4M3 X.weight with a float32 X.weight_scale per tensor) through
// unscaleFP8; NVFP4 (a uint8 X.weight of E2M1 pairs, a float8 e4m3
// X.weight_scale per 16 values, a float32 X.weight_scale_2 per tensor) as
// e2m1 · (scale · scale_2), the float32 operations of ModelOpt's
// NVFP4QTensor.dequantize. The activation scales (input_scale, k_scale,
// v_scale) are left out.
func (c *Checkpoint) unpackModelOpt(algo string) (*unpacked, error) {
	switch strings.ToUpper(algo) {
	case "FP8":
		u, err := c.unscaleFP8(fp8Config{method: "modelopt", scaleSuffix: "_scale"})
		if u != nil {
			u.method = "modelopt"
		}
		return u, err
	case "NVFP4":
	default:
		return nil, tensor.Unsupported("checkpoint: %s: ModelOpt quant_algo %q is not supported (FP8 and NVFP4 are)", c.Path, algo)
	}
	u := &unpacked{drop: map[string]bool{}, method: "modelopt", bits: 4,
		scheme: "NVFP4: e2m1, a float8 e4m3 scale per 16 values and a float32 scale_2 per tensor"}
	for i, w := range c.Tensors {
		for _, suffix := range activationScales {
			if strings.HasSuffix(w.Name, suffix) && w.NumElements() <= 1 {
				u.drop[w.Name] = true
				u.dropped++
			}
		}
		if w.DType != tensor.U8 || !strings.HasSuffix(w.Name, ".weight") {
			continue
		}
		sc, ok := c.byName[w.Name+"_scale"]
		if !ok {
			return nil, fmt.Errorf("checkpoint: %s: offset %d: uint8 tensor %q has no scale tensor %q (ModelOpt NVFP4)", w.File, w.Offset, w.Name, w.Name+"_scale")
		}
		s2, ok := c.byName[w.Name+"_scale_2"]
		if !ok {
			return nil, fmt.Errorf("checkpoint: %s: offset %d: uint8 tensor %q has no tensor %q (ModelOpt NVFP4)", w.File, w.Offset, w.Name, w.Name+"_scale_2")
		}
		if len(w.Shape) != 2 || sc.DType != tensor.F8_E4M3 || len(sc.Shape) != 2 || s2.DType != tensor.F32 || s2.NumElements() != 1 ||
			sc.Shape[0] != w.Shape[0] || 2*w.Shape[1] != 16*sc.Shape[1] {
			return nil, fmt.Errorf("checkpoint: %s: offset %d: ModelOpt NVFP4 layer %q: weight %v %v, scale %v %v and scale_2 %v %v do not fit (want uint8 [rows, cols/2], F8_E4M3 [rows, cols/16], F32 [])",
				w.File, w.Offset, w.Name, w.DType, w.Shape, sc.DType, sc.Shape, s2.DType, s2.Shape)
		}
		t := fp4Tensor(w.Name, w, sc, s2, func(s, k float32) float32 { return s * k }, false)
		t.NVFP4 = &NVFP4Layer{Packed: w, Scales: sc, factor: s2}
		if in, ok := c.byName[strings.TrimSuffix(w.Name, ".weight")+".input_scale"]; ok && in.NumElements() <= 1 {
			t.NVFP4.input = in
		}
		if err := c.replace(i, t); err != nil {
			return nil, err
		}
		u.drop[sc.Name], u.drop[s2.Name] = true, true
		u.layers++
	}
	return u, nil
}
