"""gguf_read.py — a GGUF file's metadata and tensor table, standard
library only (the layout is engine/gguf.h's), for the tests' checks of
files petrel writes (tests/gguf_tensors.py, tests/hf_ref_check.py).

    kv, tensors = read(path)
    kv:      [(key, value type name, value)], in file order; an array's
             value is (element type name, [values])
    tensors: [{"name", "ne" (ggml order), "type", "sha256" of the data}]
    read(path, with_data=True) adds "data": a memoryview of the bytes
"""

import hashlib
import struct

# GGML type id -> (name, values per block, bytes per block)
TYPES = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 10: ("Q2_K", 256, 84),
    11: ("Q3_K", 256, 110), 12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176),
    14: ("Q6_K", 256, 210), 30: ("BF16", 1, 2),
}
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


def read(path, with_data=False):
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
        view = memoryview(blob)[data + off:data + off + size]
        tensors.append({"name": name, "ne": ne, "type": tn, "sha256": hashlib.sha256(view).hexdigest()})
        if with_data:
            tensors[-1]["data"] = view
    return kv, tensors
