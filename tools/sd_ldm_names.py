#!/usr/bin/env python3
"""sd_ldm_names.py — diffusers <-> LDM (original Stable Diffusion) tensor names.

The same tables as diffusers' convert_ldm_unet_checkpoint,
convert_ldm_vae_checkpoint, convert_ldm_clip_checkpoint and
convert_open_clip_checkpoint, run the other way (diffusers name -> LDM name),
for any config of the SD 1.x / 2.x block structure; the C reader
(engine/diffusion/sd_weights_ldm.c) maps back. Also the parameter shapes
of UNet2DConditionModel / AutoencoderKL / CLIPTextModel for a config
(used by make_sd15_random.py), without torch.

Canonical names carry a component prefix: "unet.", "vae.", "text_encoder."
(as engine/diffusion/sd_weights.h). Configs are dicts in diffusers'
config.json keys.

As a program: convert a diffusers folder to one LDM-layout .safetensors
    sd_ldm_names.py MODEL_DIR OUT.safetensors [--dtype f32|f16] [--sd2]
--sd2 writes the text encoder as OpenCLIP (cond_stage_model.model.*, fused
in_proj); otherwise as OpenAI CLIP (cond_stage_model.transformer.*).
What shapes cannot tell the reader (heads, GroupNorm groups, VAE scaling,
prediction type) goes into __metadata__ under petrel's keys (sd.unet.heads,
...) whenever it differs from the SD 1.x / 2.x defaults.
"""
import argparse
import json
import os
import sys

import numpy as np

UNET = "model.diffusion_model."
VAE = "first_stage_model."
CLIP1 = "cond_stage_model.transformer."
CLIP2 = "cond_stage_model.model."

RESNET = [("norm1.", "in_layers.0."), ("conv1.", "in_layers.2."), ("time_emb_proj.", "emb_layers.1."),
          ("norm2.", "out_layers.0."), ("conv2.", "out_layers.3."), ("conv_shortcut.", "skip_connection.")]
VAE_RESNET = [("conv_shortcut.", "nin_shortcut.")]
VAE_ATTN = [("group_norm.", "norm."), ("to_q.", "q."), ("to_k.", "k."), ("to_v.", "v."),
            ("to_out.0.", "proj_out."), ("query.", "q."), ("key.", "k."), ("value.", "v."),
            ("proj_attn.", "proj_out.")]


def _levels(unet_cfg):
    n = len(unet_cfg["block_out_channels"])
    types = unet_cfg.get("down_block_types") or ["CrossAttnDownBlock2D"] * (n - 1) + ["DownBlock2D"]
    return n, [t == "CrossAttnDownBlock2D" for t in types]


def unet_rules(cfg):
    """[(diffusers prefix, ldm prefix, suffix table)] for a UNet config."""
    n, attn = _levels(cfg)
    L = cfg.get("layers_per_block", 2)
    r = [("unet.time_embedding.linear_1.", UNET + "time_embed.0.", None),
         ("unet.time_embedding.linear_2.", UNET + "time_embed.2.", None),
         ("unet.conv_in.", UNET + "input_blocks.0.0.", None),
         ("unet.conv_norm_out.", UNET + "out.0.", None),
         ("unet.conv_out.", UNET + "out.2.", None),
         ("unet.mid_block.resnets.0.", UNET + "middle_block.0.", RESNET),
         ("unet.mid_block.attentions.0.", UNET + "middle_block.1.", None),
         ("unet.mid_block.resnets.1.", UNET + "middle_block.2.", RESNET)]
    for l in range(n):
        for j in range(L):
            i = 1 + l * (L + 1) + j
            r.append((f"unet.down_blocks.{l}.resnets.{j}.", f"{UNET}input_blocks.{i}.0.", RESNET))
            if attn[l]:
                r.append((f"unet.down_blocks.{l}.attentions.{j}.", f"{UNET}input_blocks.{i}.1.", None))
        if l < n - 1:
            r.append((f"unet.down_blocks.{l}.downsamplers.0.conv.", f"{UNET}input_blocks.{(l + 1) * (L + 1)}.0.op.", None))
    for b in range(n):
        a = attn[n - 1 - b]
        for j in range(L + 1):
            i = b * (L + 1) + j
            r.append((f"unet.up_blocks.{b}.resnets.{j}.", f"{UNET}output_blocks.{i}.0.", RESNET))
            if a:
                r.append((f"unet.up_blocks.{b}.attentions.{j}.", f"{UNET}output_blocks.{i}.1.", None))
        if b < n - 1:
            r.append((f"unet.up_blocks.{b}.upsamplers.0.conv.", f"{UNET}output_blocks.{b * (L + 1) + L}.{2 if a else 1}.conv.", None))
    return r


