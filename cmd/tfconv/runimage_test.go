package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var visionTestdata = filepath.Join("..", "..", "testdata", "vision")

// run --image on the Hugging Face folder prints transformers' logits (the
// prompt given as text and as tokens holding <start_of_image> once) and
// the image's span; on llama.cpp's GGUF pair (--mmproj) it refuses
// without --mmproj and runs with it.
func TestRunImage(t *testing.T) {
	t.Parallel()
	var ref struct {
		Prompt string `json:"prompt"`
		Cases  []struct {
			Image    string      `json:"image"`
			InputIDs []int       `json:"input_ids"`
			Logits   [][]float32 `json:"logits"`
		} `json:"cases"`
	}
	b, err := os.ReadFile(filepath.Join(visionTestdata, "gemma3", "hf", "reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	hf := filepath.Join(visionTestdata, "gemma3", "hf")
	for _, c := range ref.Cases {
		img := filepath.Join(visionTestdata, c.Image)
		// the processor's ids with the image sequence collapsed to BOI (1000)
		var toks []int
		for i := 0; i < len(c.InputIDs); i++ {
			switch {
			case i+2 < len(c.InputIDs) && c.InputIDs[i+2] == 1000:
				toks = append(toks, 1000)
				for c.InputIDs[i] != 1001 {
					i++
				}
				i += 2
			default:
				toks = append(toks, c.InputIDs[i])
			}
		}
		for _, args := range [][]string{{"--prompt", ref.Prompt}, {"--tokens", joinInts(toks)}} {
			out, errOut, code := runModelCmd(t, append([]string{"run", hf, "--image", img, "--json"}, args...)...)
			if code != 0 {
				t.Fatalf("%v: exit %d: %s", args, code, errOut)
			}
			var res runJSON
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatal(err)
			}
			if joinInts(res.Tokens) != joinInts(c.InputIDs) {
				t.Fatalf("%s %v: tokens %v, the processor's %v", c.Image, args[0], res.Tokens, c.InputIDs)
			}
			if res.Image == nil || res.Image.Tokens != 4 || res.Image.First != 16 || res.Image.Preprocess != "transformers" || res.Image.Width != 64 {
				t.Fatalf("%s: image %+v", c.Image, res.Image)
			}
			var d float64
			for i, row := range c.Logits {
				for j, w := range row {
					d = math.Max(d, math.Abs(float64(res.Logits[i][j]-w)))
				}
			}
			if d > maxRunLogitDiff {
				t.Errorf("%s %v: logits differ from transformers' by %g", c.Image, args[0], d)
			}
		}
	}
	gguf := filepath.Join(visionTestdata, "gemma3", "gguf")
	img := filepath.Join(visionTestdata, "images", "wide.png")
	if _, errOut, code := runModelCmd(t, "run", filepath.Join(gguf, "gemma3-f32.gguf"), "--image", img, "--tokens", "1,1000"); code != 2 || !strings.Contains(errOut, "--mmproj") {
		t.Fatalf("a GGUF text model without --mmproj: exit %d, %q", code, errOut)
	}
	out, errOut, code := runModelCmd(t, "run", filepath.Join(gguf, "gemma3-f32.gguf"), "--mmproj", filepath.Join(gguf, "mmproj-gemma3-f32.gguf"),
		"--image", img, "--prompt", "Describe this picture: <__media__> What is in it?", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res runJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	// mtmd's ids (testdata/vision/gemma3/gguf/mtmd.json): BOI at 13, the
	// image at 14..17, EOI at 18.
	if res.Image == nil || res.Image.Preprocess != "llamacpp" || res.Image.First != 14 || len(res.Tokens) != 25 || res.Tokens[13] != 1000 || res.Tokens[18] != 1001 {
		t.Fatalf("GGUF pair: tokens %v, image %+v", res.Tokens, res.Image)
	}
	if _, errOut, code := runModelCmd(t, "run", hf, "--mmproj", "x", "--tokens", "1"); code != 2 || !strings.Contains(errOut, "--image") {
		t.Fatalf("--mmproj without --image: exit %d, %q", code, errOut)
	}
}
