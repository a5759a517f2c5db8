/*
 * kv_cache.h — the per-sequence key/value cache of a decoder: it owns its
 * element types, its page table and the attention that reads it; the
 * forward pass (llm_forward.c) stores through pt_kv_store and attends
 * through pt_kv_attend and never indexes the cache. Internal to the
 * engine. docs/kv_cache.md has the figures.
 *
 * Pages. Each layer's positions are cut into pages of PT_KV_PAGE
 * positions; page i of layer l holds positions [i*PAGE, (i+1)*PAGE) of
 * every KV head of that layer, head after head, each head its keys then
 * its values:
 *   f32 keys:   [PAGE / BK][head_dim][BK] floats, attention.h's blocked
 *               transposed layout (read in place by the kernel)
 *   f32 values: [PAGE][head_dim] floats
 *   other types, keys and values: [PAGE][row bytes] rows of one position
 *               each, in the codec's row form (kv_codec.h: scales of q8
 *               run along head_dim per 32, of q8f8's keys one per row),
 *               decoded a page at a time into the kernel's f32 layout
 * A page is EMPTY (never touched: no memory), RAM, DISK (only in the
 * spill file) or LOADING (being read back); its memory is allocated on
 * first use (zeroed, so the unused lanes of a last key block are finite).
 *
 * Spill (kv_spill.c), when a RAM budget is set: page (l, i) has slot
 * l * n_pages + i of the spill file, page_bytes each (a sparse file, no
 * allocator). pt_kv_begin_layer, called by the forward pass before it
 * stores into or attends over a layer, makes that layer's pages resident
 * (a page read ahead is a hit, a page waited for or read there a stall),
 * then writes back and frees the coldest pages until the RAM held is
 * within the budget, and asks the reader thread to read ahead the next
 * layer's pages (and those of the layers after it while the budget has
 * room). Coldest: layers are visited in order, so the pages whose
 * next use is furthest are those of the layer visited most recently
 * (distance (l - current) mod n_layer, largest first). Between calls the
 * RAM held is at most max(budget, one layer's pages) plus the next
 * layer's pages (read ahead): the stated overhead. A failed write (disk
 * full) stops spilling (the cache then stays in RAM) and is reported once.
 *
 * Spare buffers: an evicted page's memory is not given back to malloc but
 * kept (at most one layer's pages: as many as the last pt_kv_begin_layer
 * needed) for the reads that follow, so a spilling decode step does not
 * map, fault in and unmap fresh pages for every page it reads back; the
 * memory bound above grows by those spares (at most one more layer).
 *
 * Rotated keys (q8f8): its int8 keys have one scale per row, so a few
 * large channels (common in keys) set the step of all the others. They
 * are stored in a rotated basis instead, k' = H k / sqrt(D) (pt_fwht, the
 * orthogonal Walsh-Hadamard transform), which spreads every channel over
 * all of them before rounding; pt_kv_attend rotates the queries the same
 * way, and q' . k' = q . k exactly (H / sqrt(D) is orthogonal), so only
 * the rounding changes. Values are not rotated (fp8 keeps a relative
 * precision, which a rotation does not improve). Exported layers (saved
 * sessions) hold the rows as stored, rotated.
 */
#ifndef PETREL_KV_CACHE_H
#define PETREL_KV_CACHE_H

#include "petrel.h"

#include "cpu_features.h"
#include "kv_codec.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PT_KV_PAGE 256 /* positions per page (a multiple of PT_ATTN_BK) */
#define PT_KV_ROT_MAX 512 /* the largest head_dim whose q8f8 keys are rotated */

enum { PT_KV_PG_EMPTY, PT_KV_PG_RAM, PT_KV_PG_DISK, PT_KV_PG_LOADING };

typedef struct pt_kv_page {
    uint8_t *ram;         /* page_bytes when RAM, else NULL */
    uint8_t state;        /* PT_KV_PG_* */
    bool on_disk;         /* the spill slot holds a copy of the positions not dirty */
    bool prefetched;      /* read ahead and not yet used */
    int dirty_lo, dirty_hi; /* positions in the page written since the slot's copy (lo >= hi: none) */
} pt_kv_page;

struct pt_kv_spill;

/* How to make a cache. */
typedef struct pt_kv_opts {
    int type;                /* pt_kv_type */
    const pt_cpu *cpu;       /* picks the codecs and the attention variant */
    uint64_t budget_bytes;   /* RAM for pages; 0: no budget, no spill file */
    const char *spill_dir;   /* where the spill file goes (NULL: P_tmpdir) */
} pt_kv_opts;

typedef struct pt_kv_cache {
    int n_layer, n_ctx, n_head_kv, head_dim;
    int type;                 /* pt_kv_type */
    pt_kv_elem kelem, velem;  /* codecs of keys and values */
    pt_kv_codec kc, vc;
    const pt_cpu *cpu;
    size_t krow, vrow;        /* bytes of one position of one head's keys, values */
    bool rot_keys;            /* keys stored as pt_fwht(k) (q8f8, head_dim a power of
                                 two up to PT_KV_ROT_MAX): see the comment above */
    size_t head_bytes;        /* PAGE * (krow + vrow) */
    size_t page_bytes;        /* n_head_kv * head_bytes */
    int n_pages;              /* pages per layer: ceil(n_ctx / PAGE) */
    pt_kv_page *pages;        /* [n_layer][n_pages] */
    uint64_t budget;          /* 0: none */
    uint64_t ram_bytes;       /* pages RAM or LOADING, times page_bytes */
    uint64_t read_ahead, hits, stalls;
    struct pt_kv_spill *spill; /* NULL without a budget */
    /* spare page buffers (spill only, under its lock): a stack linked
     * through each buffer's first pointer */
    void *spare;
    int n_spare, max_spare;
} pt_kv_cache;

