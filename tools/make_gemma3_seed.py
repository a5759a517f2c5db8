#!/usr/bin/env python3
"""tests/fuzz/corpus/fuzz_gguf/valid_tiny_gemma3.gguf: a small valid gemma3
GGUF for the fuzz_gguf seed corpus, so the fuzzer starts from the gemma3
paths of the loader and forward pass (sliding_window_pattern as an array,
rope.freq_base_swa, final_logit_softcapping, post-norms, Q/K norms).

usage: make_gemma3_seed.py [OUT]
       make_gemma3_seed.py --bad-pattern [OUT]

--bad-pattern writes tests/data/tiny_gemma3_badpattern.gguf instead: the
same model with a sliding_window_pattern array of 3 flags for its 2 layers
(test_logits expects the loader to name the key).

2 layers (the first local with a window of 3, the second global), E 8,
2 heads of 4 sharing 1 KV head, F 16, a 16-piece SentencePiece vocabulary;
weights seeded random F32 (norms F32, the rest F16 to keep it small).
Needs numpy and gguf (pip): never run in CI; its output is committed.
"""
import os
import sys

import numpy as np
import gguf

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    args = sys.argv[1:]
    bad = bool(args) and args[0] == "--bad-pattern"
    if bad:
        args = args[1:]
    default = (os.path.join(ROOT, "tests", "data", "tiny_gemma3_badpattern.gguf") if bad else
               os.path.join(ROOT, "tests", "fuzz", "corpus", "fuzz_gguf", "valid_tiny_gemma3.gguf"))
    out = args[0] if args else default
    rng = np.random.default_rng(3)
    E, H, HKV, D, F, L = 8, 2, 1, 4, 16, 2
    pieces = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>",
              "\u2581", "\u2581a", "b", "c", "\u2581ab", "<0x0A>", "<0x41>", "x", "y", "z"]
    types = [3, 3, 3, 2, 3, 3] + [1] * 5 + [6, 6] + [1] * 3
    V = len(pieces)
    w = gguf.GGUFWriter(out, "gemma3")
    w.add_name("tiny gemma3 seed")
    w.add_context_length(64)
    w.add_embedding_length(E)
    w.add_block_count(L)
    w.add_feed_forward_length(F)
    w.add_head_count(H)
    w.add_head_count_kv(HKV)
    w.add_key_length(D)
    w.add_value_length(D)
    w.add_rope_freq_base(1e6)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_sliding_window(3)
    w.add_array("gemma3.attention.sliding_window_pattern", [True, False, True] if bad else [True, False])
    w.add_float32("gemma3.rope.freq_base_swa", 10000.0)
    w.add_float32("gemma3.final_logit_softcapping", 30.0)
    w.add_tokenizer_model("llama")
    w.add_token_list(pieces)
    w.add_token_scores([-float(i) for i in range(V)])
    w.add_token_types(types)
    w.add_bos_token_id(2)
    w.add_eos_token_id(1)
    w.add_unk_token_id(3)
    w.add_add_bos_token(True)
    w.add_add_space_prefix(False)

    def mat(name, rows, cols):
        w.add_tensor(name, (rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(np.float16))

    def vec(name, n):
        w.add_tensor(name, (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32))

    mat("token_embd.weight", V, E)
    vec("output_norm.weight", E)
    for il in range(L):
        p = f"blk.{il}."
        vec(p + "attn_norm.weight", E)
        mat(p + "attn_q.weight", H * D, E)
        mat(p + "attn_k.weight", HKV * D, E)
        mat(p + "attn_v.weight", HKV * D, E)
        mat(p + "attn_output.weight", E, H * D)
        vec(p + "attn_q_norm.weight", D)
        vec(p + "attn_k_norm.weight", D)
        vec(p + "post_attention_norm.weight", E)
        vec(p + "ffn_norm.weight", E)
        mat(p + "ffn_gate.weight", F, E)
        mat(p + "ffn_up.weight", F, E)
        mat(p + "ffn_down.weight", E, F)
        vec(p + "post_ffw_norm.weight", E)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(out)


if __name__ == "__main__":
    main()
