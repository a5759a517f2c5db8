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
import struct
import sys

TYPES = {0: ("F32", 1, 4), 1: ("F16", 1, 2), 8: ("Q8_0", 32, 34), 30: ("BF16", 1, 2),
         2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20), 6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24),
         12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210)}
VTYPES = {0: "UINT8", 1: "INT8", 2: "UINT16", 3: "INT16", 4: "UINT32", 5: "INT32", 6: "FLOAT32", 7: "BOOL",
          8: "STRING", 9: "ARRAY", 10: "UINT64", 11: "INT64", 12: "FLOAT64"}
FMT = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


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
        return s.decode("utf-8", "surrogateescape")

    def value(self, t):
        if t == 8:
            return self.string()
        if t == 9:
            et, n = self.take("I"), self.take("Q")
            return VTYPES[et], [self.value(et) for _ in range(n)]
        return self.take(FMT[t])


def read(path):
    blob = open(path, "rb").read()
    if blob[:4] != b"GGUF":
        raise SystemExit(f"{path}: not a GGUF file")
    r = Reader(blob)
    r.p = 4
    r.take("I")
    n_t, n_kv = r.take("Q"), r.take("Q")
    kv = []
    align = 32
    for _ in range(n_kv):
        k, t = r.string(), r.take("I")
        v = r.value(t)
        if k == "general.alignment":
            align = v
        kv.append((k, VTYPES[t], v))
    infos = []
    for _ in range(n_t):
        name, nd = r.string(), r.take("I")
        ne = [r.take("Q") for _ in range(nd)]
        t, off = r.take("I"), r.take("Q")
        infos.append((name, ne, t, off))
    data = (r.p + align - 1) // align * align
    tensors = []
    for name, ne, t, off in infos:
        tn, be, bb = TYPES[t]
        n = 1
        for x in ne:
            n *= x
        size = n // be * bb
        tensors.append({"name": name, "ne": ne, "type": tn,
                        "sha256": hashlib.sha256(blob[data + off:data + off + size]).hexdigest()})
    return kv, tensors


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
