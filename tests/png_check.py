"""png_check.py — a PNG reader in the Python standard library, for the shell tests.

  png_check.py info FILE   checks the signature, chunk CRCs and zlib stream,
                           undoes the scanline filters and prints "WIDTH HEIGHT
                           SHA256-OF-PIXELS", then the parameters chunk's text
  png_check.py psnr A B    the PSNR in dB of B's pixels against A's

Importable: read(path) -> (width, height, RGB8 bytes, parameters text).
"""
import hashlib, math, struct, sys, zlib
def read(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "signature"
    pos, idat, text, ihdr, order = 8, b"", None, None, []
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        crc, = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        assert zlib.crc32(kind + body) == crc, "CRC of " + kind.decode()
        order.append(kind)
        if kind == b"IHDR": ihdr = body
        elif kind == b"IDAT": idat += body
        elif kind == b"tEXt":
            key, _, val = body.partition(b"\0"); assert key == b"parameters"; text = val.decode("latin-1")
        elif kind == b"iTXt":
            key, _, rest = body.partition(b"\0"); assert key == b"parameters" and rest[:2] == b"\0\0"
            text = rest[2:].split(b"\0", 2)[2].decode("utf-8")
        pos += 12 + n
    assert order[0] == b"IHDR" and order[1] in (b"tEXt", b"iTXt") and order[-1] == b"IEND", order
    w, h, depth, color = struct.unpack(">IIBB", ihdr[:10])
    assert depth == 8 and color == 2, "not RGB8"
    raw, stride, bpp = zlib.decompress(idat), 3 * w, 3
    prev, out = bytearray(stride), bytearray()
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
            else: assert f == 0, "filter %d" % f
        out += line; prev = line
    return w, h, bytes(out), text
if __name__ != "__main__":
    pass
elif sys.argv[1] == "info":
    w, h, px, text = read(sys.argv[2])
    print(w, h, hashlib.sha256(px).hexdigest())
    print(text if text is not None else "<no parameters chunk>", end="")
else:
    a, b = read(sys.argv[2])[2], read(sys.argv[3])[2]
    assert len(a) == len(b), "sizes differ"
    mse = sum((x - y) ** 2 for x, y in zip(a, b)) / len(a)
    print("%.1f" % (99.0 if mse == 0 else 10 * math.log10(255 * 255 / mse)))
