"""Score pictures against their captions with a simple detector of the drawn shapes.

Detector (numpy only; scipy is used when present): each pixel gets the nearest
named colour (shape colours and background colours); the background is the
colour(s) covering >= 20% of the border; for each colour the caption names,
the pixels of that colour (eroded by one pixel, which removes anti-aliased
fringes) form connected components, the largest is "the shape": centroid,
bounding box, area, and a rough shape class from its silhouette.

A caption is scored on what it states:
  one   : colour present, and the centroid in the named third of the picture
          (columns left/middle/right, rows top/middle/bottom);
  rel   : both colours present, and the relation (above/below: vertical offset
          dominant and of the right sign; left/right likewise; inside: the
          inner shape's box within the container's box and smaller);
  three : all three colours present, in the stated order along the axis.
"right" = colours and position/relation right. Also reported: "clean" (no large
blob of a shape colour the caption does not name) and shape class accuracy.

The evaluation set is HELD OUT: scenes.sample_scene(split="heldout"), i.e.
compositions never in a training caption (see scenes.py), seeded.

The model and the engine are judged apart, from the same initial latents
(petrel's noise for each seed, tools/demo_sd/petrel_noise.py): diffusers draws
with the checkpoint or the shipped GGUF's weights, petrel with its own engine.

usage:
  python3 evaluate.py --gt [--out F.json]            detector on ground-truth renders (needs torch)
  python3 evaluate.py --ck DIR | --gguf FILE         generate with diffusers and score (torch, diffusers)
  python3 evaluate.py --petrel BIN [--jobs N]        generate with `petrel imagine` and score (numpy only)
  --take one=8,rel=16 scores a subset (the first captions of each kind);
  --min one=0.85,rel=0.7 makes petrel's rates a pass/fail check (tests/test_demo_eval.sh).
"""
import argparse
import json
import os
import random
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import scenes  # noqa: E402

NAMES = list(scenes.COLOURS) + [b for b in scenes.BG_COLOURS]
RGB = np.array([scenes.COLOURS[c] for c in scenes.COLOURS] + [scenes.BG_COLOURS[b] for b in scenes.BG_COLOURS],
               np.float32)
LABEL = {}          # palette index -> colour name ("white"/"black" shape and background share a name)
for i, n in enumerate(NAMES):
    LABEL[i] = n
UNIQUE = sorted(set(NAMES))
UIDX = {n: i for i, n in enumerate(UNIQUE)}
PAL2U = np.array([UIDX[LABEL[i]] for i in range(len(NAMES))])


# ------------------------------------------------------------- connected parts

def label(mask):
    """4-connected components: (labels int32, count)."""
    try:
        from scipy import ndimage
        lab, n = ndimage.label(mask)
        return lab.astype(np.int32), int(n)
    except ImportError:
        pass
    H, W = mask.shape
    lab = np.where(mask, np.arange(1, H * W + 1, dtype=np.int64).reshape(H, W), 0)
    big = H * W + 10
    while True:
        cur = np.where(mask, lab, big)
        m = cur.copy()
        m[1:] = np.minimum(m[1:], cur[:-1])
        m[:-1] = np.minimum(m[:-1], cur[1:])
        m[:, 1:] = np.minimum(m[:, 1:], cur[:, :-1])
        m[:, :-1] = np.minimum(m[:, :-1], cur[:, 1:])
        m = np.where(mask, m, 0)
        if np.array_equal(m, lab):
            break
        lab = m
    u, inv = np.unique(lab, return_inverse=True)
    inv = inv.reshape(H, W).astype(np.int32)
    if u[0] == 0:
        return inv, len(u) - 1
    return inv + 1, len(u)


def erode(m):
    e = m.copy()
    e[1:] &= m[:-1]
    e[:-1] &= m[1:]
    e[:, 1:] &= m[:, :-1]
    e[:, :-1] &= m[:, 1:]
    e[0, :] = e[-1, :] = False
    e[:, 0] = e[:, -1] = False
    return e


