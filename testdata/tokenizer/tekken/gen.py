"""Makes the Tekken (Mistral Nemo) tokenizer fixtures (run in the trixie chroot; see README.md).

gen.py full <vocab.tiktoken> <out>: <out>/tokenizer.json and tokenizer_config.json of the full vocabulary: the
  1000 control tokens (ids 0..999) and 130072 byte-level tokens after them, merges recovered from the ranks as
  transformers' TikTokenConverter recovers them (../o200k/gen.py), Tekken's split pattern before ByteLevel without
  its regex, <s> added in front by the post-processor; and <out>/tokens-full.json.
gen.py model <nemo> <out>: a Mistral 3 folder with that tokenizer (model() says what).
gen.py convert <out> <out.gguf> <tokens-full.json>: llama.cpp's convert_hf_to_gguf.py --vocab-only on it
  (../o200k/gen.py's convert: the slow GPT2Tokenizer, the table's name for tiktoken's hash).
gen.py trim <vocab.tiktoken> <n>: the same for the control tokens and the first n ranks, in this folder, with
  tokens.json.
<vocab.tiktoken> is the vocabulary as README.md says: each line the base64 of a token's byte-level string and its id.
tokens*.json: the ids tiktoken 0.9.0 gives TEXTS (../o200k/gen.py's) with Tekken's pattern over those ranks (id =
1000 + rank) and the control tokens, with special text parsed (ids) and not (ordinary); no BOS. tokens-full.json
also holds the converter's hash of its check text's ids with the BOS, as the fast tokenizer's encode gives them.
"""
import base64, hashlib, json, os, re, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "o200k"))
import gen as o200k  # noqa: E402  (bytes_to_unicode, vocab_merges, write_json, TEXTS)

# mistral-common's Tekken pattern (tekken.json's config.pattern, as llama.cpp's TEKKEN "original regex").
PATTERN = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?"
           r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|"
           r"\s+(?!\S)|\s+")
SPECIAL = 1000
TEXTS = o200k.TEXTS + ["[INST]Hello, how are you?[/INST]Fine, and you?</s>[INST]Great![/INST]",
                       "<s>[AVAILABLE_TOOLS][][/AVAILABLE_TOOLS][TOOL_CALLS] <pad>"]


def read_vocab(path):
    """(control tokens by id, ranks: token bytes → rank)."""
    dec = {c: b for b, c in o200k.BYTE.items()}
    control, ranks = {}, {}
    with open(path, "rb") as f:
        for line in f:
            b, i = line.split()
            s, i = base64.b64decode(b).decode("utf-8"), int(i)
            if i < SPECIAL:
                control[i] = s
            else:
                ranks[bytes(dec[c] for c in s)] = i - SPECIAL
    return control, ranks


def write(out, control, ranks, tokens_name, full):
    vocab, merges = o200k.vocab_merges(ranks)
    vocab = {k: v + SPECIAL for k, v in vocab.items()}
    for i, s in control.items():
        vocab[s] = i
    vocab = dict(sorted(vocab.items(), key=lambda kv: kv[1]))
    tj = {"version": "1.0", "truncation": None, "padding": None,
          "added_tokens": [{"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
                            "normalized": False, "special": True} for i, s in sorted(control.items())],
          "normalizer": None,
          "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
              {"type": "Split", "pattern": {"Regex": PATTERN}, "behavior": "Isolated", "invert": False},
              {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
          "post_processor": {"type": "TemplateProcessing",
                             "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                             "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                                      {"Sequence": {"id": "B", "type_id": 1}}],
                             "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
          "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
          "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                    "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
                    "vocab": vocab, "merges": merges}}
    o200k.write_json(os.path.join(out, "tokenizer.json"), tj, indent=None if not full else 2)
    o200k.write_json(os.path.join(out, "tokenizer_config.json"), {
        "add_bos_token": True, "add_eos_token": False,
        "added_tokens_decoder": {str(i): {"content": s, "lstrip": False, "normalized": False, "rstrip": False,
                                          "single_word": False, "special": True} for i, s in sorted(control.items())},
        "bos_token": "<s>", "clean_up_tokenization_spaces": False, "eos_token": "</s>",
        "model_max_length": 1000000000000000019884624838656, "tokenizer_class": "PreTrainedTokenizerFast",
        "unk_token": "<unk>"})
    import tiktoken
    # Ranks offset by the 1000 control ids keep their order (the merge priority) and come out as the ids.
    enc = tiktoken.Encoding("tekken", pat_str=PATTERN, mergeable_ranks={t: r + SPECIAL for t, r in ranks.items()},
                            special_tokens={s: i for i, s in control.items()})
    cases = [{"text": t, "ids": enc.encode(t, allowed_special="all"), "ordinary": enc.encode_ordinary(t)} for t in TEXTS]
    rec = {"tiktoken": tiktoken.__version__, "ranks": len(ranks)}
    if full:
        src = open(os.path.join(os.environ["NEW_LLAMACPP"], "convert_hf_to_gguf_update.py"), encoding="utf-8").read()
        chktxt = eval(re.search(r"^CHK_TXT = (.*)$", src, re.M).group(1))
        rec["chkhsh"] = hashlib.sha256(str([1] + enc.encode_ordinary(chktxt)).encode()).hexdigest()
    with open(os.path.join(out, tokens_name), "w", encoding="utf-8") as f:
        f.write(json.dumps(rec)[:-1] + ', "cases": [\n')
        f.write(",\n".join(json.dumps(c, ensure_ascii=False) for c in cases))
        f.write("\n]}\n")


def model(nemo, out):
    """<out>: testdata/arch/mistral3/hf's config.json (vocab_size 131072, Nemo's bos 1 and eos 2, no pad) and
    model.safetensors, <nemo>'s tokenizer.json and tokenizer_config.json, and vocab.json/merges.txt of the same
    vocabulary for the converter's slow-tokenizer path."""
    import shutil
    os.makedirs(out, exist_ok=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(nemo, name), os.path.join(out, name))
    with open(os.path.join(nemo, "tokenizer.json"), encoding="utf-8") as f:
        tj = json.load(f)
    o200k.write_json(os.path.join(out, "vocab.json"), tj["model"]["vocab"], indent=None)
    with open(os.path.join(out, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        for l, r in tj["model"]["merges"]:
            f.write(f"{l} {r}\n")
    arch = os.path.join(HERE, "..", "..", "arch", "mistral3", "hf")
    shutil.copy(os.path.join(arch, "model.safetensors"), os.path.join(out, "model.safetensors"))
    with open(os.path.join(arch, "config.json")) as f:
        cfg = json.load(f)
    cfg["text_config"].update(vocab_size=131072, bos_token_id=1, eos_token_id=2)
    del cfg["text_config"]["pad_token_id"]
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")


if __name__ == "__main__" and sys.argv[1] == "model":
    model(sys.argv[2], sys.argv[3])
elif __name__ == "__main__" and sys.argv[1] == "convert":
    o200k.convert(sys.argv[2], sys.argv[3], sys.argv[4])
elif __name__ == "__main__":
    control, ranks = read_vocab(sys.argv[2])
    if sys.argv[1] == "full":
        write(sys.argv[3], control, ranks, "tokens-full.json", True)
    else:
        n = int(sys.argv[3])
        write(HERE, control, {t: r for t, r in ranks.items() if r < n}, "tokens.json", False)
