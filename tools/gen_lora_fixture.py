#!/usr/bin/env python3
"""gen_lora_fixture.py — seeded random LoRA adapters for the tiny llama test
model and their PEFT reference logits, for tests/test_lora.c.

  1. rebuilds tiny_llama's reference model exactly as tools/gen_tiny_models.py
     does (same seed) and checks it against the committed
     tests/data/tiny_llama.gguf (every tensor dequantizes to its weights);
  2. makes two PEFT LoRA adapters on it with seeded random A and B:
       a: r=4, lora_alpha=8 on q/k/v/o/gate/up/down (scale alpha/r = 2)
       b: r=8, lora_alpha=4, use_rslora on q/v/down and lm_head
          (scale alpha/sqrt(r) = 1.414)
       a_f16: a with its factors stored as float16
     saved by peft's save_pretrained (adapter_config.json +
     adapter_model.safetensors) under tests/data/lora/tiny_llama_{a,b}/;
  3. reference logits from transformers + peft with the adapters' weights
     merged into the base (merge_and_unload; the unmerged PEFT forward is
     checked to agree): a alone, b alone, a at 0.5 stacked with b at
     1.5 (peft's set_scale), and a_f16, at every position of three prompts;
  4. the GGUF form of adapter a made by llama.cpp's own converter
     (convert_lora_to_gguf.py, f32), tiny_llama_a.gguf;
  5. adapters for the wrong base, for the loader's error tests:
     tiny_llama_rs_a (made on tiny_llama_rs: its k_proj has other shapes)
     and tiny_llama_a_layer9 (adapter a plus a pair for a layer 9 that
     tiny_llama lacks).

Run from the repository root (needs torch, transformers, peft, gguf and the
llama.cpp sources that bench/build_llamacpp.sh unpacks):
    python3 tools/gen_lora_fixture.py
Never run in CI; the outputs are committed (about 150 KB).
"""

import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixture_io  # noqa: E402
import gen_tiny_models as gtm  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DATA = os.path.join(ROOT, "tests", "data")
OUT = os.path.join(DATA, "lora")
LLAMA_CPP = os.path.expanduser("~/.cache/petrel-bench/llama-cpp-python-0.3.36/vendor/llama.cpp")
ALL = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
STACK = (0.5, 1.5)  # scales of a and b when stacked
PROMPT_LENGTHS = (1, 7, 33)


def spec(name):
    return next(s for s in gtm.SPECS if s.name == name)


def base_model(name):
    s = spec(name)
    tensors, sd = gtm.build(s)
    gtm.verify_file(os.path.join(DATA, name + ".gguf"), sd, s)
    return s, gtm.reference_model(s, sd)


def make_adapter(model, seed, out_dir, **cfg):
    """A PEFT adapter on a copy of model with seeded random A and B (B is
    zero at peft's init: random here so the adapter changes the output)."""
    from peft import LoraConfig, get_peft_model

    pm = get_peft_model(copy.deepcopy(model), LoraConfig(lora_dropout=0.0, bias="none", **cfg))
    g = torch.Generator().manual_seed(seed)
    for name, p in sorted(pm.named_parameters()):
        if "lora_A" in name:  # [r, in]
            p.data = torch.randn(p.shape, generator=g) / np.sqrt(p.shape[1])
        elif "lora_B" in name:  # [out, r]
            p.data = torch.randn(p.shape, generator=g) * 0.4 / np.sqrt(p.shape[1])
    pm.save_pretrained(out_dir, save_embedding_layers=False)  # lm_head: A and B only
    return pm


def logits_of(model, toks):
    with torch.no_grad():
        return model(torch.tensor([toks])).logits[0].float().numpy()


