#!/usr/bin/env python3
"""Rewrite a small GGUF with terminal escape sequences in its strings.

usage: make_hostile_gguf.py IN.gguf OUT.gguf

For tests/test_hostile_cli.sh: general.name, one extra metadata key, its
string value and one extra tensor name hold ESC [2J (clear screen) and an
OSC 0 title (ESC ] 0 ; ... BEL). The extra tensor is a one-element F32 view
of the first tensor's data, so the model still loads. The header is parsed
and re-serialized (strings change length); the tensor data section is copied
unchanged, starting at the next aligned offset. Standard library only.
"""
import struct
import sys

T_STRING, T_ARRAY = 8, 9
SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "B", 10: "Q", 11: "q", 12: "d"}
EVIL = "\x1b[2J\x1b]0;pwned\x07"


class Reader:
    def __init__(self, data):
        self.d, self.p = data, 0

    def take(self, fmt):
        v = struct.unpack_from("<" + fmt, self.d, self.p)
        self.p += struct.calcsize("<" + fmt)
        return v[0]

    def raw(self, n):
        self.p += n
        return self.d[self.p - n:self.p]

    def string(self):
        return self.raw(self.take("Q"))

    def value(self, t):
        """The raw bytes of one value of type t (type tag not included)."""
        start = self.p
        if t == T_STRING:
            self.string()
        elif t == T_ARRAY:
            et, n = self.take("I"), self.take("Q")
            for _ in range(n):
                self.value(et)
        else:
            self.take(SCALAR[t])
        return self.d[start:self.p]


def gguf_str(b):
    return struct.pack("<Q", len(b)) + b


def main():
    data = open(sys.argv[1], "rb").read()
    r = Reader(data)
    assert r.raw(4) == b"GGUF"
    version, n_tensors, n_kv = r.take("I"), r.take("Q"), r.take("Q")
    kvs, align = [], 32
    for _ in range(n_kv):
        key = r.string()
        t = r.take("I")
        val = r.value(t)
        if key == b"general.alignment":
            align = struct.unpack("<I", val)[0]
        if key == b"general.name":
            val = gguf_str(("evil" + EVIL + "name").encode())
        kvs.append((key, t, val))
    if not any(k == b"general.name" for k, _, _ in kvs):
        kvs.append((b"general.name", T_STRING, gguf_str(("evil" + EVIL + "name").encode())))
    kvs.append((("evil" + EVIL + ".key").encode(), T_STRING, gguf_str(("value" + EVIL).encode())))
    tensors = []
    for _ in range(n_tensors):
        name = r.string()
        nd = r.take("I")
        dims = [r.take("Q") for _ in range(nd)]
        tensors.append((name, dims, r.take("I"), r.take("Q")))
    data_start = (r.p + align - 1) // align * align
    tensors.append((("evil" + EVIL + ".weight").encode(), [1], 0, tensors[0][3]))

    out = bytearray(b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs)))
    for key, t, val in kvs:
        out += gguf_str(key) + struct.pack("<I", t) + val
    for name, dims, t, off in tensors:
        out += gguf_str(name) + struct.pack("<I", len(dims))
        out += b"".join(struct.pack("<Q", d) for d in dims) + struct.pack("<IQ", t, off)
    out += b"\0" * (-len(out) % align)
    out += data[data_start:]
    open(sys.argv[2], "wb").write(out)


if __name__ == "__main__":
    main()