def vae_rules(cfg):
    n = len(cfg["block_out_channels"])
    L = cfg.get("layers_per_block", 2)
    r = []
    for s in ["encoder.conv_in.", "encoder.conv_out.", "decoder.conv_in.", "decoder.conv_out.", "quant_conv.", "post_quant_conv."]:
        r.append(("vae." + s, VAE + s, None))
    for p in ["encoder", "decoder"]:
        r += [(f"vae.{p}.conv_norm_out.", f"{VAE}{p}.norm_out.", None),
              (f"vae.{p}.mid_block.resnets.0.", f"{VAE}{p}.mid.block_1.", VAE_RESNET),
              (f"vae.{p}.mid_block.resnets.1.", f"{VAE}{p}.mid.block_2.", VAE_RESNET),
              (f"vae.{p}.mid_block.attentions.0.", f"{VAE}{p}.mid.attn_1.", VAE_ATTN)]
    for i in range(n):
        for j in range(L):
            r.append((f"vae.encoder.down_blocks.{i}.resnets.{j}.", f"{VAE}encoder.down.{i}.block.{j}.", VAE_RESNET))
        for j in range(L + 1):
            r.append((f"vae.decoder.up_blocks.{n - 1 - i}.resnets.{j}.", f"{VAE}decoder.up.{i}.block.{j}.", VAE_RESNET))
        if i < n - 1:
            r.append((f"vae.encoder.down_blocks.{i}.downsamplers.0.conv.", f"{VAE}encoder.down.{i}.downsample.conv.", None))
        if i > 0:
            r.append((f"vae.decoder.up_blocks.{n - 1 - i}.upsamplers.0.conv.", f"{VAE}decoder.up.{i}.upsample.conv.", None))
    return r


OPEN_CLIP_LAYER = [("layer_norm1.", "ln_1."), ("layer_norm2.", "ln_2."), ("self_attn.out_proj.", "attn.out_proj."),
                   ("mlp.fc1.", "mlp.c_fc."), ("mlp.fc2.", "mlp.c_proj.")]


def to_ldm(name, unet_cfg, vae_cfg, sd2=False):
    """LDM name of a canonical name; None for q/k/v of OpenCLIP (fused: see
    open_clip_in_proj) and for names with no LDM counterpart."""
    if name.startswith("text_encoder."):
        rest = name[len("text_encoder."):]
        if not sd2:
            return CLIP1 + rest
        emb = {"text_model.embeddings.token_embedding.weight": "token_embedding.weight",
               "text_model.embeddings.position_embedding.weight": "positional_embedding",
               "text_model.final_layer_norm.weight": "ln_final.weight",
               "text_model.final_layer_norm.bias": "ln_final.bias"}
        if rest in emb:
            return CLIP2 + emb[rest]
        pre = "text_model.encoder.layers."
        if not rest.startswith(pre):
            return None
        layer, tail = rest[len(pre):].split(".", 1)
        for d, o in OPEN_CLIP_LAYER:
            if tail.startswith(d):
                return f"{CLIP2}transformer.resblocks.{layer}.{o}{tail[len(d):]}"
        return None
    rules = unet_rules(unet_cfg) if name.startswith("unet.") else vae_rules(vae_cfg) if name.startswith("vae.") else []
    best = max((r for r in rules if name.startswith(r[0])), key=lambda r: len(r[0]), default=None)
    if best is None:
        return None
    d, l, tab = best
    rest = name[len(d):]
    for a, b in tab or []:
        if rest.startswith(a):
            return l + b + rest[len(a):]
    return l + rest


# ---- parameter shapes of the diffusers modules for a config ----

def _resnet(p, cin, cout, temb):
    s = {p + "norm1.weight": (cin,), p + "norm1.bias": (cin,),
         p + "conv1.weight": (cout, cin, 3, 3), p + "conv1.bias": (cout,),
         p + "norm2.weight": (cout,), p + "norm2.bias": (cout,),
         p + "conv2.weight": (cout, cout, 3, 3), p + "conv2.bias": (cout,)}
    if temb:
        s[p + "time_emb_proj.weight"] = (cout, temb)
        s[p + "time_emb_proj.bias"] = (cout,)
    if cin != cout:
        s[p + "conv_shortcut.weight"] = (cout, cin, 1, 1)
        s[p + "conv_shortcut.bias"] = (cout,)
    return s


