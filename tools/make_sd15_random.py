#!/usr/bin/env python3
"""make_sd15_random.py — the benchmark checkpoint of issue 11: a single-file
LDM-layout F16 .safetensors with the real Stable Diffusion 1.5 shapes
(UNet 320/640/1280/1280, 8 heads, cross 768; CLIP ViT-L/14 text encoder,
768 hidden, 12 layers; VAE 128/256/512/512) and seeded random values:
weights ~ N(0, 1/fan_in) (fan_in = in_features * kh * kw), embeddings
~ N(0, 0.02^2), norm weights 1, biases 0, so activations stay finite.
Both stable-diffusion.cpp and petrel load it. No torch: numpy only, written
streaming (header first, then each tensor in chunks), so memory stays low
(~2.1 GB file, < 200 MB of RAM).

    make_sd15_random.py OUT.safetensors [--seed N] [--taesd OUT_TAESD.safetensors]
        [--width-div K]

--taesd also writes a random TAESD decoder in diffusers' AutoencoderTiny
names (decoder.layers.N...), the names stable-diffusion.cpp's tae.hpp reads
(TinyDecoder: 0 conv, 2-4 blocks, 6 conv, 7-9, 11, 12-14, 16, 17, 18; each
block conv.0/.2/.4). --width-div K divides every channel count by K (a
narrow model of the same structure, for tests; 1 = the real shapes).
Values depend only on the seed and the tensor's name.
"""
import argparse
import hashlib
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sd_ldm_names as names  # noqa: E402

CHUNK = 1 << 22  # elements generated at a time


def sd15_configs(div=1):
    def d(x):  # a multiple of 8, so 8 groups and 8 heads divide it
        return x if div == 1 else max(8, int(round(x / div / 8)) * 8)
    unet = {"block_out_channels": [d(320), d(640), d(1280), d(1280)],
            "down_block_types": ["CrossAttnDownBlock2D"] * 3 + ["DownBlock2D"],
            "layers_per_block": 2, "cross_attention_dim": d(768), "attention_head_dim": 8,
            "in_channels": 4, "out_channels": 4, "norm_num_groups": 32 if div == 1 else 8}
    vae = {"block_out_channels": [d(128), d(256), d(512), d(512)], "layers_per_block": 2,
           "latent_channels": 4, "norm_num_groups": 32 if div == 1 else 8}
    clip = {"hidden_size": d(768), "intermediate_size": d(3072), "vocab_size": 49408,
            "max_position_embeddings": 77, "num_hidden_layers": 12,
            "num_attention_heads": 12 if div == 1 else 1}
    return unet, vae, clip


def init_kind(canon, shape):
    """'ones', 'zeros', 'embed' or 'fan_in' for a canonical tensor."""
    if len(shape) == 1:
        return "ones" if ("norm" in canon and canon.endswith("weight")) else "zeros"
    if "embedding" in canon:
        return "embed"
    return "fan_in"


def tensor_rng(seed, name):
    h = hashlib.sha256(name.encode()).digest()
    return np.random.default_rng([seed, int.from_bytes(h[:8], "little")])


def write_streaming(path, tensors, seed, meta=None):
    """tensors: [(file name, canonical name, shape)] written as F16."""
    header, off = {}, 0
    for fname, _, shape in tensors:
        n = int(np.prod(shape)) * 2
        header[fname] = {"dtype": "F16", "shape": list(shape), "data_offsets": [off, off + n]}
        off += n
    if meta:
        header["__metadata__"] = meta
    hb = json.dumps(header, separators=(",", ":")).encode()
    hb += b" " * ((8 - len(hb) % 8) % 8)
    with open(path, "wb") as f:
        f.write(len(hb).to_bytes(8, "little"))
        f.write(hb)
        for fname, canon, shape in tensors:
            n = int(np.prod(shape))
            kind = init_kind(canon, shape)
            if kind in ("ones", "zeros"):
                f.write((np.ones if kind == "ones" else np.zeros)(n, dtype=np.float16).tobytes())
                continue
            std = 0.02 if kind == "embed" else 1.0 / np.sqrt(int(np.prod(shape[1:])))
            rng = tensor_rng(seed, fname)
            for s in range(0, n, CHUNK):
                m = min(CHUNK, n - s)
                f.write((rng.standard_normal(m, dtype=np.float32) * np.float32(std)).astype(np.float16).tobytes())
    return off + 8 + len(hb)


def taesd_tensors(c=64, z=4, out=3):
    t = []

    def conv(i, cin, cout, bias=True, k=3):
        t.append((f"decoder.layers.{i}.weight", (cout, cin, k, k)))
        if bias:
            t.append((f"decoder.layers.{i}.bias", (cout,)))

    def block(i):
        for j in (0, 2, 4):
            t.append((f"decoder.layers.{i}.conv.{j}.weight", (c, c, 3, 3)))
            t.append((f"decoder.layers.{i}.conv.{j}.bias", (c,)))
    conv(0, z, c)
    for i in (2, 3, 4):
        block(i)
    conv(6, c, c, bias=False)
    for i in (7, 8, 9):
        block(i)
    conv(11, c, c, bias=False)
    for i in (12, 13, 14):
        block(i)
    conv(16, c, c, bias=False)
    block(17)
    conv(18, c, out)
    return [(n, "taesd." + n, s) for n, s in t]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--taesd")
    ap.add_argument("--width-div", type=int, default=1)
    a = ap.parse_args()
    unet, vae, clip = sd15_configs(a.width_div)
    shapes = {}
    shapes.update(names.clip_shapes(clip))
    shapes.update(names.unet_shapes(unet))
    shapes.update(names.vae_shapes(vae))
    tensors = []
    for canon, shape in shapes.items():
        ldm = names.to_ldm(canon, unet, vae)
        if ".mid.attn_1." in ldm and len(shape) == 2:
            shape = shape + (1, 1)  # LDM's VAE attention is 1x1 convs
        tensors.append((ldm, canon, shape))
    meta = names.hints(unet, vae, clip, {}, False)
    size = write_streaming(a.out, tensors, a.seed, meta or None)
    print(f"{a.out}: {len(tensors)} tensors, {sum(int(np.prod(s)) for _, _, s in tensors)} parameters, {size} bytes")
    if a.taesd:
        tt = taesd_tensors(c=max(8, 64 // a.width_div))
        size = write_streaming(a.taesd, tt, a.seed + 1)
        print(f"{a.taesd}: {len(tt)} tensors, {size} bytes")


if __name__ == "__main__":
    main()
