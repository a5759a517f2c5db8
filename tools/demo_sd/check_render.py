"""Render held-out and training scenes on CPU and (if present) GPU, check both agree,
and write a contact sheet of ground-truth renders with their captions.

usage: python3 check_render.py OUT.png [N]
"""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scenes  # noqa: E402


def main():
    import numpy as np
    import torch
    import sample
    out = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 24
    rng = random.Random(5)
    scs = [scenes.sample_scene(rng, "train") for _ in range(n - 8)] + \
          [scenes.sample_scene(rng, "heldout") for _ in range(8)]
    caps = [scenes.caption(s, rng) for s in scs]
    t = scenes.params_to_tensors([scenes.scene_params(s) for s in scs])
    cpu = scenes.render(t, 256, 256)
    if torch.cuda.is_available():
        gpu = scenes.render({k: v.cuda() for k, v in t.items()}, 256, 256).cpu()
        print("cpu vs gpu max abs diff", float((cpu - gpu).abs().max()))
    other = scenes.render(t, 192, 320)
    print("non-square render", tuple(other.shape))
    ims = (cpu.permute(0, 2, 3, 1).numpy() * 255 + 0.5).astype(np.uint8)
    sample.sheet(list(ims), caps, out, cols=6)
    print("wrote", out)


if __name__ == "__main__":
    main()
