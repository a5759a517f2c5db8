"""Build the demo model's small CLIP-format BPE vocabulary from the captions' words.

Layout exactly as openai/clip-vit-large-patch14's tokenizer files:
  vocab.json : the 256 byte symbols (GPT-2 bytes_to_unicode order), the same 256
               with "</w>", then one entry per merge (in merge order), then
               <|startoftext|> and <|endoftext|> (the two highest ids);
  merges.txt : "#version: 0.2" then one "a b" merge per line.
Words are lower-cased and end in "</w>"; merges are learnt (most frequent pair
first) on the caption words until every caption word is a single token, so a
caption is one token per word. Any other text still tokenizes (byte symbols).

usage: python3 tools/demo_sd/build_tokenizer.py [OUTDIR]   (default tools/demo_sd/tokenizer)
"""
import collections
import json
import os
import random
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import scenes  # noqa: E402
from bpe_alphabet import bytes_to_unicode  # noqa: E402  (GPT-2's table, which CLIP uses too)


PAT = re.compile(r"<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[a-z]+|[0-9]|[^\sa-z0-9]+")


def word_counts(n_captions=20000, seed=1234):
    rng = random.Random(seed)
    cnt = collections.Counter()
    for _ in range(n_captions):
        sc = scenes.sample_scene(rng, "train")
        for w in PAT.findall(scenes.caption(sc, rng).lower()):
            cnt[w] += 1
    for w in scenes.all_caption_words():   # words too rare to be drawn still get merged
        cnt[w] += 1
    return cnt


def learn_merges(counts):
    b2u = bytes_to_unicode()
    words = {}
    for w, c in counts.items():
        sym = [b2u[b] for b in w.encode("utf-8")]
        sym[-1] = sym[-1] + "</w>"
        words[tuple(sym)] = c
    merges = []
    while True:
        pairs = collections.Counter()
        for sym, c in words.items():
            for a, b in zip(sym, sym[1:]):
                pairs[(a, b)] += c
        if not pairs:
            break
        best = max(sorted(pairs), key=lambda p: pairs[p])
        merges.append(best)
        new = {}
        for sym, c in words.items():
            out, i = [], 0
            while i < len(sym):
                if i + 1 < len(sym) and (sym[i], sym[i + 1]) == best:
                    out.append(sym[i] + sym[i + 1])
                    i += 2
                else:
                    out.append(sym[i])
                    i += 1
            new[tuple(out)] = c
        words = new
    return merges


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "tokenizer")
    os.makedirs(out, exist_ok=True)
    merges = learn_merges(word_counts())
    b2u = bytes_to_unicode()
    base = list(b2u.values())
    vocab_list = base + [v + "</w>" for v in base] + ["".join(m) for m in merges]
    vocab_list += ["<|startoftext|>", "<|endoftext|>"]
    vocab = {t: i for i, t in enumerate(vocab_list)}
    assert len(vocab) == len(vocab_list), "duplicate token"
    with open(os.path.join(out, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(out, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        for a, b in merges:
            f.write(f"{a} {b}\n")
    cfg = {
        "tokenizer_class": "CLIPTokenizer", "model_max_length": 77, "do_lower_case": True,
        "bos_token": "<|startoftext|>", "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>",
        "pad_token": "<|endoftext|>", "errors": "replace", "clean_up_tokenization_spaces": True,
    }
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    with open(os.path.join(out, "special_tokens_map.json"), "w") as f:
        json.dump({k: cfg[k] for k in ("bos_token", "eos_token", "unk_token", "pad_token")}, f, indent=2)
    print(f"{len(vocab)} tokens ({len(merges)} merges) -> {out}")


if __name__ == "__main__":
    main()
