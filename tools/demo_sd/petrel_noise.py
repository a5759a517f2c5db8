"""petrel_noise.py — the initial latent petrel draws for a seed, in numpy.

A copy in numpy of engine/diffusion/sd_rng.c (its header states the
scheme): Philox4x32-10 keyed by the 64-bit seed, counter {block low, block
high, stream low, stream high}, each block's outputs (r0, r1), (r2, r3) turned
into two N(0,1) values by Box-Muller in double and rounded to float once;
elements in NCHW order. The evaluation gives these latents to diffusers, so
diffusers and `petrel imagine -s SEED` start from the same noise and the
model and the engine are judged apart.
"""
import numpy as np

M0, M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
W0, W1 = 0x9E3779B9, 0xBB67AE85
MASK = np.uint64(0xFFFFFFFF)


def philox4x32_10(c0, c1, c2, c3, k0, k1):
    """Vectorised over counters (uint32 arrays); key scalars. Returns r0..r3 (uint32 arrays)."""
    c = [np.asarray(x, np.uint64) for x in (c0, c1, c2, c3)]
    k0, k1 = int(k0), int(k1)
    for r in range(10):
        if r > 0:
            k0 = (k0 + W0) & 0xFFFFFFFF
            k1 = (k1 + W1) & 0xFFFFFFFF
        p0 = M0 * c[0]
        p1 = M1 * c[2]
        c = [((p1 >> np.uint64(32)) ^ c[1] ^ np.uint64(k0)) & MASK, p1 & MASK,
             ((p0 >> np.uint64(32)) ^ c[3] ^ np.uint64(k1)) & MASK, p0 & MASK]
    return c


def normal(seed, n, stream=0, first=0):
    """Elements first .. first+n-1 of `stream` of `seed` as float32 (sd_rng_normal)."""
    b0, b1 = first // 4, (first + n + 3) // 4
    b = np.arange(b0, b1, dtype=np.uint64)
    r = philox4x32_10(b & MASK, b >> np.uint64(32), np.full_like(b, stream & 0xFFFFFFFF),
                      np.full_like(b, stream >> 32), seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF)
    out = np.empty((len(b), 4), np.float64)
    for i in (0, 2):
        u1 = (r[i].astype(np.float64) + 1.0) / 4294967296.0
        u2 = r[i + 1].astype(np.float64) / 4294967296.0
        rad = np.sqrt(-2.0 * np.log(u1))
        out[:, i] = rad * np.cos(2.0 * np.pi * u2)
        out[:, i + 1] = rad * np.sin(2.0 * np.pi * u2)
    flat = out.reshape(-1)[first - 4 * b0:first - 4 * b0 + n]
    return flat.astype(np.float32)


def latent(seed, height=256, width=256, channels=4):
    """[1, C, H/8, W/8] float32: the unscaled initial latent of `petrel imagine -s seed`."""
    h, w = height // 8, width // 8
    return normal(seed, channels * h * w).reshape(1, channels, h, w)
