/*
 * llm.h — decoder-only transformer models (llama, qwen2, qwen3 families):
 * hyperparameters and weights read from GGUF, KV cache, forward pass.
 * Internal to the engine.
 *
 * Weights are views into the GGUF mapping (zero copy). Activations are
 * float32. Matrix products go through kernels/cpu (quant.h).
 */
#ifndef PETREL_LLM_H
#define PETREL_LLM_H

#include "gguf.h"
#include "petrel.h"

typedef enum pt_arch { PT_ARCH_LLAMA, PT_ARCH_QWEN2, PT_ARCH_QWEN3 } pt_arch;

typedef struct pt_llm_hparams {
    pt_arch arch;
    const char *arch_name;
    int n_vocab, n_ctx_train, n_embd, n_layer, n_head, n_head_kv, n_ff;
    int head_dim;        /* per-head size of Q and K (and V) */
    int n_rot;           /* rope.dimension_count (usually head_dim) */
    bool rope_neox;      /* rotate pairs (i, i + n_rot/2) instead of (2i, 2i+1) */
    float rope_base;
    float rope_freq_scale; /* 1 / rope.scaling.factor for linear scaling, else 1 */
    float norm_eps;
    bool tied_output;    /* output.weight absent: reuse token_embd.weight */
} pt_llm_hparams;

typedef struct pt_llm pt_llm;

/* Validate hyperparameters and find every tensor (checking type and shape);
 * a missing or mis-shaped tensor, an unknown architecture or an unsupported
 * tensor type is an error naming it. g must outlive the model. */
pt_status pt_llm_load(const pt_gguf *g, pt_llm **out, pt_error *err);
void pt_llm_free(pt_llm *m);
const pt_llm_hparams *pt_llm_get_hparams(const pt_llm *m);

/* Per-sequence state: KV cache and scratch buffers for up to n_ctx tokens
 * and batches of up to n_batch tokens. */
typedef struct pt_llm_state pt_llm_state;

pt_status pt_llm_state_new(const pt_llm *m, int n_ctx, int n_batch, int n_threads,
                           pt_llm_state **out, pt_error *err);
void pt_llm_state_free(pt_llm_state *s);
void pt_llm_state_reset(pt_llm_state *s);
int pt_llm_state_n_past(const pt_llm_state *s);

/* Run n tokens at positions n_past.. (n may exceed n_batch: it is split),
 * append their K/V, and write logits: the last token's into last_logits
 * (n_vocab floats) when non-NULL, every token's into all_logits
 * (n x n_vocab) when non-NULL. PT_ERR_CONTEXT_FULL when n_past + n > n_ctx;
 * a token id outside the vocabulary is PT_ERR_ARG. */
pt_status pt_llm_forward(const pt_llm *m, pt_llm_state *s, const pt_token *tokens, int n,
                         float *last_logits, float *all_logits, pt_error *err);

#endif
