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

from hf_smollm2 import gguf_path, greedy_reply, load

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
    tok, model = load(gguf_path())
    os.makedirs(OUT, exist_ok=True)
    for k, prompt in enumerate(PROMPTS):
        _, _, text = greedy_reply(tok, model, [{"role": "user", "content": prompt}], N_GEN)
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