def _transformer(p, c, cross, depth, linear):
    proj = (c, c) if linear else (c, c, 1, 1)
    s = {p + "norm.weight": (c,), p + "norm.bias": (c,), p + "proj_in.weight": proj, p + "proj_in.bias": (c,),
         p + "proj_out.weight": proj, p + "proj_out.bias": (c,)}
    for k in range(depth):
        t = f"{p}transformer_blocks.{k}."
        for nm in ["norm1", "norm2", "norm3"]:
            s[t + nm + ".weight"] = (c,)
            s[t + nm + ".bias"] = (c,)
        for a, kv in [("attn1", c), ("attn2", cross)]:
            s[f"{t}{a}.to_q.weight"] = (c, c)
            s[f"{t}{a}.to_k.weight"] = (c, kv)
            s[f"{t}{a}.to_v.weight"] = (c, kv)
            s[f"{t}{a}.to_out.0.weight"] = (c, c)
            s[f"{t}{a}.to_out.0.bias"] = (c,)
        s[t + "ff.net.0.proj.weight"] = (8 * c, c)
        s[t + "ff.net.0.proj.bias"] = (8 * c,)
        s[t + "ff.net.2.weight"] = (c, 4 * c)
        s[t + "ff.net.2.bias"] = (c,)
    return s


def unet_shapes(cfg):
    n, attn = _levels(cfg)
    ch = cfg["block_out_channels"]
    L = cfg.get("layers_per_block", 2)
    temb = cfg.get("time_embedding_dim") or 4 * ch[0]
    cross = cfg["cross_attention_dim"]
    linear = cfg.get("use_linear_projection", False)
    depth = cfg.get("transformer_layers_per_block", 1)
    depth = depth if isinstance(depth, list) else [depth] * n
    cin, cout = cfg.get("in_channels", 4), cfg.get("out_channels", 4)
    s = {"unet.conv_in.weight": (ch[0], cin, 3, 3), "unet.conv_in.bias": (ch[0],),
         "unet.time_embedding.linear_1.weight": (temb, ch[0]), "unet.time_embedding.linear_1.bias": (temb,),
         "unet.time_embedding.linear_2.weight": (temb, temb), "unet.time_embedding.linear_2.bias": (temb,)}
    prev = ch[0]
    for l in range(n):
        for j in range(L):
            s.update(_resnet(f"unet.down_blocks.{l}.resnets.{j}.", prev if j == 0 else ch[l], ch[l], temb))
            if attn[l]:
                s.update(_transformer(f"unet.down_blocks.{l}.attentions.{j}.", ch[l], cross, depth[l], linear))
        if l < n - 1:
            s[f"unet.down_blocks.{l}.downsamplers.0.conv.weight"] = (ch[l], ch[l], 3, 3)
            s[f"unet.down_blocks.{l}.downsamplers.0.conv.bias"] = (ch[l],)
        prev = ch[l]
    s.update(_resnet("unet.mid_block.resnets.0.", ch[-1], ch[-1], temb))
    s.update(_transformer("unet.mid_block.attentions.0.", ch[-1], cross, depth[-1], linear))
    s.update(_resnet("unet.mid_block.resnets.1.", ch[-1], ch[-1], temb))
    rev = list(reversed(ch))
    prev_out = rev[0]
    for b in range(n):
        out = rev[b]
        inc = rev[min(b + 1, n - 1)]
        for j in range(L + 1):
            skip = inc if j == L else out
            rin = prev_out if j == 0 else out
            s.update(_resnet(f"unet.up_blocks.{b}.resnets.{j}.", rin + skip, out, temb))
            if attn[n - 1 - b]:
                s.update(_transformer(f"unet.up_blocks.{b}.attentions.{j}.", out, cross, depth[n - 1 - b], linear))
        if b < n - 1:
            s[f"unet.up_blocks.{b}.upsamplers.0.conv.weight"] = (out, out, 3, 3)
            s[f"unet.up_blocks.{b}.upsamplers.0.conv.bias"] = (out,)
        prev_out = out
    s.update({"unet.conv_norm_out.weight": (ch[0],), "unet.conv_norm_out.bias": (ch[0],),
              "unet.conv_out.weight": (cout, ch[0], 3, 3), "unet.conv_out.bias": (cout,)})
    return s


