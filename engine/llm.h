/*
 * llm.h — decoder-only transformer models (llama, qwen2, qwen3, gemma3 families):
 * hyperparameters and weights read from GGUF, KV cache, forward pass.
 * Internal to the engine.
 *
 * Weights are views into the GGUF mapping; matrices whose type has an
 * int8 fast path (Q4_0, Q4_1, Q5_0, Q8_0 on AVX2 / AVX-VNNI / AVX-512 VNNI /
 * NEON dotprod / i8mm: kernels/cpu/qmatmul.h) are repacked at load into
 * heap copies and their source pages dropped from memory. Activations are
 * float32; products of the repacked matrices quantize them to int8 per 32
 * values, the others go through the float reference pt_matmul_ref
 * (quant.h). The "ref" variant keeps every matrix on the reference path.
 */
#ifndef PETREL_LLM_H
#define PETREL_LLM_H

#include "cpu_features.h"
#include "gguf.h"
#include "petrel.h"

typedef enum pt_arch { PT_ARCH_LLAMA, PT_ARCH_QWEN2, PT_ARCH_QWEN3, PT_ARCH_GEMMA3 } pt_arch;

/* The gated feed-forward's activation: silu (SwiGLU) or GELU's tanh form (GeGLU). */
typedef enum pt_ffn_act { PT_FFN_SILU, PT_FFN_GELU_TANH } pt_ffn_act;

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
    pt_ffn_act ffn_act;
    float embd_scale;    /* token embeddings are multiplied by it (gemma3: sqrt(n_embd)), else 1 */
    float attn_scale;    /* scores are q.k * attn_scale (1/sqrt(head_dim) unless the family says) */
    float logit_softcap; /* final_logit_softcapping, 0: none */
    /* Sliding-window attention (gemma3): n_swa > 0 is the window of the
     * layers marked in swa_layers (a position sees the last n_swa
     * positions, its own included); those layers rotate with
     * rope_base_swa and no scaling, the others with rope_base and
     * rope_freq_scale. n_swa == 0: every layer is global. */
    int n_swa;
    float rope_base_swa;
    bool post_norms;     /* gemma3: RMSNorm of each sublayer's output before the residual add */
} pt_llm_hparams;

typedef struct pt_llm pt_llm;

/* How to load: the kernel variant, where to repack, whether to repack. */
typedef struct pt_llm_load_opts {
    const pt_cpu *cpu;             /* kernel variant; NULL: the best this CPU can run */
    pt_threadpool *pool;           /* repack on it; NULL: a private short-lived pool */
    bool metadata_only;            /* check hyperparameters and tensors, repack nothing */
    pt_load_progress_fn progress;  /* NULL: none; as pt_model_params documents */
    void *progress_user;
} pt_llm_load_opts;

/* Validate hyperparameters, find every tensor (checking type and shape)
 * and repack the matrices that have a fast path for the chosen CPU
 * variant (unless metadata_only: then the weights are never read and the
 * pack info holds only the variant; such a model must not run). A missing or mis-shaped tensor, an
 * unknown architecture or an unsupported tensor type is an error naming
 * it. g must outlive the model. When g owns its mapping, the pages of
 * each repacked matrix are dropped (MADV_DONTNEED), so resident memory
 * holds one copy of the weights, not two. opts NULL: the defaults. */
pt_status pt_llm_load_with(const pt_gguf *g, const pt_llm_load_opts *opts, pt_llm **out,
                           pt_error *err);
/* pt_llm_load_with with only the variant set (NULL: the best; tests,
 * benchmarks); PT_CPU_REF keeps every matrix on pt_matmul_ref. */
pt_status pt_llm_load_cpu(const pt_gguf *g, const pt_cpu *cpu, pt_llm **out, pt_error *err);
/* pt_llm_load_with with the defaults. */
pt_status pt_llm_load(const pt_gguf *g, pt_llm **out, pt_error *err);

