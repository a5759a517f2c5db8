"""lora_merge_compare.py — test_lora_llamacpp's check of `petrel
export-lora` against llama.cpp's llama-export-lora (standard library only):

    python3 tests/lora_merge_compare.py LLAMA_OUT.gguf PETREL_OUT.gguf

The two files must have the same metadata (keys, types and values, in
order) and the same tensor table (names, shapes, types, in order); each
tensor's data equal, or for merged tensors (F32 or F16: the merge is a sum
in float whose order differs between ggml's product and petrel's) within
F32_TOL relative (F32) or one F16 step (F16). Prints what differed and the
largest differences; exit 1 on any mismatch.
"""
import struct
import sys

import gguf_read

F32_TOL = 1e-5  # relative to max(1, |value|): float sums of rank 4..16 terms in another order


def main():
    a_kv, a_t = gguf_read.read(sys.argv[1], with_data=True)
    b_kv, b_t = gguf_read.read(sys.argv[2], with_data=True)
    bad = []
    if a_kv != b_kv:
        bad.append(f"metadata differs: {[k for k, _, _ in a_kv][-3:]} vs {[k for k, _, _ in b_kv][-3:]}")
    if [(t["name"], t["ne"], t["type"]) for t in a_t] != [(t["name"], t["ne"], t["type"]) for t in b_t]:
        bad.append("tensor tables differ")
    worst = {"F32": 0.0, "F16": 0.0}
    merged = 0
    for ta, tb in zip(a_t, b_t):
        if ta["sha256"] == tb["sha256"]:
            continue
        if ta["type"] not in ("F32", "F16") or ta["type"] != tb["type"]:
            bad.append(f"{ta['name']}: {ta['type']} data differs")
            continue
        merged += 1
        fmt = "f" if ta["type"] == "F32" else "e"
        n = len(ta["data"]) // (4 if fmt == "f" else 2)
        va = struct.unpack(f"<{n}{fmt}", ta["data"])
        vb = struct.unpack(f"<{n}{fmt}", tb["data"])
        for x, y in zip(va, vb):
            if fmt == "f":
                d = abs(x - y) / max(1.0, abs(x))
                ok = d <= F32_TOL
            else:
                # one F16 step at x's magnitude (2^-10 relative, 2^-24 near 0)
                d = abs(x - y) / max(abs(x) * 2.0 ** -10, 2.0 ** -24)
                ok = d <= 1.0
            worst[ta["type"]] = max(worst[ta["type"]], d)
            if not ok:
                bad.append(f"{ta['name']}: {x} vs {y}")
                break
    print(f"{len(a_t)} tensors, {merged} merged differ in bytes; largest difference: F32 {worst['F32']:.3g} "
          f"(relative), F16 {worst['F16']:.3g} (in F16 steps)")
    for b in bad[:10]:
        print(b)
    sys.exit(1 if bad else 0)


main()
