"""Makes this folder's Kimi K2 tokenizer fixture (run in the trixie chroot; see README.md).

tiktoken.model: a tiny byte-level BPE vocabulary trained by tiktoken 0.9.0's own trainer
(tiktoken._educational.bpe_train, cl100k's split pattern) on this repository's README.md, written in the
ranks format tiktoken.load.load_tiktoken_bpe reads (base64 token, space, rank; Kimi's tiktoken.model is one).
tokens.json: token ids of sample texts as tiktoken.Encoding gives them with Kimi's split pattern, read from the
publisher's tokenization_kimi.py (TikTokenTokenizer.pat_str) when that file is given.
Usage: gen.py vocab | gen.py ids <dir with tokenization_kimi.py and tiktoken.model>
"""
import base64, json, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
CL100K = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"""
TEXTS = [
    "Hello world, this is Kimi's tokenizer.",
    "我想在apple工作1314151天～ 你好世界",
    "  leading spaces\n\n\ttabs and\r\nCRLF 12345 3.14159",
    "I've been 'told he's there, 'RE you sure? We'Ve a'lL",
    "Ünïcödé Straße ПРИВЕТ мир ÀÉÎ 😀🦙 ---===...!!!",
    "[BOS]<|im_user|>user<|im_middle|>hi<|im_end|>",
    "tfconv converts, quantizes, runs and verifies transformer checkpoints.",
]

def vocab():
    from tiktoken._educational import bpe_train
    with open(os.path.join(HERE, "../../../README.md"), encoding="utf-8") as f:
        data = f.read()[:60000]
    ranks = bpe_train(data, 744, CL100K, visualise=None)
    with open(os.path.join(HERE, "tiktoken.model"), "wb") as f:
        for tok, rank in sorted(ranks.items(), key=lambda x: x[1]):
            f.write(base64.b64encode(tok) + b" " + str(rank).encode() + b"\n")

def ids(d):
    sys.path.insert(0, d)
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe
    import tokenization_kimi
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(d, trust_remote_code=True)
    enc = tok.model  # the tiktoken.Encoding the publisher's class builds (Kimi's pat_str and special tokens)
    out = []
    for t in TEXTS:
        out.append({"text": t, "ids": enc.encode(t, allowed_special="all"),
                    "ordinary": enc.encode_ordinary(t), "tokenizer_encode": tok.encode(t)})
    with open(os.path.join(HERE, "tokens.json"), "w", encoding="utf-8") as f:
        f.write('{"tiktoken": %s, "cases": [\n' % json.dumps(tiktoken.__version__))
        f.write(",\n".join(json.dumps(c, ensure_ascii=False) for c in out))
        f.write("\n]}\n")

if __name__ == "__main__":
    vocab() if sys.argv[1] == "vocab" else ids(sys.argv[2])
