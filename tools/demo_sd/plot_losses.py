"""Plot losses.csv (train.py's log) as a PNG with two panels (VAE, UNet), Pillow only.

usage: python3 plot_losses.py ckpt/losses.csv results/losses.png
"""
import csv
import sys

from PIL import Image, ImageDraw


def panel(d, box, pts, title, ylab):
    x0, y0, x1, y1 = box
    d.rectangle(box, outline=(0, 0, 0))
    d.text((x0 + 5, y0 - 14), title, fill=(0, 0, 0))
    if not pts:
        return
    xs = [p[0] for p in pts]
    ys = [p[1] for p in pts]
    xmin, xmax = 0, max(xs)
    ymin, ymax = min(ys), max(ys)
    ymin -= 0.05 * (ymax - ymin + 1e-9)
    ymax += 0.05 * (ymax - ymin + 1e-9)
    X = lambda v: x0 + (v - xmin) / (xmax - xmin + 1e-9) * (x1 - x0)  # noqa: E731
    Y = lambda v: y1 - (v - ymin) / (ymax - ymin + 1e-9) * (y1 - y0)  # noqa: E731
    for i in range(5):
        yv = ymin + (ymax - ymin) * i / 4
        d.line([(x0, Y(yv)), (x0 - 4, Y(yv))], fill=(0, 0, 0))
        d.text((x0 - 48, Y(yv) - 6), f"{yv:.3f}", fill=(0, 0, 0))
        xv = xmin + (xmax - xmin) * i / 4
        d.line([(X(xv), y1), (X(xv), y1 + 4)], fill=(0, 0, 0))
        d.text((X(xv) - 14, y1 + 6), f"{int(xv)}", fill=(0, 0, 0))
    d.line([(X(a), Y(b)) for a, b in pts], fill=(200, 30, 30), width=2)
    d.text((x1 - 60, y1 + 20), "step", fill=(0, 0, 0))
    d.text((x0 + 5, y0 + 4), ylab, fill=(80, 80, 80))


def main():
    rows = list(csv.DictReader(open(sys.argv[1])))
    vae = [(int(r["step"]), float(r["loss"])) for r in rows if r["stage"] == "vae"]
    unet = [(int(r["step"]), float(r["loss"])) for r in rows if r["stage"] == "unet"]
    img = Image.new("RGB", (1000, 420), (255, 255, 255))
    d = ImageDraw.Draw(img)
    panel(d, (70, 40, 480, 360), vae, "stage 1: VAE (L1 + MSE + 1e-6 KL), batch 32", "loss")
    panel(d, (570, 40, 980, 360), unet, "stage 2: text encoder + UNet (min-SNR-5 eps MSE)", "loss")
    d.text((70, 395), "mean over 50 steps; UNet batch 256 -> 1024 -> 512 across commands (see ckpt/meta.json)",
           fill=(0, 0, 0))
    img.save(sys.argv[2])


if __name__ == "__main__":
    main()
