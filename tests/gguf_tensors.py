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
layout is engine/gguf.h's; only what the tensor table needs is decoded.
"""

import hashlib
import json
import struct
import sys

# GGML type id -> (name, values per block, bytes per block)
TYPES = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 10: ("Q2_K", 256, 84),
    11: ("Q3_K", 256, 110), 12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176),
    14: ("Q6_K", 256, 210), 30: ("BF16", 1, 2),
}
SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


class Reader:
    def __init__(self, blob):
        self.b, self.p = blob, 0

    def take(self, fmt):
        v = struct.unpack_from("<" + fmt, self.b, self.p)
        self.p += struct.calcsize("<" + fmt)
        return v[0]

    def string(self):
        n = self.take("Q")
        s = self.b[self.p:self.p + n]
        self.p += n
        return s.decode("utf-8", "replace")

    def value(self, t):
        if t == 8:
            return self.string()
        if t == 9:
            et, n = self.take("I"), self.take("Q")
            if et in SCALAR:
                self.p += SCALAR[et] * n
                return None
            for _ in range(n):
                self.value(et)
            return None
        v = struct.unpack_from("<" + {1: "B", 2: "H", 4: "I", 8: "Q"}[SCALAR[t]], self.b, self.p)[0]
        self.p += SCALAR[t]
        return v


def tensors(path):
    """[(name, type name, sha256 of the data)], sha256 of the file, size."""
    blob = open(path, "rb").read()
    r = Reader(blob)
    if blob[:4] != b"GGUF":
        raise SystemExit(f"{path}: not a GGUF file")
    r.p = 4
    r.take("I")
    n_t, n_kv = r.take("Q"), r.take("Q")
    align = 32
    for _ in range(n_kv):
        k, t = r.string(), r.take("I")
        v = r.value(t)
        if k == "general.alignment":
            align = v
    infos = []
    for _ in range(n_t):
        name, nd = r.string(), r.take("I")
        ne = [r.take("Q") for _ in range(nd)]
        t, off = r.take("I"), r.take("Q")
        infos.append((name, ne, t, off))
    data = (r.p + align - 1) // align * align
    out = []
    for name, ne, t, off in infos:
        tn, be, bb = TYPES[t]
        n = 1
        for x in ne:
            n *= x
        size = n // be * bb
        out.append((name, tn, hashlib.sha256(blob[data + off:data + off + size]).hexdigest()))
    return out, hashlib.sha256(blob).hexdigest(), len(blob)


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
