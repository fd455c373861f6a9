package arch

import (
	"strings"

	"github.com/tfconv/tfconv/tensor"
)

// The published checkpoints of some families are a text model beside a
// vision tower (Llama4ForConditionalGeneration, Mistral3ForConditionalGeneration):
// config.json nests the text model's settings in text_config (which
// checkpoint.Config reads over the top level), the text model's tensors sit
// under language_model., and llama.cpp's converter writes the text model's
// GGUF from them and the vision tower into a separate --mmproj GGUF. A
// class with a Projector in the table (projector.go: Gemma 3's, Mistral
// 3's, Llama 4's) has both halves converted.

// withTextPrefix gives every role of ts a second Hugging Face pattern, its
// first under "language_model." (the text model of the multimodal class).
// The first stays what GGUF → HF writes: the text model's own class.
func withTextPrefix(ts []Tensor) []Tensor {
	for i := range ts {
		ts[i].HF = append(ts[i].HF, "language_model."+ts[i].HF[0])
	}
	return ts
}

// withSubmodelText gives every role of ts whose first Hugging Face pattern
// starts with from another pattern with to in its place: the text model
// nested in the multimodal class's own model (Idefics3's model.text_model.
// for model.; its head stays lm_head).
func withSubmodelText(ts []Tensor, from, to string) []Tensor {
	for i := range ts {
		if h := ts[i].HF[0]; strings.HasPrefix(h, from) {
			ts[i].HF = append(ts[i].HF, to+h[len(from):])
		}
	}
	return ts
}

// textClass refuses a multimodal checkpoint of a class starting with
// prefix whose text model (text_config's, or the original InternVL
// layout's llm_config's "architectures") is not class: llama.cpp's
// converter picks the text model's class from there, and a family that
// took such a class by the checkpoint's own would write the wrong model.
// No key.
func textClass(prefix, class string) Param {
	return Param{Key: "_text_class", Kind: tensor.KindString, Derive: func(c Config) (tensor.Value, bool, error) {
		top := configClasses(c)
		if len(top) == 0 || !strings.HasPrefix(top[0], prefix) {
			return tensor.Value{}, false, nil
		}
		for _, k := range []string{"text_config", "llm_config"} {
			sub, ok := c.Map(k)
			if !ok {
				continue
			}
			if cls := configClasses(sub); len(cls) > 0 && cls[0] != class {
				return tensor.Value{}, false, errUnsupported("config.json: %s's %s architectures %v: this family converts %s text models; llama.cpp's converter writes %s as its own family", top[0], k, cls, class, cls[0])
			}
		}
		return tensor.Value{}, false, nil
	}, Inverse: func(Config, tensor.Value, Meta) {}}
}
