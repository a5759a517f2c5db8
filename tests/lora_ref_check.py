#!/usr/bin/env python3
"""lora_ref_check.py — compare a LoRA adapter GGUF written by `petrel
convert` with the one llama.cpp's convert_lora_to_gguf.py wrote from the
same PEFT folder (tests/data/lora/tiny_llama_a.gguf, made by
tools/gen_lora_fixture.py). Standard library only.

    lora_ref_check.py FILE.gguf REF.gguf

Checked: every metadata key of FILE is in REF with the same type and value
(floats as their float32 bits), in the same relative order; REF's keys
that FILE lacks are only the ones gguf-py guesses from the adapter's model
card and folder name (general.name, general.base_model.*, general.tags);
the same tensors in the same order, each with the same name, shape (ne),
type and sha256 of its data bytes. Prints every difference and a summary;
exit 1 if any.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gguf_read import read  # noqa: E402

MODEL_CARD = ("general.name", "general.base_model.", "general.tags")


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    kv, tensors = read(argv[1])
    ref_kv, ref_tensors = read(argv[2])
    diffs = []
    ref = {k: (t, v) for k, t, v in ref_kv}
    order = [k for k, _, _ in ref_kv]
    last = -1
    for k, t, v in kv:
        if k not in ref:
            diffs.append(f"key {k} is not in the reference")
            continue
        if ref[k] != (t, v):
            diffs.append(f"key {k}: {t} {v!r}, reference {ref[k][0]} {ref[k][1]!r}")
        if order.index(k) < last:
            diffs.append(f"key {k} is out of the reference's order")
        last = max(last, order.index(k))
    ours = {k for k, _, _ in kv}
    for k in order:
        if k not in ours and not k.startswith(MODEL_CARD):
            diffs.append(f"reference key {k} is missing")
    if len(tensors) != len(ref_tensors):
        diffs.append(f"{len(tensors)} tensors, reference {len(ref_tensors)}")
    for a, b in zip(tensors, ref_tensors):
        if a != b:
            diffs.append(f"tensor {a['name']} {a['ne']} {a['type']}: reference {b['name']} {b['ne']} {b['type']}"
                         + (" (data differ)" if a["sha256"] != b["sha256"] else ""))
    for d in diffs[:20]:
        print("DIFF:", d)
    print(f"{len(kv)} keys, {len(tensors)} tensors checked; {len(diffs)} differences")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
