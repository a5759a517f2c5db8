#!/usr/bin/env python3
"""Random-weight GGUFs with the shapes of real models, for speed tests.

usage: gen_bench_models.py [--out DIR] [--seed N] [--check] [MODEL ...]

MODEL is one of the names below (default: all of them); files go to DIR
($PETREL_BENCH_CACHE/models, default ~/.cache/petrel-bench/models) as
NAME.gguf, and an existing file is kept. The path of each file is printed on
stdout, one a line. --check also reads each file back with gguf-py and
compares a few blocks with gguf-py's own quantizer.

    qwen2.5-1.5b-q4_0   Qwen2.5-1.5B shapes, every matrix Q4_0 (~0.9 GB)
    qwen2.5-1.5b-q8_0   the same, every matrix Q8_0 (~1.6 GB)

Qwen2.5-1.5B shapes (qwen2 architecture): 28 layers, hidden 1536, 12 query
heads and 2 KV heads of 128, feed-forward 8960, vocabulary 151936, Q/K/V
biases, tied embeddings (no output.weight), rope base 1e6, RMS eps 1e-6.
All matrices, token_embd included, are in the one quantized type; norms and
biases are F32. (A real Q4_0 file from llama.cpp's quantizer keeps
token_embd at Q4_0 too but moves output to Q6_K; being tied, there is no
output matrix here.)

Speed does not depend on the values, but they are kept sane, so no kernel
meets NaNs or denormals: matrices are N(0, 0.02^2) quantized properly with
gguf-py's quantizer (a chunk of rows at a time, so memory stays near one
tensor's quantized bytes plus a 64 MiB float chunk), norms near 1, biases
small.

The tokenizer is a synthetic byte-level BPE (tokenizer.ggml.model "gpt2",
pre "qwen2") of exactly 151936 entries that both llama.cpp and petrel load:
the 256 byte tokens in GPT-2's printable alphabet, every two-byte token
(one merge each), then three-byte tokens (a two-byte token plus a byte)
until id 151642, then Qwen's <|endoftext|> (151643, also BOS),
<|im_start|> and <|im_end|> (EOS), then reserved control tokens. Token ids
the benchmarks draw at random are therefore all valid.

Needs only numpy and gguf (pip install numpy gguf); no torch.
"""
import argparse
import os
import sys
import tempfile

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf.quants import quantize, dequantize

from bpe_alphabet import bytes_to_unicode

SHAPES = {
    "qwen2.5-1.5b": dict(
        arch="qwen2", name="Qwen2.5-1.5B-shaped random weights (petrel bench)",
        n_layer=28, n_embd=1536, n_head=12, n_head_kv=2, head_dim=128, n_ff=8960,
        n_vocab=151936, n_ctx_train=32768, rope_base=1e6, eps=1e-6, qkv_bias=True,
    ),
}

MODELS = {
    "qwen2.5-1.5b-q4_0": ("qwen2.5-1.5b", T.Q4_0),
    "qwen2.5-1.5b-q8_0": ("qwen2.5-1.5b", T.Q8_0),
}

# general.file_type (llama_ftype) of a file whose matrices are all one type.
FILE_TYPE = {T.Q4_0: 2, T.Q4_1: 3, T.Q8_0: 7}

WEIGHT_STD = 0.02
CHUNK_ELEMS = 16 << 20  # floats generated and quantized at a time (64 MiB)

CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content']"
    " + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def cache_dir():
    base = os.environ.get("PETREL_BENCH_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "petrel-bench")
    return os.path.join(base, "models")


# ---- tokenizer ---------------------------------------------------------------

def make_vocab(n_vocab):
    """(tokens, types, merges, bos, eos). Layout in the module docstring."""
    n_normal = 151643 if n_vocab == 151936 else n_vocab - 3 - 8
    b2u = bytes_to_unicode()
    alpha = [b2u[b] for b in range(256)]
    tokens = alpha[:]
    merges = []
    # two-byte tokens: every pair, in order
    for a in alpha:
        for b in alpha:
            if len(tokens) == n_normal:
                break
            tokens.append(a + b)
            merges.append(f"{a} {b}")
    # three-byte tokens: a two-byte token (left) plus a byte (right)
    i = 0
    while len(tokens) < n_normal:
        left = tokens[256 + i // 256]
        right = alpha[i % 256]
        tokens.append(left + right)
        merges.append(f"{left} {right}")
        i += 1
    types = [gguf.TokenType.NORMAL] * len(tokens)
    bos = len(tokens)
    for s in ("<|endoftext|>", "<|im_start|>", "<|im_end|>"):
        tokens.append(s)
        types.append(gguf.TokenType.CONTROL)
    eos = bos + 2
    while len(tokens) < n_vocab:
        tokens.append(f"<|reserved_{len(tokens)}|>")
        types.append(gguf.TokenType.CONTROL)
    assert len(tokens) == n_vocab and len(set(tokens)) == n_vocab
    return tokens, types, merges, bos, eos


# ---- tensors -----------------------------------------------------------------

def tensor_plan(s, qtype):
    """[(name, ne (GGUF order: row length first), type, kind)] in file order.
    kind: "mat" random matrix, "norm" near-one vector, "bias" small vector."""
    E, F, D = s["n_embd"], s["n_ff"], s["head_dim"]
    QD, KD = s["n_head"] * D, s["n_head_kv"] * D
    plan = [("token_embd.weight", (E, s["n_vocab"]), qtype, "mat")]
    for i in range(s["n_layer"]):
        p = f"blk.{i}."
        plan += [
            (p + "attn_norm.weight", (E,), T.F32, "norm"),
            (p + "attn_q.weight", (E, QD), qtype, "mat"),
            (p + "attn_k.weight", (E, KD), qtype, "mat"),
            (p + "attn_v.weight", (E, KD), qtype, "mat"),
        ]
        if s["qkv_bias"]:
            plan += [
                (p + "attn_q.bias", (QD,), T.F32, "bias"),
                (p + "attn_k.bias", (KD,), T.F32, "bias"),
                (p + "attn_v.bias", (KD,), T.F32, "bias"),
            ]
        plan += [
            (p + "attn_output.weight", (QD, E), qtype, "mat"),
            (p + "ffn_norm.weight", (E,), T.F32, "norm"),
            (p + "ffn_gate.weight", (E, F), qtype, "mat"),
            (p + "ffn_up.weight", (E, F), qtype, "mat"),
            (p + "ffn_down.weight", (F, E), qtype, "mat"),
        ]
    plan.append(("output_norm.weight", (E,), T.F32, "norm"))
    return plan


def nbytes(ne, qtype):
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    n = int(np.prod(ne))
    assert n % block == 0
    return n // block * size


def make_tensor(rng, ne, qtype, kind):
    """The tensor's bytes as a uint8 array (quantized) or float32 array."""
    if kind == "norm":
        return (1.0 + 0.05 * rng.standard_normal(ne[0], dtype=np.float32)).astype(np.float32)
    if kind == "bias":
        return (WEIGHT_STD * rng.standard_normal(ne[0], dtype=np.float32)).astype(np.float32)
    cols, rows = ne
    row_bytes = nbytes((cols,), qtype)
    out = np.empty((rows, row_bytes), dtype=np.uint8)
    step = max(1, CHUNK_ELEMS // cols)
    for r0 in range(0, rows, step):
        r1 = min(rows, r0 + step)
        x = rng.standard_normal((r1 - r0, cols), dtype=np.float32)
        x *= np.float32(WEIGHT_STD)
        out[r0:r1] = quantize(x, qtype)
    return out


def write_model(path, s, qtype, seed, log):
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(path, s["arch"])
    w.add_name(s["name"])
    w.add_context_length(s["n_ctx_train"])
    w.add_embedding_length(s["n_embd"])
    w.add_block_count(s["n_layer"])
    w.add_feed_forward_length(s["n_ff"])
    w.add_head_count(s["n_head"])
    w.add_head_count_kv(s["n_head_kv"])
    w.add_rope_freq_base(s["rope_base"])
    w.add_layer_norm_rms_eps(s["eps"])
    w.add_file_type(FILE_TYPE[qtype])
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    tokens, types, merges, bos, eos = make_vocab(s["n_vocab"])
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(bos)
    w.add_eos_token_id(eos)
    w.add_add_bos_token(False)
    w.add_chat_template(CHATML)

    plan = tensor_plan(s, qtype)
    for name, ne, qt, _ in plan:
        # gguf-py takes numpy (row-major) shapes: reversed GGUF order; for a
        # quantized type, the byte shape (last dim in bytes).
        if qt == T.F32:
            w.add_tensor_info(name, tuple(reversed(ne)), np.dtype(np.float32), nbytes(ne, qt))
        else:
            byte_shape = (ne[1], nbytes((ne[0],), qt))
            w.add_tensor_info(name, byte_shape, np.dtype(np.uint8), nbytes(ne, qt), raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for k, (name, ne, qt, kind) in enumerate(plan):
        if kind == "mat" and log:
            print(f"gen_bench_models: {os.path.basename(path)}: {name} ({k + 1}/{len(plan)})",
                  file=sys.stderr, flush=True)
        w.write_tensor_data(make_tensor(rng, ne, qt, kind))
    w.close()


def self_test():
    """The quantized bytes decode to the values they came from (within the
    type's step), so the file holds properly quantized data."""
    rng = np.random.default_rng(0)
    for qt in (T.Q4_0, T.Q8_0):
        x = rng.standard_normal((3, 256), dtype=np.float32) * np.float32(WEIGHT_STD)
        y = dequantize(quantize(x, qt), qt)
        step = np.abs(x).max() / (7 if qt == T.Q4_0 else 127)
        assert np.abs(x - y).max() <= step, f"{qt.name} round trip off by {np.abs(x - y).max()}"


def check_file(path, s, qtype):
    """Read the file back with gguf-py: tensor count, types, metadata."""
    r = gguf.GGUFReader(path)
    plan = tensor_plan(s, qtype)
    assert len(r.tensors) == len(plan), f"{path}: {len(r.tensors)} tensors, want {len(plan)}"
    for t, (name, ne, qt, _) in zip(r.tensors, plan):
        assert t.name == name and t.tensor_type == qt and tuple(int(v) for v in t.shape) == ne, \
            f"{path}: tensor {t.name} {t.tensor_type.name} {tuple(t.shape)} != {name} {qt.name} {ne}"
    emb = r.tensors[0]
    vals = dequantize(np.asarray(emb.data[:4]), qtype)
    sd = float(vals.std())
    assert 0.5 * WEIGHT_STD < sd < 2 * WEIGHT_STD, f"{path}: token_embd std {sd}"
    n_tok = len(r.fields["tokenizer.ggml.tokens"].data)
    assert n_tok == s["n_vocab"], f"{path}: {n_tok} tokens"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", metavar="MODEL", help=", ".join(MODELS))
    ap.add_argument("--out", default=None, help="output directory (default: %s)" % cache_dir())
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--check", action="store_true", help="read each file back and check it")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args()
    names = a.models or list(MODELS)
    for n in names:
        if n not in MODELS:
            ap.error(f"unknown model {n!r} (known: {', '.join(MODELS)})")
    out = a.out or cache_dir()
    os.makedirs(out, exist_ok=True)
    self_test()
    for n in names:
        shape, qtype = MODELS[n]
        path = os.path.join(out, n + ".gguf")
        if not os.path.exists(path):
            # write under a temporary name and rename: an interrupted run
            # never leaves a truncated file that looks finished
            fd, tmp = tempfile.mkstemp(prefix=n + ".", suffix=".part", dir=out)
            os.close(fd)
            try:
                write_model(tmp, SHAPES[shape], qtype, a.seed, not a.quiet)
                os.chmod(tmp, 0o644)  # mkstemp made it 0600
                os.replace(tmp, path)
            except BaseException:
                os.unlink(tmp)
                raise
        if a.check:
            check_file(path, SHAPES[shape], qtype)
        print(path, flush=True)


if __name__ == "__main__":
    main()
