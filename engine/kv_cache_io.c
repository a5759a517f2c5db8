/* kv_cache_io.c — one layer of the float32 KV cache as bytes (layout in
 * kv_cache_io.h). */
#include "kv_cache_io.h"

#include <string.h>

#include "attention.h"

#include "status.h"

size_t pt_kv_layer_bytes(const pt_kv_cache *kv, int n_pos) {
    return 2 * (size_t)kv->n_head_kv * (size_t)n_pos * (size_t)kv->head_dim * sizeof(float);
}

static pt_status check_range(const pt_kv_cache *kv, int layer, int n_pos, pt_error *err) {
    if (layer < 0 || layer >= kv->n_layer || n_pos < 0 || n_pos > kv->n_ctx)
        return pt_fail(err, PT_ERR_ARG, "KV layer %d, %d positions: outside a cache of %d layers and %d positions",
                       layer, n_pos, kv->n_layer, kv->n_ctx);
    return PT_OK;
}

pt_status pt_kv_export_layer(const pt_kv_cache *kv, int layer, int n_pos, void *dst, pt_error *err) {
    pt_status st = check_range(kv, layer, n_pos, err);
    if (st != PT_OK) return st;
    const int D = kv->head_dim;
    const int64_t bs = pt_kv_key_block_stride(kv);
    float *k_out = dst;
    float *v_out = k_out + (size_t)kv->n_head_kv * (size_t)n_pos * (size_t)D;
    for (int h = 0; h < kv->n_head_kv; h++) {
        const float *kt = pt_kv_keys(kv, layer, h);
        float *ko = k_out + (size_t)h * (size_t)n_pos * (size_t)D;
        /* the inverse of pt_attn_store_key: dimension d of position p at
         * block p / BK, [d][p % BK] */
        for (int p = 0; p < n_pos; p++) {
            const float *src = kt + (int64_t)(p / PT_ATTN_BK) * bs + p % PT_ATTN_BK;
            for (int d = 0; d < D; d++) ko[(size_t)p * D + d] = src[(int64_t)d * PT_ATTN_BK];
        }
        memcpy(v_out + (size_t)h * (size_t)n_pos * (size_t)D, pt_kv_values(kv, layer, h),
               (size_t)n_pos * (size_t)D * sizeof(float));
    }
    return PT_OK;
}

pt_status pt_kv_import_layer(pt_kv_cache *kv, int layer, int n_pos, const void *src, pt_error *err) {
    pt_status st = check_range(kv, layer, n_pos, err);
    if (st != PT_OK) return st;
    const int D = kv->head_dim, H = kv->n_head_kv;
    const float *k_in = src;
    const float *v_in = k_in + (size_t)H * (size_t)n_pos * (size_t)D;
    for (int h = 0; h < H; h++) {
        /* the cache's own arrays, written as pt_kv_store would */
        float *kt = (float *)pt_kv_keys(kv, layer, h);
        float *vv = (float *)pt_kv_values(kv, layer, h);
        for (int p = 0; p < n_pos; p++)
            pt_attn_store_key(kt, pt_kv_key_block_stride(kv), p, k_in + ((size_t)h * n_pos + p) * D, D);
        memcpy(vv, v_in + (size_t)h * (size_t)n_pos * (size_t)D, (size_t)n_pos * (size_t)D * sizeof(float));
    }
    return PT_OK;
}

int pt_kv_type_of(const pt_kv_cache *kv) {
    (void)kv;
    return PT_KV_F32;
}
