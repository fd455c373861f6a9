"""Makes the o200k ("harmony", gpt-oss) tokenizer fixtures (run in the trixie chroot; see README.md).

gen.py full <o200k_base.tiktoken> <published> <out>: a gpt-oss-shaped folder with the full vocabulary: tokenizer.json in the
  form transformers v4.57.6's TikTokenConverter gives it (vocabulary and merges recovered from the ranks as that
  converter recovers them, the o200k split pattern, ByteLevel without its regex), gpt-oss-20b's own
  tokenizer_config.json, special_tokens_map.json and chat_template.jinja (from <published>; README.md names the
  copy), vocab.json/merges.txt of the same vocabulary for the
  converter's slow-tokenizer path, and testdata/arch/gptoss/hf's config.json with gpt-oss-20b's vocabulary size and
  special ids.
gen.py trim <o200k_base.tiktoken> <n>: this folder's tokenizer.json and tokenizer_config.json from the first n
  ranks (a BPE vocabulary is closed under its merge order) and the harmony special tokens renumbered after them.
gen.py ids <dir>: for a folder holding o200k_base.tiktoken, <dir>/tokens-full.json (and the converter's hash of
  tiktoken's ids of its check text, with NEW_LLAMACPP set); for this folder (its trimmed ranks; O200K names the
  full file, for the pattern), tokens.json: the ids tiktoken 0.9.0 gives TEXTS with the o200k pattern and the
  harmony special tokens.
gen.py convert <dir> <out.gguf>: llama.cpp's convert_hf_to_gguf.py --vocab-only on the full folder (below).
"""
import base64, hashlib, json, os, shutil, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..", "..")
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"  # tiktoken_ext.openai_public
VOCAB = 201088  # gpt-oss-20b's vocab_size
# gpt-oss-20b's added tokens (its tokenizer_config.json's added_tokens_decoder): ids 199998..200018.
NAMED = {199998: "<|startoftext|>", 199999: "<|endoftext|>", 200002: "<|return|>", 200003: "<|constrain|>",
         200005: "<|channel|>", 200006: "<|start|>", 200007: "<|end|>", 200008: "<|message|>", 200012: "<|call|>",
         200018: "<|endofprompt|>"}
ADDED = [(i, NAMED.get(i, "<|reserved_%d|>" % i)) for i in range(199998, 200019)]

TEXTS = [
    "Hello world",
    " Hello world",
    "Hello World!",
    "I've been 'told he's there, 'RE you sure? We'Ve a'lL I'M",
    "HTTPServer parseXMLHttpRequest camelCaseWord ALLCAPS McDonald's",
    "  leading spaces\n\n\ttabs and\r\nCRLF\n\n\n   \n",
    "numbers 1 12 123 1234 12345 3.14159 1,000,000 2026-11-28 0x7fff",
    "   trailing spaces   ",
    "a\u00a0b\u2003c\u3000d",
    "Ünïcödé Straße ПРИВЕТ мир ÀÉÎ Ça va? naïve café",
    "e\u0301 a\u0308 n\u0303 (combining marks after letters)",
    "नमस्ते दुनिया, यह एक परीक्षण है।",
    "ក្រុមហ៊ុនកាន់តែធំ",
    "สวัสดีครับ ภาษาไทย",
    "你好，世界！我想在apple工作1314151天～",
    "こんにちは世界。カタカナとひらがな",
    "안녕하세요 세계",
    "مرحبا بالعالم",
    "שלום עולם",
    "Γειά σου Κόσμε",
    "😀🦙🇫🇷👨‍👩‍👧 emoji",
    "def f(x):\n    return x**2  # square\n\nprint(f(3))\n",
    "for (int i = 0; i < n; ++i) { a[i] += b[i]; }\n",
    "<div class=\"x\">a &amp; b</div> https://example.com/a/b?c=d",
    "---===...!!!???;;;:::///\\\\\\",
    "line1\r\nline2\rline3\n\n\nline4",
    "<|start|>system<|message|>You are ChatGPT.<|end|><|start|>user<|message|>Hi<|end|><|start|>assistant",
    "<|channel|>analysis<|message|>thinking<|end|><|start|>assistant<|channel|>final<|message|>Done<|return|>",
    "<|startoftext|>text<|endoftext|> <|constrain|>json <|call|> <|reserved_200013|>",
    "not special: <|start |> <start> [INST] <s>",
    "",
    " ",
    "\n",
    "ab" * 40,
    "tfconv converts, quantizes, runs and verifies transformer checkpoints.",
]


