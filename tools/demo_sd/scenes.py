"""Seeded procedural scenes for the demo image model: descriptions, captions, GPU rendering.

A scene is 1-3 flat shapes on a plain or two-tone background. Its description
(a dict) is the single source of truth: the caption is made from it (with
paraphrases) and the renderer draws it, so caption and picture always agree.

Coordinates are normalised: x to the right, y DOWN (image rows), both in [0, 1];
a shape's radius r is a fraction of min(width, height).

Held-out split (evaluation only; never in a training scene nor caption):
  * HELDOUT_COLOUR_SHAPE: these colour+shape pairs never occur in training,
    in any scene kind (each colour and each shape still occurs with others).
  * HELDOUT_PAIR_AXIS: these two shapes are never arranged along this axis
    (vertical = above/below, horizontal = left/right) in training.
  * HELDOUT_INSIDE: (inner, container) never occurs in training.
split="train" rejects every scene that contains any of them;
split="heldout" keeps only scenes that contain at least one.

Rendering: signed distance functions evaluated on a pixel grid, in torch, for a
whole batch at once (GPU or CPU: same code); alpha = clamp(0.5 - sdf_in_pixels)
gives one pixel of anti-aliasing.
"""
import math
import random

SHAPES = ["circle", "square", "triangle", "star", "heart", "ring", "diamond"]

# Shape colours (named, RGB 0..255).
COLOURS = {
    "red": (225, 35, 35),
    "orange": (250, 140, 20),
    "yellow": (245, 230, 50),
    "green": (40, 170, 60),
    "blue": (35, 85, 225),
    "purple": (140, 55, 190),
    "pink": (250, 125, 190),
    "white": (245, 245, 245),
    "black": (20, 20, 20),
}
COLOUR_NAMES = list(COLOURS)

# Background colours (named, RGB). Caption words may have two words.
BG_COLOURS = {
    "white": (255, 255, 255),
    "black": (0, 0, 0),
    "gray": (128, 128, 128),
    "light gray": (200, 200, 200),
    "dark gray": (60, 60, 60),
    "beige": (225, 210, 170),
    "dark green": (25, 80, 45),
    "navy": (25, 35, 95),
    "light blue": (170, 205, 235),
}
BG_NAMES = list(BG_COLOURS)
MIN_SHAPE_BG_DIST = 100.0   # a shape colour is never drawn on a background closer than this

HELDOUT_COLOUR_SHAPE = {
    ("red", "star"), ("orange", "heart"), ("yellow", "square"), ("green", "ring"),
    ("blue", "triangle"), ("purple", "circle"), ("pink", "diamond"),
}
HELDOUT_PAIR_AXIS = {
    (frozenset({"triangle", "heart"}), "v"), (frozenset({"square", "star"}), "v"),
    (frozenset({"star", "ring"}), "h"), (frozenset({"circle", "diamond"}), "h"),
}
HELDOUT_INSIDE = {("heart", "circle"), ("triangle", "square")}
CONTAINERS = ["circle", "square", "ring"]

SIZE_R = {"small": (0.07, 0.09), "medium": (0.10, 0.13), "large": (0.15, 0.19)}
POSITIONS = {  # (col, row) -> phrases
    (0, 0): ["in the top left corner", "at the top left", "in the upper left corner"],
    (1, 0): ["at the top", "at the top of the picture", "in the top middle"],
    (2, 0): ["in the top right corner", "at the top right", "in the upper right corner"],
    (0, 1): ["on the left", "at the left side", "on the left side"],
    (1, 1): ["in the centre", "in the center", "in the middle"],
    (2, 1): ["on the right", "at the right side", "on the right side"],
    (0, 2): ["in the bottom left corner", "at the bottom left", "in the lower left corner"],
    (1, 2): ["at the bottom", "at the bottom of the picture", "in the bottom middle"],
    (2, 2): ["in the bottom right corner", "at the bottom right", "in the lower right corner"],
}
GRID = (0.2, 0.5, 0.8)


def _dist(a, b):
    return math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))


# ----------------------------------------------------------------- descriptions

def _pick_colours(rng, n):
    return rng.sample(COLOUR_NAMES, n)


