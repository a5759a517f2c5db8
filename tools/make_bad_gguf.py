#!/usr/bin/env python3
"""Write corrupted copies of a GGUF model, for tests/test_bad_input.sh.

usage: make_bad_gguf.py MODEL.gguf OUTDIR

Standard library only (it runs in CI). The header is walked with struct to
find the byte positions to patch; nothing here depends on gguf-py.

Each case is written as OUTDIR/NAME (one line "NAME" per case on stdout):

  truncated_half.gguf       the first half of the file
  truncated_100.gguf        the first 100 bytes
  bad_magic.gguf            magic "GGUF" replaced by "GGML"
  absurd_tensor_count.gguf  n_tensors = 2^62
  tensor_offset_outside.gguf  the first tensor's offset points 1 TiB past
                            the data start (still aligned)
  unknown_tensor_type.gguf  the first tensor's type id is 99
  unknown_arch.gguf         general.architecture "llama" -> "llamx"
                            (same length, so every byte position holds)
  missing_tensor.gguf       "blk.0.attn_q.weight" -> "blk.0.attn_z.weight"
  empty.gguf                0 bytes
  not_gguf.txt              a short text file

Tensor data is never read by any of these cases (each fails while the
header or the model's metadata is checked), so copies keep only the header
bytes and leave the rest of the file as a hole of zeros: same size, same
layout, but no 100 MB of disk per case.
"""
import os
import struct
import sys

# GGUF metadata value types and the byte size of the scalar ones.
T_STRING, T_ARRAY = 8, 9
SCALAR_SIZE = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


class Reader:
    """A little-endian cursor over the header bytes."""

    def __init__(self, buf):
        self.buf, self.pos = buf, 0

    def take(self, fmt):
        (v,) = struct.unpack_from("<" + fmt, self.buf, self.pos)
        self.pos += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.take("Q")
        start = self.pos
        self.pos += n
        if self.pos > len(self.buf):
            raise ValueError("string runs past the bytes read")
        return start, bytes(self.buf[start:self.pos])

    def skip_value(self, t):
        if t == T_STRING:
            self.string()
        elif t == T_ARRAY:
            et, n = self.take("I"), self.take("Q")
            if et in SCALAR_SIZE:
                self.pos += n * SCALAR_SIZE[et]
            else:
                for _ in range(n):
                    self.skip_value(et)
        elif t in SCALAR_SIZE:
            self.pos += SCALAR_SIZE[t]
        else:
            raise ValueError(f"unknown value type {t}")


def parse_layout(path):
    """Byte positions of the fields the cases patch, and the header size."""
    # The header (metadata + tensor infos) of the models we use is a few MB;
    # read 64 MB at most and fail clearly if that is not enough.
    with open(path, "rb") as f:
        buf = f.read(64 << 20)
    r = Reader(buf)
    if buf[:4] != b"GGUF":
        raise ValueError(f"{path} is not a GGUF file")
    r.pos = 4
    version = r.take("I")
    if version not in (2, 3):
        raise ValueError(f"{path}: GGUF version {version} not handled")
    n_tensors_pos = r.pos
    n_tensors, n_kv = r.take("Q"), r.take("Q")
    lay = {"n_tensors_pos": n_tensors_pos, "alignment": 32, "tensors": {}}
    for _ in range(n_kv):
        _, key = r.string()
        t = r.take("I")
        if key == b"general.architecture" and t == T_STRING:
            lay["arch_pos"], lay["arch"] = r.string()
        elif key == b"general.alignment" and t == 4:
            lay["alignment"] = r.take("I")
        else:
            r.skip_value(t)
    for i in range(n_tensors):
        name_pos, name = r.string()
        n_dims = r.take("I")
        r.pos += 8 * n_dims
        type_pos = r.pos
        r.pos += 4
        offset_pos = r.pos
        r.pos += 8
        lay["tensors"][name] = (i, name_pos, type_pos, offset_pos)
        if i == 0:
            lay["first_tensor"] = name
    a = lay["alignment"]
    lay["data_offset"] = (r.pos + a - 1) // a * a
    if r.pos > len(buf):
        raise ValueError(f"{path}: header larger than the bytes read")
    lay["header"] = bytes(buf[: min(lay["data_offset"], len(buf))])
    return lay


def write_case(outdir, name, header, size, patches=()):
    """OUTDIR/name: header bytes with patches [(pos, bytes)] applied, then
    a hole of zeros up to size bytes (header is cut when size is smaller)."""
    data = bytearray(header[:size])
    for pos, b in patches:
        if pos + len(b) > len(data):
            raise ValueError(f"{name}: patch at {pos} outside the header copy")
        data[pos : pos + len(b)] = b
    path = os.path.join(outdir, name)
    with open(path, "wb") as f:
        f.write(data)
        f.truncate(size)
    print(name)


def main(argv):
    if len(argv) != 3:
        print("usage: make_bad_gguf.py MODEL.gguf OUTDIR", file=sys.stderr)
        return 2
    model, outdir = argv[1], argv[2]
    size = os.path.getsize(model)
    lay = parse_layout(model)
    hdr = lay["header"]
    os.makedirs(outdir, exist_ok=True)

    if lay.get("arch") != b"llama":
        raise ValueError(f"{model}: general.architecture is {lay.get('arch')!r}, expected 'llama'")
    victim = b"blk.0.attn_q.weight"
    if victim not in lay["tensors"]:
        raise ValueError(f"{model}: no tensor {victim.decode()}")
    first = lay["tensors"][lay["first_tensor"]]

    write_case(outdir, "truncated_half.gguf", hdr, size // 2)
    write_case(outdir, "truncated_100.gguf", hdr, 100)
    write_case(outdir, "bad_magic.gguf", hdr, size, [(0, b"GGML")])
    write_case(outdir, "absurd_tensor_count.gguf", hdr, size,
               [(lay["n_tensors_pos"], struct.pack("<Q", 1 << 62))])
    # 1 TiB is a multiple of any alignment up to 2^40, so only the bounds
    # check can catch it.
    write_case(outdir, "tensor_offset_outside.gguf", hdr, size,
               [(first[3], struct.pack("<Q", 1 << 40))])
    write_case(outdir, "unknown_tensor_type.gguf", hdr, size,
               [(first[2], struct.pack("<I", 99))])
    write_case(outdir, "unknown_arch.gguf", hdr, size, [(lay["arch_pos"], b"llamx")])
    _, name_pos, _, _ = lay["tensors"][victim]
    renamed = b"blk.0.attn_z.weight"
    if renamed in lay["tensors"]:
        raise ValueError(f"{model}: already has a tensor {renamed.decode()}")
    write_case(outdir, "missing_tensor.gguf", hdr, size, [(name_pos, renamed)])
    write_case(outdir, "empty.gguf", b"", 0)
    text = b"This is a plain text file, not a GGUF model.\nIt has two lines.\n"
    write_case(outdir, "not_gguf.txt", text, len(text))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
