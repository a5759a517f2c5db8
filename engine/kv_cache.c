/* kv_cache.c — float32 key/value cache (layout in kv_cache.h). */
#include "kv_cache.h"

#include "status.h"

#include <stdlib.h>
#include <string.h>

pt_status pt_kv_init(pt_kv_cache *kv, int n_layer, int n_ctx, int kv_dim, pt_error *err) {
    memset(kv, 0, sizeof *kv);
    if (n_layer <= 0 || n_ctx <= 0 || kv_dim <= 0)
        return pt_fail(err, PT_ERR_ARG, "kv cache: bad size (%d layers, %d positions, %d values a row)",
                       n_layer, n_ctx, kv_dim);
    size_t n;
    if (__builtin_mul_overflow((size_t)n_layer, (size_t)n_ctx, &n) ||
        __builtin_mul_overflow(n, (size_t)kv_dim, &n) ||
        __builtin_mul_overflow(n, sizeof(float), &n))
        return pt_fail(err, PT_ERR_NOMEM, "kv cache: size of %d layers x %d positions x %d overflows",
                       n_layer, n_ctx, kv_dim);
    kv->k = malloc(n);
    kv->v = malloc(n);
    if (!kv->k || !kv->v) {
        pt_kv_release(kv);
        return pt_fail(err, PT_ERR_NOMEM, "kv cache: cannot allocate 2 x %zu bytes for %d positions",
                       n, n_ctx);
    }
    kv->n_layer = n_layer;
    kv->n_ctx = n_ctx;
    kv->kv_dim = kv_dim;
    return PT_OK;
}

void pt_kv_release(pt_kv_cache *kv) {
    free(kv->k);
    free(kv->v);
    memset(kv, 0, sizeof *kv);
}

static size_t row_index(const pt_kv_cache *kv, int layer, int pos) {
    return ((size_t)layer * (size_t)kv->n_ctx + (size_t)pos) * (size_t)kv->kv_dim;
}

void pt_kv_store(pt_kv_cache *kv, int layer, int pos, const float *k, const float *v) {
    const size_t i = row_index(kv, layer, pos);
    memcpy(kv->k + i, k, (size_t)kv->kv_dim * sizeof(float));
    memcpy(kv->v + i, v, (size_t)kv->kv_dim * sizeof(float));
}

const float *pt_kv_keys(const pt_kv_cache *kv, int layer) { return kv->k + row_index(kv, layer, 0); }
const float *pt_kv_values(const pt_kv_cache *kv, int layer) { return kv->v + row_index(kv, layer, 0); }
int64_t pt_kv_stride(const pt_kv_cache *kv) { return kv->kv_dim; }