/* The CPU and kernel variant a name selects: NULL, "" or "auto" the best
 * this CPU can run, else a variant name as pt_cpu_variant_name spells it.
 * A name that is unknown or that this CPU cannot run is
 * PT_ERR_UNSUPPORTED naming it. */
pt_status pt_llm_cpu_from_name(const char *name, pt_cpu *out, pt_error *err);
void pt_llm_free(pt_llm *m);
const pt_llm_hparams *pt_llm_get_hparams(const pt_llm *m);
/* How many layers use the sliding window (0 when hp.n_swa is 0). */
int pt_llm_swa_layers(const pt_llm *m);

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
 * and batches of up to n_batch tokens, run on `pool` (shared, not owned),
 * or when pool is NULL on a private pool of n_threads threads (the
 * caller's thread is one of them; n_threads <= 0 means 1). Results do not
 * depend on the number of threads, n_batch or how tokens are split between
 * calls: every split gives bitwise the same logits. */
typedef struct pt_llm_state pt_llm_state;

/* The KV cache's element type, RAM budget and spill directory
 * (kv_cache.h); NULL: float32, no budget. */
typedef struct pt_llm_kv_params {
    int type;               /* pt_kv_type */
    uint64_t budget_bytes;  /* 0: none */
    const char *spill_dir;
    int qk;                 /* pt_kv_qk */
} pt_llm_kv_params;

pt_status pt_llm_state_new(const pt_llm *m, int n_ctx, int n_batch, int n_threads,
                           pt_threadpool *pool, pt_llm_state **out, pt_error *err);
/* pt_llm_state_new with a KV cache of kv's kind (NULL: float32, no budget). */
pt_status pt_llm_state_new_kv(const pt_llm *m, int n_ctx, int n_batch, int n_threads,
                              pt_threadpool *pool, const pt_llm_kv_params *kv, pt_llm_state **out,
                              pt_error *err);
/* The KV cache's counters (pt_context_kv_stats). */
void pt_llm_state_kv_stats(const pt_llm_state *s, pt_kv_stats *out);
void pt_llm_state_free(pt_llm_state *s);
void pt_llm_state_reset(pt_llm_state *s);
/* Keep positions [0, n_keep) of the cache (0 <= n_keep <= n_past, checked
 * by the caller): the next forward pass writes from n_keep on, and the
 * positions past it are stale, as after a reset. */
void pt_llm_state_truncate(pt_llm_state *s, int n_keep);
int pt_llm_state_n_past(const pt_llm_state *s);
/* Bytes the KV cache holds in memory (as allocated, padding included). */
uint64_t pt_llm_state_kv_bytes(const pt_llm_state *s);
/* The state's KV cache, and setting n_past after its positions [0, n)
 * were written from outside (a restored session, engine/session.c;
 * 0 <= n <= n_ctx, checked by the caller). */
struct pt_kv_cache;
struct pt_kv_cache *pt_llm_state_kv(pt_llm_state *s);
void pt_llm_state_set_n_past(pt_llm_state *s, int n);
/* The LoRA adapters every product of the next forward passes adds
 * (matmul.h; owned by the caller, who keeps it alive and unchanged while
 * a pass runs; its max_tokens must be at least n_batch), or NULL: none. */
struct pt_lora_run;
void pt_llm_state_set_lora(pt_llm_state *s, const struct pt_lora_run *lora);
/* Threads of the state's pool (its per-thread buffers, LoRA's included). */
int pt_llm_state_n_threads(const pt_llm_state *s);

/* Run n tokens at positions n_past.. (n may exceed n_batch: it is split),
 * append their K/V, and write logits: the last token's into last_logits
 * (n_vocab floats) when non-NULL, every token's into all_logits
 * (n x n_vocab) when non-NULL. PT_ERR_CONTEXT_FULL when n_past + n > n_ctx;
 * a token id outside the vocabulary is PT_ERR_ARG. A KV spill failure
 * (PT_ERR_IO) leaves n_past as it was. */
pt_status pt_llm_forward(const pt_llm *m, pt_llm_state *s, const pt_token *tokens, int n,
                         float *last_logits, float *all_logits, pt_error *err);

#endif
