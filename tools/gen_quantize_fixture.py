#!/usr/bin/env python3
"""gen_quantize_fixture.py — the input and the llama-quantize reference of
tests/test_quantize.sh.

  1. Writes tests/data/quantize_tiny.gguf: a tiny llama with float weights
     (about 370 KB). Metadata and tokenizer are tests/data/tiny_llama.gguf's
     (so petrel and llama.cpp load and run it), the tensors have its names
     and shapes (n_embd 64, n_ff 160, vocab 320, 3 layers, an untied
     output.weight) but fresh seeded random values, stored as F32, F16 or
     BF16 (all three sources quantize_tiny covers), with a few blocks made
     to hit the quantizers' edges: all zeros (scale 0), one value only,
     all equal, large and tiny magnitudes, exact .5 steps.
  2. Writes tests/data/quantize_q6k.gguf (about 60 KB): the same metadata
     with three F32 matrices of 256-value rows (output.weight,
     token_embd.weight, one attn_q), one of 48-value rows (no block fits:
     F16) and one 256 x 1 (1-D to ggml): under the 4/5-bit targets llama-quantize
     makes output.weight Q6_K only when its rows are whole 256-blocks,
     which the runnable model's 64-wide rows are not. Not a runnable
     model (the shapes do not match its hyperparameters; llama-quantize
     does not check them): for the Q6_K quantizer and that choice only.
  3. With --ref LLAMA_QUANTIZE: runs llama.cpp's llama-quantize on both
     for each type below and writes tests/data/quantize_tiny.ref.json: per
     input and type, the whole output file's size and sha256 and, in file
     order, each tensor's name, type and data sha256. The outputs
     themselves (~100-200 KB each) are not committed.

Run from the repository root (needs numpy and gguf-py; llama-quantize
from bench/build_llamacpp.sh llama-quantize):
    python3 tools/gen_quantize_fixture.py
    python3 tools/gen_quantize_fixture.py --ref "$(bench/build_llamacpp.sh llama-quantize)"
Never run in CI; its outputs are committed.
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "tests", "data")
SRC = os.path.join(DATA, "tiny_llama.gguf")
OUT = os.path.join(DATA, "quantize_tiny.gguf")
OUT_Q6K = os.path.join(DATA, "quantize_q6k.gguf")
REF = os.path.join(DATA, "quantize_tiny.ref.json")
SEED = 1414
TYPES = ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q6_K", "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "F16", "BF16"]

# Storage of the 2-D tensors; the rest are F16 (1-D ones F32, as converters write them).
STORE = {
    "token_embd.weight": T.F32,
    "blk.0.attn_q.weight": T.F32,
    "blk.0.attn_k.weight": T.BF16,
    "blk.2.ffn_up.weight": T.F32,
    "blk.1.attn_v.weight": T.BF16,
}


def edge_blocks(w, rng):
    """Overwrite a few 32-value blocks of the first rows with edge cases."""
    flat = w.reshape(-1)
    n = flat.size // 32
    cases = [
        np.zeros(32),                                   # d = 0
        np.r_[np.zeros(31), 0.75],                      # one value
        np.full(32, -0.25),                             # all equal (Q4_1 d = 0)
        rng.normal(0, 40.0, 32),                        # large
        rng.normal(0, 1e-6, 32),                        # tiny (half subnormal scales)
        np.arange(-16, 16) * 0.0625,                    # exact steps: .5 ties
        np.r_[np.arange(-8, 8), np.arange(-8, 8)] / 8.0,
    ]
    for i, c in enumerate(cases):
        if 2 * i + 1 < n:
            flat[(2 * i + 1) * 32:(2 * i + 2) * 32] = c


def copy_metadata(r, w):
    for name, f in r.fields.items():
        if name.startswith("GGUF.") or name in ("general.architecture", "general.file_type"):
            continue
        vt = f.types[0]
        sub = f.types[1] if vt == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(name, f.contents(), vt, sub_type=sub)
    w.add_file_type(0)


def finish(w, path):
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


def write_q6k_input():
    r = gguf.GGUFReader(SRC)
    w = gguf.GGUFWriter(OUT_Q6K, "llama")
    copy_metadata(r, w)
    rng = np.random.default_rng(SEED + 1)
    for name, rows in (("token_embd.weight", 16), ("blk.0.attn_q.weight", 8), ("output.weight", 24)):
        a = rng.normal(0, 0.08, (rows, 256))
        a[1, :16] = 0.0                   # a zero sub-block
        a[2, :] = 0.0                     # a zero super-block (d = 0)
        a[3, 5] = 3.0                     # one outlier
        edge_blocks(a[4:], rng)
        w.add_tensor(name, a.astype(np.float32), raw_dtype=T.F32)
    # shapes that take other paths: rows of 48 (no 32-block fits: F16),
    # a 256 x 1 matrix (ggml_n_dims 1: kept F32, written as 1-D)
    w.add_tensor("blk.0.ffn_down.weight", rng.normal(0, 0.08, (4, 48)).astype(np.float32), raw_dtype=T.F32)
    w.add_tensor("blk.0.attn_k.weight", rng.normal(0, 0.08, (1, 256)).astype(np.float32), raw_dtype=T.F32)
    finish(w, OUT_Q6K)


def write_input():
    r = gguf.GGUFReader(SRC)
    w = gguf.GGUFWriter(OUT, "llama")
    copy_metadata(r, w)
    rng = np.random.default_rng(SEED)
    for t in r.tensors:
        shape = tuple(int(x) for x in reversed(t.shape.tolist()))  # numpy order: rows first
        if len(shape) == 1:
            a = (1.0 + rng.normal(0, 0.1, shape)).astype(np.float32)
            w.add_tensor(t.name, a, raw_dtype=T.F32)
            continue
        a = rng.normal(0, 0.08, shape)
        edge_blocks(a, rng)
        st = STORE.get(t.name, T.F16)
        if st == T.F32:
            w.add_tensor(t.name, a.astype(np.float32), raw_dtype=T.F32)
        elif st == T.F16:
            w.add_tensor(t.name, a.astype(np.float16), raw_dtype=T.F16)
        else:
            raw = gguf.quants.quantize(a.astype(np.float32), T.BF16)
            w.add_tensor(t.name, raw, raw_shape=raw.shape, raw_dtype=T.BF16)
    finish(w, OUT)


def describe(path):
    r = gguf.GGUFReader(path)
    tensors = []
    for t in r.tensors:
        data = bytes(np.asarray(t.data).view(np.uint8).reshape(-1)[: t.n_bytes])
        tensors.append([t.name, t.tensor_type.name, hashlib.sha256(data).hexdigest()])
    with open(path, "rb") as f:
        blob = f.read()
    return {"file_size": len(blob), "file_sha256": hashlib.sha256(blob).hexdigest(), "tensors": tensors}


def write_ref(llama_quantize):
    ref = {"made_by": "llama-quantize of llama.cpp as vendored in llama-cpp-python 0.3.36 "
                      "(bench/build_llamacpp.sh), 1 thread, no importance matrix",
           "inputs": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for path, types in ((OUT, TYPES), (OUT_Q6K, ["Q4_0", "Q4_1", "Q5_0", "Q8_0", "Q6_K", "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M"])):
            name = os.path.basename(path)
            entry = ref["inputs"][name] = {"sha256": hashlib.sha256(open(path, "rb").read()).hexdigest(),
                                           "types": {}}
            for ty in types:
                out = os.path.join(tmp, ty + ".gguf")
                subprocess.run([llama_quantize, path, out, ty, "1"], check=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                entry["types"][ty] = describe(out)
                print(name, ty, entry["types"][ty]["file_size"], entry["types"][ty]["file_sha256"][:16])
    with open(REF, "w") as f:
        json.dump(ref, f, indent=1)
        f.write("\n")
    print(f"wrote {REF}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ref", metavar="LLAMA_QUANTIZE", help="also write the reference JSON with this binary")
    a = ap.parse_args()
    write_input()
    write_q6k_input()
    if a.ref:
        write_ref(a.ref)


if __name__ == "__main__":
    sys.exit(main())
