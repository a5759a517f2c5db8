#!/usr/bin/env python3
"""gen_tui_fixture.py — expected replies of a multi-turn greedy chat on
SmolLM2, made with Hugging Face transformers, for tests/test_tui_plain.sh.

The chat app keeps the conversation's tokens in the KV cache between turns
and prefills only what is new; a later turn must still answer exactly as a
model that reads the whole conversation from scratch. For each turn K the
messages so far (the user turns, and the previous replies as the text the
model produced) go through the model's own chat template (from the GGUF,
default system prompt included) and the float32 transformers model loaded
from the same GGUF (gguf-py dequantizes the Q4_1/Q8_0 weights) continues
greedily for N_GEN tokens; the reply is that continuation decoded without
special tokens. `petrel chat --plain --temp 0 -n N_GEN` fed the user lines
must print exactly these replies, each followed by a newline.

Writes tests/data/tui/turn_K.user and turn_K.expected.
Run from the repository root (needs torch, transformers, gguf):
    python3 tools/gen_tui_fixture.py [path/to/SmolLM2-135M-Instruct.Q4_1.gguf]
"""
import os

from hf_smollm2 import gguf_path, greedy_reply, load

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "tui")
N_GEN = 40
TURNS = [
    "What is the capital of France?",
    "And what is the capital of Germany?",
    "Name one famous building in each of them.",
]


def main():
    tok, model = load(gguf_path())
    os.makedirs(OUT, exist_ok=True)
    messages = []
    for k, user in enumerate(TURNS):
        messages.append({"role": "user", "content": user})
        n_prompt, gen, text = greedy_reply(tok, model, messages, N_GEN)
        messages.append({"role": "assistant", "content": text})
        with open(os.path.join(OUT, f"turn_{k}.user"), "w", encoding="utf-8") as fp:
            fp.write(user)
        with open(os.path.join(OUT, f"turn_{k}.expected"), "w", encoding="utf-8") as fp:
            fp.write(text)
        print(k, n_prompt, len(gen), repr(text))


if __name__ == "__main__":
    main()
