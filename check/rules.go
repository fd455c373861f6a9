package check

// Severity says whether a finding makes a file invalid.
type Severity string

// The severities. An Error is a defect a reader refuses (or should); a
// Warning is legal but suspect, or costly for some consumer.
const (
	Error   Severity = "error"
	Warning Severity = "warning"
)

// Rule is one check Check applies.
type Rule struct {
	ID       string
	Severity Severity
	Doc      string // one line, for help text
}

// Rules lists every rule id Check can report, grouped by format. The ids are
// stable: they are never renamed or reused.
var Rules = []Rule{
	// Shared.
	{"dup-tensor-name", Error, "two tensors have the same name (in one file, or across the shards of a set)"},
	{"nan-in-weights", Error, "a float tensor holds NaN values"},
	{"inf-in-weights", Error, "a float tensor holds +Inf or -Inf values (a cast past the type's range: f16 beyond 65504)"},
	{"polyglot", Warning, "the bytes after the data section start another format's file (GGUF, native, safetensors)"},
	{"io-error", Error, "a read failed part-way (the file changed or the device failed)"},
	{"not-a-checkpoint", Error, "the file is no checkpoint of any format: empty, an HTML page (a Hub blob/ URL saved), text, JSON, an imatrix .dat"},
	{"int8-scale", Error, "an I8 tensor's \"<name>.scale\" is not F32 with one value per row (or one in all), so its values cannot be decoded"},
	{"int8-no-scale", Warning, "an I8 weight matrix has no \"<name>.scale\": tfconv reads int8 weights only with their per-row scales"},

	// safetensors.
	{"st-truncated", Error, "the file is shorter than the 8-byte header length"},
	{"st-header-length", Error, "the header length is above 100,000,000 or runs past the end of the file"},
	{"st-header-utf8", Error, "the header is not valid UTF-8"},
	{"st-header-json", Error, "the header is not one JSON object (syntax, nesting depth, trailing text, lone surrogates)"},
	{"st-header-unaligned", Warning, "8 + header length is not a multiple of 8, so no tensor can be 8-byte aligned (the reference writer pads with spaces)"},
	{"st-duplicate-key", Error, "a JSON object repeats a key (tensor fields, __metadata__ entries)"},
	{"st-metadata", Error, "__metadata__ is not an object of strings"},
	{"st-entry", Error, "a tensor entry is not an object, lacks dtype/shape/data_offsets, or has other keys"},
	{"st-dtype", Error, "unknown dtype, or dtype not a string (names are case-sensitive)"},
	{"st-shape", Error, "shape is not an array of non-negative integers, has more than 16 dimensions, or its byte size overflows"},
	{"st-offsets", Error, "data_offsets is not two non-negative integers [begin, end] with begin <= end"},
	{"st-size-mismatch", Error, "end - begin differs from the byte size of dtype × shape"},
	{"st-hole", Error, "bytes of the data section belong to no tensor"},
	{"st-overlap", Error, "two tensors' byte ranges overlap"},
	{"st-out-of-bounds", Error, "a tensor's data runs past the end of the file"},
	{"st-trailing-bytes", Error, "bytes follow the last tensor's data"},
	{"st-misaligned", Warning, "a tensor's data is not aligned to its element size (no zero-copy mmap)"},
	{"st-empty-name", Warning, "a tensor is named \"\""},
	{"st-rejected", Error, "the safetensors reader refuses the file for a reason not listed above"},

	// Index files (model.safetensors.index.json) of sharded checkpoints.
	{"idx-json", Error, "the index is not a JSON object with a weight_map object of strings (or is too large)"},
	{"idx-shard-name", Error, "a weight_map shard is not a plain file name in the index's folder"},
	{"idx-missing-shard", Error, "a shard the weight_map names does not exist"},
	{"idx-missing-tensor", Error, "a tensor listed in weight_map is not in the shard it names"},
	{"idx-unlisted-tensor", Error, "a shard holds a tensor weight_map does not list (or lists in another shard)"},

	// GGUF.
	{"gguf-truncated", Error, "the file ends inside the header, the data section starts past its end, or the file is shorter than its tensors' data (one finding: expected N bytes, got M)"},
	{"gguf-version", Error, "version 0, 1 (32-bit counts) or newer than 3"},
	{"gguf-big-endian", Error, "a big-endian GGUF (its version reads as 0x02000000 or 0x03000000)"},
	{"gguf-count", Error, "the tensor or key-value count cannot fit in the bytes left"},
	{"gguf-string-length", Error, "a string length is above 1 GiB or runs past the end of the file"},
	{"gguf-empty-key", Error, "a metadata key is empty"},
	{"gguf-duplicate-key", Error, "a metadata key appears twice"},
	{"gguf-value-type", Error, "a value type is not 0..12"},
	{"gguf-bool", Error, "a bool value is neither 0 nor 1"},
	{"gguf-array-length", Error, "an array count is above 2^30 or its elements cannot fit in the bytes left"},
	{"gguf-array-depth", Error, "arrays nested more than 4 levels"},
	{"gguf-nested-array", Warning, "an array of arrays (gguf-py reads it, ggml refuses it)"},
	{"gguf-alignment", Error, "general.alignment is not a uint32 power of two"},
	{"gguf-tensor-name", Error, "a tensor name is empty, 64 bytes or longer (GGML_MAX_NAME), or holds a NUL"},
	{"gguf-dims", Error, "n_dims is not 1..4"},
	{"gguf-shape", Error, "a dimension is negative, or the element count or byte size overflows int64"},
	{"gguf-zero-dim", Error, "a dimension is 0: ggml's loader divides by ne[1..3] and dies (SIGFPE), and no ggml operation takes an empty tensor"},
	{"gguf-type", Error, "a tensor type is not a current ggml type (removed or unknown id)"},
	{"gguf-block-size", Error, "ne[0] is not a multiple of the type's block size"},
	{"gguf-misaligned", Error, "a tensor's data offset is not a multiple of the alignment"},
	{"gguf-hole", Error, "data-section bytes beyond alignment padding belong to no tensor"},
	{"gguf-overlap", Error, "two tensors' byte ranges overlap"},
	{"gguf-order", Error, "tensor data is not in tensor-info order (ggml requires each to follow the previous one)"},
	{"gguf-out-of-bounds", Error, "a tensor's data runs past the end of the file, in a layout other than ggml's (else the file is gguf-truncated)"},
	{"gguf-trailing-bytes", Error, "bytes follow the last tensor's padded data"},
	{"gguf-padding", Warning, "alignment padding holds non-zero bytes"},
	{"gguf-vocab-rows", Error, "token_embd or output has a row count other than tokenizer.ggml.tokens' length: llama.cpp refuses the shape"},
	{"gguf-vocab-arrays", Error, "tokenizer.ggml.scores or token_type has a length other than tokenizer.ggml.tokens': llama.cpp reads past its end"},
	{"gguf-special-id", Warning, "a tokenizer.ggml.*_token_id is not a token of the vocabulary (llama.cpp ignores it)"},
	{"gguf-split", Error, "a split set is inconsistent: missing shard, split.no/split.count/split.tensors.count wrong"},
	{"gguf-rejected", Error, "the GGUF reader refuses the file for a reason not listed above"},

	// PyTorch (torch.save zip and legacy files; their index files use the idx-* rules).
	{"pytorch-global", Error, "a pickle names a global outside the allow-list (torch.load would import and call it: os.system, builtins.eval, ...)"},
	{"pytorch-zip", Error, "the zip archive is malformed: no end-of-directory (truncated), no or two data.pkl, a duplicate record, a record past the end, a data.pkl CRC mismatch"},
	{"pytorch-compressed", Error, "a record is compressed (torch.save stores them; tfconv reads them in place)"},
	{"pytorch-truncated", Error, "the file or a pickle ends inside an opcode, a pickle or a storage's element count"},
	{"pytorch-pickle", Error, "the pickle is malformed, exceeds a cap (stack, marks, memo, objects, string or LONG length) or holds no state dict"},
	{"pytorch-storage", Error, "a storage is missing, shorter than it claims or than a view of it needs, or runs past the end of the file"},
	{"pytorch-unsupported", Error, "well-formed, but not something tfconv reads: a dtype without a tfconv type, big-endian, a nested dict, an nn.Module, an expanded view"},
	{"pytorch-rejected", Error, "the PyTorch reader refuses the file for a reason not listed above"},

	// tfconv native.
	{"native-truncated", Error, "the file is shorter than a preamble and footer, or ends inside the header"},
	{"native-version", Error, "a major version this reader does not know"},
	{"native-header-crc", Error, "the header checksum does not match"},
	{"native-trailer-crc", Error, "the checksum table or footer is damaged (trailer checksum, footer magic or counts)"},
	{"native-header", Error, "the header is malformed (lengths, counts, names, dtypes, shapes, attributes)"},
	{"native-misaligned", Error, "a body's offset is not a multiple of the alignment"},
	{"native-overlap", Error, "a body overlaps the header or the previous body"},
	{"native-out-of-bounds", Error, "a body runs past the data section"},
	{"native-crc-mismatch", Error, "a tensor's or embedded file's data does not match its CRC-32C"},
}

var ruleByID = func() map[string]Rule {
	m := make(map[string]Rule, len(Rules))
	for _, r := range Rules {
		m[r.ID] = r
	}
	return m
}()

// RuleByID returns the rule with the given id.
func RuleByID(id string) (Rule, bool) {
	r, ok := ruleByID[id]
	return r, ok
}
