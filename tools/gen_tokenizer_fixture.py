#!/usr/bin/env python3
"""gen_tokenizer_fixture.py — reference token ids for tests/test_tokenizer.c.

Cases: every string of tests/data/tokenizer_corpus.txt (see its header for
the escapes), then the empty string, then GENERATED seeded strings (digit
runs, mixed-script word salad, whitespace and punctuation runs).

Outputs (little-endian, no padding; tokenizer_pretok.bin is described at
write_pretok_fixture: HF's word splits for each supported regex set):
  tests/data/tokenizer_smollm2.bin   SmolLM2-135M-Instruct (gpt2 / "smollm")
  tests/data/tokenizer_spm_tiny.bin  tests/data/spm_tiny.gguf (llama / SPM)
      char magic[8] = "PTTOKFX1"
      u32  n_cases
      per case:
        u32 text_len; u8 text[text_len]      UTF-8
        u32 n_special; i32 ids[n_special]   parse_special = true
        u32 n_plain;   i32 ids[n_plain]     parse_special = false
  Neither includes BOS/EOS (add_special = false).

SmolLM2 reference. transformers can build a tokenizer from the GGUF
(AutoTokenizer.from_pretrained(dir, gguf_file=...)), but its GGUF converter
gives the GPT-2 pipeline: pre_tokenizer ByteLevel only. SmolLM2's real
tokenizer.json (HuggingFaceTB/SmolLM2-135M-Instruct) has
  pre_tokenizer Sequence[Digits(individual_digits=True),
                         ByteLevel(add_prefix_space=False, use_regex=True)]
  model BPE (no unk, no dropout, ignore_merges false), decoder ByteLevel,
  no normalizer, 17 added special tokens (ids 0..16)
which is what llama.cpp's tokenizer.ggml.pre = "smollm" means. So the
reference here is a tokenizers.Tokenizer built from the GGUF's vocabulary and
merges with exactly that pipeline; CONTROL tokens become special added
tokens, USER_DEFINED ones non-special added tokens. The script reports how
many cases the transformers conversion would get differently (strings where
the individual-digit split matters), for the record. parse_special = false
is HF's encode_special_tokens = True (special tokens' text is tokenized as
plain text).

SPM reference: the sentencepiece library itself on tests/data/spm_tiny.model
(made by tools/gen_spm_vocab.py). parse_special = false is sp.encode(text).
parse_special = true follows llama.cpp (and HF's Llama "legacy" mode): the
text is cut at the control pieces' texts (<unk> <s> </s>, leftmost-longest)
and every piece of text between them is encoded on its own, which gives it
its own dummy-prefix space, exactly as sp.encode(piece) does.

Run from the repository root (needs the SmolLM2 GGUF; PETREL_SMOLLM2 or
~/.local/share/petrel/models/SmolLM2-135M-Instruct.Q4_1.gguf):
    python3 tools/gen_tokenizer_fixture.py
"""

import os
import random
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")
SEED = 20240531
MAGIC = b"PTTOKFX1"


# ---- corpus ---------------------------------------------------------------

def unescape(line):
    out, i = [], 0
    simple = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "\\": "\\"}
    while i < len(line):
        c = line[i]
        if c != "\\" or i + 1 == len(line):
            out.append(c)
            i += 1
            continue
        e = line[i + 1]
        if e in simple:
            out.append(simple[e])
            i += 2
        elif e == "u":
            out.append(chr(int(line[i + 2:i + 6], 16)))
            i += 6
        elif e == "U":
            out.append(chr(int(line[i + 2:i + 10], 16)))
            i += 10
        else:
            out.append(c)
            i += 1
    return "".join(out)


def read_corpus(path):
    cases = []
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.rstrip("\n")
            if not line or line.startswith("##"):
                continue
            cases.append(unescape(line))
    return cases


