"""Reference fixture of the image engine: tiny seeded SD-shaped pipelines made
with diffusers / transformers, and what they compute. Heavy (torch, diffusers);
runs on the lent GPU machine (on its CPU, float32), never in CI:

    python3 tools/gen_sd_fixture.py OUTDIR        # -> OUTDIR/sd-tiny/...

Writes (committed as tests/data/sd-tiny/):
  model/    StableDiffusionPipeline folder (SD 1.x block types, quick_gelu CLIP,
            epsilon prediction), float32 safetensors
  model-v/  the SD 2.x-style variant: gelu CLIP, pad id 0, linear projections,
            heads per level, v-prediction
  taesd/    AutoencoderTiny folder (8 channels per block, real block counts)
  ref.safetensors  reference arrays (float32; ids int32) in torch layouts
            (NCHW images and latents, [batch, tokens, dim] text states)
  ref.json  prompts, settings, scheduler tables, versions

Every 1-D parameter (norm weights and biases, linear and conv biases) is
perturbed away from its default (ones / zeros), so a kernel that ignored a
norm's scale or shift, or read the wrong channel's, fails the tests.
"""
import json
import os
import sys

import numpy as np
import torch

import diffusers
import transformers
from diffusers import (AutoencoderKL, AutoencoderTiny, DDIMScheduler, DPMSolverMultistepScheduler,
                       EulerAncestralDiscreteScheduler, EulerDiscreteScheduler, LCMScheduler,
                       PNDMScheduler, StableDiffusionPipeline, UNet2DConditionModel)
from safetensors.torch import save_file
from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
TOKENIZER = os.path.join(HERE, "demo_sd", "tokenizer")

# SD 1.5's scheduler config (PNDM): what StableDiffusionPipeline users
# from_config every other sampler from.
SD_SCHEDULER = dict(num_train_timesteps=1000, beta_start=0.00085, beta_end=0.012,
                    beta_schedule="scaled_linear", clip_sample=False, set_alpha_to_one=False,
                    skip_prk_steps=True, steps_offset=1, trained_betas=None,
                    prediction_type="epsilon")

SAMPLERS = {
    "euler": (EulerDiscreteScheduler, {}),
    "euler_a": (EulerAncestralDiscreteScheduler, {}),
    "dpmpp_2m": (DPMSolverMultistepScheduler,
                 dict(use_karras_sigmas=True, algorithm_type="dpmsolver++", solver_order=2)),
    "ddim": (DDIMScheduler, {}),
    "lcm": (LCMScheduler, {}),
}
TABLE_STEPS = [1, 2, 3, 4, 7, 10, 20, 25, 50]

PROMPTS = [
    "a red circle above a blue square",
    "A Small YELLOW star, in the top-left corner!!",
    "two green triangles 123 and 4.5 rings",
    "it's a heart's shape; they're here, we'll see",
    "caf\u00e9 na\u00efve \u00fcn\u00efcode \u2192 arrows \u2605 \u65e5\u672c",
    "   lots\tof   whitespace\n here  ",
    "",
    "a purple ring inside an orange square " * 12,   # > 75 tokens: truncated
]


