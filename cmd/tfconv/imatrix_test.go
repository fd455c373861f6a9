package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/internal/fixtures"
)

// tfconv imatrix writes both formats, refuses to replace without --force,
// and --json lists the entries with their counts.
func TestImatrixCommand(t *testing.T) {
	dir := t.TempDir()
	mdl := "../../testdata/arch/mixtral/gguf/mixtral-f32.gguf"
	text := "../../testdata/imatrix/calib.txt"
	out := filepath.Join(dir, "m.gguf")
	code, stdout, errs := run(t, "imatrix", mdl, "-f", text, "-o", out, "-c", "128", "--chunks", "3", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var j imatrixJSON
	if err := json.Unmarshal([]byte(stdout), &j); err != nil {
		t.Fatal(err)
	}
	if j.Format != "gguf" || j.Chunks != 3 || len(j.Entries) != 16 {
		t.Errorf("json: format %s, %d chunks, %d entries", j.Format, j.Chunks, len(j.Entries))
	}
	for _, e := range j.Entries {
		var n int64
		for _, c := range e.Counts {
			n += c
		}
		// Each token goes to 2 of the 4 experts; a plain matrix sees
		// every token once.
		want := int64(3 * 128)
		if strings.Contains(e.Name, "_exps") {
			want *= 2
		}
		if n != want {
			t.Errorf("%s: counts %v sum to %d, want %d", e.Name, e.Counts, n, want)
		}
	}
	if b, err := os.ReadFile(out); err != nil || string(b[:4]) != "GGUF" {
		t.Errorf("output: %v", err)
	}
	if code, _, errs := run(t, "imatrix", mdl, "-f", text, "-o", out, "-c", "128"); code != 2 || !strings.Contains(errs, "force") {
		t.Errorf("existing output: exit %d, %s", code, errs)
	}
	dat := filepath.Join(dir, "m.dat")
	if code, _, errs := run(t, "imatrix", mdl, "-f", text, "-o", dat, "-c", "128", "--chunks", "2"); code != 0 {
		t.Fatalf("dat: exit %d: %s", code, errs)
	}
	if b, err := os.ReadFile(dat); err != nil || string(b[:4]) == "GGUF" || b[0] != 16 {
		t.Errorf("dat output: %v, first bytes %x", err, b[:4])
	}
	if code, _, errs := run(t, "imatrix", mdl, "-f", text, "-o", filepath.Join(dir, "x"), "-c", "4096"); code != 2 {
		t.Errorf("too short a text: exit %d, %s", code, errs)
	}
}

// imatrixQuantRef is one llama-quantize --imatrix output as
// testdata/imatrix/quantize.json records it (gen_imatrix.py).
type imatrixQuantRef struct {
	Command string `json:"command"`
	Bytes   int64  `json:"bytes"`
	SHA256  string `json:"sha256"`
	Tensors []struct {
		Name   string `json:"name"`
		Type   string `json:"type"`
		SHA256 string `json:"sha256"`
	} `json:"tensors"`
}

// Issue 19: quantize --imatrix is byte-identical to llama-quantize
// --imatrix (c392e509) with the same .dat, for every type tfconv offers
// that weighs with it (pure and llama.cpp's mixtures). mixtral (in
// testdata: 4 experts, each with its own importance) runs everywhere;
// tiny-fortunes (rows of 256 and 768, for the k-quants) when
// shared/fixtures is present.
func TestQuantizeImatrixMatchesLlamaQuantize(t *testing.T) {
	b, err := os.ReadFile("../../testdata/imatrix/quantize.json")
	if err != nil {
		t.Fatal(err)
	}
	var refs map[string]imatrixQuantRef
	if err := json.Unmarshal(b, &refs); err != nil {
		t.Fatal(err)
	}
	sources := map[string]string{"mixtral": "../arch/mixtral/gguf/mixtral-f32.gguf"}
	if d := fixtures.Dir(); d != "" {
		// The HF checkpoint: quantize converts it to llama.cpp's f32 GGUF
		// first, byte-identical to convert_hf_to_gguf.py's.
		sources["tiny-fortunes"] = filepath.Join(d, "trained", "tiny-fortunes", "hf")
	} else {
		t.Log("shared/fixtures absent: the tiny-fortunes k-quants are not compared")
	}
	dir := t.TempDir()
	// llama-quantize records --imatrix as named on its command line; the
	// references were made in testdata/imatrix.
	t.Chdir("../../testdata/imatrix")
	compared := 0
	for key, ref := range refs {
		parts := strings.Split(key, "/")
		model, typ, pure := parts[0], strings.ToLower(parts[1]), len(parts) == 3
		src, ok := sources[model]
		if !ok {
			continue
		}
		switch typ { // llama-quantize's names of tfconv's aliases
		case "q3_k_m":
			typ = "q3_k"
		case "q5_k_m":
			typ = "q5_k"
		}
		dst := filepath.Join(dir, strings.ReplaceAll(key, "/", "-")+".gguf")
		args := []string{"quantize", src, dst, "--type", typ, "--imatrix", model + ".c392e509.dat"}
		if pure {
			args = append(args, "--pure")
		}
		if code, _, errs := run(t, args...); code != 0 {
			t.Errorf("%s: exit %d: %s", key, code, errs)
			continue
		}
		got, err := os.ReadFile(dst)
		if err != nil {
			t.Fatal(err)
		}
		compared++
		if sum := fmt.Sprintf("%x", sha256.Sum256(got)); sum == ref.SHA256 && int64(len(got)) == ref.Bytes {
			continue
		}
		t.Errorf("%s: %d bytes, not llama-quantize's file (%d bytes; %s)", key, len(got), ref.Bytes, ref.Command)
		g, err := gguf.NewFile(bytes.NewReader(got), int64(len(got)))
		if err != nil {
			t.Fatal(err)
		}
		for i, rt := range ref.Tensors {
			if i >= len(g.Tensors) || g.Tensors[i].Name != rt.Name {
				t.Errorf("%s: tensor %d is not %s", key, i, rt.Name)
				break
			}
			data := got[g.Tensors[i].Offset : g.Tensors[i].Offset+g.Tensors[i].Size]
			if g.Tensors[i].DType.String() != rt.Type || fmt.Sprintf("%x", sha256.Sum256(data)) != rt.SHA256 {
				t.Errorf("%s: %s: %v, differs from llama-quantize's %s", key, rt.Name, g.Tensors[i].DType, rt.Type)
			}
		}
	}
	if compared < 5 {
		t.Errorf("compared %d files; quantize.json has %d", compared, len(refs))
	}
}
