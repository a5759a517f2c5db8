/*
 * kv_cache.h — the per-sequence key/value cache of a decoder. Internal to
 * the engine.
 *
 * Layout (float32 for now; a later change may quantize it, so callers go
 * through these functions and never index the arrays themselves):
 *   k: [n_layer][n_ctx][kv_dim]   kv_dim = n_head_kv * head_dim; a row holds
 *   v: [n_layer][n_ctx][kv_dim]   the heads of one position side by side
 * Row `pos` of layer `l` is valid once stored; rows at or past the
 * sequence's n_past are stale and never read.
 */
#ifndef PETREL_KV_CACHE_H
#define PETREL_KV_CACHE_H

#include "petrel.h"

#include <stdint.h>

typedef struct pt_kv_cache {
    int n_layer, n_ctx, kv_dim;
    float *k; /* [n_layer][n_ctx][kv_dim] */
    float *v; /* [n_layer][n_ctx][kv_dim] */
} pt_kv_cache;

/* Allocate a cache; PT_ERR_NOMEM (with the size) when it does not fit. */
pt_status pt_kv_init(pt_kv_cache *kv, int n_layer, int n_ctx, int kv_dim, pt_error *err);
void pt_kv_release(pt_kv_cache *kv);

/* Store the kv_dim keys and values of one position. */
void pt_kv_store(pt_kv_cache *kv, int layer, int pos, const float *k, const float *v);

/* Keys / values of layer `layer`, position 0: row p starts p * pt_kv_stride
 * floats further on, head h of a row at h * head_dim. */
const float *pt_kv_keys(const pt_kv_cache *kv, int layer);
const float *pt_kv_values(const pt_kv_cache *kv, int layer);
int64_t pt_kv_stride(const pt_kv_cache *kv);

#endif
