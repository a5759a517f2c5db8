"""Generate pictures with diffusers' StableDiffusionPipeline built from the demo model's
components (DDIM, CFG), and lay them out as a contact sheet PNG (caption under each image).

usage: python3 sample.py --ck DIR --out sheet.png [--steps 30 --cfg 6 --seeds 0,1 --captions FILE]
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

DEMO_CAPTIONS = [
    "a red circle above a blue square",
    "a small yellow star in the top left corner on a dark green background",
    "blue square under a red circle",
    "a green triangle to the left of a pink heart",
    "a large white ring on a navy background",
    "an orange diamond in the centre",
    "a black star inside a yellow circle",
    "a purple heart on the right of a green square",
    "a pink circle in the bottom right corner",
    "a blue ring below an orange triangle",
    "a red square, a yellow circle and a blue triangle in a row",
    "a white star on a black background",
    "a big green circle",
    "a small red triangle at the top",
    "a yellow heart left of a purple star on a light blue background",
    "a blue circle inside a white square on a gray background",
    "a red star above a blue triangle",       # held-out colour+shape pairs
    "a purple circle in the top right corner",
    "a yellow square to the right of a green ring",
    "a pink diamond inside an orange circle",
]


def pipeline_from(vae, text, unet, tokdir, device, scheduler="ddim"):
    import model as M
    from diffusers import DDIMScheduler, EulerDiscreteScheduler, StableDiffusionPipeline
    from transformers import CLIPTokenizer
    tok = CLIPTokenizer.from_pretrained(tokdir)
    cls = DDIMScheduler if scheduler == "ddim" else EulerDiscreteScheduler
    sched = M.scheduler(cls)
    pipe = StableDiffusionPipeline(vae=vae, text_encoder=text, tokenizer=tok, unet=unet, scheduler=sched,
                                   safety_checker=None, feature_extractor=None, requires_safety_checker=False)
    pipe.set_progress_bar_config(disable=True)
    return pipe.to(device)


def generate(pipe, captions, seeds, steps=30, cfg=6.0, height=256, width=256, batch=64, latents=None):
    """Images as uint8 arrays, in order: for caption in captions, for seed in seeds. The initial
    latents: `latents` (a [1,4,h,w] array per image, same order) when given, else torch's CPU
    generator seeded by seed and caption."""
    import numpy as np
    import torch
    jobs = [(c, s) for c in captions for s in seeds]
    out = []
    for i in range(0, len(jobs), batch):
        part = jobs[i:i + batch]
        if latents is not None:
            dev = pipe.unet.device
            kw = dict(latents=torch.from_numpy(np.concatenate(latents[i:i + batch])).to(dev))
        else:
            kw = dict(generator=[torch.Generator(device="cpu").manual_seed(s * 1000003 + hash_caption(c))
                                 for c, s in part])
        with torch.no_grad():
            ims = pipe([c for c, _ in part], num_inference_steps=steps, guidance_scale=cfg,
                       height=height, width=width, output_type="np", **kw).images
        out.extend((np.clip(ims, 0, 1) * 255 + 0.5).astype(np.uint8))
    return out


def hash_caption(c):
    h = 2166136261
    for ch in c.encode():
        h = ((h ^ ch) * 16777619) & 0xFFFFFFFF
    return h % 1000003


def sheet(images, labels, path, cols=4):
    from PIL import Image, ImageDraw
    import textwrap
    h, w = images[0].shape[:2]
    lab_h = 40
    rows = (len(images) + cols - 1) // cols
    img = Image.new("RGB", (cols * (w + 4), rows * (h + lab_h + 4)), (255, 255, 255))
    d = ImageDraw.Draw(img)
    for i, (im, lab) in enumerate(zip(images, labels)):
        x, y = (i % cols) * (w + 4), (i // cols) * (h + lab_h + 4)
        img.paste(Image.fromarray(im), (x, y))
        d.multiline_text((x + 2, y + h + 1), "\n".join(textwrap.wrap(lab, 44)[:3]), fill=(0, 0, 0))
    img.save(path)


def contact_sheet(pipe, captions, seeds, path, steps=30, cfg=6.0, height=256, width=256):
    ims = generate(pipe, captions, seeds, steps, cfg, height, width)
    labels = [f"{c} [s{s}]" if len(seeds) > 1 else c for c in captions for s in seeds]
    sheet(ims, labels, path, cols=4)
    return ims


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ck", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--cfg", type=float, default=6.0)
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--size", default="256x256", help="WxH, multiples of 64")
    ap.add_argument("--scheduler", default="ddim", choices=["ddim", "euler"])
    ap.add_argument("--captions", default="")
    ap.add_argument("--tok", default=os.path.join(HERE, "tokenizer"))
    args = ap.parse_args()
    import torch
    import model as M
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    _, vae, text, unet = M.load_models(args.ck, dev)
    pipe = pipeline_from(vae, text, unet, args.tok, dev, args.scheduler)
    caps = DEMO_CAPTIONS
    if args.captions:
        with open(args.captions) as f:
            caps = [line.strip() for line in f if line.strip()]
    w, h = (int(x) for x in args.size.split("x"))
    contact_sheet(pipe, caps, [int(s) for s in args.seeds.split(",")], args.out, args.steps, args.cfg, h, w)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
