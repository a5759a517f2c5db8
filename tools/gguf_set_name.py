#!/usr/bin/env python3
"""gguf_set_name.py IN OUT NAME -- copy a GGUF file with general.name set
to NAME (a Python string literal's escapes are decoded, e.g. '\\x1b[2J'),
for tests of how petrel shows hostile metadata. Standard library only.

The tensor data is copied unchanged: tensor offsets count from the start of
the data section, which stays aligned to general.alignment (32 when absent)
after the longer or shorter header.
"""
import struct
import sys

SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
STRING, ARRAY = 8, 9


def read_str(d, at):
    (n,) = struct.unpack_from("<Q", d, at)
    return d[at + 8:at + 8 + n], at + 8 + n


def skip_value(d, at, vtype):
    """Offset just past a value of vtype at d[at:], and the value (scalars, strings)."""
    if vtype == STRING:
        return read_str(d, at)[::-1]
    if vtype == ARRAY:
        etype, n = struct.unpack_from("<IQ", d, at)
        at += 12
        for _ in range(n):
            at, _v = skip_value(d, at, etype)
        return at, None
    fmt = "<" + SCALARS[vtype]
    return at + struct.calcsize(fmt), struct.unpack_from(fmt, d, at)[0]


def set_name(d, name):
    """The file d with general.name replaced by name (bytes)."""
    magic, version, n_tensors, n_kv = struct.unpack_from("<4sIQQ", d, 0)
    if magic != b"GGUF" or version < 2:
        raise SystemExit("not a GGUF v2+ file")
    out = bytearray(d[:24])
    at, align, found = 24, 32, False
    for _ in range(n_kv):
        key, after_key = read_str(d, at)
        (vtype,) = struct.unpack_from("<I", d, after_key)
        end, value = skip_value(d, after_key + 4, vtype)
        if key == b"general.name" and vtype == STRING:
            out += d[at:after_key + 4] + struct.pack("<Q", len(name)) + name
            found = True
        else:
            out += d[at:end]
        if key == b"general.alignment":
            align = value
        at = end
    if not found:
        raise SystemExit("no general.name string in the file")
    infos_start = at
    for _ in range(n_tensors):
        _name, at = read_str(d, at)
        (n_dims,) = struct.unpack_from("<I", d, at)
        at += 4 + 8 * n_dims + 4 + 8
    out += d[infos_start:at]                     # tensor infos, unchanged
    data_start = (at + align - 1) // align * align
    out += b"\0" * ((-len(out)) % align)         # the data section stays aligned
    return bytes(out) + d[data_start:]


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    d = open(sys.argv[1], "rb").read()
    name = sys.argv[3].encode("utf-8").decode("unicode_escape").encode("latin-1")
    with open(sys.argv[2], "wb") as f:
        f.write(set_name(d, name))


if __name__ == "__main__":
    main()