def fill_holes(m):
    lab, n = label(~m)
    border = set(np.unique(np.concatenate([lab[0], lab[-1], lab[:, 0], lab[:, -1]]))) - {0}
    holes = (~m) & ~np.isin(lab, list(border))
    return m | holes


# ------------------------------------------------------------------ detector

def classify(img):
    """(H,W,3) uint8 -> (colour-name index per pixel, distance to that colour)."""
    x = img.astype(np.float32).reshape(-1, 3)
    d2 = (x * x).sum(1, keepdims=True) - 2 * x @ RGB.T + (RGB * RGB).sum(1)[None]
    k = d2.argmin(1)
    H, W = img.shape[:2]
    return PAL2U[k].reshape(H, W), np.sqrt(np.maximum(d2[np.arange(len(k)), k], 0)).reshape(H, W)


def shape_class(comp, others_lab, bg_ids):
    ys, xs = np.nonzero(comp)
    y0, y1, x0, x1 = ys.min(), ys.max() + 1, xs.min(), xs.max() + 1
    c = comp[y0:y1, x0:x1]
    f = fill_holes(c)
    hole = f & ~c
    if hole.sum() > 0.12 * f.sum() and np.isin(others_lab[y0:y1, x0:x1][hole], bg_ids).mean() > 0.5:
        return "ring"
    h, w = f.shape
    fill = f.sum() / float(h * w)
    row = lambda t: f[min(h - 1, int(t * h))].sum() / float(w)  # noqa: E731
    t, m, b = row(0.2), row(0.5), row(0.8)
    if fill > 0.88:
        return "square"
    if b > t + 0.3 and fill < 0.68 and row(0.4) < 0.65:
        return "triangle"
    if t > b + 0.15 and fill > 0.55:
        return "heart"
    if fill > 0.68:
        return "circle"
    if m > 0.75 and abs(t - b) < 0.2 and fill > 0.42:
        return "diamond"
    return "star"


def detect(img, colours):
    """Find the largest blob of each named colour. Returns ({colour: info or None}, extras, bg names)."""
    H, W = img.shape[:2]
    lab, dist = classify(img)
    border = np.concatenate([lab[:2].ravel(), lab[-2:].ravel(), lab[:, :2].ravel(), lab[:, -2:].ravel()])
    cnt = np.bincount(border, minlength=len(UNIQUE))
    bg_ids = [i for i in range(len(UNIQUE)) if cnt[i] >= 0.2 * len(border)]
    out = {}
    min_area = 0.0006 * H * W
    for c in colours:
        ci = UIDX[c]
        if ci in bg_ids:
            out[c] = None
            continue
        m = erode((lab == ci) & (dist < 90))
        cl, n = label(m)
        if n == 0:
            out[c] = None
            continue
        areas = np.bincount(cl.ravel(), minlength=n + 1)
        areas[0] = 0
        k = int(areas.argmax())
        if areas[k] < min_area:
            out[c] = None
            continue
        comp = cl == k
        ys, xs = np.nonzero(comp)
        out[c] = dict(cx=float(xs.mean() + 0.5) / W, cy=float(ys.mean() + 0.5) / H, area=int(areas[k]),
                      box=[float(xs.min()) / W, float(ys.min()) / H, float(xs.max() + 1) / W, float(ys.max() + 1) / H],
                      shape=shape_class(comp, lab, bg_ids))
    extras = []
    for c in scenes.COLOURS:
        ci = UIDX[c]
        if c in colours or ci in bg_ids:
            continue
        m = erode((lab == ci) & (dist < 90))
        if m.sum() >= 0.002 * H * W:
            cl, n = label(m)
            if n and np.bincount(cl.ravel())[1:].max() >= 0.002 * H * W:
                extras.append(c)
    return out, extras, [UNIQUE[i] for i in bg_ids]


def relation_ok(rel, a, b):
    dx, dy = b["cx"] - a["cx"], b["cy"] - a["cy"]
    if rel == "above":
        return dy > 0.03 and abs(dy) > abs(dx)
    if rel == "left of":
        return dx > 0.03 and abs(dx) > abs(dy)
    if rel == "inside":
        t = 2.0 / 256
        ba, bb = a["box"], b["box"]
        return (ba[0] >= bb[0] - t and ba[1] >= bb[1] - t and ba[2] <= bb[2] + t and ba[3] <= bb[3] + t
                and a["area"] < b["area"])
    raise ValueError(rel)


