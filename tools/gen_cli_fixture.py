#!/usr/bin/env python3
"""gen_cli_fixture.py — expected outputs of the petrel CLI on SmolLM2,
made with Hugging Face transformers, for tests/test_cli.sh.

For each chat prompt: the model's own chat template (from the GGUF, run by
transformers' apply_chat_template, default system prompt included) and a
greedy continuation of N_GEN tokens by the float32 transformers model
loaded from the same GGUF (gguf-py dequantizes the Q4_1/Q8_0 weights), the
text decoded without special tokens. petrel must print exactly that text for
`petrel run --chat --temp 0 -n N_GEN -p PROMPT`.
For each tokenize case: HF's token ids of the text (special tokens parsed).

Writes tests/data/cli/run_K.prompt, run_K.expected, tok_K.text, tok_K.ids.
Run from the repository root (needs torch, transformers, gguf):
    python3 tools/gen_cli_fixture.py [path/to/SmolLM2-135M-Instruct.Q4_1.gguf]
"""
import os
import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "cli")
N_GEN = 40
PROMPTS = [
    "What is the capital of France?",
    "Write a haiku about the sea.",
    "List three primary colors.",
]
TOKENIZE = [
    "Hello world",
    "<|im_start|>user\nHi there!<|im_end|>",
    "Zürich 東京 🚀 1234567",
]


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser(
        "~/.local/share/petrel/models/SmolLM2-135M-Instruct.Q4_1.gguf")
    d, f = os.path.split(path)
    torch.set_num_threads(2)
    tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
    model = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, torch_dtype=torch.float32)
    model.eval()
    os.makedirs(OUT, exist_ok=True)
    for k, prompt in enumerate(PROMPTS):
        ids = tok.apply_chat_template([{"role": "user", "content": prompt}],
                                      add_generation_prompt=True, return_tensors="pt")
        if not isinstance(ids, torch.Tensor):
            ids = ids["input_ids"]
        with torch.no_grad():
            out = model.generate(ids, max_new_tokens=N_GEN, do_sample=False)
        gen = out[0, ids.shape[1]:].tolist()
        text = tok.decode(gen, skip_special_tokens=True)
        with open(os.path.join(OUT, f"run_{k}.prompt"), "w", encoding="utf-8") as fp:
            fp.write(prompt)
        with open(os.path.join(OUT, f"run_{k}.expected"), "w", encoding="utf-8") as fp:
            fp.write(text)
        print(k, repr(text))
    for k, text in enumerate(TOKENIZE):
        ids = tok(text, add_special_tokens=True)["input_ids"]
        with open(os.path.join(OUT, f"tok_{k}.text"), "w", encoding="utf-8") as fp:
            fp.write(text)
        with open(os.path.join(OUT, f"tok_{k}.ids"), "w") as fp:
            fp.write("[" + ", ".join(map(str, ids)) + "]\n")
        print(k, ids)


if __name__ == "__main__":
    main()
