"""hf_smollm2.py — the reference side of the app-level fixtures: SmolLM2
loaded by Hugging Face transformers from petrel's own GGUF (gguf-py
dequantizes the Q4_1/Q8_0 weights to float32), and greedy chat replies
from it. Shared by gen_cli_fixture.py and gen_tui_fixture.py (needs torch,
transformers, gguf).
"""
import os
import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

DEFAULT_GGUF = "~/.local/share/petrel/models/SmolLM2-135M-Instruct.Q4_1.gguf"


def gguf_path():
    """The GGUF named on the command line, else the fetched default."""
    return sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser(DEFAULT_GGUF)


def load(path):
    """(tokenizer, float32 model in eval mode) from the GGUF at path."""
    d, f = os.path.split(path)
    torch.set_num_threads(2)
    tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
    model = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=torch.float32)
    model.eval()
    return tok, model


def greedy_reply(tok, model, messages, n_gen):
    """The messages through the model's chat template (generation prompt
    added), continued greedily for up to n_gen tokens: (prompt length,
    generated ids, their text without special tokens)."""
    ids = tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt")
    if not isinstance(ids, torch.Tensor):
        ids = ids["input_ids"]
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=n_gen, do_sample=False)
    gen = out[0, ids.shape[1]:].tolist()
    return ids.shape[1], gen, tok.decode(gen, skip_special_tokens=True)