def score(img, scene):
    """Score one picture against its scene description (what its caption states)."""
    sh = scene["shapes"]
    cols = [s["colour"] for s in sh]
    found, extras, bgs = detect(img, cols)
    colours_ok = all(found[c] is not None for c in cols)
    r = dict(kind=scene["kind"], colours_ok=colours_ok, clean=not extras, extras=extras)
    shapes_ok = [found[s["colour"]] is not None and found[s["colour"]]["shape"] == s["shape"] for s in sh]
    r["shape_ok"] = all(shapes_ok)
    rel_ok = False
    if colours_ok:
        if scene["kind"] == "one":
            f = found[cols[0]]
            cell = scene.get("cell")
            if cell is None:
                rel_ok = True
            else:
                rel_ok = (min(2, int(f["cx"] * 3)), min(2, int(f["cy"] * 3))) == tuple(cell)
        elif scene["kind"] == "rel":
            rel, i, j = scene["relation"]
            rel_ok = relation_ok(rel, found[cols[i]], found[cols[j]])
        else:
            key = "cy" if scene["relation"][0] == "column" else "cx"
            v = [found[c][key] for c in cols]
            rel_ok = v[0] < v[1] < v[2]
    r["relation_ok"] = rel_ok
    r["right"] = colours_ok and rel_ok
    return r


# ------------------------------------------------------------------ eval set

def eval_set(n_one=40, n_rel=80, n_three=16, seed=2024):
    """Held-out scenes with one caption each. One-shape captions always state the position."""
    rng = random.Random(seed)
    items = []
    for kind, n in (("one", n_one), ("rel", n_rel), ("three", n_three)):
        k = 0
        while k < n:
            sc = scenes.sample_scene(rng, "heldout", kind)
            if kind == "one":
                if sc["cell"] is None:
                    continue
                s = sc["shapes"][0]
                art = "an" if s["colour"][0] in "aeiou" else "a"
                cap = f"{art} {s['colour']} {s['shape']} {rng.choice(scenes.POSITIONS[sc['cell']])}"
                if rng.random() < 0.3:
                    cap += " " + scenes._bg_phrase(rng, sc["bg"])
            else:
                cap = scenes.caption(sc, rng)
            items.append((cap, sc))
            k += 1
    return items


def summarize(results):
    by = {}
    for r in results:
        by.setdefault(r["kind"], []).append(r)
    summ = {}
    for k, rs in by.items():
        n = len(rs)
        summ[k] = {m: round(sum(r[m] for r in rs) / n, 4) for m in ("right", "colours_ok", "relation_ok", "clean",
                                                                    "shape_ok")}
        summ[k]["n"] = n
    return summ


def print_summary(title, summ):
    print(title)
    print(f"  {'kind':6} {'n':>5} {'right':>7} {'colour':>7} {'rel/pos':>8} {'clean':>7} {'shape':>7}")
    for k in ("one", "rel", "three"):
        if k in summ:
            s = summ[k]
            print(f"  {k:6} {s['n']:5d} {s['right']:7.3f} {s['colours_ok']:7.3f} {s['relation_ok']:8.3f} "
                  f"{s['clean']:7.3f} {s['shape_ok']:7.3f}")


def run_gt(items):
    """Detector on the ground-truth renders (deterministic: no seeds)."""
    import torch
    t = scenes.params_to_tensors([scenes.scene_params(sc) for _, sc in items],
                                 "cuda" if torch.cuda.is_available() else "cpu")
    ims = (scenes.render(t, 256, 256).permute(0, 2, 3, 1).cpu().numpy() * 255 + 0.5).astype(np.uint8)
    return [score(im, sc) for im, (_, sc) in zip(ims, items)]


