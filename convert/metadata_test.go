package convert

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/tensor"
)

// llama3HF is a small LLaMA 3 checkpoint with its tokenizer.
const llama3HF = "../testdata/arch/llama3/hf"

// TestModelIDComponents checks the model-id parsing against the values
// gguf-py's Metadata.get_model_id_components and id_to_title return for
// the same ids (llama.cpp c392e509, run on these cases).
func TestModelIDComponents(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		id    string
		total int64
		want  idParts
		title string
	}{
		{"TinyLlama-1.1B-Chat-v1.0", 0, idParts{"TinyLlama-1.1B-Chat-v1.0", "", "TinyLlama", "Chat", "v1.0", "1.1B"}, "TinyLlama 1.1B Chat v1.0"},
		{"TinyLlama/TinyLlama-1.1B-Chat-v1.0", 1100048384, idParts{"TinyLlama-1.1B-Chat-v1.0", "TinyLlama", "TinyLlama", "Chat", "v1.0", "1.1B"}, "TinyLlama 1.1B Chat v1.0"},
		{"TinyLlama/TinyLlama-1.1B-Chat-v1.0", 202056, idParts{"TinyLlama-1.1B-Chat-v1.0", "TinyLlama", "TinyLlama", "1.1b-Chat", "v1.0", ""}, "TinyLlama 1.1B Chat v1.0"},
		{"meta-llama/Llama-2-7b-hf", 6738415616, idParts{"Llama-2-7b-hf", "meta-llama", "Llama-2", "hf", "", "7B"}, "Llama 2 7b Hf"},
		{"Qwen2.5-0.5B-Instruct", 494032768, idParts{"Qwen2.5-0.5B-Instruct", "", "Qwen2.5", "Instruct", "", "0.5B"}, "Qwen2.5 0.5B Instruct"},
		{"bloom-7b1", 0, idParts{"bloom-7b1", "", "bloom", "", "", "7.1B"}, "Bloom 7b1"},
		{"Mistral-7B-Instruct-v0.2", 0, idParts{"Mistral-7B-Instruct-v0.2", "", "Mistral", "Instruct", "v0.2", "7B"}, "Mistral 7B Instruct v0.2"},
		{"hf", 0, idParts{"hf", "", "", "", "", ""}, "Hf"},
		{"gpt2", 0, idParts{"gpt2", "", "", "", "", ""}, "Gpt2"},
		{"Mixtral-8x7B-v0.1", 0, idParts{"Mixtral-8x7B-v0.1", "", "Mixtral", "", "v0.1", "8x7B"}, "Mixtral 8x7B v0.1"},
		{"Phi-3-mini-128k-instruct", 3821079552, idParts{"Phi-3-mini-128k-instruct", "", "Phi-3", "128k-instruct", "", "mini"}, "Phi 3 Mini 128k Instruct"},
		{"Phi-3-mini-128k-instruct", 0, idParts{"Phi-3-mini-128k-instruct", "", "Phi-3-mini", "instruct", "", "128K"}, "Phi 3 Mini 128k Instruct"},
		{"./model", 0, idParts{"model", "", "", "", "", ""}, "Model"},
		{"some model", 0, idParts{"some model", "", "", "", "", ""}, "Some Model"},
		{"stablelm-2-zephyr-1_6b", 0, idParts{"stablelm-2-zephyr-1_6b", "", "stablelm-2-zephyr", "", "", "1.6B"}, "Stablelm 2 Zephyr 1_6b"},
		{"Llama-3.2-1B", 0, idParts{"Llama-3.2-1B", "", "Llama-3.2", "", "", "1B"}, "Llama 3.2 1B"},
		{"tiny-random-llama", 2000000, idParts{"tiny-random-llama", "", "", "", "", ""}, "Tiny Random Llama"},
		{"llama-7b-q4_0-gguf", 0, idParts{"llama-7b-q4_0-gguf", "", "llama", "gguf", "", "7B"}, "Llama 7b Q4_0 Gguf"},
		{"Mistral-Small-24B", 0, idParts{"Mistral-Small-24B", "", "Mistral-Small", "", "", "24B"}, "Mistral Small 24B"},
		{"OLMo-7B-0424", 0, idParts{"OLMo-7B-0424", "", "OLMo", "", "0424", "7B"}, "OLMo 7B 0424"},
		{"t5-small", 0, idParts{"t5-small", "", "t5", "", "", "small"}, "T5 Small"},
		{"falcon-mqa", 0, idParts{"falcon-mqa", "", "", "", "", ""}, "Falcon Mqa"},
		{"ORG/deepseek-coder-33b-instruct", 0, idParts{"deepseek-coder-33b-instruct", "ORG", "deepseek-coder", "instruct", "", "33B"}, "Deepseek Coder 33b Instruct"},
		{"gemma-2-9b-it", 9241705984, idParts{"gemma-2-9b-it", "", "gemma-2", "it", "", "9B"}, "Gemma 2 9b It"},
		{"x--y", 0, idParts{"x--y", "", "", "", "", ""}, "X Y"},
		{"iter1-7B", 0, idParts{"iter1-7B", "", "iter1", "", "", "7B"}, "Iter1 7B"},
		{"xl-large", 0, idParts{"xl-large", "", "xl", "", "", "large"}, "Xl Large"},
		{"Qwen1.5-MoE-A2.7B", 0, idParts{"Qwen1.5-MoE-A2.7B", "", "Qwen1.5-MoE", "", "", "A2.7B"}, "Qwen1.5 MoE A2.7B"},
		{"lora-test-lora", -100000, idParts{"lora-test-lora", "", "", "", "", ""}, "Lora Test Lora"},
		{"DeepSeek-V2-Lite-Chat", 15706484224, idParts{"DeepSeek-V2-Lite-Chat", "", "DeepSeek-V2-Lite", "Chat", "", ""}, "DeepSeek V2 Lite Chat"},
		{"granite-3.0-2b-instruct", 0, idParts{"granite-3.0-2b-instruct", "", "granite-3.0", "instruct", "", "2B"}, "Granite 3.0 2b Instruct"},
	} {
		if got := modelIDComponents(c.id, c.total); got != c.want {
			t.Errorf("modelIDComponents(%q, %d) = %+v, want %+v", c.id, c.total, got, c.want)
		}
		if got := idToTitle(c.want.full); got != c.title {
			t.Errorf("idToTitle(%q) = %q, want %q", c.want.full, got, c.title)
		}
	}
}

