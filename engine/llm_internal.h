/*
 * llm_internal.h — the structures behind llm.h, shared by llm_load.c
 * (hyperparameters, tensor lookup) and llm_forward.c (run state, forward
 * pass). Internal to those files.
 *
 * Notation for shapes: E = n_embd, H = n_head, Hkv = n_head_kv,
 * D = head_dim, F = n_ff, V = n_vocab. A matrix "[rows x cols]" has rows
 * of cols elements (GGUF ne = [cols, rows]); y = W x maps cols -> rows.
 */
#ifndef PETREL_LLM_INTERNAL_H
#define PETREL_LLM_INTERNAL_H

#include "llm.h"

#include "cpu_features.h"
#include "matmul.h"

#include <stddef.h>
#include <stdint.h>

/* The matrices are pt_weight (matmul.h): a view into the GGUF mapping and
 * its repacked copy for the int8 kernels when it has one. */
typedef struct pt_llm_layer {
    const float *attn_norm;  /* [E] */
    pt_weight wq;        /* [H*D x E] */
    pt_weight wk;        /* [Hkv*D x E] */
    pt_weight wv;        /* [Hkv*D x E] */
    pt_weight wo;        /* [E x H*D] */
    const float *bq;         /* [H*D] or NULL (qwen2; optional for llama) */
    const float *bk;         /* [Hkv*D] or NULL */
    const float *bv;         /* [Hkv*D] or NULL */
    const float *q_norm;     /* [D] or NULL (qwen3, gemma3: per-head RMSNorm before rope) */
    const float *k_norm;     /* [D] or NULL */
    const float *attn_post_norm; /* [E] or NULL (gemma3: norm of Wo att before the add) */
    const float *ffn_norm;   /* [E] */
    const float *ffn_post_norm;  /* [E] or NULL (gemma3: norm of the FFN output) */
    bool swa;                /* sliding-window layer (hp.n_swa; its own rope base) */
    pt_weight w_gate;    /* [F x E] */
    pt_weight w_up;      /* [F x E] */
    pt_weight w_down;    /* [E x F] */
} pt_llm_layer;

struct pt_llm {
    pt_llm_hparams hp;
    pt_cpu cpu;                 /* kernel variant of every pack and state */
    pt_llm_pack_info pack;      /* what packing did, for reports */
    pt_weight tok_embd;     /* [V x E]; row t is token t's embedding */
    const float *output_norm;   /* [E] */
    pt_weight output;       /* [V x E]; token_embd when tied: then both
                                   share one `packed` (owned by output) */
    const float *rope_freqs;    /* [n_rot/2] per-frequency divisors, or NULL */
    pt_llm_layer *layers;       /* [n_layer] */
    struct pt_llm_graph *graph; /* layers placed on a device (llm_graph.h), or NULL:
                                   the CPU path of llm_forward.c */
    float *vectors;             /* heap copy every const float * above points into
                                   (norms, biases, rope_freqs), see own_vectors */
};

#endif
