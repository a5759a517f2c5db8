#!/usr/bin/env python3
"""References for the real Gemma 3 270M: llama.cpp's token ids and greedy
texts, and transformers' greedy tokens with their top-1/top-2 gaps.

usage: gen_gemma3_fixture.py [OUT]   (default tests/data/gemma3.llamacpp)

Runs llama.cpp's own tools (built by bench/build_llamacpp.sh from the
llama-cpp-python 0.3.36 sdist) on gemma-3-270m-q4_k_m.gguf (fetched by
tools/fetch_gemma3.py):
  - llama-tokenize --stdin --no-escape --ids (BOS added as the GGUF asks,
    special tokens parsed) on each TOKENIZE prompt;
  - llama-simple -n N_PREDICT (greedy, one batch for the prompt, BOS added,
    special tokens parsed; the prompt and then each generated piece printed,
    special tokens rendered) on each GREEDY prompt. Its stdout minus the
    echoed prompt is the generated text, kept as llama.cpp printed it
    (llama-simple ends it with one newline of its own, dropped here).
  - transformers (float32 Gemma3ForCausalLM whose weights are the gguf-py
    dequantization of the GGUF; norms minus the 1 the converter added):
    greedy N_PREDICT tokens after llama.cpp's prompt ids, with each step's
    top-1 minus top-2 logit (the float reference petrel's float path is
    held to; llama.cpp's own CPU path quantizes activations to 8 bits and
    keeps an F16 KV cache, so at a near-tie it may take the other token).
One GREEDY prompt is longer than the model's sliding window (512
positions), so that the last tokens' local layers see only part of it.

Output (read by tests/test_gemma3.c), a sequence of records, each a header
line "KIND LEN" followed by LEN bytes and a newline:
    tokenize LEN / TEXT        then   ids N / "id id ..." (N ids on one line)
    greedy LEN / PROMPT        then   n_prompt LEN / COUNT   and   text LEN / TEXT
                               and    hf_ids LEN / "id id ..."
                               and    hf_gaps LEN / "gap gap ..." (%.5f)
(COUNT: the prompt's token count in llama.cpp, in decimal, which the test
checks too). Needs torch, transformers, gguf and numpy; heavy (runs the
model twice): never run in CI.
"""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N_PREDICT = 32

TOKENIZE = [
    "Hello world",
    " Hello  world\n\nHow are you?",
    "The quick brown fox jumps over the lazy dog.",
    "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n",
    "Zürich, naïve café — 東京 and 北京, Привет мир! 🙂👍🏽",
    "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n",
    "   leading spaces, trailing spaces   ",
    "1234567890 3.14159 -42 1e-9 0x1F",
    "tabs\tand\r\nwindows line ends\t\t!",
    "<b>html</b> &amp; <unused0> [multimodal] <mask>",
]

LONG = " ".join(
    f"Item {i}: the {['red', 'green', 'blue', 'yellow'][i % 4]} box on shelf {i % 7} holds "
    f"{i * 3 % 11} apples and {i * 5 % 13} pears." for i in range(1, 28)
) + " Question: which shelf holds item 12? Answer:"

GREEDY = [
    "The capital of France is",
    "The Eiffel Tower is located in",
    "Monday, Tuesday, Wednesday,",
    "Water boils at a temperature of",
    "Python is a programming language that",
    "1, 2, 3, 4, 5,",
    "Once upon a time, in a small village by the sea,",
    "def fibonacci(n):",
    "<start_of_turn>user\nWrite one sentence about the moon.<end_of_turn>\n<start_of_turn>model\n",
    "<start_of_turn>user\nWhat is the largest planet in the solar system?<end_of_turn>\n<start_of_turn>model\n",
    LONG,
]


def tool(name):
    out = subprocess.run(["bash", os.path.join(ROOT, "bench", "build_llamacpp.sh"), name],
                         check=True, capture_output=True, text=True).stdout.strip()
    return out


def record(f, kind, payload):
    data = payload.encode() if isinstance(payload, str) else payload
    f.write(f"{kind} {len(data)}\n".encode())
    f.write(data)
    f.write(b"\n")


def tokenize(bin_, model, text):
    r = subprocess.run([bin_, "-m", model, "--stdin", "--no-escape", "--ids", "--log-disable"],
                       input=text.encode(), capture_output=True, check=True)
    line = r.stdout.decode().strip()
    assert line.startswith("[") and line.endswith("]"), line
    return [int(x) for x in line[1:-1].split(",") if x.strip()]


