package main

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// diff names what it does not compare (issue 14): the tied head a GGUF
// stores again is "tied", and unrelated models are different
// architectures, not a list of missing tensors.
func TestDiffTiedAndArchitectures(t *testing.T) {
	g := filepath.Join(t.TempDir(), "g.gguf")
	if code, _, errOut := run(t, "convert", convertSample, g); code != 0 {
		t.Fatalf("convert: %s", errOut)
	}
	code, out, errOut := run(t, "diff", convertSample, g, "--json")
	if code != 1 { // f16 conversion: the matrices differ, as the README says
		t.Fatalf("diff: exit %d: %s", code, errOut)
	}
	var rep struct {
		Tied    int `json:"tied"`
		Tensors []struct {
			Name, Status, TiedTo string
		} `json:"tensors"`
		Different bool `json:"different_architectures"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range rep.Tensors {
		if d.Name == "output.weight" {
			found = d.Status == "tied"
		}
	}
	if rep.Tied != 1 || !found || rep.Different {
		t.Errorf("tied %d, output.weight tied %v, different_architectures %v", rep.Tied, found, rep.Different)
	}

	code, out, _ = run(t, "diff", convertSample, "../../testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf", "--json")
	var other struct {
		ArchA     string `json:"arch_a"`
		ArchB     string `json:"arch_b"`
		Different bool   `json:"different_architectures"`
		Tensors   []any
		Missing   int
	}
	if err := json.Unmarshal([]byte(out), &other); err != nil {
		t.Fatal(err)
	}
	if code != 1 || !other.Different || other.ArchA != "gpt2" || other.ArchB != "llama" || len(other.Tensors) != 0 || other.Missing != 0 {
		t.Errorf("gpt2 vs llama: exit %d, %+v", code, other)
	}
}