def _vae_attn(p, c):
    s = {p + "group_norm.weight": (c,), p + "group_norm.bias": (c,)}
    for nm in ["to_q", "to_k", "to_v", "to_out.0"]:
        s[f"{p}{nm}.weight"] = (c, c)
        s[f"{p}{nm}.bias"] = (c,)
    return s


def vae_shapes(cfg):
    ch = cfg["block_out_channels"]
    n = len(ch)
    L = cfg.get("layers_per_block", 2)
    z = cfg.get("latent_channels", 4)
    cin, cout = cfg.get("in_channels", 3), cfg.get("out_channels", 3)
    s = {"vae.encoder.conv_in.weight": (ch[0], cin, 3, 3), "vae.encoder.conv_in.bias": (ch[0],)}
    prev = ch[0]
    for i in range(n):
        for j in range(L):
            s.update(_resnet(f"vae.encoder.down_blocks.{i}.resnets.{j}.", prev if j == 0 else ch[i], ch[i], 0))
        if i < n - 1:
            s[f"vae.encoder.down_blocks.{i}.downsamplers.0.conv.weight"] = (ch[i], ch[i], 3, 3)
            s[f"vae.encoder.down_blocks.{i}.downsamplers.0.conv.bias"] = (ch[i],)
        prev = ch[i]
    for p in ["encoder", "decoder"]:
        s.update(_resnet(f"vae.{p}.mid_block.resnets.0.", ch[-1], ch[-1], 0))
        s.update(_vae_attn(f"vae.{p}.mid_block.attentions.0.", ch[-1]))
        s.update(_resnet(f"vae.{p}.mid_block.resnets.1.", ch[-1], ch[-1], 0))
    s.update({"vae.encoder.conv_norm_out.weight": (ch[-1],), "vae.encoder.conv_norm_out.bias": (ch[-1],),
              "vae.encoder.conv_out.weight": (2 * z, ch[-1], 3, 3), "vae.encoder.conv_out.bias": (2 * z,),
              "vae.quant_conv.weight": (2 * z, 2 * z, 1, 1), "vae.quant_conv.bias": (2 * z,),
              "vae.post_quant_conv.weight": (z, z, 1, 1), "vae.post_quant_conv.bias": (z,),
              "vae.decoder.conv_in.weight": (ch[-1], z, 3, 3), "vae.decoder.conv_in.bias": (ch[-1],)})
    rev = list(reversed(ch))
    prev = rev[0]
    for b in range(n):
        for j in range(L + 1):
            s.update(_resnet(f"vae.decoder.up_blocks.{b}.resnets.{j}.", prev if j == 0 else rev[b], rev[b], 0))
        if b < n - 1:
            s[f"vae.decoder.up_blocks.{b}.upsamplers.0.conv.weight"] = (rev[b], rev[b], 3, 3)
            s[f"vae.decoder.up_blocks.{b}.upsamplers.0.conv.bias"] = (rev[b],)
        prev = rev[b]
    s.update({"vae.decoder.conv_norm_out.weight": (ch[0],), "vae.decoder.conv_norm_out.bias": (ch[0],),
              "vae.decoder.conv_out.weight": (cout, ch[0], 3, 3), "vae.decoder.conv_out.bias": (cout,)})
    return s


def clip_shapes(cfg):
    h, i, v, p = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"], cfg["max_position_embeddings"]
    t = "text_encoder.text_model."
    s = {t + "embeddings.token_embedding.weight": (v, h), t + "embeddings.position_embedding.weight": (p, h)}
    for k in range(cfg["num_hidden_layers"]):
        q = f"{t}encoder.layers.{k}."
        for nm in ["q_proj", "k_proj", "v_proj", "out_proj"]:
            s[f"{q}self_attn.{nm}.weight"] = (h, h)
            s[f"{q}self_attn.{nm}.bias"] = (h,)
        for nm in ["layer_norm1", "layer_norm2"]:
            s[f"{q}{nm}.weight"] = (h,)
            s[f"{q}{nm}.bias"] = (h,)
        s.update({q + "mlp.fc1.weight": (i, h), q + "mlp.fc1.bias": (i,), q + "mlp.fc2.weight": (h, i), q + "mlp.fc2.bias": (h,)})
    s[t + "final_layer_norm.weight"] = (h,)
    s[t + "final_layer_norm.bias"] = (h,)
    return s


def heads_of(unet_cfg):
    n = len(unet_cfg["block_out_channels"])
    h = unet_cfg.get("num_attention_heads") or unet_cfg.get("attention_head_dim", 8)
    return h if isinstance(h, list) else [h] * n


