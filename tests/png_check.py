"""png_check.py — a PNG reader in the Python standard library, for the shell tests.

  png_check.py info FILE   checks the signature, chunk CRCs and zlib stream,
                           undoes the scanline filters and prints "WIDTH HEIGHT
                           SHA256-OF-PIXELS", then the parameters chunk's text
  png_check.py psnr A B    the PSNR in dB of B's pixels against A's

Importable: read(path) -> (width, height, RGB8 bytes, parameters text), for
petrel's own PNGs (RGB8, parameters chunk second); decode(bytes) -> (width,
height, RGB8 bytes, alpha bytes or None) for any non-interlaced PNG of bit
depth <= 8 (grey, RGB, palette with tRNS, grey+alpha, RGBA), as other tools
write them (sixel2png, the PNGs inside terminal picture protocols);
write(path, width, height, RGB8 bytes) writes an RGB8 PNG.
"""
import hashlib, math, struct, sys, zlib
def _unfilter(raw, w, h, bpp, stride):
    """Undo the scanline filters: rows of `stride` bytes, `bpp` bytes a pixel (>= 1)."""
    prev, out = bytearray(stride), bytearray()
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 2:
            line = bytearray((u + v) & 255 for u, v in zip(line, prev))
        elif f:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                if f == 1: line[i] = (line[i] + a) & 255
                elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
                elif f == 4:
                    p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
                else: raise AssertionError("filter %d" % f)
        out += line; prev = line
    return bytes(out)
def decode(data):
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "signature"
    pos, idat, ihdr, plte, trns = 8, b"", None, None, None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        crc, = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        assert zlib.crc32(kind + body) == crc, "CRC of " + kind.decode("latin-1")
        if kind == b"IHDR": ihdr = body
        elif kind == b"IDAT": idat += body
        elif kind == b"PLTE": plte = body
        elif kind == b"tRNS": trns = body
        elif kind == b"IEND": break
        pos += 12 + n
    w, h, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", ihdr)
    assert interlace == 0, "interlaced PNG"
    chans = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[color]
    assert depth == 8 or (depth in (1, 2, 4) and color in (0, 3)), "bit depth %d" % depth
    stride = (w * chans * depth + 7) // 8
    px = _unfilter(zlib.decompress(idat), w, h, max(1, chans * depth // 8), stride)
    if depth < 8:  # unpack to one byte a sample
        per, mask, row = 8 // depth, (1 << depth) - 1, []
        for y in range(h):
            line = px[y * stride:(y + 1) * stride]
            row.append(bytes((line[x // per] >> (8 - depth * (x % per + 1))) & mask for x in range(w)))
        px = b"".join(row)
        if color == 0: px = bytes(v * 255 // mask for v in px)
    alpha = None
    if color == 0:
        rgb = bytes(v for v in px for _ in range(3))
    elif color == 2:
        rgb = px
    elif color == 3:
        pal = [plte[3 * i:3 * i + 3] for i in range(len(plte) // 3)]
        rgb = b"".join(pal[i] for i in px)
        if trns: alpha = bytes(trns[i] if i < len(trns) else 255 for i in px)
    elif color == 4:
        rgb = bytes(v for v in px[0::2] for _ in range(3)); alpha = px[1::2]
    else:
        rgb = bytearray(w * h * 3)
        rgb[0::3], rgb[1::3], rgb[2::3] = px[0::4], px[1::4], px[2::4]
        rgb, alpha = bytes(rgb), px[3::4]
    return w, h, rgb, alpha
def write(path, w, h, rgb):
    def chunk(kind, body): return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    raw = b"".join(b"\0" + rgb[y * 3 * w:(y + 1) * 3 * w] for y in range(h))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
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
    return w, h, _unfilter(zlib.decompress(idat), w, h, 3, 3 * w), text
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