/* A page buffer (page_bytes, contents undefined): a spare one, or
 * malloc's; NULL when out of memory. Spill lock held. */
uint8_t *pt_kv_buf_take(pt_kv_cache *kv);
/* Keep buf as a spare (up to max_spare), or free it. Lock held. */
void pt_kv_buf_give(pt_kv_cache *kv, uint8_t *buf);

/* Make an empty cache (no page memory yet). With a budget, creates the
 * spill file and its reader thread: an unusable directory is PT_ERR_IO
 * naming it. */
pt_status pt_kv_init(pt_kv_cache *kv, int n_layer, int n_ctx, int n_head_kv, int head_dim,
                     const pt_kv_opts *opts, pt_error *err);
void pt_kv_release(pt_kv_cache *kv);

/* Before storing positions [p0, p0 + n) of layer `layer` and attending
 * over [0, p0 + n): make those pages resident (reading back spilled
 * ones), mark the stored positions dirty, bring the RAM held back within
 * the budget and start reading ahead the next layer. Calling thread only
 * (not thread-safe against another call on the same cache). PT_ERR_IO
 * when a page cannot be read back, or (once) when a write fails;
 * PT_ERR_NOMEM. The pages stay resident until the next call. */
pt_status pt_kv_begin_layer(pt_kv_cache *kv, int layer, int p0, int n, pt_error *err);

/* Store the keys and values of one position: k and v hold n_head_kv heads
 * of head_dim floats side by side. Its page must be resident
 * (pt_kv_begin_layer); threads may store different positions at once. */
void pt_kv_store(pt_kv_cache *kv, int layer, int pos, const float *k, const float *v);

/* Floats of scratch pt_kv_attend needs for a tile of n_query queries. */
size_t pt_kv_attend_scratch_floats(const pt_kv_cache *kv, int n_query);

/* pt_attn_causal_window (attention.h) over KV head kvh of `layer`: n_tok
 * tokens at positions p0.., n_head query heads each, window 0 for none.
 * Goes page by page, carrying the online softmax, so for f32 the result
 * is bitwise the single-buffer kernel's. The pages of [0, p0 + n_tok)
 * must be resident; threads may attend at once (each its own scratch). */
void pt_kv_attend(const pt_kv_cache *kv, int layer, int kvh, float *out, int64_t out_stride,
                  const float *q, int64_t q_stride, int n_tok, int n_head, int p0, int window,
                  float scale, float *scratch);

/* Bytes of page memory held in RAM (pages read in or being read). */
uint64_t pt_kv_bytes(const pt_kv_cache *kv);
/* Bytes one position takes over every layer and head. */
uint32_t pt_kv_bytes_per_token(const pt_kv_cache *kv);
/* Counters for pt_context_kv_stats. */
void pt_kv_get_stats(const pt_kv_cache *kv, pt_kv_stats *out);

/* ---- serialized form (sessions) ----------------------------------------
 * Positions [0, n_pos) of one layer: for each KV head its keys, one row
 * per position (the codec's row form; f32 rows untransposed), then for
 * each KV head its values likewise. Spilled pages are read back. */
size_t pt_kv_layer_bytes(const pt_kv_cache *kv, int n_pos);
pt_status pt_kv_export_layer(const pt_kv_cache *kv, int layer, int n_pos, void *dst, pt_error *err);
pt_status pt_kv_import_layer(pt_kv_cache *kv, int layer, int n_pos, const void *src, pt_error *err);
/* The cache's element type, as the public enum pt_kv_type (petrel.h). */
int pt_kv_type_of(const pt_kv_cache *kv);

/* ---- spill (kv_spill.c) ---------------------------------------------------
 * Internal to kv_cache.c: the file, the reader thread and the lock that
 * guards page states, ram_bytes and the counters while the thread runs. */
pt_status pt_kv_spill_open(pt_kv_cache *kv, const char *dir, pt_error *err);
void pt_kv_spill_close(pt_kv_cache *kv);
void pt_kv_spill_lock(const pt_kv_cache *kv);
void pt_kv_spill_unlock(const pt_kv_cache *kv);
/* Wait (lock held) until a page state changes. */
void pt_kv_spill_wait(const pt_kv_cache *kv);
/* Ask (lock held) the reader to read ahead pages [0, n) of layer, or stop (layer < 0). */
void pt_kv_spill_want(pt_kv_cache *kv, int layer, int n);
/* Whole-buffer pread / pwrite at a byte offset of the spill file; 0 or an errno. */
int pt_kv_spill_read(const pt_kv_cache *kv, void *buf, size_t n, uint64_t off);
int pt_kv_spill_write(pt_kv_cache *kv, const void *buf, size_t n, uint64_t off);
/* The directory, for messages; whether spilling stopped after a failed write. */
const char *pt_kv_spill_dir(const pt_kv_cache *kv);
bool pt_kv_spill_failed(const pt_kv_cache *kv);
void pt_kv_spill_set_failed(pt_kv_cache *kv);

#endif
