#!/usr/bin/env python3
"""petrel_sheet.py PETREL_BIN OUT.png [--seeds 0,1] [--model PATH] — the demo captions
(sample.DEMO_CAPTIONS) drawn by petrel itself (`petrel imagine`, the model's
defaults: DPM++ 2M Karras 20 steps, CFG 6, 256x256), laid out as a contact sheet with the
caption and seed under each picture (Pillow when present, else no text).
No torch or diffusers. The committed sheet: docs/images/demo-sd-petrel-contact-sheet.png.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests"))
from png_check import read  # noqa: E402


def demo_captions():
    # sample.py imports torch only inside functions, so its caption list loads here
    from sample import DEMO_CAPTIONS
    return DEMO_CAPTIONS


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("petrel")
    ap.add_argument("out")
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--model")
    a = ap.parse_args()
    seeds = [int(s) for s in a.seeds.split(",")]
    caps = demo_captions()
    ims, labels = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i, c in enumerate(caps):
            for s in seeds:
                p = os.path.join(tmp, f"{i}-{s}.png")
                cmd = [a.petrel, "imagine", "-p", c, "-s", str(s), "-o", p] + (["-m", a.model] if a.model else [])
                subprocess.run(cmd, check=True, stderr=subprocess.DEVNULL)
                w, h, px, _ = read(p)
                ims.append(np.frombuffer(px, np.uint8).reshape(h, w, 3))
                labels.append(f"{c} [s{s}]")
                print(f"{len(ims)}/{len(caps) * len(seeds)} {labels[-1]}", file=sys.stderr)
    cols, lab_h = 4, 40
    h, w = ims[0].shape[:2]
    rows = (len(ims) + cols - 1) // cols
    try:
        from PIL import Image, ImageDraw
        import textwrap
        img = Image.new("RGB", (cols * (w + 4), rows * (h + lab_h + 4)), (255, 255, 255))
        d = ImageDraw.Draw(img)
        for i, (im, lab) in enumerate(zip(ims, labels)):
            x, y = (i % cols) * (w + 4), (i // cols) * (h + lab_h + 4)
            img.paste(Image.fromarray(im), (x, y))
            d.multiline_text((x + 2, y + h + 1), "\n".join(textwrap.wrap(lab, 44)[:3]), fill=(0, 0, 0))
        img.save(a.out, optimize=True)
    except ImportError:  # no Pillow: the grid alone, written with zlib
        import struct
        import zlib
        g = np.full((rows * (h + 4), cols * (w + 4), 3), 255, np.uint8)
        for i, im in enumerate(ims):
            x, y = (i % cols) * (w + 4), (i // cols) * (h + 4)
            g[y:y + h, x:x + w] = im
        raw = b"".join(b"\0" + g[y].tobytes() for y in range(g.shape[0]))
        ch = lambda k, b: struct.pack(">I", len(b)) + k + b + struct.pack(">I", zlib.crc32(k + b))  # noqa: E731
        with open(a.out, "wb") as f:
            f.write(b"\x89PNG\r\n\x1a\n" + ch(b"IHDR", struct.pack(">IIBBBBB", g.shape[1], g.shape[0], 8, 2, 0, 0, 0))
                    + ch(b"IDAT", zlib.compress(raw, 9)) + ch(b"IEND", b""))
    print(a.out)


if __name__ == "__main__":
    main()
