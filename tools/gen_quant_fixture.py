#!/usr/bin/env python3
"""gen_quant_fixture.py — reference data for tests/test_quant.c, from gguf-py.

Writes tests/data/quant_ref.bin (about 200 KB). gguf-py (gguf.quants) is the
independent reference: rows of the types it can quantize are quantized by it
(F16 / BF16 / Q4_0 / Q4_1 / Q5_0 / Q5_1 / Q8_0); for every block type there
is also a row of random block bytes with sane half scales (finite, modest
magnitude, plus one subnormal and one -0 scale), which is the only kind of
row for the K-quants gguf-py can merely dequantize. Every row is then
dequantized by gguf-py, and its dot product with a random vector x is taken
in float64.

Format (little-endian, no padding):

    char magic[8] = "PTQREF01"
    u32  n_types                      types gguf-py knows with id < 40
    n_types x { u32 id; u32 block_elems; u32 block_bytes; char name[12] }
                                      GGML_QUANT_SIZES, name NUL-padded
    u32  n_conv
    n_conv x { u32 f32_bits; u32 fp16_bits }
                                      numpy float32 -> float16 (ties to even)
    u32  n_rows
    n_rows x {
        u32 type; u32 n; u32 nbytes
        u8  raw[nbytes]               the row as stored in a GGUF file
        f32 deq[n]                    gguf-py's dequantization of raw
        f32 x[n]                      a random vector
        f64 dot                       sum(deq[i] * x[i]) in float64
    }

Run from the repository root: python3 tools/gen_quant_fixture.py
Never run in CI; its output is committed.
"""

import struct
import sys
import warnings

import numpy as np
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType as T
from gguf import quants

OUT = "tests/data/quant_ref.bin"
rng = np.random.default_rng(20240611)

# Offsets of the fp16 scale fields inside each block (see
# kernels/cpu/quant_blocks.h); all other bytes of a random block are codes
# or packed sub-scales, for which any byte value is valid.
HALF_FIELDS = {
    T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2], T.Q8_0: [0],
    T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208],
}


def sane_halves(count, lo, hi):
    """Random fp16 bit patterns of magnitude in [lo, hi), random sign."""
    mag = rng.uniform(lo, hi, count)
    sign = rng.choice([-1.0, 1.0], count)
    return (mag * sign).astype(np.float16).view(np.uint16)


def random_blocks(qtype, n_blocks):
    """Random block bytes with every half scale sane. The first block's
    first scale is a subnormal half, the second block's (if any) is -0."""
    _, size = GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, (n_blocks, size), dtype=np.uint8)
    # K-quant super scales multiply 6-/8-bit sub-scales: keep them smaller.
    lo, hi = (1e-4, 0.01) if qtype in (T.Q4_K, T.Q5_K, T.Q6_K) else (1e-3, 0.2)
    for off in HALF_FIELDS[qtype]:
        h = sane_halves(n_blocks, lo, hi)
        raw[:, off] = (h & 0xFF).astype(np.uint8)
        raw[:, off + 1] = (h >> 8).astype(np.uint8)
    first = HALF_FIELDS[qtype][0]
    raw[0, first:first + 2] = [0x23, 0x01]  # 0x0123: subnormal half
    if n_blocks > 1:
        raw[1, first:first + 2] = [0x00, 0x80]  # -0
    return raw.reshape(-1)


def row_record(qtype, n, raw):
    raw = np.ascontiguousarray(raw, dtype=np.uint8)
    block, size = GGML_QUANT_SIZES[qtype]
    assert n % block == 0 and raw.size == n // block * size
    deq = quants.dequantize(raw, qtype).astype(np.float32).reshape(-1)
    assert deq.size == n and np.all(np.isfinite(deq))
    x = rng.standard_normal(n).astype(np.float32)
    dot = float(np.dot(deq.astype(np.float64), x.astype(np.float64)))
    return struct.pack("<III", int(qtype), n, raw.size) + raw.tobytes() + \
        deq.tobytes() + x.tobytes() + struct.pack("<d", dot)


