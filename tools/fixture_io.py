"""fixture_io.py — binary formats shared by the logits fixture generators.

Read by tests/test_logits.c and tests/test_greedy.c. All integers and floats
little-endian; no padding.

Logits fixture (*.logits):
    char  magic[8] = "PTLOGIT1"
    u32   n_vocab
    u32   n_prompts
    u32   top_k            entries per position in the top-k table (0: none)
    per prompt:
      u32 n_tok
      u32 n_full           positions whose whole logit row is stored
      u32 text_len; u8 text[text_len]        prompt text (may be empty)
      i32 tokens[n_tok]
      i32 top1[n_tok]      reference argmax after each position
      f32 gap[n_tok]       reference top-1 minus top-2 logit
      i32 top_ids[n_tok][top_k]              reference top-k ids, best first
      f32 top_vals[n_tok][top_k]             their logits
      i32 full_pos[n_full]
      f32 full[n_full][n_vocab]

Greedy fixture (*.greedy):
    char  magic[8] = "PTGREED2"
    u32   n_prompts
    u32   top_k            entries per step in the top-k table
    per prompt:
      u32 text_len; u8 text[text_len]
      u32 n_prompt; i32 prompt[n_prompt]
      u32 n_gen; u32 stopped_at_eos
      i32 gen[n_gen]       reference greedy continuation
      f32 gap[n_gen]       reference top-1 minus top-2 logit at each step
      i32 top_ids[n_gen][top_k]   reference top-k tokens of each step, best first
      f32 top_vals[n_gen][top_k]  their logits
"""

import struct

import numpy as np


def top1_and_gap(logits):
    """logits [n, V] float32 -> (top1 [n] int32, gap [n] float32)."""
    order = np.argsort(-logits, axis=-1, kind="stable")
    top1 = order[:, 0].astype(np.int32)
    rows = np.arange(logits.shape[0])
    gap = (logits[rows, order[:, 0]] - logits[rows, order[:, 1]]).astype(np.float32)
    return top1, gap


def write_logits(path, n_vocab, prompts, top_k=0):
    """prompts: list of dicts with text (str), tokens (list[int]),
    logits (np [n, V] float32), full_pos (list[int])."""
    with open(path, "wb") as f:
        f.write(b"PTLOGIT1")
        f.write(struct.pack("<III", n_vocab, len(prompts), top_k))
        for p in prompts:
            logits = np.asarray(p["logits"], dtype=np.float32)
            n = len(p["tokens"])
            assert logits.shape == (n, n_vocab)
            text = p.get("text", "").encode("utf-8")
            full_pos = list(p["full_pos"])
            f.write(struct.pack("<III", n, len(full_pos), len(text)))
            f.write(text)
            f.write(np.asarray(p["tokens"], dtype="<i4").tobytes())
            top1, gap = top1_and_gap(logits)
            f.write(top1.astype("<i4").tobytes())
            f.write(gap.astype("<f4").tobytes())
            if top_k:
                ids = np.argsort(-logits, axis=-1, kind="stable")[:, :top_k]
                vals = np.take_along_axis(logits, ids, axis=-1)
                f.write(ids.astype("<i4").tobytes())
                f.write(vals.astype("<f4").tobytes())
            f.write(np.asarray(full_pos, dtype="<i4").tobytes())
            f.write(logits[full_pos].astype("<f4").tobytes())


def write_greedy(path, runs, top_k=8):
    """runs: list of dicts with text, prompt (list[int]), gen (list[int]),
    gap (list[float]), logits (np [n_gen, V] float32: the step logits),
    stopped_at_eos (bool)."""
    with open(path, "wb") as f:
        f.write(b"PTGREED2")
        f.write(struct.pack("<II", len(runs), top_k))
        for r in runs:
            text = r["text"].encode("utf-8")
            f.write(struct.pack("<I", len(text)))
            f.write(text)
            f.write(struct.pack("<I", len(r["prompt"])))
            f.write(np.asarray(r["prompt"], dtype="<i4").tobytes())
            f.write(struct.pack("<II", len(r["gen"]), 1 if r["stopped_at_eos"] else 0))
            f.write(np.asarray(r["gen"], dtype="<i4").tobytes())
            f.write(np.asarray(r["gap"], dtype="<f4").tobytes())
            logits = r["logits"]
            ids = np.argsort(-logits, axis=-1, kind="stable")[:, :top_k]
            f.write(ids.astype("<i4").tobytes())
            f.write(np.take_along_axis(logits, ids, axis=-1).astype("<f4").tobytes())
