"""The demo model: SD-1.x architecture (diffusers / transformers classes) at small widths.

  VAE           AutoencoderKL, 4 blocks (8x down-sampling), 4 latent channels
  text encoder  CLIPTextModel, hidden 256, 4 layers, 4 heads, MLP 768, 77 positions, quick_gelu
  UNet          UNet2DConditionModel, SD-1.x block types, widths 64/128/160,
                cross-attention to the 256-wide text states

Shipped = text encoder + UNet + VAE decoder (+ post_quant_conv); the VAE encoder
is optional. Budget: 24 MB at Q8_0 (~1.07 bytes/param) -> at most ~18M params.
Checkpoints are directories of fp16 safetensors shards plus meta.json
(configs, scaling factor, steps and GPU seconds per stage); see save_ckpt.
"""
import json
import os

SD_SCHEDULER = dict(num_train_timesteps=1000, beta_start=0.00085, beta_end=0.012,
                    beta_schedule="scaled_linear", prediction_type="epsilon",
                    clip_sample=False, set_alpha_to_one=False, steps_offset=1)


def scheduler(cls):
    """A diffusers scheduler of class cls with SD's noise schedule (only the keys cls takes)."""
    import inspect
    keys = inspect.signature(cls.__init__).parameters
    return cls(**{k: v for k, v in SD_SCHEDULER.items() if k in keys})


def default_configs(vocab_size, bos, eos):
    vae = dict(in_channels=3, out_channels=3,
               down_block_types=["DownEncoderBlock2D"] * 4, up_block_types=["UpDecoderBlock2D"] * 4,
               block_out_channels=[32, 64, 96, 96], layers_per_block=1, act_fn="silu",
               latent_channels=4, norm_num_groups=32, sample_size=256, scaling_factor=1.0)
    text = dict(vocab_size=vocab_size, hidden_size=256, intermediate_size=768, num_hidden_layers=4,
                num_attention_heads=4, max_position_embeddings=77, hidden_act="quick_gelu",
                projection_dim=256, bos_token_id=bos, eos_token_id=eos, pad_token_id=eos)
    unet = dict(sample_size=32, in_channels=4, out_channels=4,
                down_block_types=["CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "DownBlock2D"],
                up_block_types=["UpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D"],
                block_out_channels=[64, 128, 160], layers_per_block=2, cross_attention_dim=256,
                attention_head_dim=4, norm_num_groups=32)
    return dict(vae=vae, text=text, unet=unet)


def build(configs):
    from diffusers import AutoencoderKL, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel
    vae = AutoencoderKL(**configs["vae"])
    text = CLIPTextModel(CLIPTextConfig(**configs["text"]))
    unet = UNet2DConditionModel(**configs["unet"])
    return vae, text, unet


def param_counts(vae, text, unet):
    n = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    dec = n(vae.decoder) + n(vae.post_quant_conv)
    enc = n(vae.encoder) + n(vae.quant_conv)
    big = lambda m: sum(p.numel() for p in m.parameters() if p.dim() >= 2)  # noqa: E731
    shipped = n(text) + n(unet) + dec
    shipped_big = big(text) + big(unet) + big(vae.decoder) + big(vae.post_quant_conv)
    est = shipped_big * 34 / 32 + (shipped - shipped_big) * 4   # Q8_0 for matrices/convs, F32 rest
    return dict(text=n(text), unet=n(unet), vae_decoder=dec, vae_encoder=enc, shipped=shipped,
                shipped_q8_bytes_est=int(est))


# ------------------------------------------------------------------ checkpoints

def save_ckpt(outdir, parts, meta, max_shard=15 * 2 ** 20):
    """parts: {prefix: state_dict}. Writes fp16 shards weights-NN.safetensors + meta.json."""
    import torch
    from safetensors.torch import save_file
    os.makedirs(outdir, exist_ok=True)
    for f in os.listdir(outdir):
        if f.startswith("weights-") and f.endswith(".safetensors"):
            os.remove(os.path.join(outdir, f))
    shards, cur, size = [], {}, 0
    for prefix, sd in parts.items():
        for k, v in sd.items():
            t = v.detach().to("cpu", torch.float16).contiguous()
            b = t.numel() * 2
            if cur and size + b > max_shard:
                shards.append(cur)
                cur, size = {}, 0
            cur[f"{prefix}.{k}"] = t
            size += b
    if cur:
        shards.append(cur)
    for i, sh in enumerate(shards):
        save_file(sh, os.path.join(outdir, f"weights-{i:02d}.safetensors"))
    with open(os.path.join(outdir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


def load_ckpt(indir):
    """Returns (meta, {prefix: state_dict in float32})."""
    import torch
    from safetensors.torch import load_file
    with open(os.path.join(indir, "meta.json")) as f:
        meta = json.load(f)
    parts = {}
    for fn in sorted(os.listdir(indir)):
        if fn.startswith("weights-") and fn.endswith(".safetensors"):
            for k, v in load_file(os.path.join(indir, fn)).items():
                prefix, rest = k.split(".", 1)
                parts.setdefault(prefix, {})[rest] = v.to(torch.float32)
    return meta, parts


def load_models(indir, device="cpu", use_ema=True):
    """Models ready for inference from a checkpoint dir (EMA text/UNet weights when present)."""
    meta, parts = load_ckpt(indir)
    vae, text, unet = build(meta["configs"])
    vae.load_state_dict(parts["vae"])
    t = "text_ema" if use_ema and "text_ema" in parts else "text"
    u = "unet_ema" if use_ema and "unet_ema" in parts else "unet"
    if t in parts:
        text.load_state_dict(parts[t], strict=False)
    if u in parts:
        unet.load_state_dict(parts[u])
    return meta, vae.to(device).eval(), text.to(device).eval(), unet.to(device).eval()
