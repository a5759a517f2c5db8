#!/usr/bin/env python3
"""gen_logits_fixture.py — SmolLM2-135M-Instruct (Q4_1 GGUF) reference logits
and greedy continuations from transformers, for tests/test_logits.c and
tests/test_greedy.c.

The reference model is transformers' LlamaForCausalLM in float32 with the
GGUF's tensors dequantized by gguf-py (transformers' own gguf_file= loader).
The script checks that this loader changes nothing: every parameter must
equal our own gguf-py dequantization of the file (Q/K rows un-permuted
the way llama.cpp's convert_hf_to_gguf.py permuted them), and the config
must carry the GGUF's hyperparameters.

Prompts are ChatML text built literally and tokenized by the transformers
tokenizer loaded from the same GGUF. Outputs (format: tools/fixture_io.py):
  tests/data/smollm2.logits   every position: top-1 id, top-1/top-2 gap and
                              the top-64 logits; whole rows at two positions
                              of each prompt (a full row is 192 KiB)
  tests/data/smollm2.greedy   64-token greedy continuations (generate,
                              do_sample=False) with the top-1/top-2 gap and
                              the top-8 tokens and logits of every step

Greedy prompts: the four logits prompts, whose long answers pass through
near-ties (steps whose top-1/top-2 gap is below 0.75, smallest 0.013),
and four short questions whose whole answer has no near-tie (every step's
gap >= 0.87), found by screening 65 candidate questions with petrel's
reference path. An engine that quantizes activations to int8 (petrel's
fast path, llama.cpp) moves a top-1/top-2 difference by up to ~0.4-0.6
and so may take the other branch at a near-tie: tests/test_greedy.c
requires the exact sequence from such engines only for the tie-free runs,
and checks every step of every run with the reference's own tokens fed
back (teacher forcing).

Run from the repository root:  python3 tools/gen_logits_fixture.py [model.gguf]
Never run in CI; the outputs are committed.
"""

import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixture_io  # noqa: E402

DEFAULT_MODEL = os.path.expanduser("~/.local/share/petrel/models/SmolLM2-135M-Instruct.Q4_1.gguf")
OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data")
SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
QUESTIONS = [
    "What is the capital of France?",
    "Write a haiku about the sea.",
    "Why is the sky blue?",
    "How many legs does a spider have?",
]
# Short answers without near-ties (every step's gap >= 0.87; screened).
GREEDY_EXTRA = [
    "What is the plural of mouse?",
    "What is the plural of foot?",
    "What is the capital of Japan?",
    "What is the capital of Russia?",
]
TIE_GAP = 0.75
TOP_K = 64
N_GEN = 64


def chatml(question):
    return (f"<|im_start|>system\n{SYSTEM}<|im_end|>\n"
            f"<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n")


def unpermute_qk(w, n_head):
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def verify_weights(model, path):
    """Every parameter equals gguf-py's dequantization of the file."""
    import gguf

    cfg = model.config
    r = gguf.GGUFReader(path)
    meta = {k: f.contents() for k, f in r.fields.items() if not k.startswith("tokenizer.")}
    assert cfg.num_hidden_layers == meta["llama.block_count"]
    assert cfg.hidden_size == meta["llama.embedding_length"]
    assert cfg.intermediate_size == meta["llama.feed_forward_length"]
    assert cfg.num_attention_heads == meta["llama.attention.head_count"]
    assert cfg.num_key_value_heads == meta["llama.attention.head_count_kv"]
    assert abs(cfg.rms_norm_eps - meta["llama.attention.layer_norm_rms_epsilon"]) < 1e-12
    assert cfg.rope_parameters["rope_theta"] == meta["llama.rope.freq_base"]
    assert cfg.rope_parameters.get("rope_type", "default") == "default"
    assert cfg.head_dim == cfg.hidden_size // cfg.num_attention_heads
    assert cfg.tie_word_embeddings
    hf = {
        "attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
        "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
        "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
        "ffn_down": "mlp.down_proj",
    }
    params = dict(model.named_parameters())
    seen = set()
    for t in r.tensors:
        deq = gguf.dequantize(t.data, t.tensor_type)
        if t.name == "token_embd.weight":
            name = "model.embed_tokens.weight"
        elif t.name == "output_norm.weight":
            name = "model.norm.weight"
        else:
            _, il, role, _ = t.name.split(".")
            name = f"model.layers.{il}.{hf[role]}.weight"
            if role == "attn_q":
                deq = unpermute_qk(deq, cfg.num_attention_heads)
            if role == "attn_k":
                deq = unpermute_qk(deq, cfg.num_key_value_heads)
        p = params[name].detach().numpy()
        assert p.dtype == np.float32 and np.array_equal(p, deq.reshape(p.shape)), name
        seen.add(name)
    assert seen == set(params), set(params) - seen
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    print(f"verified {len(seen)} parameters against gguf-py dequantization")


def main():
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(2)
    path = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_MODEL
    d, f = os.path.split(os.path.abspath(path))
    tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
    model = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=torch.float32,
                                                 attn_implementation="eager").eval()
    verify_weights(model, path)
    eos = tok.convert_tokens_to_ids("<|im_end|>")
    assert eos == 2, eos

    logit_prompts, greedy_runs = [], []
    for q in QUESTIONS + GREEDY_EXTRA:
        text = chatml(q)
        ids = tok(text, add_special_tokens=False)["input_ids"]
        n = len(ids)
        prompt_gap = "-"
        if q in QUESTIONS:
            with torch.no_grad():
                logits = model(torch.tensor([ids])).logits[0].numpy()
            _, gap = fixture_io.top1_and_gap(logits)
            prompt_gap = f"{gap.min():.4f}"
            logit_prompts.append(dict(text=text, tokens=ids, logits=logits, full_pos=[n // 2, n - 1]))

        with torch.no_grad():
            out = model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, n, dtype=torch.long),
                                 do_sample=False, max_new_tokens=N_GEN, eos_token_id=eos, pad_token_id=eos,
                                 return_dict_in_generate=True, output_logits=True)
        gen = out.sequences[0, n:].tolist()
        step_logits = torch.stack(out.logits, 0)[:, 0].float().numpy()
        top1, ggap = fixture_io.top1_and_gap(step_logits)
        assert top1.tolist() == gen
        stopped = gen[-1] == eos
        if q in GREEDY_EXTRA:
            assert ggap.min() >= TIE_GAP, (q, ggap.min())
        greedy_runs.append(dict(text=text, prompt=ids, gen=gen, gap=ggap, logits=step_logits,
                                stopped_at_eos=stopped))
        print(f"{q!r}: {n} prompt tokens, prompt min gap {prompt_gap}; "
              f"{len(gen)} generated{' (EOS)' if stopped else ''}, min step gap {ggap.min():.4f} "
              f"at step {int(ggap.argmin())}")
        print("   ", repr(tok.decode(gen)))

    fixture_io.write_logits(os.path.join(OUT_DIR, "smollm2.logits"), model.config.vocab_size,
                            logit_prompts, top_k=TOP_K)
    fixture_io.write_greedy(os.path.join(OUT_DIR, "smollm2.greedy"), greedy_runs)
    for name in ("smollm2.logits", "smollm2.greedy"):
        print(f"{name}: {os.path.getsize(os.path.join(OUT_DIR, name))} bytes")


if __name__ == "__main__":
    main()
