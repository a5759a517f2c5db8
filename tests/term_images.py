"""term_images.py — the pictures in a terminal byte stream, decoded, and
their comparison with a PNG (issue 13). Python standard library, plus
libsixel's sixel2png (Debian libsixel-bin) for sixel.

pictures(term) -> [Picture] for a fake_term.Terminal after a run:
  sixel   each DCS P1;P2;P3 q ... ST, decoded by sixel2png
  kitty   each kitty graphics transmission (a=t / a=T, the chunks of one
          transfer gathered: the first carries the keys, then m=1 ... m=0),
          base64-decoded, o=z inflated, f=24 / f=32 raw of s= x v= pixels or
          f=100 PNG
  iterm2  each OSC 1337 ; File = ARGS : BASE64 (BEL or ST) with inline=1,
          base64-decoded to a PNG
A Picture has proto, w, h, rgb (RGB8; alpha composited over black), alpha
(bytes or None), info (a dict: the protocol's keys, chunk sizes, ...) and
offset (where it began in the output).

cell_art(screen) -> Picture of the character art on a fake_term.Screen:
one pixel a cell, the colour the cell shows on average (its symbol's ink
coverage mixing foreground and background), over the bounding box of
the cells drawn with a colour.

mean_abs_error(pic, ref_w, ref_h, ref_rgb): the reference is scaled to the
picture's size by area averaging (each output pixel the mean of the input
area it covers), then the mean absolute difference over every channel of
every pixel, 0..255. luma_correlation(...): the Pearson correlation of
their luma, which a palette's colour shifts leave near 1.
"""
import base64, os, re, subprocess, sys, tempfile, zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import png_check  # noqa: E402
from fake_term import _kitty_keys  # noqa: E402  (one parser of kitty's keys)