// hubSnapshot lays src's files out as the Hugging Face cache does (a
// snapshot folder of symbolic links into blobs) for repository repo.
func hubSnapshot(t *testing.T, src, repo string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "hub", "models--"+strings.ReplaceAll(repo, "/", "--"))
	snap := filepath.Join(root, "snapshots", "fe8a4ea1ffedaf415f4da2f062534de366a451e6")
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(src)
	if err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(abs)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if err := os.Symlink(filepath.Join(abs, e.Name()), filepath.Join(snap, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	return snap
}

func ggufMeta(t *testing.T, path string) (tensor.Metadata, int) {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return f.Metadata, len(f.Tensors)
}

func wantStr(t *testing.T, md tensor.Metadata, key, want string) {
	t.Helper()
	got, ok := md.Str(key)
	if want == "" {
		if _, has := md.Get(key); has {
			t.Errorf("%s = %q, want no such key", key, got)
		}
		return
	}
	if !ok || got != want {
		t.Errorf("%s = %q (present %v), want %q", key, got, ok, want)
	}
}

// TestHubCacheName converts a snapshot of the Hugging Face cache into a
// directory: the name comes from the repository
// (models--TinyLlama--TinyLlama-1.1B-Chat-v1.0), not the commit hash, and
// the file is named as convert_hf_to_gguf.py names it.
func TestHubCacheName(t *testing.T) {
	t.Parallel()
	snap := hubSnapshot(t, llama3HF, "TinyLlama/TinyLlama-1.1B-Chat-v1.0")
	out := t.TempDir()
	rep, err := Run(snap, out, Options{To: GGUF})
	if err != nil {
		t.Fatal(err)
	}
	// The tiny model has 202056 parameters: the name's 1.1B is so far
	// from that that the converter takes it for a context length, files it
	// under the finetune, and counts the size label from the tensors.
	want := filepath.Join(out, "TinyLlama-202K-1.1b-Chat-v1.0-F16.gguf")
	if rep.Output != want {
		t.Errorf("output %s, want %s", rep.Output, want)
	}
	md, _ := ggufMeta(t, want)
	wantStr(t, md, "general.name", "TinyLlama 1.1B Chat v1.0")
	wantStr(t, md, "general.organization", "TinyLlama")
	wantStr(t, md, "general.basename", "TinyLlama")
	wantStr(t, md, "general.finetune", "1.1b-Chat")
	wantStr(t, md, "general.version", "v1.0")
	wantStr(t, md, "general.size_label", "202K")
	var keys []string
	for _, kv := range md {
		if strings.HasPrefix(kv.Key, "general.") {
			keys = append(keys, kv.Key)
		}
	}
	if w := []string{"general.architecture", "general.type", "general.name", "general.version", "general.organization", "general.finetune",
		"general.basename", "general.size_label", "general.file_type", "general.quantization_version"}; !slices.Equal(keys, w) {
		t.Errorf("general keys %v, want %v (the converter's order)", keys, w)
	}
}

// TestModelNameAndMetadataFile: --metadata's keys override what the
// directory gives, --model-name overrides the name in both, a null unsets
// a derived key, and an unknown key is named in a warning.
func TestModelNameAndMetadataFile(t *testing.T) {
	t.Parallel()
	snap := hubSnapshot(t, llama3HF, "TinyLlama/TinyLlama-1.1B-Chat-v1.0")
	meta := filepath.Join(t.TempDir(), "meta.json")
	if err := os.WriteFile(meta, []byte(`{"general.name": "From File", "general.version": "v2", "general.license": ["mit", "apache-2.0"],
		"general.finetune": null, "general.base_models": [{"name": "Base", "organization": "Org", "repo_url": "https://huggingface.co/org/base"}],
		"general.tags": ["a", "b"], "general.languages": ["en"], "general.nonsense": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir() + string(filepath.Separator)
	rep, err := Run(snap, out, Options{To: GGUF, MetadataFile: meta, OutType: OutF32})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(out, "TinyLlama-202K-v2-F32.gguf"); rep.Output != want {
		t.Errorf("output %s, want %s", rep.Output, want)
	}
	if len(rep.Warnings) == 0 || !strings.Contains(strings.Join(rep.Warnings, "\n"), `"general.nonsense" ignored`) {
		t.Errorf("warnings %q name no ignored key", rep.Warnings)
	}
	md, _ := ggufMeta(t, rep.Output)
	wantStr(t, md, "general.name", "From File")
	wantStr(t, md, "general.version", "v2")
	wantStr(t, md, "general.finetune", "")
	wantStr(t, md, "general.license", "mit,apache-2.0")
	wantStr(t, md, "general.base_model.0.name", "Base")
	wantStr(t, md, "general.base_model.0.organization", "Org")
	wantStr(t, md, "general.base_model.0.repo_url", "https://huggingface.co/org/base")
	if n, _ := md.Int("general.base_model.count"); n != 1 {
		t.Errorf("general.base_model.count %d", n)
	}
	if v, _ := md.Get("general.tags"); !v.Equal(tensor.ArrayOf([]string{"a", "b"})) {
		t.Errorf("general.tags %v", v)
	}

	// --model-name wins over the file; the output is then named after it
	// (no basename left: the file sets none and the name is not an id).
	named := filepath.Join(t.TempDir(), "m-{ftype}.gguf")
	rep, err = Run(snap, named, Options{MetadataFile: meta, ModelName: "My Model", OutType: OutBF16})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(filepath.Dir(named), "m-bf16.gguf"); rep.Output != want {
		t.Errorf("templated output %s, want %s", rep.Output, want)
	}
	md, _ = ggufMeta(t, rep.Output)
	wantStr(t, md, "general.name", "My Model")

	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"general.version": 2}`), 0o644)
	if _, err := Run(snap, t.TempDir(), Options{To: GGUF, MetadataFile: bad}); err == nil || !strings.Contains(err.Error(), `"general.version"`) || !strings.Contains(err.Error(), bad) {
		t.Errorf("a number for general.version: err %v, want one naming the file and key", err)
	}
	os.WriteFile(bad, []byte(`{"general.name": "x",}`), 0o644)
	if _, err := Run(snap, t.TempDir(), Options{To: GGUF, MetadataFile: bad}); err == nil || !strings.Contains(err.Error(), "byte offset 21") {
		t.Errorf("malformed JSON: err %v, want one giving the byte offset", err)
	}
	// A GGUF source keeps its own general.* keys: the flags are refused,
	// not ignored.
	if _, err := Run(rep.Output, filepath.Join(t.TempDir(), "o.gguf"), Options{ModelName: "x"}); err == nil {
		t.Error("--model-name on a GGUF source accepted")
	}
}

// TestVocabOnly: --vocab-only writes a GGUF our reader loads, without
// tensors, with the same tokenizer keys (and every other key but the size
// label, as the converter, which counts no parameters then) as the full
// conversion, named <name>-vocab.gguf by default.
func TestVocabOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	full, err := Run(llama3HF, filepath.Join(dir, "full.gguf"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(llama3HF, dir, Options{To: GGUF, VocabOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "Hf-vocab.gguf"); rep.Output != want {
		t.Errorf("output %s, want %s", rep.Output, want)
	}
	if len(rep.Tensors) != 0 {
		t.Errorf("report lists %d tensors", len(rep.Tensors))
	}
	c, err := checkpoint.Open(rep.Output)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	vmd, n := ggufMeta(t, rep.Output)
	if n != 0 {
		t.Errorf("vocab-only GGUF has %d tensors", n)
	}
	fmd, _ := ggufMeta(t, full.Output)
	var want tensor.Metadata
	tok := 0
	for _, kv := range fmd {
		if kv.Key != keySizeLabel {
			want = append(want, kv)
		}
		if strings.HasPrefix(kv.Key, "tokenizer.") {
			tok++
		}
	}
	if tok < 5 {
		t.Fatalf("full conversion has %d tokenizer keys", tok)
	}
	if !vmd.Equal(want) {
		var a, b []string
		for _, kv := range vmd {
			a = append(a, kv.Key)
		}
		for _, kv := range want {
			b = append(b, kv.Key)
		}
		t.Errorf("vocab-only metadata differs from the full conversion's (size label aside):\n %v\n %v", a, b)
	}
	if _, err := Run(llama3HF, filepath.Join(dir, "x"), Options{VocabOnly: true, To: Safetensors}); err == nil {
		t.Error("--vocab-only to Hugging Face output accepted")
	}
	if _, err := Run(llama3HF, filepath.Join(dir, "s.gguf"), Options{VocabOnly: true, SplitMaxBytes: 1000}); err == nil {
		t.Error("--vocab-only with a split size accepted (the converter refuses to split a vocabulary)")
	}
}

// TestDryRunWritesNothing: a dry run works out the tensors and the files of
// each kind of output, checks DST, and creates nothing.
func TestDryRunWritesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	real, err := Run(llama3HF, filepath.Join(t.TempDir(), "real.gguf"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dst   string
		opts  Options
		files []string
	}{
		{dir, Options{To: GGUF}, []string{"Hf-202K-F16.gguf"}},
		{filepath.Join(dir, "m.gguf"), Options{SplitMaxBytes: 200_000}, []string{"m-00001-of-00003.gguf", "m-00002-of-00003.gguf", "m-00003-of-00003.gguf"}},
		{filepath.Join(dir, "m.tfn"), Options{}, []string{"m.tfn"}},
		{filepath.Join(dir, "hf"), Options{MaxShardBytes: 300_000}, nil},
	} {
		rep, err := Run(llama3HF, c.dst, Options{DryRun: true, To: c.opts.To, SplitMaxBytes: c.opts.SplitMaxBytes, MaxShardBytes: c.opts.MaxShardBytes})
		if err != nil {
			t.Fatalf("%s: %v", c.dst, err)
		}
		if !rep.DryRun || len(rep.Tensors) == 0 || len(rep.Files) == 0 {
			t.Errorf("%s: dry run %v, %d tensors, files %v", c.dst, rep.DryRun, len(rep.Tensors), rep.Files)
		}
		var got []string
		for _, f := range rep.Files {
			rel, _ := filepath.Rel(dir, f)
			got = append(got, rel)
		}
		if c.files != nil && !slices.Equal(got, c.files) {
			t.Errorf("%s: files %v, want %v", c.dst, got, c.files)
		}
		if c.opts.MaxShardBytes > 0 {
			// The files a real run writes.
			other := filepath.Join(t.TempDir(), "hf")
			if _, err := Run(llama3HF, other, Options{MaxShardBytes: c.opts.MaxShardBytes}); err != nil {
				t.Fatal(err)
			}
			ents, _ := os.ReadDir(other)
			var want []string
			for _, e := range ents {
				want = append(want, filepath.Join("hf", e.Name()))
			}
			if !slices.Equal(got, want) || !slices.Contains(got, filepath.Join("hf", "model.safetensors.index.json")) {
				t.Errorf("%s: files %v, a real run wrote %v", c.dst, got, want)
			}
		}
	}
	// The dry run's GGUF plan is the real one.
	rep, _ := Run(llama3HF, dir, Options{To: GGUF, DryRun: true})
	if len(rep.Tensors) != len(real.Tensors) || rep.Bytes != real.Bytes {
		t.Errorf("dry run: %d tensors, %d bytes; real run %d, %d", len(rep.Tensors), rep.Bytes, len(real.Tensors), real.Bytes)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("dry runs left %d entries in %s", len(ents), dir)
	}
	// DST is still checked.
	os.WriteFile(filepath.Join(dir, "taken.gguf"), nil, 0o644)
	if _, err := Run(llama3HF, filepath.Join(dir, "taken.gguf"), Options{DryRun: true}); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("dry run onto an existing file: %v", err)
	}
}

// TestDefaultOutputInCurrentDir: DST omitted is the converter's default
// name in the current directory (never beside the input, which a Hub cache
// snapshot is).
func TestDefaultOutputInCurrentDir(t *testing.T) {
	src, err := filepath.Abs(llama3HF)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	rep, err := Run(src, "", Options{OutType: OutQ8_0})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Output != "Hf-202K-Q8_0.gguf" {
		t.Errorf("output %q, want Hf-202K-Q8_0.gguf", rep.Output)
	}
	if _, err := os.Stat(filepath.Join(dir, "Hf-202K-Q8_0.gguf")); err != nil {
		t.Error(err)
	}
	if _, err := Run(src, "", Options{OutType: OutQ8_0}); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("second run onto the default name: %v", err)
	}
	if _, err := Run(src, "", Options{To: Safetensors}); err == nil {
		t.Error("Hugging Face output without DST accepted")
	}
}
