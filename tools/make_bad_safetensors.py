#!/usr/bin/env python3
"""make_bad_safetensors.py — small valid and hostile .safetensors files for
tests/test_sd_weights.c (tests/data/sd-bad/) and the seed corpus of
tests/fuzz/fuzz_safetensors.c (tests/fuzz/corpus/fuzz_safetensors/).

    make_bad_safetensors.py [REPO_ROOT]

mini_ldm.safetensors is a complete, valid single-file LDM checkpoint of a
minimal SD structure (UNet 2 levels of 4 channels, 1 layer per block,
attention on level 0; VAE 2 levels of 4; CLIP 4 wide, 1 layer, vocab 10; F16),
with its heads and groups in __metadata__; mini_q4.gguf is the same model
through sd_to_gguf.py --type q4_0. Every other file breaks one rule; the test expects the status and message word listed in CASES.
Deterministic (seed 0); numpy only.
"""
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sd_ldm_names as names  # noqa: E402

UNET = {"block_out_channels": [4, 4], "down_block_types": ["CrossAttnDownBlock2D", "DownBlock2D"],
        "layers_per_block": 1, "cross_attention_dim": 4, "attention_head_dim": 1, "norm_num_groups": 2,
        "time_embedding_dim": 4}
VAE = {"block_out_channels": [4, 4], "layers_per_block": 1, "latent_channels": 4, "norm_num_groups": 2}
CLIP = {"hidden_size": 4, "intermediate_size": 4, "vocab_size": 10, "max_position_embeddings": 8,
        "num_hidden_layers": 1, "num_attention_heads": 1}


def raw(header, data=b"", pad=True):
    hb = json.dumps(header).encode() if isinstance(header, dict) else header
    if pad:
        hb += b" " * ((8 - len(hb) % 8) % 8)
    return struct.pack("<Q", len(hb)) + hb + data


