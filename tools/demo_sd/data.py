"""Scene pools for training: descriptions + tokenized captions made on CPU workers,
held as GPU tensors; pictures rendered on the GPU batch by batch (scenes.render)."""
import os
import random
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scenes  # noqa: E402

_TOK = {}


def tokenizer(tokdir):
    if tokdir not in _TOK:
        from transformers import CLIPTokenizer
        _TOK[tokdir] = CLIPTokenizer.from_pretrained(tokdir)
    return _TOK[tokdir]


def tokenize(tokdir, captions):
    ids = tokenizer(tokdir)(captions, padding="max_length", max_length=77, truncation=True,
                            return_tensors="np").input_ids
    return ids.astype(np.int16)


def _chunk(job):
    seed, n, split, tokdir, K = job
    rng = random.Random(seed)
    types = np.full((n, 3), -1, np.int8)
    cols = np.zeros((n, 3), np.int8)
    geo = np.zeros((n, 3, 3), np.float32)
    bgi = np.zeros((n, 3), np.int8)
    bgp = np.zeros((n,), np.float32)
    caps = []
    for i in range(n):
        sc = scenes.sample_scene(rng, split)
        slots, bg = scenes.scene_params(sc)
        for k, s in enumerate(slots):
            types[i, k], cols[i, k] = s[0], s[1]
            geo[i, k] = s[2:]
        bgi[i] = bg[:3]
        bgp[i] = bg[3]
        for _ in range(K):
            caps.append(scenes.caption(sc, rng))
    ids = tokenize(tokdir, caps).reshape(n, K, 77) if tokdir else None
    return types, cols, geo, bgi, bgp, ids


def make_pool(seed, n, tokdir=None, K=2, split="train", workers=None, chunk=4096):
    """n scenes (params arrays) with K tokenized captions each. Call before CUDA is initialised."""
    import multiprocessing as mp
    jobs = [(seed * 100003 + i, min(chunk, n - i * chunk), split, tokdir, K)
            for i in range((n + chunk - 1) // chunk)]
    workers = workers or max(1, min(len(jobs), (os.cpu_count() or 2) - 1))
    if workers > 1:
        with mp.get_context("fork").Pool(workers) as p:
            res = p.map(_chunk, jobs)
    else:
        res = [_chunk(j) for j in jobs]
    cat = [np.concatenate([r[i] for r in res]) if res[0][i] is not None else None for i in range(6)]
    return dict(types=cat[0], cols=cat[1], geo=cat[2], bgi=cat[3], bgp=cat[4], ids=cat[5])


def pool_to_device(pool, device):
    import torch
    out = {}
    for k, v in pool.items():
        if v is None:
            continue
        t = torch.from_numpy(v)
        if k in ("types", "cols", "bgi", "ids"):
            t = t.long() if k != "ids" else t.to(torch.int32)
        out[k] = t.to(device)
    return out


def render_idx(pool, idx, height=256, width=256):
    """Images in [-1, 1], (B,3,H,W) float32, for pool rows idx (a device tensor)."""
    t = {k: pool[k][idx] for k in ("types", "cols", "geo", "bgi", "bgp")}
    return scenes.render(t, height, width) * 2 - 1
