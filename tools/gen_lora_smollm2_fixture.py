#!/usr/bin/env python3
"""gen_lora_smollm2_fixture.py — reference logits of the shipped adapter
(assets/lora/smollm2-ahoy) on SmolLM2-135M-Instruct, for
tests/test_lora_smollm2.c.

The base is petrel's own Q4_1 GGUF dequantized by transformers' gguf loader
(tools/hf_smollm2.py); the adapter is applied by peft and merged into the
weights (merge_and_unload, checked against the unmerged forward) at the
scales 1.0 and 0.5 (peft's set_scale), and 0.0 is the base alone. Logits in
float32 on the CPU (no TF32), at every position of three chat prompts on
held-out topics; the fixture keeps the top-16 ids and values of each
position (tools/fixture_io.py's logits format), not whole rows: 49,152
floats a row would make it megabytes.

    python3 tools/gen_lora_smollm2_fixture.py [GGUF] [ADAPTER_DIR] [OUT]
Needs torch, transformers, peft, gguf; never run in CI (the output is
committed, tests/data/lora/smollm2_ahoy.logits).
"""
import copy
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixture_io  # noqa: E402
import hf_smollm2  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
PROMPTS = ["What is thunder?", "Tell me about owls.", "Write one sentence about boats."]
SCALES = (1.0, 0.5, 0.0)
TOP_K = 16


def main():
    from peft import PeftModel

    gguf = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser(hf_smollm2.DEFAULT_GGUF)
    adapter = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "assets", "lora", "smollm2-ahoy")
    out = sys.argv[3] if len(sys.argv) > 3 else os.path.join(ROOT, "tests", "data", "lora", "smollm2_ahoy.logits")
    tok, base = hf_smollm2.load(gguf)
    base = base.cpu()
    torch.set_num_threads(min(8, os.cpu_count() or 2))
    rows = []
    for p in PROMPTS:
        ids = tok.apply_chat_template([{"role": "user", "content": p}], add_generation_prompt=True,
                                      return_tensors="pt")
        if not isinstance(ids, torch.Tensor):
            ids = ids["input_ids"]
        rows.append((p, ids[0].tolist()))
    for scale in SCALES:
        if scale == 0.0:
            model = base
        else:
            pm = PeftModel.from_pretrained(copy.deepcopy(base), adapter).eval()
            for mod in pm.modules():
                if hasattr(mod, "set_scale") and hasattr(mod, "scaling"):
                    mod.set_scale("default", scale)
            probe = torch.tensor([rows[0][1]])
            with torch.no_grad():
                unmerged = pm(probe).logits[0].numpy()
            model = pm.merge_and_unload().eval()
            with torch.no_grad():
                d = np.abs(model(probe).logits[0].numpy() - unmerged).max()
            print(f"scale {scale}: merged vs unmerged max |d| {d:.2e}")
            assert d < 1e-3, d
        prompts = []
        for text, ids in rows:
            with torch.no_grad():
                logits = model(torch.tensor([ids])).logits[0].float().numpy()
            prompts.append(dict(text=text, tokens=ids, logits=logits, full_pos=[]))
        path = out if scale == 1.0 else out.replace(".logits", f"_s{int(scale * 10):02d}.logits")
        fixture_io.write_logits(path, logits.shape[1], prompts, top_k=TOP_K)
        print("wrote", path)


if __name__ == "__main__":
    main()
