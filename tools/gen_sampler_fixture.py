#!/usr/bin/env python3
"""Generate tests/data/sampler_draws.txt: the tokens petrel's sampler must
draw for given logits, parameters and seeds.

An independent, pure-Python statement of the sampler's random stream (see
engine/sampler.h): xoshiro256** seeded by four splitmix64 outputs from the
seed; one uniform double (top 53 bits) per sample; candidates ordered by
logit descending then id ascending and cut by top-k when top-k is set (else
left in id order), probabilities as float32 of a
double softmax of logit * (1/temperature); the first candidate whose running sum
of probabilities exceeds the uniform is the token. A seeded chat must give
the same text on every machine and after every refactor; this pins it.

Format: one line per config,
    <top_k> <temperature> <seed> <n_logits> <logits...> <n_draws> <tokens...>
Run from the repository root: python3 tools/gen_sampler_fixture.py
"""
import math
import os

import numpy as np

M64 = (1 << 64) - 1


def splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return state, z ^ (z >> 31)


def rotl(x, k):
    return ((x << k) | (x >> (64 - k))) & M64


class Xoshiro256ss:
    def __init__(self, seed):
        self.s = []
        x = seed
        for _ in range(4):
            x, v = splitmix64(x)
            self.s.append(v)

    def next(self):
        s = self.s
        result = (rotl((s[1] * 5) & M64, 7) * 9) & M64
        t = (s[1] << 17) & M64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        return result

    def uniform(self):
        return (self.next() >> 11) * 2.0 ** -53


def draws(logits, top_k, temp, seed, n):
    # only top-k is used here (top_p 1, min_p 0): sorted when it is set,
    # else the candidates stay in id order
    order = list(range(len(logits)))
    if top_k > 0:
        order = sorted(order, key=lambda i: (-logits[i], i))[:top_k]
    mx = logits[order[0]]
    inv_t = 1.0 / float(np.float32(temp))  # the sampler holds temperature as a float
    w = [math.exp((float(logits[i]) - mx) * inv_t) for i in order]
    z = sum(w)
    p = [float(np.float32(x / z)) for x in w]
    rng = Xoshiro256ss(seed)
    out = []
    for _ in range(n):
        r = rng.uniform()
        acc = 0.0
        tok = order[-1]
        for i, pi in zip(order, p):
            acc += pi
            if r < acc:
                tok = i
                break
        out.append(tok)
    return out


def main():
    logits = [1.0, 0.5, 2.0, -1.0, 0.0, 1.5, 0.25, -0.5]  # exact in float32
    configs = [(0, 0.9, 42), (0, 0.9, 0), (3, 1.0, 7), (0, 2.0, M64)]
    lines = []
    for top_k, temp, seed in configs:
        toks = draws(logits, top_k, temp, seed, 40)
        lines.append(" ".join([str(top_k), repr(temp), str(seed), str(len(logits))] +
                              [repr(x) for x in logits] + [str(len(toks))] +
                              [str(t) for t in toks]))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.path.join(root, "tests", "data", "sampler_draws.txt")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