def hints(unet_cfg, vae_cfg, clip_cfg, sched_cfg, sd2):
    """__metadata__ for what the LDM reader cannot infer, where it differs
    from the family's rule (SD1: 8 UNet heads; SD2: channels/64; CLIP
    hidden/64; 32 groups; scaling 0.18215; epsilon)."""
    m = {}
    ch = unet_cfg["block_out_channels"]
    rule = [max(1, c // 64) for c in ch] if sd2 else [8] * len(ch)
    if heads_of(unet_cfg) != rule:
        m["sd.unet.heads"] = ",".join(str(x) for x in heads_of(unet_cfg))
    if clip_cfg["num_attention_heads"] != max(1, clip_cfg["hidden_size"] // 64):
        m["sd.clip.heads"] = str(clip_cfg["num_attention_heads"])
    if unet_cfg.get("norm_num_groups", 32) != 32:
        m["sd.unet.groups"] = str(unet_cfg["norm_num_groups"])
    if vae_cfg.get("norm_num_groups", 32) != 32:
        m["sd.vae.groups"] = str(vae_cfg["norm_num_groups"])
    if abs(vae_cfg.get("scaling_factor", 0.18215) - 0.18215) > 1e-9:
        m["sd.vae.scaling_factor"] = repr(float(vae_cfg["scaling_factor"]))
    if sd2:
        # a diffusers text encoder holds just the layers it runs (SD 2.x
        # folders drop OpenCLIP's last one): its output is the last layer's
        m["sd.clip.skip"] = "1"
    if (sched_cfg or {}).get("prediction_type", "epsilon") != "epsilon":
        m["sd.schedule.prediction"] = sched_cfg["prediction_type"]
    return m


def _load_component(d):
    from safetensors.numpy import load_file
    out = {}
    for f in sorted(os.listdir(d)):
        if f.endswith(".safetensors"):
            out.update(load_file(os.path.join(d, f)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model_dir")
    ap.add_argument("out")
    ap.add_argument("--dtype", choices=["f32", "f16"], default="f32")
    ap.add_argument("--sd2", action="store_true", help="text encoder as OpenCLIP (fused in_proj)")
    a = ap.parse_args()
    from safetensors.numpy import save_file
    cfg = {c: json.load(open(os.path.join(a.model_dir, c, "config.json"))) for c in ["unet", "vae", "text_encoder"]}
    sp = os.path.join(a.model_dir, "scheduler", "scheduler_config.json")
    sched = json.load(open(sp)) if os.path.exists(sp) else {}
    prefix = {"unet": "unet.", "vae": "vae.", "text_encoder": "text_encoder."}
    out = {}
    qkv = {}
    for comp, pre in prefix.items():
        for k, v in _load_component(os.path.join(a.model_dir, comp)).items():
            if k.endswith("position_ids"):
                continue
            name = pre + k
            if a.dtype == "f16" and v.dtype == np.float32:
                v = v.astype(np.float16)
            if a.sd2 and comp == "text_encoder":
                for p in ["q_proj", "k_proj", "v_proj"]:
                    if f".self_attn.{p}." in name:
                        layer = name.split("encoder.layers.")[1].split(".")[0]
                        kind = "weight" if name.endswith("weight") else "bias"
                        qkv.setdefault((layer, kind), {})[p] = v
                        break
                else:
                    ldm = to_ldm(name, cfg["unet"], cfg["vae"], True)
                    if ldm:
                        out[ldm] = v
                continue
            ldm = to_ldm(name, cfg["unet"], cfg["vae"], a.sd2)
            if ldm is None:
                sys.exit(f"sd_ldm_names: no LDM name for {name}")
            if ".mid.attn_1." in ldm and v.ndim == 2 and ldm.endswith("weight") and "norm" not in ldm:
                v = v.reshape(v.shape + (1, 1))  # LDM's VAE attention is 1x1 convs
            out[ldm] = np.ascontiguousarray(v)
    for (layer, kind), parts in qkv.items():
        fused = np.concatenate([parts["q_proj"], parts["k_proj"], parts["v_proj"]], axis=0)
        out[f"{CLIP2}transformer.resblocks.{layer}.attn.in_proj_{kind}"] = fused
    meta = hints(cfg["unet"], cfg["vae"], cfg["text_encoder"], sched, a.sd2)
    save_file(out, a.out, metadata=meta or None)
    print(f"{a.out}: {len(out)} tensors, metadata {meta}")


if __name__ == "__main__":
    main()
