// Package tokenizer loads the tokenizers of transformer checkpoints and
// encodes text exactly as the reference implementations do (llama.cpp's
// test-tokenizer-0 vectors, HF transformers' slow tokenizers).
//
// Three algorithms cover the supported architectures:
//
//   - BPE: GPT-2's byte-level BPE. A pre-tokenizer, chosen by the name
//     llama.cpp stores in tokenizer.ggml.pre ("gpt-2", "llama-bpe",
//     "deepseek-coder", "falcon", ...), splits the text into words; each is
//     merged by merge rank. From a tokenizer.json the name is the one
//     llama.cpp's converter gives the hash of its tokenization of a check
//     text (chkHashes, its table); when the table lacks the hash, it is the
//     llama.cpp name whose splitting is the tokenizer.json pre_tokenizer's
//     on a set of test texts (the pre_tokenizer run as the tokenizers
//     library runs it, its regexes by regexp2), and when none splits alike
//     the tokenizer is refused, naming the regexes.
//   - SPM: SentencePiece as LLaMA uses it: a leading space, spaces as "▁",
//     pairwise merges by score, <0xXX> byte fallback. Unigram SentencePiece
//     models (T5) use the Viterbi search instead.
//   - WordPiece: BERT's basic tokenizer and greedy longest match.
//
// A tokenizer comes from GGUF metadata (FromMetadata), from HF files
// (tokenizer.json; tokenizer.model; vocab.json + merges.txt; vocab.txt; with
// tokenizer_config.json, special_tokens_map.json and config.json for the
// special tokens), or from any Source (FromSource). GGUFMetadata and
// HFFiles convert back the other way.
//
// WordPiece vocabularies are held in llama.cpp's form, where a word-initial
// piece carries a phantom space and a continuation piece does not; HF's
// vocab.txt has the mark on the other side:
//
//	vocab.txt   "play"   "##ing"   "[CLS]"
//	GGUF        "▁play"  "ing"     "[CLS]"
//
// tokenizer.model is a protobuf ModelProto, read with a small wire decoder
// that checks every length against the bytes left:
//
//	field key  = varint (field number << 3 | wire type)
//	wire type 0: varint      1: 8 bytes      2: varint length, then bytes      5: 4 bytes
//
//	ModelProto
//	├─ 1 pieces (repeated, type 2)   SentencePiece
//	│                                ├─ 1 piece  string
//	│                                ├─ 2 score  float (type 5)
//	│                                └─ 3 type   varint: 1 normal 2 unknown 3 control
//	│                                            4 user-defined 5 unused 6 byte
//	├─ 2 trainer_spec (type 2)       3 model_type (1 unigram, 2 BPE), 35 byte_fallback,
//	│                                40 unk_id, 41 bos_id, 42 eos_id, 43 pad_id
//	└─ 3 normalizer_spec (type 2)    1 name, 3 add_dummy_prefix (default true)
package tokenizer
