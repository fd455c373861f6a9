package tokenizer

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// chkText is the text convert_hf_to_gguf.py encodes to recognise a BPE
// pre-tokenizer: the SHA-256 of the ids' Python list form ("[1, 2, 3]")
// names the tokenizer the model was trained with (get_vocab_base_pre).
const chkText = "\n \n\n \n\n\n \t \t\t \t\n  \n   \n    \n     \n\U0001f680 (normal) \U0001f636\u200d\U0001f32b\ufe0f (multiple emojis concatenated) \u2705 \U0001f999\U0001f999 3 33 333 3333 33333 333333 3333333 33333333 3.3 3..3 3...3 \u1780\u17b6\u1793\u17cb\u178f\u17c2\u1796\u17b7\u179f\u17c1\u179f\u17a2\u17b6\u1785\U0001f601 ?\u6211\u60f3\u5728apple\u5de5\u4f5c1314151\u5929\uff5e ------======= \u043d\u0435\u0449\u043e \u043d\u0430 \u0411\u044a\u043b\u0433\u0430\u0440\u0441\u043a\u0438 ''''''```````\"\"\"\"......!!!!!!?????? I've been 'told he's there, 'RE you sure? 'M not sure I'll make it, 'D you like some tea? We'Ve a'lL"

// chkHashes are convert_hf_to_gguf.py's hashes (llama.cpp c392e509) and the
// tokenizer.ggml.pre name each gives, in its order; it tests them one after
// another without stopping, so for a hash listed twice the later name wins.
var chkHashes = []struct{ hash, pre string }{
	{"0ef9807a4087ebef797fc749390439009c3b9eda9ad1a097abbe738f486c01e5", "llama-bpe"},        // meta-llama/Meta-Llama-3-8B
	{"049ecf7629871e3041641907f3de7c733e4dbfdc736f57d882ba0b0845599754", "deepseek-llm"},     // deepseek-ai/deepseek-llm-7b-base
	{"347715f544604f9118bb75ed199f68779f423cabb20db6de6f31b908d04d7821", "deepseek-coder"},   // deepseek-ai/deepseek-coder-6.7b-base
	{"8aeee3860c56296a157a1fe2fad249ec40aa59b1bb5709f4ade11c4e6fe652ed", "falcon"},           // tiiuae/falcon-7b
	{"9d032fcbd5501f4a38150912590928bfb36091efb5df11b8e2124b0390e3fb1e", "falcon3"},          // tiiuae/Falcon3-7B-Base
	{"0876d13b50744004aa9aeae05e7b0647eac9d801b5ba4668afc01e709c15e19f", "bert-bge"},         // BAAI/bge-small-en-v1.5
	{"8e62295832751ca1e8f92f2226f403dea30dc5165e448b5bfa05af5340c64ec7", "bert-bge-large"},   // BAAI/bge-large-zh-v1.5
	{"b6dc8df998e1cfbdc4eac8243701a65afe638679230920b50d6f17d81c098166", "mpt"},              // mosaicml/mpt-7b
	{"35d91631860c815f952d711435f48d356ebac988362536bed955d43bfa436e34", "starcoder"},        // bigcode/starcoder2-3b
	{"3ce83efda5659b07b1ad37ca97ca5797ea4285d9b9ab0dc679e4a720c9da7454", "gpt-2"},            // openai-community/gpt2
	{"32d85c31273f8019248f2559fed492d929ea28b17e51d81d3bb36fff23ca72b3", "stablelm2"},        // stabilityai/stablelm-2-zephyr-1_6b
	{"6221ad2852e85ce96f791f476e0b390cf9b474c9e3d1362f53a24a06dc8220ff", "refact"},           // smallcloudai/Refact-1_6-base
	{"9c2227e4dd922002fb81bde4fc02b0483ca4f12911410dee2255e4987644e3f8", "command-r"},        // CohereForAI/c4ai-command-r-v01
	{"e636dc30a262dcc0d8c323492e32ae2b70728f4df7dfe9737d9f920a282b8aea", "qwen2"},            // Qwen/Qwen1.5-7B
	{"b6dc8df998e1cfbdc4eac8243701a65afe638679230920b50d6f17d81c098166", "olmo"},             // allenai/OLMo-1.7-7B-hf
	{"a8594e3edff7c29c003940395316294b2c623e09894deebbc65f33f1515df79e", "dbrx"},             // databricks/dbrx-base
	{"c7699093ba4255a91e702aa38a596aa81669f3525dae06c2953267dde580f448", "jina-v1-en"},       // jinaai/jina-reranker-v1-tiny-en
	{"0876d13b50744004aa9aeae05e7b0647eac9d801b5ba4668afc01e709c15e19f", "jina-v2-en"},       // jinaai/jina-embeddings-v2-base-en
	{"171aeeedd6fb548d418a7461d053f11b6f1f1fc9b387bd66640d28a4b9f5c643", "jina-v2-es"},       // jinaai/jina-embeddings-v2-base-es
	{"27949a2493fc4a9f53f5b9b029c82689cfbe5d3a1929bb25e043089e28466de6", "jina-v2-de"},       // jinaai/jina-embeddings-v2-base-de
	{"c136ed14d01c2745d4f60a9596ae66800e2b61fa45643e72436041855ad4089d", "smaug-bpe"},        // abacusai/Smaug-Llama-3-70B-Instruct
	{"c7ea5862a53e4272c035c8238367063e2b270d51faa48c0f09e9d5b54746c360", "poro-chat"},        // LumiOpen/Poro-34B-chat
	{"7967bfa498ade6b757b064f31e964dddbb80f8f9a4d68d4ba7998fcf281c531a", "jina-v2-code"},     // jinaai/jina-embeddings-v2-base-code
	{"7fc505bd3104ca1083b150b17d088b59534ede9bde81f0dd2090967d7fe52cee", "viking"},           // LumiOpen/Viking-7B
	{"b53802fb28e26d645c3a310b34bfe07da813026ec7c7716883404d5e0f8b1901", "jais"},             // core42/jais-13b
	{"7b3e7548e4308f52a76e8229e4e6cc831195d0d1df43aed21ac6c93da05fec5f", "codeshell"},        // WisdomShell/CodeShell-7B
	{"63b97e4253352e6f357cc59ea5b583e3a680eaeaf2632188c2b952de2588485e", "tekken"},           // mistralai/Mistral-Nemo-Base-2407
	{"855059429035d75a914d1eda9f10a876752e281a054a7a3d421ef0533e5b6249", "smollm"},           // HuggingFaceTB/SmolLM-135M
	{"3c30d3ad1d6b64202cd222813e7736c2db6e1bd6d67197090fc1211fbc612ae7", "bloom"},            // bigscience/bloom
	{"bc01ce58980e1db43859146dc51b1758b3b88729b217a74792e9f8d43e479d21", "gpt3-finnish"},     // TurkuNLP/gpt3-finnish-small
	{"4e2b24cc4770243d65a2c9ec19770a72f08cffc161adbb73fcbb6b7dd45a0aae", "exaone"},           // LGAI-EXAONE/EXAONE-3.0-7.8B-Instruct
	{"fcace8b9cac38ce847670c970cd5892031a753a1ef381abd1d9af00f713da085", "phi-2"},            // microsoft/phi-2
	{"60824e3c0d9401f89943cbb2fff727f0e2d4c545ba4df2d6e4f09a6db0f5b450", "chameleon"},        // facebook/chameleon-7b
	{"1431a23e583c97432bc230bff598d103ddb5a1f89960c8f1d1051aaa944d0b35", "minerva-7b"},       // sapienzanlp/Minerva-7B-base-v1.0
	{"8b5a93ed704057481f240da0be7e7dca721d7f8f4755263b6807227a2cbeae65", "roberta-bpe"},      // sentence-transformers/stsb-roberta-base
	{"ad851be1dba641f2e3711822f816db2c265f788b37c63b4e1aeacb9ee92de8eb", "gigachat"},         // ai-sage/GigaChat-20B-A3B-instruct
	{"d4c8f286ea6b520b3d495c4455483cfa2302c0cfcd4be05d781b6a8a0a7cdaf1", "megrez"},           // Infinigence/Megrez-3B-Instruct
	{"877081d19cf6996e2c4ff0e1236341e9b7bde288f5311a56a937f0afbbb3aeb5", "deepseek-v3"},      // deepseek-ai/DeepSeek-V3
	{"b3f499bb4255f8ca19fccd664443283318f2fd2414d5e0b040fbdd0cc195d6c5", "deepseek-r1-qwen"}, // deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B
}

