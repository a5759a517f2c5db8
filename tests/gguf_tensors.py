#!/usr/bin/env python3
"""gguf_tensors.py — list a GGUF's tensors (standard library only), or
check them against tests/data/quantize_tiny.ref.json.

    gguf_tensors.py FILE                 name, type, data sha256 per line
    gguf_tensors.py FILE --ref JSON INPUT TYPE
                                         check FILE against the reference
                                         of INPUT (a file name in JSON) to
                                         TYPE: every tensor's type and
                                         data bytes, in the same order, and
                                         the whole file; prints the first
                                         differences, exit 1 if any

Used by tests/test_quantize.sh and bench/quantize_vs_llamacpp.sh. The GGUF
layout is read by tests/gguf_read.py.
"""

import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_read import read  # noqa: E402


def tensors(path):
    """[(name, type name, sha256 of the data)], sha256 of the file, size."""
    _, ts = read(path)
    blob = open(path, "rb").read()
    return [(t["name"], t["type"], t["sha256"]) for t in ts], hashlib.sha256(blob).hexdigest(), len(blob)


def main(argv):
    if len(argv) == 2:
        for name, t, h in tensors(argv[1])[0]:
            print(name, t, h)
        return 0
    if len(argv) != 6 or argv[2] != "--ref":
        print(__doc__, file=sys.stderr)
        return 2
    ref = json.load(open(argv[3]))["inputs"][argv[4]]["types"][argv[5]]
    got, file_sha, size = tensors(argv[1])
    want = [tuple(x) for x in ref["tensors"]]
    bad = 0
    for i in range(max(len(got), len(want))):
        g = got[i] if i < len(got) else None
        w = want[i] if i < len(want) else None
        if g != w:
            bad += 1
            if bad <= 5:
                what = "data differ" if g and w and g[:2] == w[:2] else "differs"
                print(f"tensor {i}: {what}: petrel {g[:2] if g else None}, llama-quantize {w[:2] if w else None}")
    same_file = file_sha == ref["file_sha256"] and size == ref["file_size"]
    print(f"{argv[4]} -> {argv[5]}: {len(got) - bad} of {len(want)} tensors identical (name, type, data bytes); "
          f"whole file {'identical' if same_file else 'DIFFERS'} ({size} vs {ref['file_size']} bytes)")
    return 1 if bad or not same_file else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