def hf_model(path):
    """The GGUF as a float32 transformers Gemma3ForCausalLM."""
    import numpy as np
    import torch
    import transformers as tf
    from gguf import GGUFReader
    from gguf.quants import dequantize
    r = GGUFReader(path)
    kv = {k: f.contents() for k, f in r.fields.items() if k.startswith("gemma3.")}
    kv = {k: float(v) if isinstance(v, float) else int(v) for k, v in kv.items()}
    tensors = {t.name: t for t in r.tensors}

    def w(name):
        t = tensors[name]
        a = np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float32)
        return torch.tensor(a.reshape([int(x) for x in reversed(t.shape)]))

    n_layer = kv["gemma3.block_count"]
    cfg = tf.Gemma3TextConfig(
        vocab_size=int(tensors["token_embd.weight"].shape[1]), hidden_size=kv["gemma3.embedding_length"],
        intermediate_size=kv["gemma3.feed_forward_length"], num_hidden_layers=n_layer,
        num_attention_heads=kv["gemma3.attention.head_count"],
        num_key_value_heads=kv["gemma3.attention.head_count_kv"],
        head_dim=kv["gemma3.attention.key_length"], rms_norm_eps=kv["gemma3.attention.layer_norm_rms_epsilon"],
        sliding_window=kv["gemma3.attention.sliding_window"],
        query_pre_attn_scalar=kv["gemma3.attention.key_length"],
        max_position_embeddings=kv["gemma3.context_length"],
        layer_types=["full_attention" if i % 6 == 5 else "sliding_attention" for i in range(n_layer)],
        rope_parameters={"full_attention": {"rope_theta": kv["gemma3.rope.freq_base"], "rope_type": "default"},
                         "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"}},
        tie_word_embeddings=True, hidden_activation="gelu_pytorch_tanh", attn_implementation="eager")
    m = tf.Gemma3ForCausalLM(cfg).eval()
    mats = {"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
            "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
            "ffn_down": "mlp.down_proj"}
    norms = {"attn_norm": "input_layernorm", "post_attention_norm": "post_attention_layernorm",
             "ffn_norm": "pre_feedforward_layernorm", "post_ffw_norm": "post_feedforward_layernorm",
             "attn_q_norm": "self_attn.q_norm", "attn_k_norm": "self_attn.k_norm"}
    sd = {"model.embed_tokens.weight": w("token_embd.weight"), "model.norm.weight": w("output_norm.weight") - 1}
    for i in range(n_layer):
        for a, b in mats.items():
            sd[f"model.layers.{i}.{b}.weight"] = w(f"blk.{i}.{a}.weight")
        for a, b in norms.items():
            sd[f"model.layers.{i}.{b}.weight"] = w(f"blk.{i}.{a}.weight") - 1
    sd["lm_head.weight"] = sd["model.embed_tokens.weight"]
    missing, unexpected = m.load_state_dict(sd, strict=False)
    assert not missing and not unexpected, (missing, unexpected)
    return m


def hf_greedy(m, ids, n):
    """n greedy tokens after ids (stopping after <eos> or <end_of_turn>, as
    llama-simple stops), and each step's top-1 minus top-2 logit."""
    import torch
    gen, gaps = [], []
    with torch.no_grad():
        out = m(torch.tensor([ids]), use_cache=True)
        for _ in range(n):
            top = torch.topk(out.logits[0, -1].float(), 2)
            gaps.append(float(top.values[0] - top.values[1]))
            t = int(top.indices[0])
            gen.append(t)
            if t in (1, 106):
                break
            out = m(torch.tensor([[t]]), past_key_values=out.past_key_values, use_cache=True)
    return gen, gaps


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "data", "gemma3.llamacpp")
    model = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "fetch_gemma3.py")],
                           check=True, capture_output=True, text=True).stdout.strip()
    tok_bin, simple_bin = tool("llama-tokenize"), tool("llama-simple")
    m = hf_model(model)
    with open(out, "wb") as f:
        for text in TOKENIZE:
            ids = tokenize(tok_bin, model, text)
            record(f, "tokenize", text)
            record(f, "ids", " ".join(map(str, ids)))
        for prompt in GREEDY:
            ids = tokenize(tok_bin, model, prompt)
            r = subprocess.run([simple_bin, "-m", model, "-n", str(N_PREDICT), prompt],
                               capture_output=True, check=True)
            # the echo of the prompt: its pieces with special tokens rendered
            # (<bos> first), as llama-simple prints them
            echo = b"<bos>" + prompt.encode()
            assert r.stdout.startswith(echo), r.stdout[:200]
            text = r.stdout[len(echo):]
            assert text.endswith(b"\n")
            text = text[:-1]
            record(f, "greedy", prompt)
            record(f, "n_prompt", str(len(ids)))
            record(f, "text", text)
            gen, gaps = hf_greedy(m, ids, N_PREDICT)
            record(f, "hf_ids", " ".join(map(str, gen)))
            record(f, "hf_gaps", " ".join(f"{g:.5f}" for g in gaps))
            print(f"{len(ids)} prompt tokens -> {text.decode(errors='replace')!r}; transformers' "
                  f"smallest gap {min(gaps):.4f}", file=sys.stderr)
    print(out)


if __name__ == "__main__":
    main()