def generated_cases():
    rng = random.Random(SEED)
    out = [""]
    for _ in range(12):  # digit runs of many lengths, some with a leading space
        n = rng.choice([1, 2, 3, 4, 5, 7, 9, 13, 21, 34, 55])
        out.append(rng.choice(["", " ", "x"]) + "".join(rng.choice("0123456789") for _ in range(n)))
    pools = [
        ["the", "of", "and", "petrel", "token", "model", "Hello", "WORLD", "it's", "don't", "I'll"],
        ["你好", "世界", "模型", "日本語", "テスト", "한국어", "토큰"],
        ["مرحبا", "नमस्ते", "Привет", "Γειά", "שלום", "ไทย"],
        ["😀", "👍🏽", "👨‍👩‍👧", "🇯🇵", "❤️", "🎉"],
        ["123", "4.5", "-7", "1e9", "0x1F", "½"],
        ["!", "?", "...", "--", "()", "{}", "<|", "|>", "<|im_end|>", "<|im_start|>", "<s>", "</s>"],
        [" ", "  ", "\t", "\n", "\n\n", "   \n"],
    ]
    for _ in range(36):  # word salad across scripts, specials and spaces
        parts = []
        for _ in range(rng.randint(2, 14)):
            pool = rng.choice(pools)
            parts.append(rng.choice(pool))
            if rng.random() < 0.6:
                parts.append(" ")
        out.append("".join(parts))
    ws = [" ", "\t", "\n", "\r\n", "\u00a0", "\u3000"]
    for _ in range(8):  # whitespace runs, with words around
        body = "".join(rng.choice(ws) for _ in range(rng.randint(1, 12)))
        out.append(rng.choice(["", "a", "Hi"]) + body + rng.choice(["", "b", "!"]))
    punct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
    for _ in range(8):  # punctuation runs
        out.append("".join(rng.choice(punct) for _ in range(rng.randint(1, 20))))
    return out


def all_cases():
    return read_corpus(os.path.join(DATA, "tokenizer_corpus.txt")) + generated_cases()


# ---- SmolLM2 ----------------------------------------------------------------

def smollm2_path():
    env = os.environ.get("PETREL_SMOLLM2")
    if env:
        return env
    xdg = os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")
    return os.path.join(xdg, "petrel", "models", "SmolLM2-135M-Instruct.Q4_1.gguf")


def gguf_vocab(path):
    from gguf import GGUFReader

    r = GGUFReader(path)

    def strings(key):
        f = r.fields[key]
        return [bytes(f.parts[i]).decode("utf-8") for i in f.data]

    f = r.fields["tokenizer.ggml.token_type"]
    types = [int(f.parts[i][0]) for i in f.data]
    return strings("tokenizer.ggml.tokens"), strings("tokenizer.ggml.merges"), types


def smollm2_reference(path):
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    tokens, merges, types = gguf_vocab(path)
    vocab = {t: i for i, t in enumerate(tokens)}
    bpe = models.BPE(vocab=vocab, merges=[tuple(m.split(" ", 1)) for m in merges],
                     dropout=None, unk_token=None, fuse_unk=False, byte_fallback=False)
    tok = Tokenizer(bpe)
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    tok.decoder = decoders.ByteLevel()
    special = [AddedToken(t, special=True, normalized=False) for t, ty in zip(tokens, types) if ty == 3]
    user = [AddedToken(t, special=False, normalized=False) for t, ty in zip(tokens, types) if ty == 4]
    tok.add_special_tokens(special)
    if user:
        tok.add_tokens(user)
    for t in special + user:
        assert tok.token_to_id(t.content) == vocab[t.content], t.content
    return tok


def encode_hf(tok, text, parse_special):
    tok.encode_special_tokens = not parse_special
    return tok.encode(text, add_special_tokens=False).ids


def compare_with_transformers(path, tok, cases):
    """How many cases transformers' own GGUF conversion tokenizes differently."""
    try:
        from transformers import AutoTokenizer
    except ImportError:
        return None
    t = AutoTokenizer.from_pretrained(os.path.dirname(path), gguf_file=os.path.basename(path))
    return sum(1 for c in cases if t(c, add_special_tokens=False)["input_ids"] != encode_hf(tok, c, True))


# ---- SPM ---------------------------------------------------------------------

def spm_reference(cases):
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=os.path.join(DATA, "spm_tiny.model"))
    controls = [sp.id_to_piece(i) for i in range(sp.get_piece_size()) if sp.is_control(i) or sp.is_unknown(i)]

    def enc(text):
        return sp.encode(text) if text else []

    def enc_special(text):
        ids, frag, i = [], 0, 0
        while i < len(text):
            hit = max((c for c in controls if text.startswith(c, i)), key=len, default=None)
            if hit is None:
                i += 1
                continue
            ids += enc(text[frag:i]) + [sp.piece_to_id(hit)]
            i += len(hit)
            frag = i
        return ids + enc(text[frag:])

    return [(c, enc_special(c), enc(c)) for c in cases]


