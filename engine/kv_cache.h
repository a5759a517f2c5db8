/*
 * kv_cache.h — the per-sequence key/value cache of a decoder. Internal to
 * the engine.
 *
 * Layout (float32), per layer and KV head, in the form the fused attention
 * kernel reads (kernels/cpu/attention.h):
 *   k: [n_layer][n_head_kv][n_blocks][head_dim][PT_ATTN_BK]
 *        keys in blocks of PT_ATTN_BK positions, transposed within a block
 *        (dimension d of position p at block p / BK, [d][p % BK]);
 *        n_blocks = ceil(n_ctx / BK)
 *   v: [n_layer][n_head_kv][n_ctx][head_dim]
 *        values as rows, one per position
 * Callers go through these functions and never index the arrays
 * themselves. Positions at or past the sequence's n_past are stale: the
 * kernel reads the unused lanes of the last key block but masks them.
 * Both arrays start zeroed (calloc: the pages stay untouched, so resident
 * memory grows with the positions used, not with n_ctx).
 */
#ifndef PETREL_KV_CACHE_H
#define PETREL_KV_CACHE_H

#include "petrel.h"

#include <stddef.h>
#include <stdint.h>

typedef struct pt_kv_cache {
    int n_layer, n_ctx, n_head_kv, head_dim;
    int64_t k_block_stride; /* floats from one key block to the next: BK * head_dim */
    int64_t k_head_stride;  /* floats per (layer, head) of k: n_blocks * k_block_stride */
    int64_t v_head_stride;  /* floats per (layer, head) of v: n_ctx * head_dim */
    float *k;
    float *v;
} pt_kv_cache;

/* Allocate a cache; PT_ERR_NOMEM (with the size) when it does not fit. */
pt_status pt_kv_init(pt_kv_cache *kv, int n_layer, int n_ctx, int n_head_kv, int head_dim,
                     pt_error *err);
void pt_kv_release(pt_kv_cache *kv);

/* Store the keys and values of one position: k and v hold n_head_kv heads
 * of head_dim floats side by side. */
void pt_kv_store(pt_kv_cache *kv, int layer, int pos, const float *k, const float *v);

/* Keys of (layer, head) in the blocked layout, block b at
 * b * pt_kv_key_block_stride floats further on. */
const float *pt_kv_keys(const pt_kv_cache *kv, int layer, int head);
int64_t pt_kv_key_block_stride(const pt_kv_cache *kv);

/* Values of (layer, head): position p at p * head_dim floats further on. */
const float *pt_kv_values(const pt_kv_cache *kv, int layer, int head);

/* Bytes allocated for k and v together. */
uint64_t pt_kv_bytes(const pt_kv_cache *kv);

#endif