def bytes_to_unicode():
    """GPT-2's byte ↔ printable-character table (the byte-level alphabet)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


BYTE = bytes_to_unicode()


def bl(b):
    return "".join(BYTE[x] for x in b)


O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
FULL = None  # the o200k_base.tiktoken given on the command line


def o200k_pattern():
    """tiktoken's own o200k_base pattern. tiktoken_ext builds the encoding whole, ranks included: they are read
    from a cache folder holding the given file under the name tiktoken caches that address by (the file's sha256
    is checked against tiktoken's), so nothing is fetched."""
    import tempfile
    cache = tempfile.mkdtemp()
    shutil.copy(FULL, os.path.join(cache, hashlib.sha1(O200K_URL.encode()).hexdigest()))
    os.environ["TIKTOKEN_CACHE_DIR"] = cache
    import tiktoken_ext.openai_public as op
    return op.o200k_base()["pat_str"]


def load_ranks(path, check):
    global FULL
    if check:
        FULL = path
    with open(path, "rb") as f:
        data = f.read()
    if check and hashlib.sha256(data).hexdigest() != O200K_SHA256:
        raise SystemExit(f"{path}: sha256 is not tiktoken's for o200k_base.tiktoken")
    ranks = {}
    for line in data.splitlines():
        if line:
            tok, rank = line.split()
            ranks[base64.b64decode(tok)] = int(rank)
    return ranks


def vocab_merges(ranks):
    """The vocabulary (byte-level strings → rank) and the merges, recovered from the ranks the way transformers'
    TikTokenConverter recovers them: for each token, every split into two tokens of the vocabulary, ordered by
    the ranks of the left then the right part; all merges ordered by the rank of the token they make."""
    vocab, merges = {}, []
    for tok, rank in ranks.items():
        vocab[bl(tok)] = rank
        if len(tok) == 1:
            continue
        local = [(tok[:i], tok[i:]) for i in range(1, len(tok)) if tok[:i] in ranks and tok[i:] in ranks]
        local.sort(key=lambda p: (ranks[p[0]], ranks[p[1]]))
        merges.extend((rank, l, r) for l, r in local)
    merges.sort(key=lambda m: m[0])  # stable: the per-token order stays
    return vocab, [[bl(l), bl(r)] for _, l, r in merges]


def tokenizer_json(ranks, added):
    vocab, merges = vocab_merges(ranks)
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for i, c in added],
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": o200k_pattern()}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
                  "vocab": vocab, "merges": merges},
    }, vocab, merges


def tokenizer_config(added, bos, eos, pad):
    dec = {str(i): {"content": c, "lstrip": False, "normalized": False, "rstrip": False, "single_word": False,
                    "special": True} for i, c in added}
    return {"added_tokens_decoder": dec, "bos_token": bos, "clean_up_tokenization_spaces": False, "eos_token": eos,
            "extra_special_tokens": {}, "model_input_names": ["input_ids", "attention_mask"],
            "model_max_length": 1000000000000000019884624838656, "pad_token": pad,
            "tokenizer_class": "PreTrainedTokenizerFast"}


def write_json(path, obj, indent=2, newline=True):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=indent)
        if newline:
            f.write("\n")