# ---- pre-tokenizer splits ------------------------------------------------------

# The regexes as the models' tokenizer.json files have them (HF tokenizers
# compiles them with Oniguruma). GPT-2's is the one ByteLevel(use_regex=True)
# applies.
RE_GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
RE_LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
             r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
RE_QWEN2 = RE_LLAMA3.replace(r"\p{N}{1,3}", r"\p{N}")
PRETOK_SETS = ["gpt2", "smollm", "llama-bpe", "qwen2", "smaug-bpe"]


def pretok_reference(name):
    from tokenizers import Regex, pre_tokenizers

    def split(rx):
        return pre_tokenizers.Split(Regex(rx), behavior="isolated", invert=False)

    if name == "gpt2":
        return split(RE_GPT2)
    if name == "smollm":
        return pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), split(RE_GPT2)])
    if name in ("llama-bpe", "smaug-bpe"):
        return split(RE_LLAMA3)
    if name == "qwen2":
        return split(RE_QWEN2)
    raise ValueError(name)


def word_ends(pre, text):
    """Byte offsets where each pre-tokenized word ends (words tile the text)."""
    ends = []
    for _, (start, end) in pre.pre_tokenize_str(text):
        assert not ends or len(text[:start].encode("utf-8")) == ends[-1], "words must tile the text"
        ends.append(len(text[:end].encode("utf-8")))
    assert (ends[-1] if ends else 0) == len(text.encode("utf-8"))
    return ends


def write_pretok_fixture(path, cases):
    """tests/data/tokenizer_pretok.bin:
        char magic[8] = "PTPRETK1"; u32 n_sets; u32 n_cases
        n_cases x { u32 text_len; u8 text[text_len] }
        n_sets  x { u32 name_len; u8 name[name_len];
                    n_cases x { u32 n_words; u32 ends[n_words] } }"""
    with open(path, "wb") as f:
        f.write(b"PTPRETK1" + struct.pack("<II", len(PRETOK_SETS), len(cases)))
        for c in cases:
            raw = c.encode("utf-8")
            f.write(struct.pack("<I", len(raw)) + raw)
        for name in PRETOK_SETS:
            pre = pretok_reference(name)
            f.write(struct.pack("<I", len(name)) + name.encode())
            for c in cases:
                ends = word_ends(pre, c)
                f.write(struct.pack(f"<I{len(ends)}I", len(ends), *ends))


# ---- output ------------------------------------------------------------------

def write_fixture(path, rows):
    with open(path, "wb") as f:
        f.write(MAGIC)
        f.write(struct.pack("<I", len(rows)))
        for text, a, b in rows:
            raw = text.encode("utf-8")
            f.write(struct.pack("<I", len(raw)) + raw)
            for ids in (a, b):
                f.write(struct.pack("<I", len(ids)))
                f.write(struct.pack(f"<{len(ids)}i", *ids))


def main():
    cases = all_cases()
    path = smollm2_path()
    if not os.path.exists(path):
        sys.exit(f"SmolLM2 GGUF not found at {path}")
    tok = smollm2_reference(path)
    rows = []
    for c in cases:
        a, b = encode_hf(tok, c, True), encode_hf(tok, c, False)
        # byte-level BPE is lossless: the reference must give the text back
        assert tok.decode(a, skip_special_tokens=False) == c, repr(c)
        assert tok.decode(b, skip_special_tokens=False) == c, repr(c)
        rows.append((c, a, b))
    write_fixture(os.path.join(DATA, "tokenizer_smollm2.bin"), rows)
    differ = compare_with_transformers(path, tok, cases)
    print(f"smollm2: {len(rows)} cases; transformers' GGUF conversion differs on {differ}")

    write_pretok_fixture(os.path.join(DATA, "tokenizer_pretok.bin"), cases)
    print(f"pretok: {len(PRETOK_SETS)} regex sets x {len(cases)} cases")

    spm_rows = spm_reference(cases)
    write_fixture(os.path.join(DATA, "tokenizer_spm_tiny.bin"), spm_rows)
    print(f"spm_tiny: {len(spm_rows)} cases")


if __name__ == "__main__":
    main()
