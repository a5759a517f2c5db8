#!/usr/bin/env python3
"""sd_to_gguf.py — an image model (diffusers folder or single-file LDM
checkpoint) into petrel's image GGUF (general.architecture "sd"), the
layout engine/diffusion/sd_weights_gguf.c reads (its header comment lists
every metadata key).

    sd_to_gguf.py MODEL_DIR_OR_FILE OUT.gguf --type f32|f16|q8_0|q4_0
        [--taesd TAESD_DIR_OR_FILE] [--tokenizer DIR]

Tensors keep the canonical names of engine/diffusion/sd_weights.h
("unet.conv_in.weight", ...). Types by --type:
  f32    everything F32
  f16    norms and biases (1-D) F32, everything else F16
  q8_0 / q4_0  norms and biases F32; embeddings F16; linear weights with a
         multiple of 32 inputs quantized (others F16); convolution weights
         reordered to OHWI rows (ky, kx, c_in; c_in fastest), zero-padded
         to k_pad = a multiple of 32 columns, quantized, stored as a 2-D
         [c_out, k_pad] tensor, with "sd.conv.NAME" = [c_out, c_in, kh, kw]
Uses the gguf package's writer and gguf.quants (same rounding as ggml).
"""
import argparse
import json
import os
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q
from safetensors.numpy import load_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sd_ldm_names as names  # noqa: E402


def load_folder(d):
    cfg = {c: json.load(open(os.path.join(d, c, "config.json"))) for c in ["unet", "vae", "text_encoder"]}
    sp = os.path.join(d, "scheduler", "scheduler_config.json")
    cfg["scheduler"] = json.load(open(sp)) if os.path.exists(sp) else {}
    t = {}
    for comp in ["unet", "vae", "text_encoder"]:
        cd = os.path.join(d, comp)
        for f in sorted(os.listdir(cd)):
            if f.endswith(".safetensors"):
                for k, v in load_file(os.path.join(cd, f)).items():
                    if not k.endswith("position_ids"):
                        t[f"{comp}.{k}"] = v
    # old diffusers VAE attention names -> today's; 1x1 convs -> [c, c]
    for k in list(t):
        if k.startswith("vae.") and ".attentions." in k:
            nk = k
            for old, new in [(".query.", ".to_q."), (".key.", ".to_k."), (".value.", ".to_v."), (".proj_attn.", ".to_out.0.")]:
                nk = nk.replace(old, new)
            v = t.pop(k)
            if v.ndim == 4 and "group_norm" not in nk:
                v = v.reshape(v.shape[:2])
            t[nk] = v
    tok = os.path.join(d, "tokenizer")
    return cfg, t, tok if os.path.exists(os.path.join(tok, "vocab.json")) else None