def _pick_bg(rng, shape_cols):
    ok = [b for b in BG_NAMES
          if all(_dist(BG_COLOURS[b], COLOURS[c]) > MIN_SHAPE_BG_DIST for c in shape_cols)]
    if not ok:   # e.g. white + black + purple: take the background farthest from all of them
        ok = [max(BG_NAMES, key=lambda b: min(_dist(BG_COLOURS[b], COLOURS[c]) for c in shape_cols))]
    if rng.random() < 0.6 or len(ok) < 2:
        return {"split": 0, "c1": rng.choice(ok), "c2": None, "pos": 0.5}
    c1, c2 = rng.sample(ok, 2)
    while _dist(BG_COLOURS[c1], BG_COLOURS[c2]) < 60:
        c1, c2 = rng.sample(ok, 2)
    return {"split": rng.choice([1, 2]), "c1": c1, "c2": c2, "pos": rng.uniform(0.35, 0.65)}


def _size(rng, allowed=("small", "medium", "large")):
    s = rng.choice(allowed)
    return s, rng.uniform(*SIZE_R[s])


def _one(rng):
    shape = rng.choice(SHAPES)
    colour = rng.choice(COLOUR_NAMES)
    size, r = _size(rng)
    if rng.random() < 0.75:
        cell = (rng.randrange(3), rng.randrange(3))
        cx = GRID[cell[0]] + rng.uniform(-0.05, 0.05)
        cy = GRID[cell[1]] + rng.uniform(-0.05, 0.05)
    else:
        cell = None
        cx, cy = rng.uniform(0, 1), rng.uniform(0, 1)
    cx = min(max(cx, r + 0.02), 1 - r - 0.02)
    cy = min(max(cy, r + 0.02), 1 - r - 0.02)
    return {"kind": "one", "shapes": [dict(shape=shape, colour=colour, size=size, cx=cx, cy=cy, r=r)],
            "cell": cell, "relation": None, "draw": [0]}


def _line(rng, n, axis, sizes):
    """n shapes along axis ('v': top to bottom, 'h': left to right), non-overlapping."""
    rs = [rng.uniform(*SIZE_R[s]) for s in sizes]
    gaps = [rng.uniform(0.03, 0.12) for _ in range(n - 1)]
    total = 2 * sum(rs) + sum(gaps)
    free = max(0.0, 1 - 0.04 - total)
    t = 0.02 + rng.uniform(0, free)
    along = []
    for i in range(n):
        along.append(t + rs[i])
        t += 2 * rs[i] + (gaps[i] if i < n - 1 else 0)
    rmax = max(rs)
    across0 = rng.uniform(rmax + 0.02, 1 - rmax - 0.02)
    out = []
    for i in range(n):
        a = min(max(across0 + rng.uniform(-0.06, 0.06), rs[i] + 0.02), 1 - rs[i] - 0.02)
        cx, cy = (a, along[i]) if axis == "v" else (along[i], a)
        out.append((cx, cy, rs[i]))
    return out


def _rel(rng):
    u = rng.random()
    cols = _pick_colours(rng, 2)
    if u < 0.2:   # inside
        cont = rng.choice(CONTAINERS)
        inner = rng.choice(SHAPES)
        R = rng.uniform(0.17, 0.21)
        r = R * rng.uniform(0.33, 0.42) * (0.8 if cont == "ring" else 1.0)
        cx = rng.uniform(R + 0.02, 1 - R - 0.02)
        cy = rng.uniform(R + 0.02, 1 - R - 0.02)
        a = dict(shape=inner, colour=cols[0], size="small", cx=cx, cy=cy, r=r)
        b = dict(shape=cont, colour=cols[1], size="large", cx=cx, cy=cy, r=R)
        return {"kind": "rel", "shapes": [a, b], "relation": ("inside", 0, 1), "draw": [1, 0], "cell": None}
    axis = "v" if u < 0.6 else "h"
    sizes = [rng.choice(["small", "medium", "large"]) for _ in range(2)]
    (x0, y0, r0), (x1, y1, r1) = _line(rng, 2, axis, sizes)
    shapes = [dict(shape=rng.choice(SHAPES), colour=cols[i], size=sizes[i], cx=c[0], cy=c[1], r=c[2])
              for i, c in enumerate([(x0, y0, r0), (x1, y1, r1)])]
    rel = ("above" if axis == "v" else "left of", 0, 1)   # shape 0 is above / left of shape 1
    return {"kind": "rel", "shapes": shapes, "relation": rel, "draw": [0, 1], "cell": None}


def _three(rng):
    axis = rng.choice(["v", "h"])
    cols = _pick_colours(rng, 3)
    sizes = [rng.choice(["small", "medium"]) for _ in range(3)]
    pos = _line(rng, 3, axis, sizes)
    shapes = [dict(shape=rng.choice(SHAPES), colour=cols[i], size=sizes[i], cx=p[0], cy=p[1], r=p[2])
              for i, p in enumerate(pos)]
    return {"kind": "three", "shapes": shapes, "relation": ("column" if axis == "v" else "row", 0, 1, 2),
            "draw": [0, 1, 2], "cell": None}