def score_all(items, seeds, ims):
    """Score images laid out as: for caption in items, for seed in seeds."""
    res, k = [], 0
    for c, sc in items:
        for s in seeds:
            r = score(ims[k], sc)
            r.update(caption=c, seed=s)
            res.append(r)
            k += 1
    return res


def diffusers_images(args, items, seeds):
    """diffusers' pictures from the checkpoint (--ck) or the shipped GGUF (--gguf), started from
    petrel's noise for each seed (--noise petrel, the default) or from torch's CPU generator."""
    import torch
    import sample
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    if args.gguf:
        import gen_parity   # the shipped file's weights in the diffusers/transformers classes
        vae, text, unet = gen_parity.models_from_gguf(args.gguf)
        steps = None
    else:
        import model as M
        meta, vae, text, unet = M.load_models(args.ck, dev)
        steps = meta["steps"]
    pipe = sample.pipeline_from(vae, text, unet, args.tok, dev)
    latents = None
    if args.noise == "petrel":
        import petrel_noise
        latents = [petrel_noise.latent(s) for _ in items for s in seeds]
    return sample.generate(pipe, [c for c, _ in items], seeds, args.steps, args.cfg, latents=latents), steps


def read_png(path):
    """(H, W, 3) uint8: tests/png_check.py (standard library) beside this tree, else Pillow."""
    try:
        sys.path.insert(0, os.path.join(HERE, "..", "..", "tests"))
        from png_check import read
        w, h, px, _ = read(path)
        return np.frombuffer(px, np.uint8).reshape(h, w, 3)
    except ImportError:
        from PIL import Image
        return np.asarray(Image.open(path).convert("RGB"))


def petrel_images(args, items, seeds):
    """petrel's own pictures: `petrel imagine -s SEED` with the evaluation's sampler settings,
    args.jobs processes at a time."""
    import subprocess
    import tempfile
    jobs = [(i, c, s) for i, (c, _) in enumerate(items) for s in seeds]
    with tempfile.TemporaryDirectory() as tmp:
        running, paths = [], []
        for i, c, s in jobs:
            p = os.path.join(tmp, f"{i}-{s}.png")
            paths.append(p)
            cmd = [args.petrel, "imagine", "-p", c, "-s", str(s), "-o", p, "-t", str(args.threads),
                   "--sampler", args.sampler, "--steps", str(args.steps), "--cfg", str(args.cfg)]
            if args.model:
                cmd += ["-m", args.model]
            running.append(subprocess.Popen(cmd, stderr=subprocess.PIPE))
            if len(running) >= args.jobs:
                wait_one(running.pop(0))
        for r in running:
            wait_one(r)
        return [read_png(p) for p in paths]


def wait_one(proc):
    err = proc.communicate()[1]
    if proc.returncode != 0:
        sys.exit(f"evaluate: {' '.join(proc.args[:4])}...: {err.decode(errors='replace').strip()}")