def infer_ldm(raw, meta):
    """Configs (diffusers keys) from an LDM state dict, as sd_weights_ldm.c infers them."""
    U = names.UNET
    sd2 = names.CLIP2 + "token_embedding.weight" in raw
    ib = [k for k in raw if k.startswith(U + "input_blocks.")]
    max_in = max(int(k[len(U + "input_blocks."):].split(".")[0]) for k in ib)
    ops = [int(k[len(U + "input_blocks."):].split(".")[0]) for k in ib if k.endswith(".0.op.weight")]
    L = min(ops) - 1 if ops else max_in
    n = (max_in + 1) // (L + 1)
    ch, types, heads = [], [], []
    for l in range(n):
        b = 1 + l * (L + 1)
        ch.append(raw[f"{U}input_blocks.{b}.0.in_layers.2.weight"].shape[0])
        types.append("CrossAttnDownBlock2D" if f"{U}input_blocks.{b}.1.proj_in.weight" in raw else "DownBlock2D")
        heads.append(max(1, ch[-1] // 64) if sd2 else 8)
    if "sd.unet.heads" in meta:
        h = [int(x) for x in meta["sd.unet.heads"].split(",")]
        heads = [h[0]] * n if len(h) == 1 else h
    proj = raw[U + "middle_block.1.proj_in.weight"]
    unet = {"block_out_channels": ch, "down_block_types": types, "layers_per_block": L,
            "attention_head_dim": heads, "cross_attention_dim": raw[U + "middle_block.1.transformer_blocks.0.attn2.to_k.weight"].shape[1],
            "use_linear_projection": proj.ndim == 2, "in_channels": raw[U + "input_blocks.0.0.weight"].shape[1],
            "out_channels": raw[U + "out.2.weight"].shape[0], "norm_num_groups": int(meta.get("sd.unet.groups", 32)),
            "time_embedding_dim": raw[U + "time_embed.0.weight"].shape[0]}
    V = names.VAE
    nv = 0
    while f"{V}decoder.up.{nv}.block.0.conv1.weight" in raw:
        nv += 1
    lv = 0
    while f"{V}decoder.up.0.block.{lv}.conv1.weight" in raw:
        lv += 1
    vae = {"block_out_channels": [raw[f"{V}decoder.up.{i}.block.0.conv2.weight"].shape[0] for i in range(nv)],
           "layers_per_block": lv - 1, "latent_channels": raw[V + "decoder.conv_in.weight"].shape[1],
           "out_channels": raw[V + "decoder.conv_out.weight"].shape[0],
           "in_channels": raw[V + "encoder.conv_in.weight"].shape[1] if V + "encoder.conv_in.weight" in raw else 3,
           "norm_num_groups": int(meta.get("sd.vae.groups", 32)),
           "scaling_factor": float(meta.get("sd.vae.scaling_factor", 0.18215))}
    if sd2:
        C = names.CLIP2
        tok = raw[C + "token_embedding.weight"]
        nl = len({k.split(".")[4] for k in raw if k.startswith(C + "transformer.resblocks.")})
        inter = raw[C + "transformer.resblocks.0.mlp.c_fc.weight"].shape[0]
        maxp = raw[C + "positional_embedding"].shape[0]
    else:
        C = names.CLIP1 + "text_model."
        tok = raw[C + "embeddings.token_embedding.weight"]
        nl = len({k.split(".")[5] for k in raw if k.startswith(C + "encoder.layers.")})
        inter = raw[C + "encoder.layers.0.mlp.fc1.weight"].shape[0]
        maxp = raw[C + "embeddings.position_embedding.weight"].shape[0]
    hid = tok.shape[1]
    clip = {"vocab_size": tok.shape[0], "hidden_size": hid, "intermediate_size": inter, "num_hidden_layers": nl,
            "num_attention_heads": int(meta.get("sd.clip.heads", max(1, hid // 64))), "max_position_embeddings": maxp,
            "hidden_act": "gelu" if sd2 else "quick_gelu", "skip": int(meta.get("sd.clip.skip", 2 if sd2 else 1)),
            "pad": 0 if sd2 else tok.shape[0] - 1}
    sched = {"prediction_type": meta.get("sd.schedule.prediction", "epsilon")}
    return {"unet": unet, "vae": vae, "text_encoder": clip, "scheduler": sched, "sd2": sd2}


def load_ldm(path):
    from safetensors import safe_open
    with safe_open(path, "np") as f:
        meta = f.metadata() or {}
    raw = {k: v for k, v in load_file(path).items() if not k.endswith("position_ids")}
    cfg = infer_ldm(raw, meta)
    inv = {}
    for comp, shapes in [("unet", names.unet_shapes(cfg["unet"])), ("vae", names.vae_shapes(cfg["vae"]))]:
        for canon in shapes:
            inv[names.to_ldm(canon, cfg["unet"], cfg["vae"])] = canon
    t = {}
    for k, v in raw.items():
        if k.startswith(names.CLIP1):
            rest = k[len(names.CLIP1):]
            t["text_encoder." + (rest if rest.startswith("text_model.") else "text_model." + rest)] = v
        elif k.startswith(names.CLIP2):
            rest = k[len(names.CLIP2):]
            if rest.endswith("in_proj_weight") or rest.endswith("in_proj_bias"):
                layer = rest.split(".")[2]
                kind = "weight" if rest.endswith("weight") else "bias"
                for i, p in enumerate(["q_proj", "k_proj", "v_proj"]):
                    t[f"text_encoder.text_model.encoder.layers.{layer}.self_attn.{p}.{kind}"] = np.split(v, 3)[i]
                continue
            for canon in names.clip_shapes({"hidden_size": 1, "intermediate_size": 1, "vocab_size": 1, "max_position_embeddings": 1,
                                            "num_hidden_layers": cfg["text_encoder"]["num_hidden_layers"]}):
                if names.to_ldm(canon, None, None, True) == k:
                    t[canon] = v
        elif k in inv:
            canon = inv[k]
            t[canon] = v.reshape(v.shape[:2]) if canon.startswith("vae.") and ".mid_block.attentions." in canon and v.ndim == 4 else v
    return cfg, t, None


def qtype_for(name, v, kind):
    """(stored array, GGML type, conv shape or None)."""
    if kind == "f32" or v.ndim == 1:
        return v.astype(np.float32), Q.F32, None
    if kind == "f16" or "embedding" in name:
        return v.astype(np.float16), Q.F16, None
    qt = Q.Q8_0 if kind == "q8_0" else Q.Q4_0
    if v.ndim == 4:
        co, ci, kh, kw = v.shape
        rows = v.astype(np.float32).transpose(0, 2, 3, 1).reshape(co, kh * kw * ci)
        k_pad = (rows.shape[1] + 31) // 32 * 32
        rows = np.pad(rows, ((0, 0), (0, k_pad - rows.shape[1])))
        return gguf.quants.quantize(np.ascontiguousarray(rows), qt), qt, [co, ci, kh, kw]
    if v.ndim == 2 and v.shape[1] % 32 == 0:
        return gguf.quants.quantize(np.ascontiguousarray(v.astype(np.float32)), qt), qt, None
    return v.astype(np.float16), Q.F16, None


def load_taesd(path):
    if os.path.isdir(path):
        cp = os.path.join(path, "config.json")
        cfg = json.load(open(cp)) if os.path.exists(cp) else {}
        raw = load_file(os.path.join(path, "diffusion_pytorch_model.safetensors"))
    else:
        cfg, raw = {}, load_file(path)
    t = {}
    for k, v in raw.items():
        if k.startswith("decoder.layers.") or k.startswith("encoder.layers."):
            t["taesd." + k] = v
        elif k[0].isdigit():
            i, rest = k.split(".", 1)
            t[f"taesd.decoder.layers.{int(i) - 1}.{rest}"] = v
    c0 = t["taesd.decoder.layers.0.weight"]
    ch = cfg.get("decoder_block_out_channels", [c0.shape[0]] * 4)
    return {"latent_channels": cfg.get("latent_channels", c0.shape[1]), "channels": ch[0],
            "blocks_per_stage": cfg.get("num_decoder_blocks", [3])[0], "n_upsamples": len(ch) - 1}, t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--type", choices=["f32", "f16", "q8_0", "q4_0"], required=True)
    ap.add_argument("--taesd")
    ap.add_argument("--tokenizer")
    a = ap.parse_args()
    if os.path.isdir(a.model):
        cfg, tensors, tok = load_folder(a.model)
        clip = cfg["text_encoder"]
        clip["skip"] = 1
        sd2 = clip.get("hidden_act") == "gelu" or cfg["unet"].get("use_linear_projection", False)
    else:
        cfg, tensors, tok = load_ldm(a.model)
        clip = cfg["text_encoder"]
        sd2 = cfg["sd2"]
    tok = a.tokenizer or tok
    u, v, s = cfg["unet"], cfg["vae"], cfg["scheduler"]
    w = gguf.GGUFWriter(a.out, "sd")
    w.add_string("sd.family", "sd2" if sd2 else "sd1")
    vocab = merges = None
    bos, eos = clip["vocab_size"] - 2, clip["vocab_size"] - 1
    pad = clip.get("pad", eos)
    if tok:
        vocab = open(os.path.join(tok, "vocab.json"), encoding="utf-8").read()
        merges = open(os.path.join(tok, "merges.txt"), encoding="utf-8").read()
        vj = json.loads(vocab)
        bos, eos = vj.get("<|startoftext|>", bos), vj.get("<|endoftext|>", eos)
        pad = eos
        sp = os.path.join(tok, "special_tokens_map.json")
        if os.path.exists(sp):
            p = json.load(open(sp)).get("pad_token")
            p = p.get("content") if isinstance(p, dict) else p
            if p in vj:
                pad = vj[p]
        elif sd2:
            pad = 0
    for k, val in [("vocab_size", clip["vocab_size"]), ("hidden_size", clip["hidden_size"]),
                   ("intermediate_size", clip["intermediate_size"]), ("layers", clip["num_hidden_layers"]),
                   ("heads", clip["num_attention_heads"]), ("max_pos", clip.get("max_position_embeddings", 77)),
                   ("bos", bos), ("eos", eos), ("pad", pad), ("skip", clip.get("skip", 1))]:
        w.add_uint32(f"sd.clip.{k}", int(val))
    w.add_string("sd.clip.act", clip.get("hidden_act", "quick_gelu"))
    w.add_float32("sd.clip.ln_eps", float(clip.get("layer_norm_eps", 1e-5)))
    n = len(u["block_out_channels"])
    types = u.get("down_block_types") or ["CrossAttnDownBlock2D"] * (n - 1) + ["DownBlock2D"]
    depth = u.get("transformer_layers_per_block", 1)
    depth = depth if isinstance(depth, list) else [depth] * n
    for k, val in [("in_channels", u.get("in_channels", 4)), ("out_channels", u.get("out_channels", 4)),
                   ("layers_per_block", u.get("layers_per_block", 2)), ("cross_dim", u["cross_attention_dim"]),
                   ("groups", u.get("norm_num_groups", 32)),
                   ("time_embed_dim", u.get("time_embedding_dim") or 4 * u["block_out_channels"][0])]:
        w.add_uint32(f"sd.unet.{k}", int(val))
    w.add_array("sd.unet.channels", [int(x) for x in u["block_out_channels"]])
    w.add_array("sd.unet.cross_attn", [int(t == "CrossAttnDownBlock2D") for t in types])
    w.add_array("sd.unet.heads", [int(x) for x in names.heads_of(u)])
    w.add_array("sd.unet.transformer_depth", [int(x) for x in depth])
    w.add_float32("sd.unet.norm_eps", float(u.get("norm_eps", 1e-5)))
    w.add_float32("sd.unet.freq_shift", float(u.get("freq_shift", 0)))
    w.add_bool("sd.unet.linear_proj", bool(u.get("use_linear_projection", False)))
    w.add_bool("sd.unet.flip_sin_to_cos", bool(u.get("flip_sin_to_cos", True)))
    for k, val in [("in_channels", v.get("in_channels", 3)), ("out_channels", v.get("out_channels", 3)),
                   ("latent_channels", v.get("latent_channels", 4)), ("layers_per_block", v.get("layers_per_block", 2)),
                   ("groups", v.get("norm_num_groups", 32))]:
        w.add_uint32(f"sd.vae.{k}", int(val))
    w.add_array("sd.vae.channels", [int(x) for x in v["block_out_channels"]])
    w.add_float32("sd.vae.scaling_factor", float(v.get("scaling_factor", 0.18215)))
    w.add_bool("sd.vae.has_encoder", "vae.encoder.conv_in.weight" in tensors)
    w.add_uint32("sd.schedule.num_train_timesteps", int(s.get("num_train_timesteps", 1000)))
    w.add_uint32("sd.schedule.steps_offset", int(s.get("steps_offset", 1)))
    w.add_float32("sd.schedule.beta_start", float(s.get("beta_start", 0.00085)))
    w.add_float32("sd.schedule.beta_end", float(s.get("beta_end", 0.012)))
    w.add_string("sd.schedule.beta_schedule", s.get("beta_schedule", "scaled_linear"))
    w.add_string("sd.schedule.prediction", s.get("prediction_type", "epsilon"))
    if vocab is not None:
        w.add_string("sd.tokenizer.vocab_json", vocab)
        w.add_string("sd.tokenizer.merges", merges)
    if a.taesd:
        tc, tt = load_taesd(a.taesd)
        w.add_bool("sd.taesd.present", True)
        for k, val in tc.items():
            w.add_uint32(f"sd.taesd.{k}", int(val))
        tensors.update(tt)
    for name in sorted(tensors):
        arr, qt, conv = qtype_for(name, tensors[name], a.type)
        if conv:
            w.add_array(f"sd.conv.{name}", conv)
        if qt in (Q.F32, Q.F16):
            w.add_tensor(name, np.ascontiguousarray(arr))
        else:
            w.add_tensor(name, arr, raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"{a.out}: {len(tensors)} tensors, --type {a.type}")


if __name__ == "__main__":
    main()