def perturb(module, gen, scale=0.1):
    """Move every 1-D parameter off its default so norms and biases matter."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if p.dim() == 1:
                p.add_(torch.randn(p.shape, generator=gen) * scale)
    return module


def clip_config(act, vocab, bos, eos, pad):
    return CLIPTextConfig(vocab_size=vocab, hidden_size=32, intermediate_size=48,
                          num_hidden_layers=2, num_attention_heads=2, max_position_embeddings=77,
                          hidden_act=act, projection_dim=32, bos_token_id=bos, eos_token_id=eos,
                          pad_token_id=pad)


def unet_config(v):
    cfg = dict(sample_size=8, in_channels=4, out_channels=4,
               down_block_types=["CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "DownBlock2D"],
               up_block_types=["UpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D"],
               block_out_channels=[16, 32, 32], layers_per_block=2, cross_attention_dim=32,
               attention_head_dim=2, norm_num_groups=8)
    if v:
        cfg.update(use_linear_projection=True, attention_head_dim=[2, 4, 4])
    return cfg


VAE_CONFIG = dict(in_channels=3, out_channels=3,
                  down_block_types=["DownEncoderBlock2D"] * 4, up_block_types=["UpDecoderBlock2D"] * 4,
                  block_out_channels=[8, 16, 16, 16], layers_per_block=2, act_fn="silu",
                  latent_channels=4, norm_num_groups=4, sample_size=64, scaling_factor=0.18215)


class NoiseTap:
    """Records every randn_tensor a scheduler module draws (the ancestral
    noise), so the C side can be given the same numbers."""

    def __init__(self):
        self.drawn = []
        self.mods = [diffusers.schedulers.scheduling_euler_ancestral_discrete,
                     diffusers.schedulers.scheduling_lcm]
        self.orig = [m.randn_tensor for m in self.mods]

    def __enter__(self):
        def tap(orig):
            def f(*a, **k):
                t = orig(*a, **k)
                self.drawn.append(t.detach().clone())
                return t
            return f
        for m, o in zip(self.mods, self.orig):
            m.randn_tensor = tap(o)
        return self

    def __exit__(self, *exc):
        for m, o in zip(self.mods, self.orig):
            m.randn_tensor = o


def scheduler(name, prediction="epsilon"):
    cls, extra = SAMPLERS[name]
    return cls.from_config(dict(SD_SCHEDULER, prediction_type=prediction), **extra)


def f32(x):
    return x.detach().to(torch.float32).contiguous().cpu()


def main(out):
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1234)
    root = os.path.join(out, "sd-tiny")
    os.makedirs(root, exist_ok=True)
    ref, meta = {}, dict(versions=dict(torch=torch.__version__, diffusers=diffusers.__version__,
                                       transformers=transformers.__version__),
                         prompts=PROMPTS, scheduler_config=SD_SCHEDULER)

    tok = CLIPTokenizer.from_pretrained(TOKENIZER)
    tok_v = CLIPTokenizer.from_pretrained(TOKENIZER, pad_token="!")   # SD 2.x pads with id 0
    assert tok_v.pad_token_id == 0
    vocab = len(tok)
    bos, eos = tok.bos_token_id, tok.eos_token_id
    meta["tokenizer"] = dict(vocab=vocab, bos=bos, eos=eos, pad=tok.pad_token_id, pad_v=0)

    text = perturb(CLIPTextModel(clip_config("quick_gelu", vocab, bos, eos, eos)), gen).eval()
    text_v = perturb(CLIPTextModel(clip_config("gelu", vocab, bos, eos, 0)), gen).eval()
    for te in (text, text_v):
        # transformers 5 dropped CLIPTextModel's inner text_model module (and
        # the "text_model." key prefix) that diffusers' clip_skip code path
        # still reads: alias it without registering a submodule cycle
        if not hasattr(te, "text_model"):
            object.__setattr__(te, "text_model", te)
    unet = perturb(UNet2DConditionModel(**unet_config(False)), gen).eval()
    unet_v = perturb(UNet2DConditionModel(**unet_config(True)), gen).eval()
    vae = perturb(AutoencoderKL(**VAE_CONFIG), gen).eval()
    taesd = perturb(AutoencoderTiny(encoder_block_out_channels=(8, 8, 8, 8),
                                    decoder_block_out_channels=(8, 8, 8, 8),
                                    latent_channels=4), gen).eval()

    with torch.no_grad():
        # ---- CLIP: ids, last hidden state, penultimate + final norm
        for pre, tk, te in (("clip", tok, text), ("clipv", tok_v, text_v)):
            ids = tk(PROMPTS, padding="max_length", max_length=77, truncation=True,
                     return_tensors="pt").input_ids
            o = te(ids, output_hidden_states=True)
            ref[pre + ".ids"] = ids.to(torch.int32).contiguous()
            ref[pre + ".hidden"] = f32(o.last_hidden_state)
            ref[pre + ".penult"] = f32(te.text_model.final_layer_norm(o.hidden_states[-2]))

        # ---- UNet: one pass at a fractional timestep (Euler's are fractional)
        t_unet = 657.25
        meta["unet_timestep"] = t_unet
        for pre, un in (("unet", unet), ("unetv", unet_v)):
            lat = torch.randn(2, 4, 8, 8, generator=gen)
            cond = torch.randn(2, 77, 32, generator=gen)
            ref[pre + ".latent"], ref[pre + ".cond"] = lat, cond
            ref[pre + ".out"] = f32(un(lat, torch.tensor(t_unet), encoder_hidden_states=cond).sample)
            # non-square, batch 1
            lat2 = torch.randn(1, 4, 16, 8, generator=gen)
            ref[pre + ".latent2"] = lat2
            ref[pre + ".out2"] = f32(un(lat2, torch.tensor(t_unet), encoder_hidden_states=cond[:1]).sample)

        # ---- VAE decode / encode, TAESD decode / encode
        z = torch.randn(1, 4, 8, 8, generator=gen)
        ref["vae.latent"] = z
        ref["vae.out"] = f32(vae.decode(z).sample)
        z2 = torch.randn(1, 4, 8, 16, generator=gen)
        ref["vae.latent2"] = z2
        ref["vae.out2"] = f32(vae.decode(z2).sample)
        x = torch.rand(1, 3, 64, 64, generator=gen) * 2 - 1
        ref["vae.enc_in"] = x
        ref["vae.enc_mean"] = f32(vae.encode(x).latent_dist.mean)
        ref["taesd.out"] = f32(taesd.decode(z).sample)
        ref["taesd.enc_out"] = f32(taesd.encode(x).latents)

    # ---- sampler tables
    tables = {}
    for name in SAMPLERS:
        for pred in ("epsilon", "v_prediction"):
            s = scheduler(name, pred)
            rows = {}
            for n in TABLE_STEPS:
                try:
                    s.set_timesteps(n)
                except Exception as e:   # a step count the class refuses
                    rows[str(n)] = dict(error=str(e))
                    continue
                row = dict(timesteps=[float(t) for t in s.timesteps],
                           init_noise_sigma=float(s.init_noise_sigma))
                if hasattr(s, "sigmas") and s.sigmas is not None:
                    row["sigmas"] = [float(v) for v in s.sigmas]
                rows[str(n)] = row
            tables.setdefault(name, {})[pred] = rows
    meta["sampler_tables"] = tables
    meta["sampler_classes"] = {k: dict(cls=v[0].__name__, extra=v[1]) for k, v in SAMPLERS.items()}

    # ---- synthetic 4-step trajectories of each sampler (model outputs given)
    for pre, pred in (("sched", "epsilon"), ("schedv", "v_prediction")):
        for name in SAMPLERS:
            s = scheduler(name, pred)
            s.set_timesteps(4)
            x = torch.randn(1, 4, 8, 8, generator=gen) * s.init_noise_sigma
            ref[f"{pre}.{name}.x0"] = f32(x)
            g = torch.Generator().manual_seed(99)
            with NoiseTap() as tap:
                for k, t in enumerate(s.timesteps):
                    xin = s.scale_model_input(x, t)
                    ref[f"{pre}.{name}.xin.{k}"] = f32(xin)
                    mo = torch.randn(1, 4, 8, 8, generator=gen)
                    ref[f"{pre}.{name}.model_out.{k}"] = mo
                    n0 = len(tap.drawn)
                    x = s.step(mo, t, x, generator=g).prev_sample
                    if len(tap.drawn) > n0:
                        ref[f"{pre}.{name}.noise.{k}"] = f32(tap.drawn[-1])
                    ref[f"{pre}.{name}.x.{k}"] = f32(x)

    # ---- full pipelines: 4 steps at 64x64 from a given initial latent
    runs = {}
    pipes = {}
    for pre, te, tk, un, pred, clip_skip in (("pipe", text, tok, unet, "epsilon", None),
                                             ("pipev", text_v, tok_v, unet_v, "v_prediction", 1)):
        pipes[pre] = StableDiffusionPipeline(vae=vae, text_encoder=te, tokenizer=tk, unet=un,
                                             scheduler=scheduler("euler", pred), safety_checker=None,
                                             feature_extractor=None, requires_safety_checker=False)
        settings = [(name, 7.5) for name in SAMPLERS] if pre == "pipe" else \
            [("euler", 7.5), ("dpmpp_2m", 7.5)]
        if pre == "pipe":
            settings.append(("lcm", 1.0))   # no CFG (LCM / Turbo style)
        for name, cfg in settings:
            p = pipes[pre]
            p.scheduler = scheduler(name, pred)
            key = f"{pre}.{name}" + ("" if cfg != 1.0 else "_cfg1")
            init = torch.randn(1, 4, 8, 8, generator=gen)
            final = {}

            def grab(pipe, i, t, kw):
                final["latent"] = kw["latents"].detach().clone()
                return kw
            with NoiseTap() as tap, torch.no_grad():
                img = p(PROMPTS[0], negative_prompt="a green triangle", num_inference_steps=4,
                        guidance_scale=cfg, height=64, width=64, latents=init.clone(),
                        generator=torch.Generator().manual_seed(7), output_type="np",
                        clip_skip=clip_skip, callback_on_step_end=grab).images
            ref[key + ".init"] = init
            for i, n in enumerate(tap.drawn):
                ref[f"{key}.noise.{i}"] = f32(n)
            ref[key + ".latent"] = f32(final["latent"])
            ref[key + ".image"] = torch.from_numpy(np.ascontiguousarray(img)).to(torch.float32)
            runs[key] = dict(sampler=name, prompt=PROMPTS[0], negative="a green triangle", steps=4,
                             cfg=cfg, width=64, height=64, prediction=pred, clip_skip=clip_skip,
                             n_noise=len(tap.drawn))
    meta["pipelines"] = runs

    # ---- the folders
    pipes["pipe"].scheduler = PNDMScheduler.from_config(SD_SCHEDULER)
    pipes["pipe"].save_pretrained(os.path.join(root, "model"), safe_serialization=True)
    pipes["pipev"].scheduler = PNDMScheduler.from_config(dict(SD_SCHEDULER, prediction_type="v_prediction"))
    pipes["pipev"].save_pretrained(os.path.join(root, "model-v"), safe_serialization=True)
    taesd.save_pretrained(os.path.join(root, "taesd"), safe_serialization=True)
    # hub checkpoints (saved by transformers 4) name the text encoder's
    # tensors text_model.*; transformers 5 writes them without the prefix.
    # Keep the hub's names here (the loader accepts both; the demo model of
    # issue 12 has the new ones).
    from safetensors.torch import load_file
    for m in ("model", "model-v"):
        fn = os.path.join(root, m, "text_encoder", "model.safetensors")
        sd = load_file(fn)
        save_file({(k if k.startswith("text_model.") else "text_model." + k): v for k, v in sd.items()},
                  fn, metadata={"format": "pt"})

    save_file({k: v.contiguous().clone() for k, v in ref.items()}, os.path.join(root, "ref.safetensors"))
    with open(os.path.join(root, "ref.json"), "w") as f:
        json.dump(meta, f, indent=1)
    # hub folders carry the slow tokenizer's files too (transformers 5 writes
    # tokenizer.json only): vocab.json and merges.txt, as in tools/demo_sd
    import shutil
    for m in ("model", "model-v"):
        for fn in ("vocab.json", "merges.txt"):
            shutil.copy(os.path.join(TOKENIZER, fn), os.path.join(root, m, "tokenizer", fn))
    print("wrote", root, len(ref), "arrays")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
