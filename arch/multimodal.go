package arch

import "strings"

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
