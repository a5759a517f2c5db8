#!/usr/bin/env python3
"""export.py CKPT_DIR OUT_DIR — the demo model's checkpoint as a diffusers folder.

numpy + safetensors only (no torch). Writes

  OUT_DIR/model_index.json
  OUT_DIR/unet/config.json          + diffusion_pytorch_model.safetensors  (unet_ema.*)
  OUT_DIR/text_encoder/config.json  + model.safetensors                    (text_ema.*)
  OUT_DIR/vae/config.json           + diffusion_pytorch_model.safetensors  (decoder + post_quant_conv)
  OUT_DIR/tokenizer/                  (tools/demo_sd/tokenizer)
  OUT_DIR/scheduler/scheduler_config.json  (SD's noise schedule, model.SD_SCHEDULER)

The EMA copies of the text encoder and UNet are the weights to ship (they are
trained together, sampling uses both EMA copies). Text-encoder keys get
transformers 4's "text_model." prefix when the checkpoint lacks it. The VAE
encoder is left out (text-to-image does not need it); the VAE config keeps the
model's own scaling factor from meta.json. Tensors stay fp16 as stored.
Then:  python3 tools/sd_to_gguf.py OUT_DIR out.gguf --type q8_0 ...
"""
import json
import os
import shutil
import sys

from safetensors.numpy import load_file, save_file

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from model import SD_SCHEDULER  # noqa: E402  (model.py imports torch only inside functions)

TEXT_TOP = ("embeddings.", "encoder.", "final_layer_norm.")


def load_parts(ckpt):
    parts = {}
    for fn in sorted(os.listdir(ckpt)):
        if fn.startswith("weights-") and fn.endswith(".safetensors"):
            for k, v in load_file(os.path.join(ckpt, fn)).items():
                prefix, rest = k.split(".", 1)
                parts.setdefault(prefix, {})[rest] = v
    return parts


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f, indent=2, sort_keys=True)
        f.write("\n")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n")[0])
    ckpt, out = sys.argv[1], sys.argv[2]
    meta = json.load(open(os.path.join(ckpt, "meta.json")))
    cfg = meta["configs"]
    parts = load_parts(ckpt)
    unet = parts.get("unet_ema") or parts["unet"]
    text = parts.get("text_ema") or parts["text"]
    text = {(k if k.startswith("text_model.") or not k.startswith(TEXT_TOP) else "text_model." + k): v
            for k, v in text.items() if not k.endswith("position_ids")}
    vae = {k: v for k, v in parts["vae"].items() if k.startswith(("decoder.", "post_quant_conv."))}

    write_json(os.path.join(out, "model_index.json"), {
        "_class_name": "StableDiffusionPipeline", "_diffusers_version": "0.42.1",
        "unet": ["diffusers", "UNet2DConditionModel"], "vae": ["diffusers", "AutoencoderKL"],
        "text_encoder": ["transformers", "CLIPTextModel"], "tokenizer": ["transformers", "CLIPTokenizer"],
        "scheduler": ["diffusers", "DDIMScheduler"], "safety_checker": [None, None],
        "feature_extractor": [None, None], "requires_safety_checker": False})
    write_json(os.path.join(out, "unet", "config.json"),
               dict(cfg["unet"], _class_name="UNet2DConditionModel", _diffusers_version="0.42.1"))
    save_file(unet, os.path.join(out, "unet", "diffusion_pytorch_model.safetensors"))
    write_json(os.path.join(out, "text_encoder", "config.json"),
               dict(cfg["text"], architectures=["CLIPTextModel"], model_type="clip_text_model",
                    torch_dtype="float16"))
    save_file(text, os.path.join(out, "text_encoder", "model.safetensors"))
    write_json(os.path.join(out, "vae", "config.json"),
               dict(cfg["vae"], _class_name="AutoencoderKL", _diffusers_version="0.42.1"))
    save_file(vae, os.path.join(out, "vae", "diffusion_pytorch_model.safetensors"))
    tok = os.path.join(out, "tokenizer")
    os.makedirs(tok, exist_ok=True)
    for fn in sorted(os.listdir(os.path.join(HERE, "tokenizer"))):
        shutil.copy(os.path.join(HERE, "tokenizer", fn), os.path.join(tok, fn))
    write_json(os.path.join(out, "scheduler", "scheduler_config.json"),
               dict(SD_SCHEDULER, _class_name="DDIMScheduler", _diffusers_version="0.42.1"))
    n = lambda d: sum(v.size for v in d.values())  # noqa: E731
    print(f"{out}: unet {n(unet):,} text {n(text):,} vae decoder {n(vae):,} parameters "
          f"(total {n(unet) + n(text) + n(vae):,}); scaling factor {cfg['vae']['scaling_factor']:.5f}")


if __name__ == "__main__":
    main()