def heldout_parts(scene):
    """The held-out compositions a scene contains (empty list: a training scene)."""
    parts = []
    for s in scene["shapes"]:
        if (s["colour"], s["shape"]) in HELDOUT_COLOUR_SHAPE:
            parts.append(("colour_shape", s["colour"], s["shape"]))
    rel = scene["relation"]
    if rel is not None:
        if rel[0] == "inside":
            a, b = scene["shapes"][rel[1]]["shape"], scene["shapes"][rel[2]]["shape"]
            if (a, b) in HELDOUT_INSIDE:
                parts.append(("inside", a, b))
        else:
            axis = "v" if rel[0] in ("above", "column") else "h"
            sh = [s["shape"] for s in scene["shapes"]]
            for i in range(len(sh)):
                for j in range(i + 1, len(sh)):
                    if (frozenset({sh[i], sh[j]}), axis) in HELDOUT_PAIR_AXIS:
                        parts.append(("pair_axis", sh[i], sh[j], axis))
    return parts


KIND_P = (("one", 0.35), ("rel", 0.5), ("three", 0.15))


def sample_scene(rng, split="train", kind=None):
    """One scene description. split: 'train' (no held-out composition) or 'heldout' (>= 1)."""
    while True:
        k = kind
        if k is None:
            u, acc = rng.random(), 0.0
            for name, p in KIND_P:
                acc += p
                if u < acc:
                    k = name
                    break
        sc = {"one": _one, "rel": _rel, "three": _three}[k](rng)
        ho = heldout_parts(sc)
        if (split == "train") == (len(ho) == 0):
            break
    sc["bg"] = _pick_bg(rng, [s["colour"] for s in sc["shapes"]])
    return sc


# --------------------------------------------------------------------- captions

def _np(rng, s, say_size=True, article=True):
    words = []
    if say_size and s["size"] in ("small", "large") and rng.random() < 0.6:
        words.append(rng.choice({"small": ["small", "small", "little", "tiny"],
                                 "large": ["large", "large", "big"]}[s["size"]]))
    words.append(s["colour"] if s["colour"] != "gray" else rng.choice(["gray", "grey"]))
    words.append(s["shape"])
    if article:
        words.insert(0, "an" if words[0][0] in "aeiou" else "a")
    return " ".join(words)


def _bg_phrase(rng, bg):
    def nm(c):
        return c.replace("gray", rng.choice(["gray", "grey"])) if "gray" in c else c
    if bg["split"] == 0:
        return rng.choice([f"on a {nm(bg['c1'])} background", f"on {nm(bg['c1'])}",
                           f"with a {nm(bg['c1'])} background"])
    return rng.choice([f"on a {nm(bg['c1'])} and {nm(bg['c2'])} background",
                       f"on a two-tone {nm(bg['c1'])} and {nm(bg['c2'])} background"])


def caption(scene, rng):
    """A caption for the scene; rng picks the paraphrase (same scene, many captions)."""
    art = rng.random() < 0.85
    sh = scene["shapes"]
    k = scene["kind"]
    if k == "one":
        t = _np(rng, sh[0], article=art)
        if scene["cell"] is not None and rng.random() < 0.9:
            pos = rng.choice(POSITIONS[scene["cell"]])
            t = f"{pos}, {t}" if rng.random() < 0.15 else f"{t} {pos}"
    elif k == "rel":
        rel = scene["relation"]
        A = _np(rng, sh[rel[1]], say_size=rel[0] != "inside", article=art)
        B = _np(rng, sh[rel[2]], say_size=rel[0] != "inside", article=art)
        if rel[0] == "above":
            t = rng.choice([f"{A} above {B}", f"{A} on top of {B}", f"{A} over {B}",
                            f"{B} below {A}", f"{B} under {A}", f"{B} beneath {A}"])
        elif rel[0] == "left of":
            t = rng.choice([f"{A} to the left of {B}", f"{A} left of {B}", f"{A} on the left of {B}",
                            f"{B} to the right of {A}", f"{B} right of {A}", f"{B} on the right of {A}"])
        else:
            t = rng.choice([f"{A} inside {B}", f"{A} in {B}", f"{A} within {B}",
                            f"{B} with {A} inside", f"{B} containing {A}", f"{B} around {A}"])
    else:
        nps = [_np(rng, s, article=art) for s in sh]
        if scene["relation"][0] == "row":
            t = rng.choice([f"{nps[0]}, {nps[1]} and {nps[2]} in a row",
                            f"{nps[0]}, {nps[1]} and {nps[2]} from left to right",
                            f"from left to right: {nps[0]}, {nps[1]}, {nps[2]}"])
        else:
            t = rng.choice([f"{nps[0]} above {nps[1]} above {nps[2]}",
                            f"{nps[0]}, {nps[1]} and {nps[2]} from top to bottom",
                            f"from top to bottom: {nps[0]}, {nps[1]}, {nps[2]}"])
    if rng.random() < 0.5:
        t = f"{t} {_bg_phrase(rng, scene['bg'])}"
    if rng.random() < 0.08:
        t = rng.choice(["a picture of ", "an image of ", "a drawing of "]) + t
    return t


