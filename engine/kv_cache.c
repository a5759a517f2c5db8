/* kv_cache.c — float32 key/value cache (layout in kv_cache.h). */
#include "kv_cache.h"

#include "attention.h"
#include "status.h"

#include <stdlib.h>
#include <string.h>

pt_status pt_kv_init(pt_kv_cache *kv, int n_layer, int n_ctx, int n_head_kv, int head_dim,
                     pt_error *err) {
    memset(kv, 0, sizeof *kv);
    if (n_layer <= 0 || n_ctx <= 0 || n_head_kv <= 0 || head_dim <= 0)
        return pt_fail(err, PT_ERR_ARG, "kv cache: bad size (%d layers, %d positions, %d heads of %d)",
                       n_layer, n_ctx, n_head_kv, head_dim);
    const size_t n_blocks = ((size_t)n_ctx + PT_ATTN_BK - 1) / PT_ATTN_BK;
    size_t lh, nk, nv;
    if (__builtin_mul_overflow((size_t)n_layer, (size_t)n_head_kv, &lh) ||
        __builtin_mul_overflow(lh, n_blocks * PT_ATTN_BK, &nk) ||
        __builtin_mul_overflow(nk, (size_t)head_dim, &nk) ||
        __builtin_mul_overflow(lh, (size_t)n_ctx, &nv) ||
        __builtin_mul_overflow(nv, (size_t)head_dim, &nv) || nk > SIZE_MAX / sizeof(float) / 2 || nv > SIZE_MAX / sizeof(float) / 2)
        return pt_fail(err, PT_ERR_NOMEM, "kv cache: size of %d layers x %d positions x %d heads of %d overflows",
                       n_layer, n_ctx, n_head_kv, head_dim);
    kv->k = calloc(nk, sizeof(float));
    kv->v = calloc(nv, sizeof(float));
    if (!kv->k || !kv->v) {
        pt_kv_release(kv);
        return pt_fail(err, PT_ERR_NOMEM, "kv cache: cannot allocate %zu bytes for %d positions",
                       (nk + nv) * sizeof(float), n_ctx);
    }
    kv->n_layer = n_layer;
    kv->n_ctx = n_ctx;
    kv->n_head_kv = n_head_kv;
    kv->head_dim = head_dim;
    kv->k_block_stride = (int64_t)PT_ATTN_BK * head_dim;
    kv->k_head_stride = (int64_t)n_blocks * kv->k_block_stride;
    kv->v_head_stride = (int64_t)n_ctx * head_dim;
    return PT_OK;
}

void pt_kv_release(pt_kv_cache *kv) {
    free(kv->k);
    free(kv->v);
    memset(kv, 0, sizeof *kv);
}

static int64_t head_index(const pt_kv_cache *kv, int layer, int head) {
    return (int64_t)layer * kv->n_head_kv + head;
}

void pt_kv_store(pt_kv_cache *kv, int layer, int pos, const float *k, const float *v) {
    const int D = kv->head_dim;
    for (int h = 0; h < kv->n_head_kv; h++) {
        const int64_t i = head_index(kv, layer, h);
        pt_attn_store_key(kv->k + i * kv->k_head_stride, kv->k_block_stride, pos, k + (size_t)h * D, D);
        memcpy(kv->v + i * kv->v_head_stride + (int64_t)pos * D, v + (size_t)h * D, (size_t)D * sizeof(float));
    }
}

const float *pt_kv_keys(const pt_kv_cache *kv, int layer, int head) {
    return kv->k + head_index(kv, layer, head) * kv->k_head_stride;
}
int64_t pt_kv_key_block_stride(const pt_kv_cache *kv) { return kv->k_block_stride; }

const float *pt_kv_values(const pt_kv_cache *kv, int layer, int head) {
    return kv->v + head_index(kv, layer, head) * kv->v_head_stride;
}

uint64_t pt_kv_bytes(const pt_kv_cache *kv) {
    return ((uint64_t)kv->n_layer * (uint64_t)kv->n_head_kv *
            (uint64_t)(kv->k_head_stride + kv->v_head_stride)) * sizeof(float);
}
