#!/usr/bin/env python3
"""Expected ids for tests/test_clip_tokenizer.c (tests/data/clip_tokenizer_cases.json).

Runs transformers 4.x's slow CLIPTokenizer code without ftfy (as diffusers
pipelines do) on the demo tokenizer (tools/demo_sd/tokenizer, the same
vocabulary as tests/data/sd-tiny): its BasicTokenizer, bytes_to_unicode and
bpe/_tokenize are taken from the transformers wheel's own sources (needs
only the `regex` module, not transformers' dependencies), and the special
tokens are split from the raw text first, as its tokens_trie does.

usage: pip download --no-deps transformers==4.57.1 -d /tmp/tf4
       python3 tools/clip_ref/gen_clip_tokenizer_cases.py /tmp/tf4/transformers-4.57.1-py3-none-any.whl
"""
import json
import os
import sys
import types
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load_slow_clip(wheel):
    z = zipfile.ZipFile(wheel)
    src = z.read("transformers/models/clip/tokenization_clip.py").decode()
    tu = z.read("transformers/tokenization_utils.py").decode()

    def grab(s, name):
        i = s.index(name)
        return s[i:s.index("\n\n\n", i)]

    code = "import regex as re, unicodedata, json\nfrom functools import lru_cache\n"
    for n in ["def _is_whitespace", "def _is_control", "def _is_punctuation"]:
        code += grab(tu, n) + "\n\n"
    for n in ["@lru_cache\ndef bytes_to_unicode", "def get_pairs", "def whitespace_clean",
              "def whitespace_tokenize", "class BasicTokenizer"]:
        code += grab(src, n) + "\n\n"
    cls = src[src.index("class CLIPTokenizer"):]
    init = cls[cls.index("        with open(vocab_file"):cls.index("        super().__init__(")]
    code += ("class Clip:\n    def __init__(self, vocab_file, merges_file):\n"
             "        self.nlp = BasicTokenizer(strip_accents=False, do_split_on_punc=False)\n"
             "        self.fix_text = None\n        errors = 'replace'\n" + init)
    code += cls[cls.index("    def bpe(self"):cls.index("    def _convert_token_to_id")]
    mod = types.ModuleType("slow_clip")
    exec(code, mod.__dict__)
    return mod.Clip


def ids(tok, text, max_len, pad):
    import regex as re
    unk = tok.encoder["<|endoftext|>"]
    bos = tok.encoder["<|startoftext|>"]
    toks = []
    for p in re.split(r"(<\|startoftext\|>|<\|endoftext\|>)", text):
        if p in ("<|startoftext|>", "<|endoftext|>"):
            toks.append(p)
        elif p:
            toks.extend(tok._tokenize(p))
    out = [bos] + [tok.encoder.get(t, unk) for t in toks][:max_len - 2] + [unk]
    return out + [pad] * (max_len - len(out))


CASES = [
    ('a red circle left of a blue square', 77, 694),
    ("A RED Circle, isn't it?!  3 dogs", 77, 694),
    ("they're, we've, I'm, you'll, he'd: 's 'S", 77, 694),
    ('digits 12345 and 3.14 x2', 77, 694),
    ('  leading\ttabs\nand\r\nnewlines   ', 77, 0),
    ('caf\xe9 CAF\xc9 cafe\u0301 na\xefve \xdcBER stra\xdfe', 77, 694),
    ('\u03a3\u039f\u03a3 \u0391\u03a3 \u03a3 x\u03a3y \u0130stanbul', 77, 694),
    ('\u732b\u732b cat\u72acdog \u3053\u3093\u306b\u3061\u306f', 77, 694),
    ('ctrl\x01\x7f\u200bchars\xa0nbsp\u2028line\u2029para\x0bvt\x1fus', 77, 694),
    ('emoji \U0001f600\U0001f600! <3 :) #tag @you $5 100%', 77, 694),
    ('a<|endoftext|>b <|startoftext|> <|ENDOFTEXT|> !<|endoftext|>', 77, 694),
    ('', 77, 694),
    ('   ', 77, 0),
    ('red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square red square', 77, 694),
    ('a blue triangle above a green circle', 8, 0),
    ('x', 2, 694),
]


def main():
    Clip = load_slow_clip(sys.argv[1])
    d = os.path.join(ROOT, "tools/demo_sd/tokenizer")
    tok = Clip(os.path.join(d, "vocab.json"), os.path.join(d, "merges.txt"))
    out = [{"text": t, "max_len": m, "pad": p, "ids": ids(tok, t, m, p)} for t, m, p in CASES]
    with open(os.path.join(ROOT, "tests/data/clip_tokenizer_cases.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=True, indent=0)
        f.write("\n")


if __name__ == "__main__":
    main()
