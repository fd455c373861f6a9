package sniff

import "testing"

func TestFormat(t *testing.T) {
	for _, c := range []struct {
		head, path string
		want       Kind
	}{
		{"GGUF\x03\x00\x00\x00", "m.gguf", GGUF},
		{"FUGG\x00\x00\x00\x03", "m.gguf", GGUF},
		{"\x89TFN\r\n\x1a\n\x01", "m.tfn", Native},
		{"PK\x03\x04rest", "pytorch_model.bin", PyTorch},
		{"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19", "old.bin", PyTorch},
		{"\x80\x02\x8a\x0a\x6c\xfc", "short.bin", Safetensors}, // a cut magic is not torch's
		{" \n{\"metadata\"", "model.safetensors.index.json", SafetensorsIndex},
		{"{\"weight_map\"", "pytorch_model.bin.index.json", PyTorchIndex},
		{"\x10\x00\x00\x00\x00\x00\x00\x00{\"a\"", "model.safetensors", Safetensors},
		{"", "empty", Safetensors},
	} {
		if got := Format([]byte(c.head), c.path); got != c.want {
			t.Errorf("Format(%q, %q) = %d, want %d", c.head, c.path, got, c.want)
		}
	}
}