def full(tiktoken_file, published, out):
    ranks = load_ranks(tiktoken_file, True)
    os.makedirs(out, exist_ok=True)
    tj, vocab, merges = tokenizer_json(ranks, ADDED)
    # The tokenizers library saves no final newline; so written, the file is gpt-oss-20b's tokenizer.json byte
    # for byte (README.md: its sha256 is the published file's).
    write_json(os.path.join(out, "tokenizer.json"), tj, newline=False)
    for name in ("tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja", "generation_config.json"):
        shutil.copy(os.path.join(published, name), os.path.join(out, name))
    with open(os.path.join(published, "tokenizer_config.json")) as f:
        dec = json.load(f)["added_tokens_decoder"]
    if [(int(i), t["content"]) for i, t in dec.items()] != ADDED:
        raise SystemExit("the published added tokens are not ADDED")
    # The converter's slow-tokenizer path (no Rust tokenizers here) reads vocab.json and merges.txt; the added
    # tokens come from tokenizer_config.json as for the fast tokenizer.
    write_json(os.path.join(out, "vocab.json"), vocab, indent=None)
    with open(os.path.join(out, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        for l, r in merges:
            f.write(f"{l} {r}\n")
    with open(os.path.join(ROOT, "testdata", "arch", "gptoss", "hf", "config.json")) as f:
        cfg = json.load(f)
    cfg.update(vocab_size=VOCAB, bos_token_id=199998, eos_token_id=200002, pad_token_id=199999)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")


def trim(tiktoken_file, n):
    ranks = {t: r for t, r in load_ranks(tiktoken_file, True).items() if r < n}
    added = [(n + k, c) for k, (_, c) in enumerate(ADDED)]
    tj, _, _ = tokenizer_json(ranks, added)
    write_json(os.path.join(HERE, "tokenizer.json"), tj, indent=None)
    names = dict((c, i) for i, c in added)
    write_json(os.path.join(HERE, "tokenizer_config.json"),
               tokenizer_config(added, "<|startoftext|>", "<|return|>", "<|endoftext|>"))
    with open(os.path.join(HERE, "o200k_trim.tiktoken"), "wb") as f:
        for tok, rank in sorted(ranks.items(), key=lambda x: x[1]):
            f.write(base64.b64encode(tok) + b" " + str(rank).encode() + b"\n")


def ids(d):
    import tiktoken
    full_file = os.path.join(d, "o200k_base.tiktoken")
    if os.path.exists(full_file):
        ranks, specials, name = load_ranks(full_file, True), {c: i for i, c in ADDED}, "tokens-full.json"
        specials.update({"<|reserved_%d|>" % i: i for i in range(200019, VOCAB)})
    else:
        global FULL
        FULL = os.environ["O200K"]
        ranks = load_ranks(os.path.join(d, "o200k_trim.tiktoken"), False)
        specials, name = {c: len(ranks) + k for k, (_, c) in enumerate(ADDED)}, "tokens.json"
    enc = tiktoken.Encoding("o200k_harmony", pat_str=o200k_pattern(), mergeable_ranks=ranks, special_tokens=specials)
    cases = [{"text": t, "ids": enc.encode(t, allowed_special="all"), "ordinary": enc.encode_ordinary(t)} for t in TEXTS]
    chk = os.path.join(os.environ.get("NEW_LLAMACPP", ""), "convert_hf_to_gguf_update.py")
    out = {"tiktoken": tiktoken.__version__, "ranks": len(ranks)}
    if os.path.exists(chk) and name == "tokens-full.json":
        # The converter's hash: sha256 of str(ids) of its check text, as the fast tokenizer's encode gives them
        # (no BOS: the tokenizer.json's post-processor adds none).
        import re
        src = open(chk, encoding="utf-8").read()
        chktxt = eval(re.search(r"^CHK_TXT = (.*)$", src, re.M).group(1))
        out["chkhsh"] = hashlib.sha256(str(enc.encode_ordinary(chktxt)).encode()).hexdigest()
    with open(os.path.join(HERE if name == "tokens.json" else d, name), "w", encoding="utf-8") as f:
        f.write(json.dumps(out)[:-1] + ', "cases": [\n')
        f.write(",\n".join(json.dumps(c, ensure_ascii=False) for c in cases))
        f.write("\n]}\n")


if __name__ == "__main__" and sys.argv[1] != "convert":
    {"full": lambda: full(sys.argv[2], sys.argv[3], sys.argv[4]), "trim": lambda: trim(sys.argv[2], int(sys.argv[3])),
     "ids": lambda: ids(sys.argv[2])}[sys.argv[1]]()


def convert(d, out, tokens=None):
    """Runs d32676d7's convert_hf_to_gguf.py --vocab-only on d (module imported, main() called). The Rust
    tokenizers package is not here, so AutoTokenizer gives the slow GPT2Tokenizer over d's vocab.json/merges.txt
    and tokenizer_config.json's added tokens (the same vocabulary and token types), and get_vocab_base_pre (only
    it) returns the name the converter's own table gives the hash tiktoken's ids of its check text make
    (tokens-full.json's chkhsh, in d's parent folder): the slow tokenizer splits with GPT-2's pattern, not o200k's."""
    import re, subprocess
    llamacpp = os.environ["NEW_LLAMACPP"]
    tokens = tokens or os.path.join(os.path.dirname(os.path.abspath(d)), "tokens-full.json")
    with open(tokens, encoding="utf-8") as f:
        chkhsh = json.load(f)["chkhsh"]
    src = open(os.path.join(llamacpp, "conversion", "base.py"), encoding="utf-8").read()
    table = dict(re.findall(r'if chkhsh == "([0-9a-f]{64})":\n(?:\s*#.*\n)*\s*res = "([^"]+)"', src))
    pre = table[chkhsh]
    print(f"chkhsh {chkhsh}: {pre}")
    code = ("import sys; sys.argv = sys.argv[1:]; sys.path.insert(0, %r); sys.path.insert(0, %r); "
            "import transformers; "
            "transformers.AutoTokenizer.from_pretrained = lambda d, *a, **k: transformers.GPT2Tokenizer.from_pretrained(d); "
            "transformers.PreTrainedTokenizer.vocab = property(lambda self: self.get_vocab()); "
            "import convert_hf_to_gguf as c; from conversion.base import TextModel; "
            "TextModel.get_vocab_base_pre = lambda self, tokenizer: %r; c.main()") % (
        os.path.join(llamacpp, "gguf-py"), llamacpp, pre)
    subprocess.run([sys.executable, "-c", code, "convert_hf_to_gguf.py", d, "--vocab-only", "--outtype", "f32",
                    "--outfile", out], check=True)


if __name__ == "__main__" and sys.argv[1] == "convert":
    convert(sys.argv[2], sys.argv[3])
