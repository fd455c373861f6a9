package tokenizer

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// interopCase is one row of a fixture README's tokenizer cross-check table:
// a text and the ids HF's slow tokenizer gave it (with special tokens, as
// the tokenizer adds them by default); llama.cpp gave the same.
type interopCase struct {
	text string
	ids  []int
}

var tableRow = regexp.MustCompile("^\\| `(.*)` \\| `\\[([0-9, ]*)\\]` \\| True \\|$")

// readCrossCheck reads the cross-check table of interop/ARCH/README.md.
func readCrossCheck(t *testing.T, dir string) []interopCase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []interopCase
	for _, l := range strings.Split(string(b), "\n") {
		m := tableRow.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		c := interopCase{text: m[1]}
		for _, f := range strings.Split(m[2], ", ") {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			c.ids = append(c.ids, n)
		}
		cases = append(cases, c)
	}
	if len(cases) < 8 {
		t.Fatalf("%s: found %d cross-check rows, want 8", dir, len(cases))
	}
	return cases
}

// readReference reads reference_ids.json: the sentence and input ids of
// the fixture's reference.json.
func readReference(t *testing.T, dir string) interopCase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "reference_ids.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Sentence string `json:"sentence"`
		InputIDs []int  `json:"input_ids"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return interopCase{r.Sentence, r.InputIDs}
}

// roundTrips lists the texts the reference tokenizer decodes back exactly:
// BERT lower-cases and strips accents, the trimmed GPT-2 and LLaMA
// vocabularies are lossless.
func roundTrips(arch string) bool { return arch != "bert" }

func checkInterop(t *testing.T, tok *Tokenizer, arch string, cases []interopCase) {
	t.Helper()
	for _, c := range cases {
		got, err := tok.Encode(c.text, EncodeOptions{AddSpecial: true})
		if err != nil {
			t.Fatalf("%q: %v", c.text, err)
		}
		if !slices.Equal(got, c.ids) {
			t.Errorf("%s %q:\n got %v\nwant %v", arch, c.text, got, c.ids)
		}
		if roundTrips(arch) {
			back, err := tok.Decode(got)
			if err != nil {
				t.Fatal(err)
			}
			if back != c.text {
				t.Errorf("%s: decode(encode(%q)) = %q", arch, c.text, back)
			}
		}
	}
}

func TestInteropHF(t *testing.T) {
	for _, arch := range []string{"gpt2", "llama", "bert"} {
		t.Run(arch, func(t *testing.T) {
			dir := filepath.Join("..", "testdata", "tokenizer", "interop", arch)
			tok, err := LoadFile(dir)
			if err != nil {
				t.Fatal(err)
			}
			cases := append([]interopCase{readReference(t, dir)}, readCrossCheck(t, dir)...)
			checkInterop(t, tok, arch, cases)
		})
	}
}

// TestInteropGGUF loads the tokenizer of the f32 GGUF llama.cpp's converter
// made from the same HF directory (from the shared fixtures; the files are
// 7-9 MB and not copied into testdata), checks it gives the same ids, and
// that GGUFMetadata of the HF tokenizer equals what the converter wrote.
func TestInteropGGUF(t *testing.T) {
	shared := sharedFixtures()
	if shared == "" {
		t.Skip("shared fixtures not present")
	}
	for _, arch := range []string{"gpt2", "llama", "bert"} {
		t.Run(arch, func(t *testing.T) {
			path := filepath.Join(shared, "interop", arch, "gguf", arch+"-f32.gguf")
			tok, err := LoadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join("..", "testdata", "tokenizer", "interop", arch)
			cases := append([]interopCase{readReference(t, dir)}, readCrossCheck(t, dir)...)
			checkInterop(t, tok, arch, cases)

			hf, err := LoadFile(dir)
			if err != nil {
				t.Fatal(err)
			}
			want := ggufTokenizerKeys(t, path)
			got := hf.GGUFMetadata()
			if arch == "bert" {
				// The converter named BERT's pre-tokenizer after a hash of
				// the untrimmed vocabulary (jina-v2-en); llama.cpp ignores
				// it for WordPiece.
				want.Set(keyPre, tensor.String("default"))
			}
			compareMetadata(t, got, want)
		})
	}
}

func ggufTokenizerKeys(t *testing.T, path string) tensor.Metadata {
	t.Helper()
	var md tensor.Metadata
	for _, kv := range openGGUF(t, path) {
		if strings.HasPrefix(kv.Key, "tokenizer.") {
			md = append(md, kv)
		}
	}
	return md
}

func compareMetadata(t *testing.T, got, want tensor.Metadata) {
	t.Helper()
	var gk, wk []string
	for _, kv := range got {
		gk = append(gk, kv.Key)
	}
	for _, kv := range want {
		wk = append(wk, kv.Key)
	}
	if strings.Join(gk, ",") != strings.Join(wk, ",") {
		t.Errorf("keys:\n got %v\nwant %v", gk, wk)
	}
	for _, kv := range want {
		g, ok := got.Get(kv.Key)
		if !ok {
			continue
		}
		if !g.Equal(kv.Value) {
			t.Errorf("%s: got %v, want %v", kv.Key, short(g), short(kv.Value))
		}
	}
}

func short(v tensor.Value) string {
	b, _ := json.Marshal(v)
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

// memSource is a Source held in memory.
type memSource struct {
	md    tensor.Metadata
	files map[string][]byte
}

func (m memSource) Metadata() tensor.Metadata { return m.md }
func (m memSource) ReadAux(name string) ([]byte, error) {
	if b, ok := m.files[name]; ok {
		return b, nil
	}
	return nil, fs.ErrNotExist
}

// TestHFFilesRoundTrip rebuilds HF files from each interop tokenizer
// (loaded from the HF files, and from the GGUF metadata of the HF files) and
// checks the rebuilt tokenizer still gives the reference ids.
func TestHFFilesRoundTrip(t *testing.T) {
	for _, arch := range []string{"gpt2", "llama", "bert"} {
		t.Run(arch, func(t *testing.T) {
			dir := filepath.Join("..", "testdata", "tokenizer", "interop", arch)
			tok, err := LoadFile(dir)
			if err != nil {
				t.Fatal(err)
			}
			cases := append([]interopCase{readReference(t, dir)}, readCrossCheck(t, dir)...)
			fromMD, err := FromSource(memSource{md: tok.GGUFMetadata()})
			if err != nil {
				t.Fatal(err)
			}
			checkInterop(t, fromMD, arch, cases)
			files, err := fromMD.HFFiles()
			if err != nil {
				t.Fatal(err)
			}
			back, err := FromSource(memSource{files: files})
			if err != nil {
				t.Fatal(err)
			}
			checkInterop(t, back, arch, cases)
		})
	}
}

// TestSentencePieceUnknownPiece: SentencePiece loads a tokenizer.model only
// when exactly one piece has type UNKNOWN and it is the trainer's unk_id
// (otherwise "unk is not defined"). llama.cpp's GGUFs store LLaMA's <unk> as
// CONTROL, so the file written from GGUF metadata must retype it.
func TestSentencePieceUnknownPiece(t *testing.T) {
	for _, name := range []string{"ggml-vocab-llama-spm.gguf", "ggml-vocab-phi-3.gguf"} {
		tok, err := LoadFile(filepath.Join("..", "testdata", "tokenizer", name))
		if err != nil {
			t.Fatal(err)
		}
		files, err := tok.HFFiles()
		if err != nil {
			t.Fatal(err)
		}
		m, err := decodeSentencePiece(files["tokenizer.model"], name)
		if err != nil {
			t.Fatal(err)
		}
		var unknown []int
		for i, ty := range m.types {
			if ty == TypeUnknown {
				unknown = append(unknown, i)
			}
		}
		if len(unknown) != 1 || unknown[0] != m.unk || m.unk != tok.UNK {
			t.Errorf("%s: UNKNOWN pieces %v, unk_id %d, tokenizer UNK %d; want exactly the unk_id", name, unknown, m.unk, tok.UNK)
		}
	}
}
