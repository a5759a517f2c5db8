"""diffusers' pictures of the SHIPPED demo model, for the engine parity test
(tests/test_demo_parity.c). Heavy (torch + diffusers + gguf); runs on the lent
GPU machine's CPU in float32, never in CI:

    python3 tools/demo_sd/gen_parity.py assets/demo-sd/demo-sd-q8_0.gguf OUT.safetensors

It reads the very weights petrel ships (the GGUF: Q8_0 dequantized to
float32 by gguf-py, petrel's padded OHWI conv rows turned back into torch's
[c_out][c_in][kh][kw] with the logical shapes the file records under
"sd.conv.<name>"), builds the diffusers/transformers models from the
training configs (tools/demo_sd/ckpt/meta.json), and runs
StableDiffusionPipeline with the model's own defaults (DPM++ 2M Karras, 20
steps, CFG 6, 256x256) from given initial latents. So the test judges the
engine alone: same weights, same latents, same sampler; what differs is
petrel's int8 activations on the Q8_0 layers (the reason the test compares
by PSNR) and float rounding.

Writes: for each case k: case.k.init [1,4,32,32] (the unscaled initial
latent), case.k.latent [1,4,32,32] (final), case.k.image [1,256,256,3] in
0..1; the prompts and settings in the file's __metadata__ (JSON).
"""
import json
import os
import sys

import numpy as np
import torch
from gguf import GGUFReader
from gguf.quants import dequantize
from safetensors.torch import save_file

from diffusers import (AutoencoderKL, DPMSolverMultistepScheduler, StableDiffusionPipeline,
                       UNet2DConditionModel)
from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = [("a red circle above a blue square", "", 0),
         ("a small yellow star in the top left corner on a dark green background", "", 1),
         ("a large white ring on a navy background", "a red square", 2)]
SD_SCHEDULER = dict(num_train_timesteps=1000, beta_start=0.00085, beta_end=0.012,
                    beta_schedule="scaled_linear", prediction_type="epsilon", clip_sample=False,
                    set_alpha_to_one=False, steps_offset=1)


def gguf_tensors(path):
    """{canonical name: float32 torch tensor in torch layout}."""
    r = GGUFReader(path)
    conv = {}
    for name, f in r.fields.items():
        if name.startswith("sd.conv."):
            conv[name[len("sd.conv."):]] = [int(f.parts[i][0]) for i in f.data]
    out = {}
    for t in r.tensors:
        a = dequantize(t.data, t.tensor_type).astype(np.float32)
        if t.name in conv:   # rows of (ky, kx, c_in), zero-padded -> [o][i][kh][kw]
            o, i, kh, kw = conv[t.name]
            a = a.reshape(o, -1)[:, :kh * kw * i].reshape(o, kh, kw, i).transpose(0, 3, 1, 2)
        out[t.name] = torch.from_numpy(np.ascontiguousarray(a))
    return out


def load_part(model, tensors, prefix, strip=""):
    sd = {}
    for k, v in tensors.items():
        if k.startswith(prefix):
            key = k[len(prefix):]
            if strip and key.startswith(strip):
                key = key[len(strip):]
            sd[key] = v
    own = model.state_dict()
    for k in list(sd):
        if k in own and own[k].shape != sd[k].shape:
            sd[k] = sd[k].reshape(own[k].shape)   # [c,c] attention as [c,c,1,1], etc.
    missing, unexpected = model.load_state_dict(sd, strict=False)
    missing = [m for m in missing if not m.startswith(("encoder.", "quant_conv."))
               and "position_ids" not in m]
    assert not missing and not unexpected, (prefix, missing[:5], unexpected[:5])


def models_from_gguf(gguf_path):
    """(vae, text encoder, unet) in float32 with the GGUF's weights, configs from ckpt/meta.json."""
    with open(os.path.join(HERE, "ckpt", "meta.json")) as f:
        cfg = json.load(f)["configs"]
    tensors = gguf_tensors(gguf_path)
    text = CLIPTextModel(CLIPTextConfig(**cfg["text"])).eval()
    text_prefix = "text_model." if not hasattr(text, "text_model") else ""
    load_part(text, tensors, "text_encoder.", strip=text_prefix)
    unet = UNet2DConditionModel(**cfg["unet"]).eval()
    load_part(unet, tensors, "unet.")
    vae = AutoencoderKL(**cfg["vae"]).eval()
    load_part(vae, tensors, "vae.")
    return vae, text, unet


def main(gguf_path, out):
    vae, text, unet = models_from_gguf(gguf_path)
    tok = CLIPTokenizer.from_pretrained(os.path.join(HERE, "tokenizer"))
    sched = DPMSolverMultistepScheduler.from_config(SD_SCHEDULER, use_karras_sigmas=True,
                                                    algorithm_type="dpmsolver++", solver_order=2)
    pipe = StableDiffusionPipeline(vae=vae, text_encoder=text, tokenizer=tok, unet=unet,
                                   scheduler=sched, safety_checker=None, feature_extractor=None,
                                   requires_safety_checker=False)
    ref, meta = {}, []
    gen = torch.Generator().manual_seed(2026)
    for k, (prompt, negative, seed) in enumerate(CASES):
        init = torch.randn(1, 4, 32, 32, generator=gen)
        final = {}

        def grab(p, i, t, kw):
            final["latent"] = kw["latents"].detach().clone()
            return kw
        with torch.no_grad():
            img = pipe(prompt, negative_prompt=negative, num_inference_steps=20, guidance_scale=6.0,
                       height=256, width=256, latents=init.clone(), output_type="np",
                       callback_on_step_end=grab).images
        ref[f"case.{k}.init"] = init.contiguous()
        ref[f"case.{k}.latent"] = final["latent"].to(torch.float32).contiguous()
        ref[f"case.{k}.image"] = torch.from_numpy(np.ascontiguousarray(img)).to(torch.float32)
        meta.append(dict(prompt=prompt, negative=negative, sampler="dpmpp_2m", steps=20, cfg=6.0,
                         width=256, height=256))
    save_file(ref, out, metadata={"cases": json.dumps(meta)})
    print("wrote", out, len(ref), "arrays")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