// ChkHash returns the converter's hash of this tokenizer: the ids of
// chkText, special tokens added as the tokenizer adds them.
func (t *Tokenizer) ChkHash() (string, error) {
	ids, err := t.Encode(chkText, EncodeOptions{AddSpecial: true})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteByte('[')
	for i, id := range ids {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(id))
	}
	b.WriteByte(']')
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:]), nil
}

// preForHash is the pre-tokenizer name the converter gives hash, or "".
func preForHash(hash string) string {
	pre := ""
	for _, e := range chkHashes {
		if e.hash == hash {
			pre = e.pre
		}
	}
	return pre
}

// setPre makes name (a tokenizer.ggml.pre value) the BPE pre-tokenizer,
// with the merge rule llama.cpp gives it; false when it is not supported.
func (t *Tokenizer) setPre(name string) bool {
	p := preTokenizerFor(name)
	if p == nil {
		return false
	}
	t.pre, t.pretok = name, p
	switch name {
	case "llama3", "llama-v3", "llama-bpe", "falcon3":
		t.ignoreMerges = true
	default:
		t.ignoreMerges = false
	}
	return true
}

// identifyPre names a Hugging Face BPE tokenizer's pre-tokenizer as
// convert_hf_to_gguf.py does, by the hash of chkText's ids: the name the
// hash has, when it encodes with the pre-tokenizer read from the files;
// otherwise the first supported name whose own rules give a hash that names
// it (a tokenizer.json whose pre-tokenizer is a sequence tfconv does not
// read directly, Falcon's or StarCoder's). A tokenizer no hash names (a
// trimmed vocabulary, a new model) keeps what its files say.
func (t *Tokenizer) identifyPre() error {
	if err := t.namePre(); err != nil || t.preRegex == "" {
		return err
	}
	// The files' pre-tokenizer has a split tfconv does not read and no
	// known hash names it: tokenizing with a guess would be wrong.
	return unsupportedErr("tokenizer.json", "pre_tokenizer", fmt.Sprintf("pre-tokenizer regex %q is not supported", t.preRegex))
}

// namePre is identifyPre's search; it clears preRegex once a hash names
// the pre-tokenizer.
func (t *Tokenizer) namePre() error {
	h, err := t.ChkHash()
	if err != nil {
		return nil
	}
	if name := preForHash(h); name != "" {
		if name != t.pre {
			t.setPre(name)
		}
		t.preRegex = ""
		return nil
	}
	orig := t.pre
	tried := map[string]bool{orig: true}
	for _, e := range chkHashes {
		if tried[e.pre] || !t.setPre(e.pre) {
			continue
		}
		tried[e.pre] = true
		if h, err := t.ChkHash(); err == nil && preForHash(h) == e.pre {
			t.preRegex = ""
			return nil
		}
	}
	t.setPre(orig)
	return nil
}