def all_caption_words():
    """Every word (and punctuation mark) a caption can contain, for the tokenizer."""
    import re
    words = set(SHAPES) | set(COLOUR_NAMES) | {"grey"}
    for b in BG_NAMES:
        words |= set(b.split())
    for ph in POSITIONS.values():
        for p in ph:
            words |= set(p.split())
    extra = ("a an small little tiny large big above on top of over below under beneath to the left "
             "right inside in within with containing around and from row top bottom background two-tone "
             "picture image drawing , :")
    words |= set(extra.split())
    out = set()
    for w in words:  # CLIP's pre-tokenizer splits "two-tone" into two, two-tone and punctuation
        out |= set(re.findall(r"[a-z]+|[^\sa-z]+", w))
    return sorted(out)


# ------------------------------------------------------------------- tensors

MAX_SHAPES = 3


def scene_params(scene):
    """Flat numbers for the renderer: per draw slot (type, colour, cx, cy, r), then background."""
    slots = []
    for i in scene["draw"]:
        s = scene["shapes"][i]
        slots.append((SHAPES.index(s["shape"]), COLOUR_NAMES.index(s["colour"]), s["cx"], s["cy"], s["r"]))
    while len(slots) < MAX_SHAPES:
        slots.append((-1, 0, 0.5, 0.5, 0.1))
    bg = scene["bg"]
    c2 = bg["c2"] if bg["c2"] is not None else bg["c1"]
    return slots, (BG_NAMES.index(bg["c1"]), BG_NAMES.index(c2), bg["split"], bg["pos"])


def params_to_tensors(params_list, device="cpu"):
    import torch
    types = torch.tensor([[s[0] for s in p[0]] for p in params_list], dtype=torch.long)
    cols = torch.tensor([[s[1] for s in p[0]] for p in params_list], dtype=torch.long)
    geo = torch.tensor([[s[2:] for s in p[0]] for p in params_list], dtype=torch.float32)
    bgi = torch.tensor([p[1][:3] for p in params_list], dtype=torch.long)
    bgp = torch.tensor([p[1][3] for p in params_list], dtype=torch.float32)
    return {k: v.to(device) for k, v in dict(types=types, cols=cols, geo=geo, bgi=bgi, bgp=bgp).items()}


# -------------------------------------------------------------------- render