def build(tensors, meta=None):
    """tensors: {name: np array} -> file bytes."""
    header, blobs, off = {}, [], 0
    for k, v in tensors.items():
        b = np.ascontiguousarray(v).tobytes()
        dt = {"float32": "F32", "float16": "F16", "int64": "I64", "int32": "I32", "uint8": "U8"}[str(v.dtype)]
        header[k] = {"dtype": dt, "shape": list(v.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    if meta:
        header["__metadata__"] = meta
    return raw(header, b"".join(blobs))


def mini_ldm():
    rng = np.random.default_rng(0)
    shapes = {}
    shapes.update(names.clip_shapes(CLIP))
    shapes.update(names.unet_shapes(UNET))
    shapes.update(names.vae_shapes(VAE))
    t = {}
    for canon, shape in shapes.items():
        ldm = names.to_ldm(canon, UNET, VAE)
        if ".mid.attn_1." in ldm and len(shape) == 2:
            shape = shape + (1, 1)
        t[ldm] = (rng.standard_normal(shape) * 0.1).astype(np.float16)
    meta = names.hints(UNET, VAE, CLIP, {}, False)
    return t, meta


# name -> (bytes, expected status, word in the message); status names as pt_status
def cases():
    t, meta = mini_ldm()
    good = build(t, meta)
    two = build({"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.ones(4, dtype=np.float16)},
                {"format": "pt"})
    h2 = json.loads(two[8:8 + struct.unpack("<Q", two[:8])[0]])
    c = {}
    c["short"] = (b"\x10\x00\x00", "FORMAT", "too short")
    c["header_past_end"] = (struct.pack("<Q", 9 * 10 ** 18) + b"{}", "FORMAT", "exceeds the file")
    c["truncated_header"] = (two[:20], "FORMAT", "exceeds the file")
    c["truncated_data"] = (two[:-4], "FORMAT", "outside the data area")
    c["not_json"] = (raw(b"{not json at all}"), "FORMAT", "not a valid JSON")
    c["trailing_bytes"] = (raw(b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}} xyz', b"\0" * 4), "FORMAT", "after the header")
    h = json.loads(json.dumps(h2)); h["a"]["data_offsets"] = [0, 10 ** 6]
    c["offset_past_end"] = (raw(h, two[8 + struct.unpack("<Q", two[:8])[0]:]), "FORMAT", "outside the data area")
    h = json.loads(json.dumps(h2)); h["a"]["data_offsets"] = [-8, 16]
    c["offset_into_header"] = (raw(h, two[8 + struct.unpack("<Q", two[:8])[0]:]), "FORMAT", "non-negative")
    h = json.loads(json.dumps(h2)); h["a"]["data_offsets"] = [24, 0]
    c["offsets_reversed"] = (raw(h, two[8 + struct.unpack("<Q", two[:8])[0]:]), "FORMAT", "outside the data area")
    h = json.loads(json.dumps(h2)); h["a"]["shape"] = [2, 4]
    c["shape_size_mismatch"] = (raw(h, two[8 + struct.unpack("<Q", two[:8])[0]:]), "FORMAT", "need")
    h = json.loads(json.dumps(h2)); h["a"]["shape"] = [2 ** 40, 2 ** 40]
    c["shape_overflow"] = (raw(h, two[8 + struct.unpack("<Q", two[:8])[0]:]), "FORMAT", "overflows")
    h = json.loads(json.dumps(h2)); h["a"]["shape"] = [2, 1.5]
    c["shape_fraction"] = (raw(h, two[8 + struct.unpack("<Q", two[:8])[0]:]), "FORMAT", "shape[1]")
    h = json.loads(json.dumps(h2)); h["a"]["dtype"] = "Q9"
    c["unknown_dtype"] = (raw(h, two[8 + struct.unpack("<Q", two[:8])[0]:]), "UNSUPPORTED", "unknown dtype")
    h = json.loads(json.dumps(h2)); h["b"]["data_offsets"] = [20, 28]
    c["overlap"] = (raw(h, two[8 + struct.unpack("<Q", two[:8])[0]:]), "FORMAT", "overlap")
    c["duplicate_name"] = (raw(b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
                               b'"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', b"\0" * 8), "FORMAT", "duplicate")
    c["rank5"] = (raw({"a": {"dtype": "U8", "shape": [1, 1, 1, 1, 1], "data_offsets": [0, 1]}}, b"\0"), "UNSUPPORTED", "dimensions")
    c["entry_not_object"] = (raw({"a": [1, 2]}), "FORMAT", "not an object")
    # LDM-level failures (the safetensors layer accepts these)
    t2 = dict(t); t2["cond_stage_model.transformer.text_model.embeddings.position_ids"] = np.arange(8, dtype=np.int64)[None]
    c["ldm_position_ids_ok"] = (build(t2, meta), "OK", "")
    t2 = dict(t); t2["model.diffusion_model.out.0.weight"] = np.arange(4, dtype=np.int32)
    c["ldm_int_weight"] = (build(t2, meta), "UNSUPPORTED", "dtype I32")
    t2 = dict(t); del t2["model.diffusion_model.input_blocks.1.0.out_layers.3.weight"]
    c["ldm_missing_tensor"] = (build(t2, meta), "OK", "")
    t2 = dict(t); t2["model.diffusion_model.input_blocks.1.0.out_layers.3.weight"] = np.zeros((4, 4, 1, 3), np.float16)
    c["ldm_wrong_shape"] = (build(t2, meta), "OK", "")
    t2 = {k: v for k, v in t.items() if not k.startswith("first_stage_model.decoder.conv_in")}
    c["ldm_no_vae"] = (build(t2, meta), "FORMAT", "no VAE decoder")
    t2 = {k: v for k, v in t.items() if not k.startswith("cond_stage_model.")}
    c["ldm_no_text_encoder"] = (build(t2, meta), "FORMAT", "no text encoder")
    m2 = dict(meta); del m2["sd.unet.groups"]
    c["ldm_groups_mismatch"] = (build(t, m2), "FORMAT", "groups")
    return good, two, c


def mini_diffusers(d):
    """The minimal model as a diffusers folder exercising the loader's
    other paths: the UNet sharded in two files with an index, the text
    encoder as the .fp16 variant, the VAE's attention under diffusers'
    old names (query/key/value/proj_attn) as 1x1 convs [c,c,1,1]."""
    t, _ = mini_ldm()
    rng_t = {}
    for canon in list(names.clip_shapes(CLIP)) + list(names.unet_shapes(UNET)) + list(names.vae_shapes(VAE)):
        rng_t[canon] = t[names.to_ldm(canon, UNET, VAE)]
    for c in ["unet", "vae", "text_encoder"]:
        os.makedirs(os.path.join(d, c), exist_ok=True)
    comp = lambda p: {k[len(p):]: v for k, v in rng_t.items() if k.startswith(p)}  # noqa: E731
    unet = comp("unet.")
    keys = sorted(unet)
    half = len(keys) // 2
    shards = {"diffusion_pytorch_model-00001-of-00002.safetensors": keys[:half],
              "diffusion_pytorch_model-00002-of-00002.safetensors": keys[half:]}
    wmap = {}
    for f, ks in shards.items():
        open(os.path.join(d, "unet", f), "wb").write(build({k: unet[k] for k in ks}))
        wmap.update({k: f for k in ks})
    json.dump({"metadata": {}, "weight_map": wmap}, open(os.path.join(d, "unet", "diffusion_pytorch_model.safetensors.index.json"), "w"), indent=1)
    vae = {}
    old = {"to_q.": "query.", "to_k.": "key.", "to_v.": "value.", "to_out.0.": "proj_attn."}
    for k, v in comp("vae.").items():
        for a, b in old.items():
            if ".attentions.0." + a in k:
                k = k.replace(".attentions.0." + a, ".attentions.0." + b)
        vae[k] = v
    open(os.path.join(d, "vae", "diffusion_pytorch_model.safetensors"), "wb").write(build(vae))
    te = comp("text_encoder.")
    te["text_model.embeddings.position_ids"] = np.arange(8, dtype=np.int64)[None]
    open(os.path.join(d, "text_encoder", "model.fp16.safetensors"), "wb").write(build(te))
    json.dump(dict(UNET, in_channels=4, out_channels=4), open(os.path.join(d, "unet", "config.json"), "w"), indent=1)
    json.dump(VAE, open(os.path.join(d, "vae", "config.json"), "w"), indent=1)
    json.dump(dict(CLIP, hidden_act="quick_gelu", bos_token_id=8, eos_token_id=9, pad_token_id=1),
              open(os.path.join(d, "text_encoder", "config.json"), "w"), indent=1)
    json.dump({"_class_name": "StableDiffusionPipeline"}, open(os.path.join(d, "model_index.json"), "w"))


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    bad = os.path.join(root, "tests", "data", "sd-bad")
    corpus = os.path.join(root, "tests", "fuzz", "corpus", "fuzz_safetensors")
    os.makedirs(bad, exist_ok=True)
    os.makedirs(corpus, exist_ok=True)
    good, two, c = cases()
    open(os.path.join(bad, "mini_ldm.safetensors"), "wb").write(good)
    lines = []
    for name, (data, status, word) in c.items():
        open(os.path.join(bad, name + ".safetensors"), "wb").write(data)
        lines.append(f"{name}.safetensors\t{status}\t{word}")
    # the table the C test reads: file, expected status, message word
    open(os.path.join(bad, "cases.tsv"), "w").write("\n".join(lines) + "\n")
    # fuzz seeds: valid files, their truncations, a few hostile ones
    seeds = {"valid_two": two, "valid_mini_ldm": good, "trunc_two_header": two[:30], "trunc_two_data": two[:-5],
             "trunc_mini_ldm": good[: len(good) // 2]}
    for k in ["header_past_end", "overlap", "duplicate_name", "shape_overflow", "unknown_dtype", "ldm_wrong_shape"]:
        seeds["bad_" + k] = c[k][0]
    for k, v in seeds.items():
        open(os.path.join(corpus, k + ".safetensors"), "wb").write(v)
    mini_diffusers(os.path.join(bad, "mini_diffusers"))
    # the same minimal model in petrel's GGUF (Q4_0), through sd_to_gguf's LDM path
    import subprocess
    gg = os.path.join(bad, "mini_q4.gguf")
    subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "sd_to_gguf.py"),
                    os.path.join(bad, "mini_ldm.safetensors"), gg, "--type", "q4_0"], check=True, stdout=subprocess.DEVNULL)
    gb = open(gg, "rb").read()
    open(os.path.join(corpus, "valid_mini_q4.gguf"), "wb").write(gb)
    open(os.path.join(corpus, "trunc_mini_q4.gguf"), "wb").write(gb[: len(gb) // 3])
    print(f"{bad}: {len(c) + 2} files; {corpus}: {len(seeds) + 2} seeds")


if __name__ == "__main__":
    main()
