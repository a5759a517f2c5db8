/*
 * llm.h — decoder-only transformer models (llama, qwen2, qwen3 families):
 * hyperparameters and weights read from GGUF, KV cache, forward pass.
 * Internal to the engine.
 *
 * Weights are views into the GGUF mapping; matrices whose type has an
 * int8 fast path (Q4_0, Q4_1, Q8_0 on AVX2 / AVX-VNNI / AVX-512 VNNI /
 * NEON dotprod / i8mm: kernels/cpu/qmatmul.h) are repacked at load into
 * heap copies and their source pages dropped from memory. Activations are
 * float32; products of the repacked matrices quantize them to int8 per 32
 * values, the others go through the float reference pt_matmul_ref
 * (quant.h). PETREL_CPU=ref keeps every matrix on the reference path.
 */
#ifndef PETREL_LLM_H
#define PETREL_LLM_H

#include "cpu_features.h"
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

/* Validate hyperparameters, find every tensor (checking type and shape)
 * and repack the matrices that have a fast path for the CPU (detected,
 * or forced by PETREL_CPU; an unknown or unusable PETREL_CPU value is
 * PT_ERR_UNSUPPORTED). A missing or mis-shaped tensor, an unknown
 * architecture or an unsupported tensor type is an error naming it. g
 * must outlive the model. When g owns its mapping, the pages of each
 * repacked matrix are dropped (MADV_DONTNEED), so resident memory holds
 * one copy of the weights, not two. */
pt_status pt_llm_load(const pt_gguf *g, pt_llm **out, pt_error *err);
/* The same with the kernel variant cpu->variant (tests, benchmarks);
 * PT_CPU_REF keeps every matrix on pt_matmul_ref. */
pt_status pt_llm_load_cpu(const pt_gguf *g, const pt_cpu *cpu, pt_llm **out, pt_error *err);
/* Both of the above (cpu NULL: detected), reporting the repacking's
 * progress to fn (NULL: none) as pt_model_load_progress documents. */
pt_status pt_llm_load_with(const pt_gguf *g, const pt_cpu *cpu, pt_load_progress_fn fn, void *user,
                           pt_llm **out, pt_error *err);
void pt_llm_free(pt_llm *m);
const pt_llm_hparams *pt_llm_get_hparams(const pt_llm *m);

/* What loading repacked. */
typedef struct pt_llm_pack_info {
    const char *variant;      /* kernel variant: "avx512vnni", ..., "ref" */
    int n_packed;             /* matrices on the int8 kernels */
    int n_ref;                /* matrices on pt_matmul_ref (other types) */
    uint64_t packed_bytes;    /* heap bytes of the repacked copies */
    uint64_t dropped_bytes;   /* mapped bytes given back with MADV_DONTNEED */
    double pack_seconds;      /* wall time of the repacking */
} pt_llm_pack_info;
void pt_llm_get_pack_info(const pt_llm *m, pt_llm_pack_info *out);

/* Per-sequence state: KV cache, scratch buffers for up to n_ctx tokens
 * and batches of up to n_batch tokens, and a pool of n_threads threads
 * (the caller's thread is one of them; n_threads <= 0 means 1). Results
 * do not depend on n_threads, n_batch or how tokens are split between
 * calls: every split gives bitwise the same logits. */
typedef struct pt_llm_state pt_llm_state;

pt_status pt_llm_state_new(const pt_llm *m, int n_ctx, int n_batch, int n_threads,
                           pt_llm_state **out, pt_error *err);
void pt_llm_state_free(pt_llm_state *s);
void pt_llm_state_reset(pt_llm_state *s);
int pt_llm_state_n_past(const pt_llm_state *s);
/* Forget the tokens at positions n_past.. (no-op unless 0 <= n_past <
 * the current n_past); their KV rows are overwritten by later decodes. */
void pt_llm_state_rewind(pt_llm_state *s, int n_past);
/* Bytes the KV cache holds in memory (as allocated, padding included). */
uint64_t pt_llm_state_kv_bytes(const pt_llm_state *s);

/* Run n tokens at positions n_past.. (n may exceed n_batch: it is split),
 * append their K/V, and write logits: the last token's into last_logits
 * (n_vocab floats) when non-NULL, every token's into all_logits
 * (n x n_vocab) when non-NULL. PT_ERR_CONTEXT_FULL when n_past + n > n_ctx;
 * a token id outside the vocabulary is PT_ERR_ARG. */
pt_status pt_llm_forward(const pt_llm *m, pt_llm_state *s, const pt_token *tokens, int n,
                         float *last_logits, float *all_logits, pt_error *err);

#endif