def main():
    from peft import PeftModel

    torch.set_num_threads(2)
    os.makedirs(OUT, exist_ok=True)
    s, base = base_model("tiny_llama")
    da, db = os.path.join(OUT, "tiny_llama_a"), os.path.join(OUT, "tiny_llama_b")
    make_adapter(base, 11, da, r=4, lora_alpha=8, target_modules=ALL)
    make_adapter(base, 12, db, r=8, lora_alpha=4, use_rslora=True,
                 target_modules=["q_proj", "v_proj", "down_proj", "lm_head"])

    # adapter a with float16 factors (as peft saves a half-precision model)
    from safetensors.numpy import load_file, save_file

    da16 = os.path.join(OUT, "tiny_llama_a_f16")
    os.makedirs(da16, exist_ok=True)
    shutil.copy(os.path.join(da, "adapter_config.json"), da16)
    t16 = {k: v.astype(np.float16) for k, v in load_file(os.path.join(da, "adapter_model.safetensors")).items()}
    save_file(t16, os.path.join(da16, "adapter_model.safetensors"))

    def variant(adapters, scales):
        """Reference model for a set of adapters and scales: the PEFT
        forward (unmerged) and the merged weights; returns the merged one
        after checking the two agree on a probe prompt."""
        pm = PeftModel.from_pretrained(copy.deepcopy(base), adapters[0][1], adapter_name=adapters[0][0])
        for name, d in adapters[1:]:
            pm.load_adapter(d, adapter_name=name)
        names = [n for n, _ in adapters]
        pm.base_model.set_adapter(names)
        for mod in pm.modules():
            if hasattr(mod, "set_scale") and hasattr(mod, "scaling"):
                for n, sc in zip(names, scales):
                    mod.set_scale(n, sc)
        pm.eval()
        probe = list(range(1, 20))
        unmerged = logits_of(pm, probe)
        merged = pm.merge_and_unload(adapter_names=names).eval()
        d = np.abs(logits_of(merged, probe) - unmerged).max()
        assert d < 1e-3, d
        print(f"  {names} x {scales}: merged vs unmerged max |d| {d:.2e}")
        return merged

    cases = {
        "tiny_llama_a": variant([("a", da)], (1.0,)),
        "tiny_llama_b": variant([("b", db)], (1.0,)),
        "tiny_llama_ab": variant([("a", da), ("b", db)], STACK),
        # peft loads the F16 factors into float32 layers: exactly their values
        "tiny_llama_a_f16": variant([("a16", da16)], (1.0,)),
    }
    # Prompts without near-ties at any position under any case (and the base).
    rng = np.random.default_rng(2024)
    prompts = {k: [] for k in cases}
    for n in PROMPT_LENGTHS:
        for _ in range(200):
            toks = rng.integers(0, s.n_vocab, size=n).tolist()
            outs = {k: logits_of(m, toks) for k, m in cases.items()}
            if min(fixture_io.top1_and_gap(o)[1].min() for o in outs.values()) >= gtm.MIN_TOP1_GAP:
                break
        else:
            raise RuntimeError(f"no tie-free prompt of length {n}")
        base_l = logits_of(base, toks)
        for k, o in outs.items():
            print(f"  {k} len {n}: max |adapter - base| {np.abs(o - base_l).max():.3f}")
            prompts[k].append(dict(text="", tokens=toks, logits=o, full_pos=list(range(n))))
    for k, ps in prompts.items():
        fixture_io.write_logits(os.path.join(OUT, k + ".logits"), s.n_vocab, ps)

    with tempfile.TemporaryDirectory() as tmp:
        # llama.cpp's converter reads the base's config.json (and permutes
        # lora_b of q/k as it permutes the base's rows)
        base.save_pretrained(os.path.join(tmp, "base"))
        subprocess.run([sys.executable, os.path.join(LLAMA_CPP, "convert_lora_to_gguf.py"),
                        "--base", os.path.join(tmp, "base"), "--outtype", "f32",
                        "--outfile", os.path.join(OUT, "tiny_llama_a.gguf"), da], check=True)

    # Adapters for the wrong base.
    _, base_rs = base_model("tiny_llama_rs")
    make_adapter(base_rs, 13, os.path.join(OUT, "tiny_llama_rs_a"), r=2, lora_alpha=2,
                 target_modules=["q_proj", "k_proj"])

    d9 = os.path.join(OUT, "tiny_llama_a_layer9")
    os.makedirs(d9, exist_ok=True)
    shutil.copy(os.path.join(da, "adapter_config.json"), d9)
    t = load_file(os.path.join(da, "adapter_model.safetensors"))
    pre = "base_model.model.model.layers."
    for k in list(t):
        if k.startswith(pre + "2.self_attn.q_proj."):
            t[k.replace(pre + "2.", pre + "9.")] = t[k]
    save_file(t, os.path.join(d9, "adapter_model.safetensors"))
    for d in sorted(os.listdir(OUT)):
        p = os.path.join(OUT, d)
        files = [os.path.join(p, f) for f in os.listdir(p)] if os.path.isdir(p) else [p]
        for f in files:
            if f.endswith("README.md"):
                os.remove(f)
                continue
            print(f"{os.path.relpath(f, OUT)}: {os.path.getsize(f)} bytes")
    with open(os.path.join(da, "adapter_config.json")) as f:
        print("adapter a config:", json.load(f)["target_modules"])


if __name__ == "__main__":
    main()
