#!/usr/bin/env python3
"""hf_ref_check.py — compare a GGUF written by `petrel convert` with the
reference of llama.cpp's convert_hf_to_gguf.py on the same folder
(tests/data/hf-tiny/<family>/ref-<outtype>.json, made by
tools/gen_hf_tiny.py). Standard library only.

    hf_ref_check.py FILE.gguf REF.json

Checked: the same metadata keys in the same order, each with the same
type and value (strings, scalars, arrays element by element; floats as
the float32 bits read back); the same tensors in the same order, each
with the same name, shape (ne), type and sha256 of its data bytes; and,
when the reference records it (file_sha256), the whole file byte for byte.
Prints every difference (at most 20) and a summary; exit 1 if any.
"""

import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gguf_read import read  # noqa: E402,F401 (test_convert.sh calls hf_ref_check.read)


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    kv, tensors = read(argv[1])
    ref = json.load(open(argv[2], encoding="utf-8"))
    bad = []
    want_kv = [(e["key"], e["type"], (e["elem_type"], e["value"]) if e["type"] == "ARRAY" else e["value"])
               for e in ref["kv"]]
    got_keys, want_keys = [k for k, _, _ in kv], [k for k, _, _ in want_kv]
    if got_keys != want_keys:
        bad.append(f"keys differ: only petrel {sorted(set(got_keys) - set(want_keys))}, only the reference "
                   f"{sorted(set(want_keys) - set(got_keys))}, order same: {sorted(got_keys) == sorted(want_keys)}")
    want = {k: (t, v) for k, t, v in want_kv}
    for k, t, v in kv:
        if k in want and want[k] != (t, v):
            wt, wv = want[k]
            show = lambda x: repr(x)[:120]  # noqa: E731
            bad.append(f"key {k}: petrel {t} {show(v)}, reference {wt} {show(wv)}")
    if [t["name"] for t in tensors] != [t["name"] for t in ref["tensors"]]:
        bad.append(f"tensor names/order differ: petrel {[t['name'] for t in tensors][:6]}..., "
                   f"reference {[t['name'] for t in ref['tensors']][:6]}...")
    rt = {t["name"]: t for t in ref["tensors"]}
    for t in tensors:
        w = rt.get(t["name"])
        if w and w != t:
            diff = [f for f in ("ne", "type", "sha256") if w[f] != t[f]]
            bad.append(f"tensor {t['name']}: {', '.join(diff)} differ: petrel {[t[f] for f in diff]}, "
                       f"reference {[w[f] for f in diff]}")
    if "file_sha256" in ref:
        blob = open(argv[1], "rb").read()
        if hashlib.sha256(blob).hexdigest() != ref["file_sha256"] or len(blob) != ref["file_size"]:
            bad.append(f"the whole file differs ({len(blob)} bytes, reference {ref['file_size']})")
    for line in bad[:20]:
        print(line)
    print(f"{argv[1]}: {len(kv)} keys, {len(tensors)} tensors; "
          f"{'identical to' if not bad else f'{len(bad)} differences from'} the reference")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