def rows():
    out = []
    # Plain types: odd lengths, one crossing the 256-value group boundary.
    for n in (1, 7, 33, 300):
        out.append(row_record(T.F32, n, rng.standard_normal(n).astype(np.float32).view(np.uint8)))
    for n in (1, 5, 259, 513):
        v = rng.standard_normal(n).astype(np.float32) * 4
        out.append(row_record(T.F16, n, quants.quantize(v, T.F16).view(np.uint8)))
    for n in (1, 3, 260):
        v = rng.standard_normal(n).astype(np.float32) * 100
        out.append(row_record(T.BF16, n, quants.quantize(v, T.BF16).view(np.uint8)))
    # Legacy types: gguf-py quantizes (1 block, 3 blocks, 25 blocks = three
    # full 256-value groups and a partial one), plus a random-bytes row.
    for qt in (T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0):
        for n in (32, 96, 800):
            v = rng.standard_normal(n).astype(np.float32) * rng.uniform(0.1, 3)
            if n == 96:
                v[:32] = 0.0  # an all-zero block: d == 0
            out.append(row_record(qt, n, quants.quantize(v, qt)))
        out.append(row_record(qt, 288, random_blocks(qt, 288 // 32)))
    # K-quants: gguf-py can only dequantize them.
    for qt in (T.Q4_K, T.Q5_K, T.Q6_K):
        for nb in (1, 3, 5):
            out.append(row_record(qt, 256 * nb, random_blocks(qt, nb)))
    return out


def conversions():
    """(f32 bits, numpy fp16 bits) pairs around every rounding boundary."""
    f = []
    u = lambda b: np.array([b], dtype=np.uint32).view(np.float32)[0]
    specials = [0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 65504.0, 65520.0, 65536.0,
                -65520.0, 1e10, 3.4e38, 2.0 ** -14, 2.0 ** -24, 2.0 ** -25,
                1.5 * 2.0 ** -25, 1.5 * 2.0 ** -24, 2.5 * 2.0 ** -24, 1e-30,
                1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11, 2047.5, 2049.0, 4097.0]
    f += [np.float32(s) for s in specials]
    for b in (0x7fc00000, 0xffc00000, 0x7f800001, 0x7fa00000, 0xff800001,  # nans
              0x477fefff, 0x477ff000, 0x477ff001,   # around the overflow tie
              0x387fffff, 0x38800000, 0x387fe000, 0x387ff000,  # around 2^-14
              0x33000000, 0x33000001, 0x32ffffff,   # around half the min subnormal
              0x00000001, 0x807fffff):              # float subnormals
        f.append(u(b))
    # Exact midpoints between neighbouring halves, and one float ulp either
    # side, for random finite halves (normals and subnormals).
    h = rng.integers(0, 0x7bff, 120, dtype=np.uint16)
    h = np.concatenate([h, rng.integers(0, 0x3ff, 40, dtype=np.uint16)])
    lo = h.view(np.float16).astype(np.float64)
    hi = (h + 1).view(np.float16).astype(np.float64)
    mid = ((lo + hi) / 2).astype(np.float32)  # exact: halves have 11 bits
    sign = rng.choice([-1, 1], mid.size).astype(np.float32)
    for m, s in zip(mid, sign):
        f += [m * s, np.nextafter(m, np.float32(0)) * s, np.nextafter(m, np.float32(np.inf)) * s]
    # Random bit patterns over the whole float range.
    f += list(rng.integers(0, 2 ** 32, 200, dtype=np.uint64).astype(np.uint32).view(np.float32))
    f32 = np.array(f, dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f16 = f32.astype(np.float16)
    return list(zip(f32.view(np.uint32).tolist(), f16.view(np.uint16).tolist()))


def main():
    types = [(t, *GGML_QUANT_SIZES[t]) for t in T if int(t) < 40 and t in GGML_QUANT_SIZES]
    conv = conversions()
    recs = rows()
    with open(OUT, "wb") as fp:
        fp.write(b"PTQREF01")
        fp.write(struct.pack("<I", len(types)))
        for t, be, bb in types:
            fp.write(struct.pack("<III", int(t), be, bb) + t.name.encode().ljust(12, b"\0"))
        fp.write(struct.pack("<I", len(conv)))
        for a, b in conv:
            fp.write(struct.pack("<II", a, b))
        fp.write(struct.pack("<I", len(recs)))
        for r in recs:
            fp.write(r)
    print(f"{OUT}: {len(types)} types, {len(conv)} conversions, {len(recs)} rows", file=sys.stderr)


if __name__ == "__main__":
    main()
