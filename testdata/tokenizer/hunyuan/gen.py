"""Makes this folder's tokens.json (run in the trixie chroot; see README.md): the ids Hunyuan's own tokenizer class
gives for sample texts on testdata/arch/hunyuanmoe/hf/hy.tiktoken.
Usage: gen.py <dir holding the publisher's tokenization_hy.py, tokenizer_config.json and that hy.tiktoken>
"""
import json, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
TEXTS = [
    "Hello world, this is Hunyuan's tokenizer.",
    "我想在apple工作1314151天～ 你好世界",
    "  leading spaces\n\n\ttabs and\r\nCRLF 12345 3.14159",
    "I've been 'told he's there, 'RE you sure? We'Ve a'lL",
    "Ünïcödé Straße ПРИВЕТ мир ÀÉÎ 😀🦙 ---===...!!!",
    "<|startoftext|>用户：hi<|extra_0|>助手：hello<|eos|>",
    "func main() {\n\tfmt.Println(\"tfconv\")\n}\n",
    "tfconv converts, quantizes, runs and verifies transformer checkpoints.",
]


def main(d):
    sys.path.insert(0, d)
    import tiktoken
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(d, trust_remote_code=True)
    enc = tok.tokenizer  # the tiktoken.Encoding the publisher's class builds (its pat_str and special tokens)
    out = []
    for t in TEXTS:
        out.append({"text": t, "ids": enc.encode(t, allowed_special="all"), "ordinary": enc.encode_ordinary(t),
                    "tokenizer_encode": tok.convert_tokens_to_ids(tok.tokenize(t))})
    with open(os.path.join(HERE, "tokens.json"), "w", encoding="utf-8") as f:
        f.write('{"tiktoken": %s, "cases": [\n' % json.dumps(tiktoken.__version__))
        f.write(",\n".join(json.dumps(c, ensure_ascii=False) for c in out))
        f.write("\n]}\n")


if __name__ == "__main__":
    main(sys.argv[1])
