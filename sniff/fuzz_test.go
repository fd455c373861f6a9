package sniff

import "testing"

// FuzzFormat decides the format of arbitrary leading bytes and, for what is
// no checkpoint, words the error: never a panic, and a file said to be no
// checkpoint always gets an error naming it.
func FuzzFormat(f *testing.F) {
	for _, s := range []string{"GGUF\x03\x00\x00\x00", "<!DOCTYPE html>", "version https://git-lfs.github.com/spec/v1\n",
		"{\"weight_map\": {}}", "\x80\x02}q\x00", "PK\x03\x04", "", "hello world\n", "\x08\x00\x00\x00\x00\x00\x00\x00{}"} {
		f.Add([]byte(s), "model.gguf")
	}
	f.Fuzz(func(t *testing.T, head []byte, path string) {
		if len(head) > HeadLen {
			head = head[:HeadLen]
		}
		k := Format(head, path)
		err := NotCheckpoint(k, head, path)
		if !k.Checkpoint() && err == nil {
			t.Fatalf("kind %v is no checkpoint but NotCheckpoint gave no error", k)
		}
	})
}
