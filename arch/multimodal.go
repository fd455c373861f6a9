package arch

// The published checkpoints of some families are a text model beside a
// vision tower (Llama4ForConditionalGeneration, Mistral3ForConditionalGeneration):
// config.json nests the text model's settings in text_config (which
// checkpoint.Config reads over the top level), the text model's tensors sit
// under language_model., and llama.cpp's converter writes the text model's
// GGUF from them and the vision tower into a separate --mmproj GGUF. A
// class with a Projector in the table (projector.go) has both halves
// converted; the others (Llama 4, Mistral 3) drop the tower until theirs
// exists.

// withTextPrefix gives every role of ts a second Hugging Face pattern, its
// first under "language_model." (the text model of the multimodal class).
// The first stays what GGUF → HF writes: the text model's own class.
func withTextPrefix(ts []Tensor) []Tensor {
	for i := range ts {
		ts[i].HF = append(ts[i].HF, "language_model."+ts[i].HF[0])
	}
	return ts
}

// visionTower drops the tensors under the given prefixes from the text
// model's GGUF, as llama.cpp's converter does, with the reason, and says so
// in a warning (Drop.Warn): never silently.
func visionTower(prefixes ...string) []Drop {
	out := make([]Drop, len(prefixes))
	for i, p := range prefixes {
		out[i] = Drop{Prefix: p, Reason: visionLeftOut, Warn: true}
	}
	return out
}

// visionLeftOut is the reason a multimodal checkpoint's vision tensors are
// dropped from its text model's GGUF.
const visionLeftOut = "vision tower: the GGUF is the text model; llama.cpp keeps the vision tower in a separate --mmproj GGUF, and --mmproj is not supported for this class yet (no projector record)"