def _sdfs(qx, qy):
    """All shape SDFs in local units (shape radius 1, y UP), stacked in SHAPES order."""
    import torch
    L = torch.sqrt(qx * qx + qy * qy)
    circle = L - 1.0
    b = 0.85
    dx, dy = qx.abs() - b, qy.abs() - b
    square = torch.sqrt(dx.clamp(min=0) ** 2 + dy.clamp(min=0) ** 2) + torch.maximum(dx, dy).clamp(max=0)
    # equilateral triangle, pointing up (Inigo Quilez), half side 1.0, shifted so the bbox is centred
    k = math.sqrt(3.0)
    r = 1.0
    px = qx.abs() - r
    py = (qy + 0.29) + r / k
    flip = (px + k * py) > 0
    px2 = torch.where(flip, (px - k * py) / 2, px)
    py2 = torch.where(flip, (-k * px - py) / 2, py)
    px2 = px2 - px2.clamp(-2 * r, 0.0)
    triangle = -torch.sqrt(px2 * px2 + py2 * py2) * torch.sign(py2)
    # five-pointed star (Inigo Quilez sdStar5), outer radius 1.05, inner ratio 0.45
    k1x, k1y = 0.809016994375, -0.587785252292
    k2x, k2y = -k1x, k1y
    sx, sy = qx.abs(), qy + 0.08
    d = (k1x * sx + k1y * sy).clamp(min=0) * 2
    sx, sy = sx - d * k1x, sy - d * k1y
    d = (k2x * sx + k2y * sy).clamp(min=0) * 2
    sx, sy = sx - d * k2x, sy - d * k2y
    sx = sx.abs()
    R, rf = 1.08, 0.45
    sy = sy - R
    bax, bay = rf * (-k1y) * R, rf * k1x * R - R
    h = ((sx * bax + sy * bay) / (bax * bax + bay * bay)).clamp(0.0, 1.0)
    ex, ey = sx - bax * h, sy - bay * h
    star = torch.sqrt(ex * ex + ey * ey) * torch.sign(sy * bax - sx * bay)
    # heart (Inigo Quilez sdHeart), scaled so it spans about [-1, 1]
    s = 0.58
    hx, hy = qx.abs() * s, qy * s + 0.56
    up = (hy + hx) > 1.0
    d1 = torch.sqrt((hx - 0.25) ** 2 + (hy - 0.75) ** 2) - math.sqrt(2.0) / 4
    m = (hx + hy).clamp(min=0) * 0.5
    d2 = torch.sqrt(torch.minimum(hx ** 2 + (hy - 1.0) ** 2, (hx - m) ** 2 + (hy - m) ** 2)) * torch.sign(hx - hy)
    heart = torch.where(up, d1, d2) / s
    ring = (L - 0.75).abs() - 0.25
    diamond = (qx.abs() + qy.abs() - 1.05) / math.sqrt(2.0)
    return torch.stack([circle, square, triangle, star, heart, ring, diamond], 0)


def render(t, height=256, width=256):
    """Render a batch: t from params_to_tensors (on any device). Returns float (B,3,H,W) in [0,1]."""
    import torch
    dev = t["types"].device
    B = t["types"].shape[0]
    pal = torch.tensor([COLOURS[c] for c in COLOUR_NAMES], dtype=torch.float32, device=dev) / 255
    bpal = torch.tensor([BG_COLOURS[c] for c in BG_NAMES], dtype=torch.float32, device=dev) / 255
    unit = float(min(height, width))
    ys = (torch.arange(height, device=dev, dtype=torch.float32) + 0.5) / height
    xs = (torch.arange(width, device=dev, dtype=torch.float32) + 0.5) / width
    Y = ys.view(1, height, 1)
    X = xs.view(1, 1, width)
    # background
    c1 = bpal[t["bgi"][:, 0]].view(B, 3, 1, 1)
    c2 = bpal[t["bgi"][:, 1]].view(B, 3, 1, 1)
    split = t["bgi"][:, 2].view(B, 1, 1)
    pos = t["bgp"].view(B, 1, 1)
    coord = torch.where(split == 1, Y.expand(B, height, width), X.expand(B, height, width))
    edge = (coord - pos) * torch.where(split == 1, torch.tensor(float(height), device=dev),
                                        torch.tensor(float(width), device=dev))
    a2 = torch.where(split == 0, torch.zeros_like(edge), (edge + 0.5).clamp(0, 1)).unsqueeze(1)
    img = c1 * (1 - a2) + c2 * a2
    for k in range(t["types"].shape[1]):
        typ = t["types"][:, k]
        cx = t["geo"][:, k, 0].view(B, 1, 1)
        cy = t["geo"][:, k, 1].view(B, 1, 1)
        r = t["geo"][:, k, 2].view(B, 1, 1)
        rpx = r * unit
        qx = (X - cx) * width / rpx
        qy = -(Y - cy) * height / rpx
        allsd = _sdfs(qx, qy)                                   # (7, B, H, W)
        sd = allsd.gather(0, typ.clamp(min=0).view(1, B, 1, 1).expand(1, B, height, width))[0]
        alpha = (0.5 - sd * rpx).clamp(0, 1) * (typ >= 0).float().view(B, 1, 1)
        col = pal[t["cols"][:, k]].view(B, 3, 1, 1)
        alpha = alpha.unsqueeze(1)
        img = img * (1 - alpha) + col * alpha
    return img


def make_scenes(seed, n, split="train", kind=None):
    rng = random.Random(seed)
    return [sample_scene(rng, split, kind) for _ in range(n)]


def scene_to_json(sc):
    """A JSON-friendly copy (tuples become lists)."""
    import copy
    d = copy.deepcopy(sc)
    d["relation"] = list(d["relation"]) if d["relation"] else None
    d["cell"] = list(d["cell"]) if d["cell"] else None
    return d