class Picture:
    def __init__(self, proto, w, h, rgb, alpha=None, info=None, offset=0):
        self.proto, self.w, self.h, self.alpha, self.info, self.offset = proto, w, h, alpha, info or {}, offset
        if alpha is not None:  # over a black terminal background
            rgb = bytes(c * alpha[i // 3] // 255 for i, c in enumerate(rgb))
        self.rgb = rgb

    def __repr__(self):
        return "Picture(%s %dx%d %r)" % (self.proto, self.w, self.h, self.info)


def decode_sixel(raw):
    """raw: the whole DCS ... ST. (w, h, rgb) through sixel2png."""
    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "in.six"), os.path.join(d, "out.png")
        open(src, "wb").write(raw)
        try:
            p = subprocess.run(["sixel2png", "-i", src, "-o", dst], capture_output=True, timeout=60)
        except FileNotFoundError:
            raise RuntimeError("sixel2png not found: install libsixel-bin (tools/setup.sh --test)")
        if p.returncode or not os.path.exists(dst):
            raise ValueError("sixel2png failed: %s" % p.stderr.decode(errors="replace").strip())
        w, h, rgb, alpha = png_check.decode(open(dst, "rb").read())
        return w, h, rgb, alpha


def _kitty_image(keys, payload, offset, info):
    data = base64.b64decode(payload, validate=True)
    if keys.get("o") == "z": data = zlib.decompress(data)
    f = keys.get("f", "32")
    if f == "100":
        w, h, rgb, alpha = png_check.decode(data)
    elif f in ("24", "32"):
        w, h, bpp = int(keys["s"]), int(keys["v"]), 3 if f == "24" else 4
        if len(data) != w * h * bpp:
            raise ValueError("kitty f=%s s=%d v=%d: %d bytes, want %d" % (f, w, h, len(data), w * h * bpp))
        if bpp == 3:
            rgb, alpha = data, None
        else:
            rgb = bytearray(w * h * 3)
            rgb[0::3], rgb[1::3], rgb[2::3] = data[0::4], data[1::4], data[2::4]
            rgb, alpha = bytes(rgb), data[3::4]
    else:
        raise ValueError("kitty format f=%s" % f)
    return Picture("kitty", w, h, rgb, alpha, info, offset)


def decode_iterm2(body):
    """body: the OSC's text after ESC ]. (args dict, image bytes)."""
    m = re.match(rb"1337;File=([^:]*):(.*)$", body, re.S)
    if not m: raise ValueError("not an OSC 1337 File: %r" % body[:40])
    args = {}
    for kv in m.group(1).split(b";"):
        k, _, v = kv.partition(b"=")
        args[k.decode("latin-1")] = v.decode("latin-1")
    data = base64.b64decode(m.group(2), validate=True)
    if "size" in args and int(args["size"]) != len(data):
        raise ValueError("OSC 1337 size=%s but %d bytes" % (args["size"], len(data)))
    return args, data


def pictures(term):
    """Every picture the stream drew, in order; a sequence that does not
    decode raises ValueError naming it."""
    out, chunked = [], None
    for s in term.seqs:
        if s.kind == "DCS" and re.match(rb"[0-9;]*q", s.body):
            w, h, rgb, alpha = decode_sixel(b"\x1bP" + s.body + b"\x1b\\")
            params = re.match(rb"([0-9;]*)q", s.body).group(1).decode()
            ra = re.match(rb'[0-9;]*q"(\d+);(\d+);(\d+);(\d+)', s.body)
            info = {"params": params, "bytes": len(s.raw), "colors": len(set(re.findall(rb"#(\d+);2", s.body)))}
            if ra: info["raster"] = tuple(int(x) for x in ra.groups())
            out.append(Picture("sixel", w, h, rgb, alpha, info, s.offset))
        elif s.kind == "APC" and s.body[:1] == b"G":
            keys, payload = _kitty_keys(s.body)
            if chunked is not None:
                chunked[1].append(payload)
                chunked[2]["chunks"].append(len(payload))
                if keys.get("m", "0") == "1": continue
                first, parts, info, offset = chunked
                chunked = None
                out.append(_kitty_image(first, b"".join(parts), offset, info))
                continue
            if keys.get("a", "t") not in ("t", "T"): continue  # query, put, delete
            if keys.get("t", "d") != "d":
                raise ValueError("kitty transmission medium t=%s (only direct data travels over a pty)" % keys["t"])
            info = dict(keys, chunks=[len(payload)])
            if keys.get("m") == "1":
                chunked = (keys, [payload], info, s.offset)
            else:
                out.append(_kitty_image(keys, payload, s.offset, info))
        elif s.kind == "OSC" and s.body.startswith(b"1337;File="):
            args, data = decode_iterm2(s.body)
            if args.get("inline") != "1": continue
            w, h, rgb, alpha = png_check.decode(data)
            out.append(Picture("iterm2", w, h, rgb, alpha, dict(args, bytes=len(data)), s.offset))
    if chunked is not None:
        raise ValueError("kitty transfer left unfinished (no m=0 chunk): %r" % chunked[0])
    return out


# Ink coverage of the symbols character art is made of: the block elements
# (U+2580..U+259F) exactly, braille by its dots, a space none; anything else
# (ASCII, borders, geometric shapes) is taken as half.
_BLOCKS = {"\u2580": 4, "\u2581": 1, "\u2582": 2, "\u2583": 3, "\u2584": 4, "\u2585": 5, "\u2586": 6, "\u2587": 7,
           "\u2588": 8, "\u2589": 7, "\u258a": 6, "\u258b": 5, "\u258c": 4, "\u258d": 3, "\u258e": 2, "\u258f": 1,
           "\u2590": 4, "\u2591": 2, "\u2592": 4, "\u2593": 6, "\u2594": 1, "\u2595": 1, "\u2596": 2, "\u2597": 2,
           "\u2598": 2, "\u2599": 6, "\u259a": 4, "\u259b": 6, "\u259c": 6, "\u259d": 2, "\u259e": 4, "\u259f": 6}


def coverage(ch):
    if ch in ("", " ", "\u00a0", "\u2800"): return 0.0
    if ch in _BLOCKS: return _BLOCKS[ch] / 8.0
    o = ord(ch)
    if 0x2800 <= o <= 0x28ff: return bin(o - 0x2800).count("1") / 8.0
    return 0.5


def is_symbol(ch):
    """A block, shade, quadrant, sextant, braille or geometric symbol."""
    o = ord(ch) if ch else 0
    return 0x2580 <= o <= 0x259f or 0x2800 <= o <= 0x28ff or 0x1fb00 <= o <= 0x1fb3b or 0x25a0 <= o <= 0x25ff \
        or 0x2500 <= o <= 0x257f


def cell_art(screen, default_fg=(229, 229, 229), default_bg=(0, 0, 0)):
    """The character art on the screen (scrollback included) as a Picture of
    one pixel a cell; None when no cell has a colour. info: rows, cols,
    top (line index), left, symbols (cells drawn with a symbol)."""
    lines = screen.lines()
    hit = [(y, x) for y, line in enumerate(lines) for x, c in enumerate(line)
           if c[2] is not None or (c[1] is not None and c[0] not in (" ", ""))]
    if not hit: return None
    y0, y1 = min(y for y, _ in hit), max(y for y, _ in hit)
    x0, x1 = min(x for _, x in hit), max(x for _, x in hit)
    w, h = x1 - x0 + 1, y1 - y0 + 1
    rgb, symbols = bytearray(), 0
    for y in range(y0, y1 + 1):
        for x in range(x0, x1 + 1):
            ch, fg, bg = lines[y][x]
            fg, bg = fg or default_fg, bg or default_bg
            k = coverage(ch)
            symbols += is_symbol(ch)
            rgb += bytes(int(round(fg[i] * k + bg[i] * (1 - k))) for i in range(3))
    return Picture("symbols", w, h, bytes(rgb), None,
                   {"rows": h, "cols": w, "top": y0, "left": x0, "symbols": symbols}, 0)


def _weights(n_in, n_out):
    """For each output index, [(input index, weight)] of the input span it covers (weights sum to 1)."""
    out = []
    scale = n_in / n_out
    for o in range(n_out):
        a, b = o * scale, (o + 1) * scale
        ws, i = [], int(a)
        while i < b and i < n_in:
            lo, hi = max(a, i), min(b, i + 1)
            if hi > lo: ws.append((i, (hi - lo) / scale))
            i += 1
        out.append(ws)
    return out


def area_scale(w, h, rgb, ow, oh):
    """RGB8 w x h scaled to ow x oh by area averaging, as floats (3 a pixel)."""
    wx, wy = _weights(w, ow), _weights(h, oh)
    rows = []  # horizontally scaled rows
    for y in range(h):
        line = rgb[y * w * 3:(y + 1) * w * 3]
        r = []
        for ws in wx:
            acc = [0.0, 0.0, 0.0]
            for i, k in ws:
                acc[0] += line[3 * i] * k; acc[1] += line[3 * i + 1] * k; acc[2] += line[3 * i + 2] * k
            r.extend(acc)
        rows.append(r)
    out = []
    for ws in wy:
        acc = [0.0] * (ow * 3)
        for j, k in ws:
            src = rows[j]
            for t in range(ow * 3): acc[t] += src[t] * k
        out.extend(acc)
    return out


def mean_abs_error(pic, ref_w, ref_h, ref_rgb):
    scaled = area_scale(ref_w, ref_h, ref_rgb, pic.w, pic.h)
    return sum(abs(a - b) for a, b in zip(pic.rgb, scaled)) / len(scaled)


def luma_correlation(pic, ref_w, ref_h, ref_rgb):
    """Pearson correlation of the luma (BT.601) of the picture and of the
    reference scaled to it: 1 for the same picture whatever its palette or
    dither does to the colours, near 0 for an unrelated one."""
    scaled = area_scale(ref_w, ref_h, ref_rgb, pic.w, pic.h)
    luma = lambda v: [0.299 * v[i] + 0.587 * v[i + 1] + 0.114 * v[i + 2] for i in range(0, len(v), 3)]
    a, b = luma(pic.rgb), luma(scaled)
    n = len(a); ma, mb = sum(a) / n, sum(b) / n
    va = sum((x - ma) ** 2 for x in a); vb = sum((y - mb) ** 2 for y in b)
    if va == 0 or vb == 0: return 0.0
    return sum((x - ma) * (y - mb) for x, y in zip(a, b)) / (va * vb) ** 0.5


def scaled_png(pic, ref_w, ref_h, ref_rgb, path):
    """Write the reference scaled to the picture's size (to look at a failure)."""
    png_check.write(path, pic.w, pic.h, bytes(int(round(v)) for v in area_scale(ref_w, ref_h, ref_rgb, pic.w, pic.h)))
