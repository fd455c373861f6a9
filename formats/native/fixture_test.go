package native

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/tfconv/tfconv/internal/fixtures"
	"github.com/tfconv/tfconv/tensor"
)

// stTensor is one entry of a safetensors header, parsed here with a few lines
// of test-local code so this package stays independent of formats/safetensors.
type stTensor struct {
	name       string
	dtype      tensor.DType
	shape      tensor.Shape
	begin, end int64 // relative to the data section
}

// parseSafetensors reads a safetensors file's header in file order: the
// __metadata__ entries (all strings, as KindString) and the tensors.
func parseSafetensors(t testing.TB, b []byte) (tensor.Metadata, []stTensor, []byte) {
	t.Helper()
	n := binary.LittleEndian.Uint64(b)
	data := b[8+n:]
	dec := json.NewDecoder(bytes.NewReader(b[8 : 8+n]))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("header does not start with an object: %v %v", tok, err)
	}
	var meta tensor.Metadata
	var ts []stTensor
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		key := tok.(string)
		if key == "__metadata__" {
			// Decode key by key to keep the file's order.
			if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
				t.Fatalf("__metadata__: %v %v", tok, err)
			}
			for dec.More() {
				k, _ := dec.Token()
				v, err := dec.Token()
				if err != nil {
					t.Fatal(err)
				}
				meta = append(meta, tensor.KV{Key: k.(string), Value: tensor.String(v.(string))})
			}
			dec.Token()
			continue
		}
		var e struct {
			DType   string   `json:"dtype"`
			Shape   []int64  `json:"shape"`
			Offsets [2]int64 `json:"data_offsets"`
		}
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		d, ok := tensor.DTypeFromSafetensors(e.DType)
		if !ok {
			t.Fatalf("%s: dtype %q", key, e.DType)
		}
		ts = append(ts, stTensor{key, d, tensor.Shape(e.Shape), e.Offsets[0], e.Offsets[1]})
	}
	return meta, ts, data
}

// throughNative copies a safetensors checkpoint with its JSON side files into
// a native file, reads it back, and checks that every tensor's bytes, the
// metadata and the side files come back exactly.
func throughNative(t *testing.T, dir string, auxNames []string) *File {
	t.Helper()
	st, err := os.ReadFile(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	meta, sts, data := parseSafetensors(t, st)
	var aux []auxBody
	for _, n := range auxNames {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			continue // not every checkpoint has a generation_config.json
		}
		aux = append(aux, auxBody{n, b})
	}
	var tensors []tensorBody
	for _, s := range sts {
		tensors = append(tensors, tensorBody{
			TensorSpec{Info: tensor.Info{Name: s.name, DType: s.dtype, Shape: s.shape}},
			data[s.begin:s.end],
		})
	}
	b := write(t, Header{Source: SourceSafetensors, Metadata: meta}, aux, tensors)
	f := parse(t, b)
	if err := f.Verify(); err != nil {
		t.Fatal(err)
	}
	if f.Source != SourceSafetensors || !f.Metadata.Equal(meta) {
		t.Errorf("source %q metadata %v, want safetensors %v", f.Source, f.Metadata, meta)
	}
	if len(f.Tensors) != len(sts) {
		t.Fatalf("%d tensors, want %d", len(f.Tensors), len(sts))
	}
	// Rebuild the safetensors data section from the native tensors at their
	// original offsets: it must equal the original byte for byte.
	rebuilt := make([]byte, len(data))
	for i, s := range sts {
		nt := &f.Tensors[i]
		if nt.Name != s.name || nt.DType != s.dtype || !nt.Shape.Equal(s.shape) {
			t.Errorf("tensor %d: %s %s %v, want %s %s %v", i, nt.Name, nt.DType, nt.Shape, s.name, s.dtype, s.shape)
		}
		if _, err := io.ReadFull(nt.Open(), rebuilt[s.begin:s.end]); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	if !bytes.Equal(rebuilt, data) {
		t.Errorf("%s: tensor data did not survive the round trip", dir)
	}
	for i, a := range aux {
		got, err := f.Aux[i].ReadAll()
		if err != nil || f.Aux[i].Name != a.name || !bytes.Equal(got, a.data) {
			t.Errorf("aux %s: %v", a.name, err)
		}
	}
	return f
}

func TestLlamaFixtureThroughNative(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "safetensors", "llama")
	// The fixture is the file transformers wrote (testdata/native/README.md).
	st, err := os.ReadFile(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(st); hex.EncodeToString(sum[:]) != "9bc81b77092249d452c586ca688d6aafb03132364bdf10a3805008ef84691444" {
		t.Fatalf("testdata/safetensors/llama/model.safetensors is not the transformers fixture")
	}
	f := throughNative(t, dir, []string{"config.json", "generation_config.json"})

	// Cross-check against what transformers wrote in config.json.
	var cfg struct {
		Hidden int64 `json:"hidden_size"`
		Vocab  int64 `json:"vocab_size"`
		Layers int   `json:"num_hidden_layers"`
		Inter  int64 `json:"intermediate_size"`
	}
	cj, err := f.Aux[0].ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(cj, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Hidden != 64 || cfg.Vocab != 1000 || cfg.Layers != 2 {
		t.Fatalf("config %+v", cfg)
	}
	emb, ok := f.Tensor("model.embed_tokens.weight")
	if !ok || emb.DType != tensor.F32 || !emb.Shape.Equal(tensor.Shape{cfg.Vocab, cfg.Hidden}) {
		t.Errorf("embed_tokens: %v", emb)
	}
	down, ok := f.Tensor("model.layers.1.mlp.down_proj.weight")
	if !ok || !down.Shape.Equal(tensor.Shape{cfg.Hidden, cfg.Inter}) {
		t.Errorf("down_proj: %v", down)
	}
	// 2 global + 9 per layer (4 attention, 3 MLP, 2 norms) + final norm.
	if len(f.Tensors) != 2+9*cfg.Layers+1 {
		t.Errorf("%d tensors", len(f.Tensors))
	}
	if v, _ := f.Metadata.Str("format"); v != "pt" || len(f.Metadata) != 1 {
		t.Errorf("metadata %v, want format=pt", f.Metadata)
	}
}

// TestSharedFixturesThroughNative runs every hf-tiny checkpoint (all archs,
// float32/float16/bfloat16) through native when /work/shared is present.
func TestSharedFixturesThroughNative(t *testing.T) {
	root := sharedFixtures(t)
	dirs, _ := filepath.Glob(filepath.Join(root, "hf-tiny", "*", "model.safetensors"))
	if len(dirs) == 0 {
		t.Skip("no hf-tiny checkpoints")
	}
	sort.Strings(dirs)
	for _, p := range dirs {
		dir := filepath.Dir(p)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			throughNative(t, dir, []string{"config.json", "generation_config.json"})
		})
	}
}

// sharedFixtures returns shared/fixtures beside the clone, or skips.
func sharedFixtures(t *testing.T) string { return fixtures.Require(t) }
