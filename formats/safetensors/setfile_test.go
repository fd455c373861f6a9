package safetensors

import "testing"

func TestIsSetFile(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"model.safetensors":                     true,
		"model.safetensors.index.json":          true,
		"model-00001-of-00003.safetensors":      true,
		"model-00012-of-00012.safetensors":      true,
		"model-0001-of-00003.safetensors":       false,
		"model-00001-of-00003.safetensors.part": false,
		"adapter_model.safetensors":             false,
		"model.bin":                             false,
		"pytorch_model-00001-of-00002.bin":      false,
		"other-00001-of-00002.safetensors":      false,
		"consolidated.safetensors":              false,
		"notes.md":                              false,
	} {
		if got := IsSetFile("model", name); got != want {
			t.Errorf("IsSetFile(model, %q) = %v, want %v", name, got, want)
		}
	}
}
