#!/usr/bin/env python3
"""make_kld_seeds.py — the seed corpus of tests/fuzz/fuzz_kld_base.c: small
files in llama-perplexity's log-probability format (app/kld_file.h), valid
ones and the corrupt kinds the reader must refuse. Standard library only.

    python3 tools/make_kld_seeds.py [OUT_DIR]   (default tests/fuzz/corpus/fuzz_kld_base)
"""
import math
import os
import struct
import sys


def row(logits):
    """One row as llama-perplexity encodes it (perplexity.cpp log_softmax)."""
    mx, mn = max(logits), max(min(logits), max(logits) - 16)
    lse = math.log(sum(math.exp(x - mx) for x in logits))
    scale = (mx - mn) / 65535
    q = [round((x - mn) / scale) if scale and x > mn else 0 for x in logits]
    q += [0] * (len(logits) % 2)
    return struct.pack("<ff", scale, mn - mx - lse) + struct.pack("<%dH" % len(q), *q)


def base_file(n_ctx, n_vocab, n_chunk, seed):
    toks = [(seed * 7 + i * 3) % n_vocab for i in range(n_ctx * n_chunk)]
    out = b"_logits_" + struct.pack("<iii", n_ctx, n_vocab, n_chunk) + struct.pack("<%di" % len(toks), *toks)
    n_rows = n_ctx - 1 - n_ctx // 2
    for r in range(n_chunk * n_rows):
        out += row([math.sin(seed + r * 1.3 + v * 0.7) * (4 + v % 5) for v in range(n_vocab)])
    return out


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "tests/fuzz/corpus/fuzz_kld_base"
    os.makedirs(out_dir, exist_ok=True)
    good = base_file(8, 6, 2, 1)
    seeds = {
        "valid_ctx8_vocab6": good,
        "valid_ctx4_vocab5_odd": base_file(4, 5, 3, 2),
        "valid_ctx9_vocab1": base_file(9, 1, 1, 3),
        "truncated_row": good[:-3],
        "truncated_header": good[:14],
        "trailing_bytes": good + b"\0\0",
        "bad_magic": b"_lo9its_" + good[8:],
        "token_out_of_range": good[:20] + struct.pack("<i", 6) + good[24:],
        "nan_scale": good[:84] + struct.pack("<f", float("nan")) + good[88:],
        "huge_counts": b"_logits_" + struct.pack("<iii", 1 << 22, 1 << 24, 0x7FFFFFFF),
    }
    for name, data in seeds.items():
        with open(os.path.join(out_dir, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
