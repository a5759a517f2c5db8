/*
 * kv_cache_io.h — the KV cache of one layer as bytes, for saved sessions
 * (engine/session.c). The interface agreed with the KV-cache work (which
 * brings its own implementation for every KV type and spilled pages); this
 * one serves today's float32 cache.
 *
 * Serialized form of positions [0, n_pos) of one layer, in the cache's own
 * element type (float32 here):
 *   keys   [n_head_kv][n_pos][head_dim]   position-major rows (not the
 *                                         cache's blocked, transposed layout)
 *   values [n_head_kv][n_pos][head_dim]
 */
#ifndef PETREL_KV_CACHE_IO_H
#define PETREL_KV_CACHE_IO_H

#include <stddef.h>

#include "kv_cache.h"

/* Bytes of the serialized form of positions [0, n_pos) of one layer (all KV heads,
 * keys then values, in the cache's own element type and scales). */
size_t pt_kv_layer_bytes(const pt_kv_cache *kv, int n_pos);
pt_status pt_kv_export_layer(const pt_kv_cache *kv, int layer, int n_pos, void *dst,
                             pt_error *err);
pt_status pt_kv_import_layer(pt_kv_cache *kv, int layer, int n_pos, const void *src,
                             pt_error *err);
/* The cache's element type, as the public enum pt_kv_type (petrel.h). */
int pt_kv_type_of(const pt_kv_cache *kv);

#endif
