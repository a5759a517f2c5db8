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
 * spill file) or LOADING (being read back into RAM); its memory is
 * allocated on first use (zeroed, so the unused lanes of a last key block
 * are finite). A DISK page may also be `mapped`: its slot's file pages are
 * mapped (populated) in the spill file's read-only shared mapping, where
 * pt_kv_attend reads it in place, without a copy.
 *
 * Spill (kv_spill.c), when a RAM budget is set: page (l, i) has slot
 * l * n_pages + i of the spill file, page_bytes each, its blocks reserved
 * (fallocate) when the page is first written out, so a full disk is an
 * error of that write and never a fault through the mapping. The whole
 * file is mapped once, read-only and shared (`map`): writes go through
 * pwrite and the mapping sees them. pt_kv_begin_layer, called by the
 * forward pass before it stores into or attends over a layer:
 *  - drops the mapping of every layer but this one and the one before
 *    (MADV_DONTNEED: the page tables go, the page cache stays); the
 *    reader drops the one before when it starts on the next layer, before
 *    it maps any of it, so at most two layers are ever mapped;
 *  - makes the pages it will write (those of positions [p0, p0 + n))
 *    RAM, reading spilled ones back, and maps the spilled pages it only
 *    reads (a page read or mapped ahead is a hit, one waited for or done
 *    there a stall); but a step of one position (n = 1, a decode step)
 *    whose page is spilled leaves it spilled and mapped, and stores
 *    through it (below);
 *  - writes back and frees the coldest RAM pages until the RAM held is
 *    within the budget;
 *  - asks the reader thread for the next layer: its pages to be written
 *    read back into RAM, the others mapped (MADV_POPULATE_READ: read
 *    from the disk where not cached, and mapped); in a step of one
 *    position all of them mapped, and after the last layer (the next is
 *    the next step's first, which stores from p0 + n on) likewise.
 *
 * Storing through: in a step of one position into a spilled page,
 * pt_kv_store puts the position's rows in a staging buffer (`stage`, the
 * row form; f32 keys as a plain row) and pt_kv_end_store, on the forward
 * pass's thread before attention, writes them into the page's slot with
 * pwrite: for each head its key row (f32: the whole key block of BK
 * positions it falls in, its other lanes copied from the mapping) and its
 * value row. The shared mapping sees the write, so pt_kv_attend reads the
 * new position in place like the rest of the page. A decode step thus
 * writes a few rows a layer and reads no page back; the slot is already
 * reserved (the page was written out whole once), and a write that fails
 * anyway stops spilling like any other and is reported once.
 * The reader is idle from the start of pt_kv_begin_layer to its request
 * at the end (the call waits for the page it is on), so page states
 * change only under the lock and never under the forward pass's feet.
 * Coldest: layers are visited in order, so the pages whose next use is
 * furthest are those of the layer visited most recently (distance
 * (l - current) mod n_layer, largest first). Between calls the RAM held
 * (ram_bytes) is at most max(budget, the layer's written pages) plus the
 * next layer's written pages (read ahead), and the mapped bytes
 * (map_bytes) at most the pages of two layers: the stated overhead. A
 * failed write (disk full) stops spilling (new pages then stay in RAM;
 * spilled ones are still read in place) and is reported once.
 *
 * Spare buffers: an evicted page's memory is not given back to malloc but
 * kept (at most as many as the last pt_kv_begin_layer writes: one page in
 * a decode step) for the read-backs that follow, so a spilling decode step
 * does not map, fault in and unmap fresh memory for every page it reads
 * back; the bound above grows by those spares.
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
 *
 * int8 scores (q8, q8f8; pt_kv_opts.qk): instead of decoding a page's
 * keys to float, pt_kv_attend quantizes each query head once per call
 * (kv_qk.h: int8 in the keys' blocks, after the rotation for q8f8),
 * computes the page's scores with integer dot products against the
 * stored codes into scratch and runs the kernel on them
 * (pt_attn_causal_span_scores); only the values are decoded.
 */
#ifndef PETREL_KV_CACHE_H
#define PETREL_KV_CACHE_H

#include "petrel.h"

#include "cpu_features.h"
#include "kv_codec.h"
#include "kv_qk.h"

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
    bool prefetched;      /* read (or mapped) ahead and not yet used */
    bool mapped;          /* DISK, and its slot populated in the spill mapping (counted in map_bytes) */
    int dirty_lo, dirty_hi; /* positions in the page written since the slot's copy (lo >= hi: none) */
} pt_kv_page;

struct pt_kv_spill;

/* How to make a cache. */
typedef struct pt_kv_opts {
    int type;                /* pt_kv_type */
    const pt_cpu *cpu;       /* picks the codecs and the attention variant */
    uint64_t budget_bytes;   /* RAM for pages; 0: no budget, no spill file */
    const char *spill_dir;   /* where the spill file goes (NULL: P_tmpdir) */
    int qk;                  /* pt_kv_qk: scores of int8 keys in int8 or float */
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
    pt_kv_qk_fn qk;           /* non-NULL: int8 Q.K (see "int8 scores" above) */
    int qk_blk;               /* values per key scale: 32 (q8) or head_dim (q8f8) */
    size_t head_bytes;        /* PAGE * (krow + vrow) */
    size_t page_bytes;        /* n_head_kv * head_bytes */
    int n_pages;              /* pages per layer: ceil(n_ctx / PAGE) */
    pt_kv_page *pages;        /* [n_layer][n_pages] */
    uint64_t budget;          /* 0: none */
    uint64_t ram_bytes;       /* pages RAM or LOADING, times page_bytes */
    uint64_t map_bytes;       /* mapped DISK pages, times page_bytes */
    int *n_mapped;            /* [n_layer]: mapped pages per layer (spill only) */
    const uint8_t *map;       /* the spill file mapped read-only, shared: slot s at
                                 map + s * page_bytes (NULL without a budget) */
    uint64_t read_ahead, hits, stalls;
    uint64_t read_backs;      /* pages read back into RAM (pread), here or ahead */
    uint64_t bytes_written;   /* bytes written to the spill file (pwrite) */
    /* storing through (spill only): the spilled page stored into by this
     * step (NULL: none), its position, and the position's rows: for each
     * KV head its key row (krow bytes; f32: D floats) then its value row
     * (vrow), then (f32) room for one key block of BK * krow bytes */
    const pt_kv_page *stage_page;
    int stage_pos;
    uint8_t *stage;
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

/* After the pt_kv_store calls of a pt_kv_begin_layer and before attending:
 * writes a position stored through to a spilled page into its slot (see
 * above; nothing to do otherwise). Calling thread only. PT_ERR_IO once
 * when the write fails: spilling stops, and the step's positions are to
 * be stored again (the next pt_kv_begin_layer makes their page RAM). */
pt_status pt_kv_end_store(pt_kv_cache *kv, pt_error *err);

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
/* Ask (lock held) the reader for pages [0, n) of layer, those from `write`
 * on read back into RAM, the others mapped; or stop (layer < 0). */
void pt_kv_spill_want(pt_kv_cache *kv, int layer, int n, int write);
/* Wait (lock held) until the reader is idle; the page it was busy with,
 * or NULL when it was idle already. Call after pt_kv_spill_want(kv, -1, ..). */
pt_kv_page *pt_kv_spill_idle(const pt_kv_cache *kv);
/* Whole-buffer pread / pwrite at a byte offset of the spill file; 0 or an errno. */
int pt_kv_spill_read(const pt_kv_cache *kv, void *buf, size_t n, uint64_t off);
int pt_kv_spill_write(pt_kv_cache *kv, const void *buf, size_t n, uint64_t off);
/* Reserve the file's blocks for bytes [off, off + n) (posix_fallocate); 0 or an errno. */
int pt_kv_spill_reserve(pt_kv_cache *kv, uint64_t off, size_t n);
/* Map bytes [off, off + n) of the file in kv->map (read from the disk where
 * not cached); 0 or an errno (EFAULT/EIO: a read failed). No lock needed. */
int pt_kv_spill_populate(const pt_kv_cache *kv, uint64_t off, size_t n);
/* Drop the mapping of [off, off + n), widened to whole memory pages (the
 * page cache keeps the data). No lock needed. */
void pt_kv_spill_unmap(const pt_kv_cache *kv, uint64_t off, size_t n);
/* The directory, for messages; whether spilling stopped after a failed write. */
const char *pt_kv_spill_dir(const pt_kv_cache *kv);
bool pt_kv_spill_failed(const pt_kv_cache *kv);
void pt_kv_spill_set_failed(pt_kv_cache *kv);

#endif