def take(items, spec):
    """The first n captions of each kind (spec "one=8,rel=16,three=0"): a subset of the same set."""
    want = {k: int(v) for k, v in (p.split("=") for p in spec.split(","))}
    seen, out = {}, []
    for c, sc in items:
        k = sc["kind"]
        if seen.get(k, 0) < want.get(k, 0):
            out.append((c, sc))
            seen[k] = seen.get(k, 0) + 1
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gt", action="store_true")
    ap.add_argument("--ck", default="", help="diffusers on this checkpoint dir")
    ap.add_argument("--gguf", default="", help="diffusers on this image GGUF (the shipped weights)")
    ap.add_argument("--petrel", default="", help="petrel binary: score its own pictures")
    ap.add_argument("--model", default="", help="-m for petrel (default: its bundled model)")
    ap.add_argument("--noise", default="petrel", choices=("petrel", "torch"),
                    help="diffusers' initial latents: petrel's for each seed (same as petrel's run), or "
                         "torch's CPU generator seeded by seed and caption (the first evaluations)")
    ap.add_argument("--seeds", default="0,1,2,3")
    ap.add_argument("--sampler", default="ddim", help="petrel's sampler (diffusers uses DDIM)")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--cfg", type=float, default=6.0)
    ap.add_argument("--take", default="", help="a subset: the first n of each kind, e.g. one=8,rel=16")
    ap.add_argument("--jobs", type=int, default=1, help="petrel processes at a time")
    ap.add_argument("--threads", type=int, default=1, help="threads per petrel process")
    ap.add_argument("--min", default="", help="exit 1 unless petrel's rates reach these, e.g. one=0.85,rel=0.7")
    ap.add_argument("--expect", default="", help="a report (--out) whose petrel verdicts this run should repeat")
    ap.add_argument("--min-agree", type=float, default=0.95,
                    help="with --expect: exit 1 when fewer of the pictures get the recorded verdict")
    ap.add_argument("--out", default="")
    ap.add_argument("--sheet", default="", help="contact sheet of the first 32 generated images")
    ap.add_argument("--tok", default=os.path.join(HERE, "tokenizer"))
    args = ap.parse_args()
    items = eval_set()
    if args.take:
        items = take(items, args.take)
    seeds = [int(s) for s in args.seeds.split(",")]
    report = dict(n_captions={k: sum(1 for _, s in items if s["kind"] == k) for k in ("one", "rel", "three")},
                  seeds=seeds)
    if args.gt:
        summ = summarize(run_gt(items))
        print_summary("detector on ground-truth renders of the held-out scenes", summ)
        report["ground_truth"] = summ
    if args.ck or args.gguf:
        ims, steps = diffusers_images(args, items, seeds)
        res = score_all(items, seeds, ims)
        summ = summarize(res)
        src = f"shipped {os.path.basename(args.gguf)}" if args.gguf else f"unet steps {steps.get('unet')}"
        print_summary(f"diffusers (DDIM {args.steps} steps, CFG {args.cfg}, seeds {seeds}, {args.noise} noise), "
                      f"{src}", summ)
        report["model"] = summ
        report["model_source"] = args.gguf and os.path.basename(args.gguf) or dict(steps=steps)
        report["noise"] = args.noise
        report["per_image"] = res
        if args.sheet:
            import sample
            sel = list(range(0, min(len(ims), 32 * len(seeds)), len(seeds)))[:32]
            sample.sheet([ims[i] for i in sel],
                         [f"{res[i]['caption']} [{'ok' if res[i]['right'] else 'x'}]" for i in sel], args.sheet)
    if args.petrel:
        res = score_all(items, seeds, petrel_images(args, items, seeds))
        summ = summarize(res)
        print_summary(f"petrel ({args.sampler} {args.steps} steps, CFG {args.cfg}, seeds {seeds})", summ)
        report["engine"] = summ
        report["engine_settings"] = dict(sampler=args.sampler, steps=args.steps, cfg=args.cfg)
        report["engine_per_image"] = res
        if "per_image" in report:
            same = sum(a["right"] == b["right"] for a, b in zip(report["per_image"], res)) / len(res)
            report["verdicts_agree"] = round(same, 4)
            print(f"  same verdict as diffusers on {same:.3f} of the pictures")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1)
    if args.expect:
        with open(args.expect) as f:
            want = {(r["caption"], r["seed"]): r["right"] for r in json.load(f)["engine_per_image"]}
        got = report["engine_per_image"]
        missing = [r["caption"] for r in got if (r["caption"], r["seed"]) not in want]
        if missing:
            sys.exit(f"evaluate: {args.expect} has no verdict for '{missing[0]}'")
        same = sum(want[(r["caption"], r["seed"])] == r["right"] for r in got) / len(got)
        print(f"  same verdict as {os.path.basename(args.expect)} on {same:.3f} of the pictures")
        if same < args.min_agree:
            sys.exit(f"evaluate: verdicts agree with {args.expect} on {same:.3f} < {args.min_agree}")
    if args.min:
        bad = [f"{k}: {report['engine'][k]['right']:.3f} < {v}" for k, v in
               ((k, float(v)) for k, v in (p.split("=") for p in args.min.split(",")))
               if report["engine"][k]["right"] < v]
        if bad:
            sys.exit("evaluate: below the bar: " + "; ".join(bad))


if __name__ == "__main__":
    main()
