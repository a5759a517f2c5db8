/* kv_cache.c — the paged KV cache (layout and spill policy in kv_cache.h). */
#include "kv_cache.h"

#include "attention.h"
#include "ops.h"
#include "status.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define BK PT_ATTN_BK

const char *pt_kv_type_name(int type) {
    switch (type) {
    case PT_KV_F32: return "f32";
    case PT_KV_F16: return "f16";
    case PT_KV_Q8: return "q8";
    case PT_KV_Q8F8: return "q8f8";
    default: return NULL;
    }
}

int pt_kv_type_from_name(const char *name) {
    if (!name) return -1;
    for (int t = PT_KV_F32; t <= PT_KV_Q8F8; t++)
        if (!strcmp(name, pt_kv_type_name(t))) return t;
    if (!strcmp(name, "q8_0")) return PT_KV_Q8;
    return -1;
}

static pt_kv_page *page_at(const pt_kv_cache *kv, int layer, int i) {
    return &kv->pages[(size_t)layer * kv->n_pages + i];
}

static uint64_t slot_offset(const pt_kv_cache *kv, const pt_kv_page *p) {
    return (uint64_t)(p - kv->pages) * kv->page_bytes;
}

/* Whether PT_KV_QK_AUTO computes type's scores in int8: where that
 * measured faster (docs/kv_cache.md, "int8 Q.K"). */
static bool qk_int8_default(int type) { return type == PT_KV_Q8 || type == PT_KV_Q8F8; }

pt_status pt_kv_init(pt_kv_cache *kv, int n_layer, int n_ctx, int n_head_kv, int head_dim,
                     const pt_kv_opts *opts, pt_error *err) {
    memset(kv, 0, sizeof *kv);
    if (n_layer <= 0 || n_ctx <= 0 || n_head_kv <= 0 || head_dim <= 0)
        return pt_fail(err, PT_ERR_ARG, "kv cache: bad size (%d layers, %d positions, %d heads of %d)",
                       n_layer, n_ctx, n_head_kv, head_dim);
    const int type = opts ? opts->type : PT_KV_F32;
    static const pt_kv_elem elems[][2] = {{PT_KV_ELEM_F32, PT_KV_ELEM_F32},
                                          {PT_KV_ELEM_F16, PT_KV_ELEM_F16},
                                          {PT_KV_ELEM_Q8, PT_KV_ELEM_Q8},
                                          {PT_KV_ELEM_Q8R, PT_KV_ELEM_E5M2}};
    if (type < PT_KV_F32 || type > PT_KV_Q8F8)
        return pt_fail(err, PT_ERR_UNSUPPORTED, "KV cache type %d is not available (f32, f16, q8, q8f8)", type);
    kv->type = type;
    kv->cpu = opts ? opts->cpu : NULL;
    kv->kelem = elems[type][0];
    kv->velem = elems[type][1];
    kv->rot_keys = kv->kelem == PT_KV_ELEM_Q8R && head_dim <= PT_KV_ROT_MAX && (head_dim & (head_dim - 1)) == 0;
    kv->kc = pt_kv_codec_pick(kv->cpu, kv->kelem);
    kv->vc = pt_kv_codec_pick(kv->cpu, kv->velem);
    kv->krow = pt_kv_row_bytes(kv->kelem, head_dim);
    kv->vrow = pt_kv_row_bytes(kv->velem, head_dim);
    const int qk = opts ? opts->qk : PT_KV_QK_AUTO;
    if (qk < PT_KV_QK_AUTO || qk > PT_KV_QK_INT8)
        return pt_fail(err, PT_ERR_ARG, "kv cache: Q.K mode %d is not one of auto, float, int8", qk);
    if (kv->kelem == PT_KV_ELEM_Q8 || kv->kelem == PT_KV_ELEM_Q8R) {
        kv->qk_blk = kv->kelem == PT_KV_ELEM_Q8 ? PT_KV_Q8_BLOCK : head_dim;
        const bool fits = (head_dim + kv->qk_blk - 1) / kv->qk_blk <= PT_KV_QK_MAXB;
        if (fits && (qk == PT_KV_QK_INT8 || (qk == PT_KV_QK_AUTO && qk_int8_default(type))))
            kv->qk = pt_kv_qk_pick(kv->cpu);
    }
    kv->head_bytes = PT_KV_PAGE * (kv->krow + kv->vrow);
    kv->page_bytes = (size_t)n_head_kv * kv->head_bytes;
    kv->n_pages = (n_ctx + PT_KV_PAGE - 1) / PT_KV_PAGE;
    kv->n_layer = n_layer;
    kv->n_ctx = n_ctx;
    kv->n_head_kv = n_head_kv;
    kv->head_dim = head_dim;
    kv->pages = calloc((size_t)n_layer * kv->n_pages, sizeof *kv->pages);
    if (!kv->pages) {
        memset(kv, 0, sizeof *kv);
        return pt_fail(err, PT_ERR_NOMEM, "kv cache: out of memory for the page table");
    }
    if (opts && opts->budget_bytes) {
        kv->budget = opts->budget_bytes;
        kv->n_mapped = calloc((size_t)n_layer, sizeof *kv->n_mapped);
        kv->stage = malloc((size_t)n_head_kv * (kv->krow + kv->vrow) +
                           (kv->kelem == PT_KV_ELEM_F32 ? (size_t)BK * kv->krow : 0));
        if (!kv->n_mapped || !kv->stage) {
            pt_kv_release(kv);
            return pt_fail(err, PT_ERR_NOMEM, "kv cache: out of memory for the page table");
        }
        pt_status st = pt_kv_spill_open(kv, opts->spill_dir, err);
        if (st != PT_OK) {
            pt_kv_release(kv);
            return st;
        }
    }
    return PT_OK;
}

void pt_kv_release(pt_kv_cache *kv) {
    if (kv->spill) pt_kv_spill_close(kv); /* the reader has stopped: no page is LOADING */
    if (kv->pages)
        for (size_t i = 0; i < (size_t)kv->n_layer * kv->n_pages; i++) free(kv->pages[i].ram);
    free(kv->pages);
    free(kv->n_mapped);
    free(kv->stage);
    kv->max_spare = 0;
    while (kv->spare) pt_kv_buf_give(kv, pt_kv_buf_take(kv));
    memset(kv, 0, sizeof *kv);
}

/* ---- residency and spill ----------------------------------------------- */

uint8_t *pt_kv_buf_take(pt_kv_cache *kv) {
    uint8_t *b = kv->spare;
    if (!b) return malloc(kv->page_bytes);
    memcpy(&kv->spare, b, sizeof(void *));
    kv->n_spare--;
    return b;
}

void pt_kv_buf_give(pt_kv_cache *kv, uint8_t *buf) {
    if (!buf) return;
    if (kv->n_spare >= kv->max_spare) {
        free(buf);
        return;
    }
    memcpy(buf, &kv->spare, sizeof(void *));
    kv->spare = buf;
    kv->n_spare++;
}

/* Write page p's dirty positions (all of it when its slot holds nothing
 * yet) to its slot. Lock not held; p is RAM and only this thread frees
 * or changes RAM pages. 0 or an errno. */
static int write_back(pt_kv_cache *kv, pt_kv_page *p) {
    const uint64_t off = slot_offset(kv, p);
    if (!p->on_disk) { /* the slot's first write: its blocks reserved first (see kv_cache.h) */
        int e = pt_kv_spill_reserve(kv, off, kv->page_bytes);
        if (!e) e = pt_kv_spill_write(kv, p->ram, kv->page_bytes, off);
        if (!e) kv->bytes_written += kv->page_bytes;
        return e;
    }
    if (p->dirty_lo >= p->dirty_hi) return 0;
    /* per head: the key bytes of the dirty positions (f32: whole blocks of
     * BK), then the value rows */
    size_t k0, k1;
    if (kv->kelem == PT_KV_ELEM_F32) {
        k0 = (size_t)(p->dirty_lo / BK) * BK * kv->krow;
        k1 = (size_t)((p->dirty_hi + BK - 1) / BK) * BK * kv->krow;
    } else {
        k0 = (size_t)p->dirty_lo * kv->krow;
        k1 = (size_t)p->dirty_hi * kv->krow;
    }
    const size_t v0 = PT_KV_PAGE * kv->krow + (size_t)p->dirty_lo * kv->vrow;
    const size_t v1 = PT_KV_PAGE * kv->krow + (size_t)p->dirty_hi * kv->vrow;
    for (int h = 0; h < kv->n_head_kv; h++) {
        const size_t hb = (size_t)h * kv->head_bytes;
        int e = pt_kv_spill_write(kv, p->ram + hb + k0, k1 - k0, off + hb + k0);
        if (!e) e = pt_kv_spill_write(kv, p->ram + hb + v0, v1 - v0, off + hb + v0);
        if (e) return e;
        kv->bytes_written += (k1 - k0) + (v1 - v0);
    }
    return 0;
}

/* Evict RAM pages (not of layer `cur`) until the RAM held is within the
 * budget, furthest next use first. Lock held on entry and exit. 0 or the
 * errno of a failed write (spilling then stops). */
static int evict(pt_kv_cache *kv, int cur) {
    while (kv->ram_bytes > kv->budget) {
        pt_kv_page *victim = NULL;
        for (int d = kv->n_layer - 1; d >= 1 && !victim; d--) {
            const int l = (cur + d) % kv->n_layer;
            for (int i = kv->n_pages - 1; i >= 0; i--) {
                pt_kv_page *p = page_at(kv, l, i);
                if (p->state == PT_KV_PG_RAM) {
                    victim = p;
                    break;
                }
            }
        }
        if (!victim) return 0;
        pt_kv_spill_unlock(kv);
        const int e = write_back(kv, victim);
        pt_kv_spill_lock(kv);
        if (e) return e;
        pt_kv_buf_give(kv, victim->ram);
        victim->ram = NULL;
        victim->state = PT_KV_PG_DISK;
        victim->on_disk = true;
        victim->prefetched = false;
        victim->dirty_lo = victim->dirty_hi = 0;
        kv->ram_bytes -= kv->page_bytes;
    }
    return 0;
}

/* Drop the mapping of layer l's pages (lock held; the reader idle). */
static void unmap_layer(pt_kv_cache *kv, int l) {
    pt_kv_spill_unmap(kv, slot_offset(kv, page_at(kv, l, 0)), (size_t)kv->n_pages * kv->page_bytes);
    for (int i = 0; i < kv->n_pages; i++) page_at(kv, l, i)->mapped = false;
    kv->map_bytes -= (uint64_t)kv->n_mapped[l] * kv->page_bytes;
    kv->n_mapped[l] = 0;
}

/* Make page p (of layer l) ready: RAM when `write` (it will be stored
 * into) or it was never spilled, else RAM or mapped. Lock held (when
 * spilling) on entry and exit; the reader idle. */
static pt_status make_resident(pt_kv_cache *kv, int l, pt_kv_page *p, bool write, pt_error *err) {
    if (p->state == PT_KV_PG_RAM || (p->state == PT_KV_PG_DISK && p->mapped && !write)) {
        if (p->prefetched) kv->hits++;
        p->prefetched = false;
        return PT_OK;
    }
    if (p->state == PT_KV_PG_EMPTY) {
        p->ram = kv->spill ? pt_kv_buf_take(kv) : calloc(1, kv->page_bytes);
        if (!p->ram)
            return pt_fail(err, PT_ERR_NOMEM, "kv cache: out of memory for a page of %zu bytes", kv->page_bytes);
        if (kv->spill) memset(p->ram, 0, kv->page_bytes);
        p->state = PT_KV_PG_RAM;
        p->dirty_lo = p->dirty_hi = 0;
        kv->ram_bytes += kv->page_bytes;
        return PT_OK;
    }
    /* DISK, not ready: a stall, done here */
    kv->stalls++;
    p->prefetched = false;
    const uint64_t off = slot_offset(kv, p);
    if (!write) { /* read in place */
        pt_kv_spill_unlock(kv);
        const int e = pt_kv_spill_populate(kv, off, kv->page_bytes);
        pt_kv_spill_lock(kv);
        if (e)
            return pt_fail(err, PT_ERR_IO, "kv spill: cannot read a page back from the spill file in %s: %s",
                           pt_kv_spill_dir(kv), strerror(e));
        p->mapped = true;
        kv->map_bytes += kv->page_bytes;
        kv->n_mapped[l]++;
        return PT_OK;
    }
    if (p->mapped) { /* to be written: its RAM copy replaces the mapping */
        pt_kv_spill_unmap(kv, off, kv->page_bytes);
        p->mapped = false;
        kv->map_bytes -= kv->page_bytes;
        kv->n_mapped[l]--;
    }
    p->state = PT_KV_PG_LOADING;
    kv->ram_bytes += kv->page_bytes;
    uint8_t *buf = pt_kv_buf_take(kv);
    pt_kv_spill_unlock(kv);
    const int e = buf ? pt_kv_spill_read(kv, buf, kv->page_bytes, off) : ENOMEM;
    pt_kv_spill_lock(kv);
    if (e) {
        pt_kv_buf_give(kv, buf);
        p->state = PT_KV_PG_DISK;
        kv->ram_bytes -= kv->page_bytes;
        return pt_fail(err, PT_ERR_IO, "kv spill: cannot read a page back from the spill file in %s: %s",
                       pt_kv_spill_dir(kv), strerror(e));
    }
    p->ram = buf;
    p->state = PT_KV_PG_RAM;
    kv->read_backs++;
    return PT_OK;
}

/* A write to the spill file failed with errno e: spilling stops (the
 * cache stays in RAM from here) and the caller gets one line. */
static pt_status write_failed(pt_kv_cache *kv, int e, pt_error *err) {
    pt_kv_spill_set_failed(kv);
    return pt_fail(err, PT_ERR_IO,
                   "kv spill: cannot write to the spill file in %s: %s (spilling stopped: the cache stays in RAM)",
                   pt_kv_spill_dir(kv), strerror(e));
}

/* pt_kv_begin_layer; may_through: whether a step of one position may store
 * through to a spilled page (not for an import, which copies into RAM). */
static pt_status begin_layer(pt_kv_cache *kv, int layer, int p0, int n, bool may_through, pt_error *err) {
    const int end = p0 + n;
    const int n_need = (end + PT_KV_PAGE - 1) / PT_KV_PAGE;
    const int w = n > 0 ? p0 / PT_KV_PAGE : n_need; /* pages [w, n_need) are stored into */
    pt_status st = PT_OK;
    /* a step of one position stores through to its page if that is
     * spilled (kv_cache.h) */
    const bool through = may_through && kv->spill && n == 1 && !pt_kv_spill_failed(kv);
    kv->stage_page = NULL;
    if (kv->spill) {
        pt_kv_spill_lock(kv);
        pt_kv_spill_want(kv, -1, 0, 0);
        /* the page the reader was on, if one of this layer's, was waited for */
        pt_kv_page *busy = pt_kv_spill_idle(kv);
        const ptrdiff_t first = (ptrdiff_t)layer * kv->n_pages;
        if (busy && busy - kv->pages >= first && busy - kv->pages < first + n_need && busy->prefetched) {
            busy->prefetched = false;
            kv->stalls++;
        }
        /* this layer and the one before it stay mapped (the reader drops
         * the one before when it is asked for the next one); others go */
        const int prev = (layer + kv->n_layer - 1) % kv->n_layer;
        for (int l = 0; l < kv->n_layer; l++)
            if (l != layer && l != prev && kv->n_mapped[l]) unmap_layer(kv, l);
        kv->max_spare = n_need - w;
    }
    for (int i = 0; i < n_need && st == PT_OK; i++) {
        pt_kv_page *p = page_at(kv, layer, i);
        if (i >= w && through && p->state == PT_KV_PG_DISK) { /* mapped, its new row written through */
            kv->stage_page = p;
            kv->stage_pos = p0;
            st = make_resident(kv, layer, p, false, err);
        } else {
            st = make_resident(kv, layer, p, i >= w, err);
        }
    }
    if (st != PT_OK) kv->stage_page = NULL;
    if (st == PT_OK)
        for (int i = w; i < n_need; i++) {
            pt_kv_page *p = page_at(kv, layer, i);
            if (p == kv->stage_page) continue;
            int lo = p0 - i * PT_KV_PAGE, hi = end - i * PT_KV_PAGE;
            if (lo < 0) lo = 0;
            if (hi > PT_KV_PAGE) hi = PT_KV_PAGE;
            if (lo >= hi) continue;
            if (p->dirty_lo >= p->dirty_hi) {
                p->dirty_lo = lo;
                p->dirty_hi = hi;
            } else {
                if (lo < p->dirty_lo) p->dirty_lo = lo;
                if (hi > p->dirty_hi) p->dirty_hi = hi;
            }
        }
    if (!kv->spill) return st;
    if (st == PT_OK && !pt_kv_spill_failed(kv)) {
        const int e = evict(kv, layer);
        if (e) st = write_failed(kv, e, err);
    }
    if (st == PT_OK && !pt_kv_spill_failed(kv)) {
        /* the next layer stores what this one did: in a step of one
         * position through the mapping, so all its pages are mapped, none
         * read back; after the last layer comes the next step's first,
         * which stores from `end` on, most likely one position (decode) */
        const int next = (layer + 1) % kv->n_layer;
        int want_n = n_need, want_w = through ? n_need : w;
        if (next == 0 && n > 0) {
            want_n = end / PT_KV_PAGE < kv->n_pages ? end / PT_KV_PAGE + 1 : kv->n_pages;
            want_w = want_n;
        }
        pt_kv_spill_want(kv, next, want_n, want_w);
    }
    pt_kv_spill_unlock(kv);
    return st;
}

pt_status pt_kv_begin_layer(pt_kv_cache *kv, int layer, int p0, int n, pt_error *err) {
    return begin_layer(kv, layer, p0, n, true, err);
}

/* ---- store and attend ---------------------------------------------------- */

/* One head's key row in the codec's row form (rotated for q8f8). */
static void encode_key(const pt_kv_cache *kv, const float *k, uint8_t *dst) {
    const int D = kv->head_dim;
    if (kv->rot_keys) {
        float kr[PT_KV_ROT_MAX];
        memcpy(kr, k, (size_t)D * sizeof *kr);
        pt_fwht(kr, D);
        kv->kc.encode(kr, D, dst);
    } else {
        kv->kc.encode(k, D, dst);
    }
}

void pt_kv_store(pt_kv_cache *kv, int layer, int pos, const float *k, const float *v) {
    const int D = kv->head_dim, r = pos % PT_KV_PAGE;
    const pt_kv_page *p = page_at(kv, layer, pos / PT_KV_PAGE);
    if (p == kv->stage_page && pos == kv->stage_pos) { /* stored through: rows staged */
        for (int h = 0; h < kv->n_head_kv; h++) {
            uint8_t *sk = kv->stage + (size_t)h * (kv->krow + kv->vrow);
            if (kv->kelem == PT_KV_ELEM_F32) memcpy(sk, k + (size_t)h * D, kv->krow);
            else encode_key(kv, k + (size_t)h * D, sk);
            kv->vc.encode(v + (size_t)h * D, D, sk + kv->krow);
        }
        return;
    }
    for (int h = 0; h < kv->n_head_kv; h++) {
        uint8_t *hk = p->ram + (size_t)h * kv->head_bytes, *hv = hk + PT_KV_PAGE * kv->krow;
        if (kv->kelem == PT_KV_ELEM_F32) pt_attn_store_key((float *)hk, (int64_t)BK * D, r, k + (size_t)h * D, D);
        else encode_key(kv, k + (size_t)h * D, hk + (size_t)r * kv->krow);
        kv->vc.encode(v + (size_t)h * D, D, hv + (size_t)r * kv->vrow);
    }
}

pt_status pt_kv_end_store(pt_kv_cache *kv, pt_error *err) {
    const pt_kv_page *p = kv->stage_page;
    if (!p) return PT_OK;
    kv->stage_page = NULL;
    const int D = kv->head_dim, r = kv->stage_pos % PT_KV_PAGE;
    const uint64_t off = slot_offset(kv, p);
    int e = 0;
    for (int h = 0; h < kv->n_head_kv && !e; h++) {
        const uint64_t hoff = off + (uint64_t)h * kv->head_bytes;
        const uint8_t *sk = kv->stage + (size_t)h * (kv->krow + kv->vrow);
        size_t kb = kv->krow;
        uint64_t koff = hoff + (uint64_t)r * kv->krow;
        if (kv->kelem == PT_KV_ELEM_F32) {
            /* its key block: the other lanes as the slot has them (the
             * page is mapped), this position's lane from the stage */
            kb = (size_t)BK * kv->krow;
            koff = hoff + (uint64_t)(r / BK) * kb;
            uint8_t *blk = kv->stage + (size_t)kv->n_head_kv * (kv->krow + kv->vrow);
            memcpy(blk, kv->map + koff, kb);
            for (int d = 0; d < D; d++)
                memcpy(blk + ((size_t)d * BK + r % BK) * sizeof(float), sk + (size_t)d * sizeof(float), sizeof(float));
            sk = blk;
        }
        e = pt_kv_spill_write(kv, sk, kb, koff);
        if (!e)
            e = pt_kv_spill_write(kv, kv->stage + (size_t)h * (kv->krow + kv->vrow) + kv->krow, kv->vrow,
                                  hoff + PT_KV_PAGE * kv->krow + (uint64_t)r * kv->vrow);
        if (!e) kv->bytes_written += kb + kv->vrow;
    }
    return e ? write_failed(kv, e, err) : PT_OK;
}

size_t pt_kv_attend_scratch_floats(const pt_kv_cache *kv, int n_query) {
    size_t n = pt_attn_scratch_floats(n_query, kv->head_dim);
    /* a decoded page: keys [PAGE][D] (blocked), values [PAGE][D], one row [D]
     * (decode_kt's scratch); rotated keys: the rotated queries [n_query][D] */
    if (kv->type != PT_KV_F32) n += (size_t)(2 * PT_KV_PAGE + 1) * kv->head_dim;
    if (kv->rot_keys) n += (size_t)n_query * kv->head_dim;
    /* int8 scores: [n_query][PAGE] scores, [n_query][nb] query scales and
     * sums, [n_query][QSTRIDE(D)] query codes (kv_qk.h) */
    if (kv->qk) {
        const size_t nb = (size_t)(kv->head_dim + kv->qk_blk - 1) / kv->qk_blk;
        n += (size_t)n_query * (PT_KV_PAGE + 2 * nb + PT_KV_QK_QSTRIDE(kv->head_dim) / 4);
    }
    return n;
}

/* Decode positions [from, to) of one head of a page (rows form) into the
 * kernel's layout: keys blocked and transposed at dk, values rows at dv,
 * position j of the page at block j / BK and row j. Key lanes of the
 * last block past `to` are zeroed (read, then masked, by the kernel). */
_Static_assert(PT_KV_KT_LANES == PT_ATTN_BK, "kv_codec's key blocks are the attention kernel's");

static void decode_span(const pt_kv_cache *kv, const uint8_t *hk, int from, int to, float *dk,
                        float *dv, float *row) {
    const int D = kv->head_dim;
    if (dk)
        for (int b0 = from / BK * BK; b0 < to; b0 += BK) {
            const int nb = to - b0 < BK ? to - b0 : BK;
            kv->kc.decode_kt(hk + (size_t)b0 * kv->krow, kv->krow, nb, D, dk + (size_t)b0 * D, row);
        }
    /* from the block's start: the kernel reads (and weighs by 0) the
     * lanes before a window, which must be finite */
    const uint8_t *hv = hk + PT_KV_PAGE * kv->krow;
    for (int j = from / BK * BK; j < to; j++) kv->vc.decode(hv + (size_t)j * kv->vrow, D, dv + (size_t)j * D);
}

void pt_kv_attend(const pt_kv_cache *kv, int layer, int kvh, float *out, int64_t out_stride,
                  const float *q, int64_t q_stride, int n_tok, int n_head, int p0, int window,
                  float scale, float *scratch) {
    if (n_tok <= 0 || n_head <= 0) return;
    const int D = kv->head_dim, n_kv = p0 + n_tok;
    if (window <= 0 || window > n_kv) window = n_kv; /* as the kernel normalizes it */
    const int first = p0 - window + 1 > 0 ? (p0 - window + 1) / BK * BK : 0;
    const int pg0 = first / PT_KV_PAGE, pg1 = (n_kv - 1) / PT_KV_PAGE;
    float *dk = scratch + pt_attn_scratch_floats(n_tok * n_head, D);
    float *dv = dk + (size_t)PT_KV_PAGE * D, *row = dv + (size_t)PT_KV_PAGE * D;
    if (kv->rot_keys) { /* the queries in the keys' basis: [n_tok][n_head][D] */
        float *qr = row + D;
        for (int t = 0; t < n_tok; t++)
            for (int h = 0; h < n_head; h++) {
                float *dst = qr + ((size_t)t * n_head + h) * D;
                memcpy(dst, q + t * q_stride + (int64_t)h * D, (size_t)D * sizeof *dst);
                pt_fwht(dst, D);
            }
        q = qr;
        q_stride = (int64_t)n_head * D;
    }
    /* int8 scores: the queries quantized once, the scores of a page at sc */
    const int nq = n_tok * n_head, nb = kv->qk ? (D + kv->qk_blk - 1) / kv->qk_blk : 0;
    float *sc = row + D + (kv->rot_keys ? (size_t)nq * D : 0);
    float *qd = sc + (size_t)nq * PT_KV_PAGE;
    int32_t *qs = (int32_t *)(qd + (size_t)nq * nb);
    int8_t *qc = (int8_t *)(qs + (size_t)nq * nb);
    if (kv->qk)
        for (int t = 0; t < n_tok; t++)
            for (int h = 0; h < n_head; h++) {
                const int iq = t * n_head + h;
                pt_kv_qk_quantize(q + t * q_stride + (int64_t)h * D, D, kv->qk_blk,
                                  qc + (size_t)iq * PT_KV_QK_QSTRIDE(D), qd + (size_t)iq * nb, qs + (size_t)iq * nb);
            }
    for (int pg = pg0; pg <= pg1; pg++) {
        const int lo = pg * PT_KV_PAGE;
        const int hi = n_kv - lo < PT_KV_PAGE ? n_kv : lo + PT_KV_PAGE;
        const pt_kv_page *p = page_at(kv, layer, pg);
        /* a spilled page is read in place from the spill file's mapping */
        const uint8_t *hk = (p->ram ? p->ram : kv->map + slot_offset(kv, p)) + (size_t)kvh * kv->head_bytes;
        const float *kt, *v;
        const int flags = (pg == pg0 ? PT_ATTN_BEGIN : 0) | (pg == pg1 ? PT_ATTN_END : 0);
        const int from = (first > lo ? first : lo) - lo, to = hi - lo;
        if (kv->type == PT_KV_F32) {
            kt = (const float *)hk;
            v = (const float *)(hk + PT_KV_PAGE * kv->krow);
        } else if (kv->qk) {
            /* the scores of the blocks the kernel reads; lanes past `to`
             * in the last one 0 (masked, but read) */
            const int b0 = from / BK * BK, end = (to + BK - 1) / BK * BK;
            kv->qk(qc, qd, qs, nq, D, kv->qk_blk, hk + (size_t)b0 * kv->krow, kv->krow, to - b0, scale, sc + b0,
                   PT_KV_PAGE);
            for (int i = 0; i < nq; i++)
                for (int j = to; j < end; j++) sc[(size_t)i * PT_KV_PAGE + j] = 0.0f;
            decode_span(kv, hk, from, to, NULL, dv, row);
            pt_attn_causal_span_scores(kv->cpu, out, out_stride, sc, PT_KV_PAGE, n_tok, n_head, dv, D, p0, window,
                                       D, scratch, lo, hi, flags);
            continue;
        } else {
            decode_span(kv, hk, from, to, dk, dv, row);
            kt = dk;
            v = dv;
        }
        pt_attn_causal_span(kv->cpu, out, out_stride, q, q_stride, n_tok, n_head, kt, (int64_t)BK * D, v, D,
                            p0, window, D, scale, scratch, lo, hi, flags);
    }
}

/* ---- figures ------------------------------------------------------------- */

uint64_t pt_kv_bytes(const pt_kv_cache *kv) {
    if (!kv->spill) return kv->ram_bytes;
    pt_kv_spill_lock(kv);
    const uint64_t b = kv->ram_bytes;
    pt_kv_spill_unlock(kv);
    return b;
}

uint32_t pt_kv_bytes_per_token(const pt_kv_cache *kv) {
    return (uint32_t)((uint64_t)kv->n_layer * kv->n_head_kv * (kv->krow + kv->vrow));
}

void pt_kv_get_stats(const pt_kv_cache *kv, pt_kv_stats *out) {
    memset(out, 0, sizeof *out);
    if (kv->spill) pt_kv_spill_lock(kv);
    uint64_t disk = 0;
    for (size_t i = 0; i < (size_t)kv->n_layer * kv->n_pages; i++)
        if (kv->pages[i].state == PT_KV_PG_DISK) disk += kv->page_bytes;
    out->ram_bytes = kv->ram_bytes;
    out->disk_bytes = disk;
    out->budget_bytes = kv->budget;
    out->pages_read_ahead = kv->read_ahead;
    out->read_hits = kv->hits;
    out->read_stalls = kv->stalls;
    out->mapped_bytes = kv->map_bytes;
    if (kv->spill) pt_kv_spill_unlock(kv);
    out->bytes_per_token = pt_kv_bytes_per_token(kv);
}

/* ---- serialized form ----------------------------------------------------- */

int pt_kv_type_of(const pt_kv_cache *kv) { return kv->type; }

size_t pt_kv_layer_bytes(const pt_kv_cache *kv, int n_pos) {
    return (size_t)kv->n_head_kv * (size_t)(n_pos > 0 ? n_pos : 0) * (kv->krow + kv->vrow);
}

/* Copy rows [r0, r1) of one page between the page bytes `pg` and the
 * serialized layer at dst (to_page: from ser to page). */
static void copy_rows(const pt_kv_cache *kv, uint8_t *pg, uint8_t *ser, int n_pos, int first, int r0, int r1,
                      bool to_page) {
    const int D = kv->head_dim;
    for (int h = 0; h < kv->n_head_kv; h++) {
        uint8_t *hk = pg + (size_t)h * kv->head_bytes, *hv = hk + PT_KV_PAGE * kv->krow;
        uint8_t *sk = ser + (size_t)h * n_pos * kv->krow;
        uint8_t *sv = ser + (size_t)kv->n_head_kv * n_pos * kv->krow + (size_t)h * n_pos * kv->vrow;
        for (int r = r0; r < r1; r++) {
            uint8_t *krow = sk + (size_t)(first + r) * kv->krow;
            if (kv->kelem == PT_KV_ELEM_F32) {
                float *blk = (float *)hk + (size_t)(r / BK) * BK * D;
                for (int d = 0; d < D; d++) {
                    float *e = blk + (size_t)d * BK + r % BK;
                    if (to_page) memcpy(e, krow + 4 * (size_t)d, 4);
                    else memcpy(krow + 4 * (size_t)d, e, 4);
                }
            } else if (to_page) {
                memcpy(hk + (size_t)r * kv->krow, krow, kv->krow);
            } else {
                memcpy(krow, hk + (size_t)r * kv->krow, kv->krow);
            }
            uint8_t *vrow = sv + (size_t)(first + r) * kv->vrow;
            if (to_page) memcpy(hv + (size_t)r * kv->vrow, vrow, kv->vrow);
            else memcpy(vrow, hv + (size_t)r * kv->vrow, kv->vrow);
        }
    }
}

static pt_status check_span(const pt_kv_cache *kv, int layer, int n_pos, pt_error *err) {
    if (layer < 0 || layer >= kv->n_layer || n_pos < 0 || n_pos > kv->n_ctx)
        return pt_fail(err, PT_ERR_ARG, "kv cache: layer %d, %d positions out of range (%d layers, %d positions)",
                       layer, n_pos, kv->n_layer, kv->n_ctx);
    return PT_OK;
}

pt_status pt_kv_export_layer(const pt_kv_cache *kv, int layer, int n_pos, void *dst, pt_error *err) {
    pt_status st = check_span(kv, layer, n_pos, err);
    if (st != PT_OK) return st;
    uint8_t *tmp = NULL;
    for (int i = 0; i * PT_KV_PAGE < n_pos; i++) {
        pt_kv_page *p = page_at(kv, layer, i);
        const int r1 = n_pos - i * PT_KV_PAGE < PT_KV_PAGE ? n_pos - i * PT_KV_PAGE : PT_KV_PAGE;
        if (kv->spill) pt_kv_spill_lock(kv);
        while (p->state == PT_KV_PG_LOADING) pt_kv_spill_wait(kv);
        const int state = p->state;
        if (kv->spill) pt_kv_spill_unlock(kv);
        /* RAM pages change only on this (the caller's) thread: safe unlocked */
        uint8_t *src = p->ram;
        if (state == PT_KV_PG_DISK || state == PT_KV_PG_EMPTY) {
            if (!tmp && !(tmp = malloc(kv->page_bytes))) return pt_fail(err, PT_ERR_NOMEM, "kv cache: out of memory");
            int e = 0;
            if (state == PT_KV_PG_DISK) e = pt_kv_spill_read(kv, tmp, kv->page_bytes, slot_offset(kv, p));
            else memset(tmp, 0, kv->page_bytes);
            if (e) {
                free(tmp);
                return pt_fail(err, PT_ERR_IO, "kv spill: cannot read a page back from the spill file in %s: %s",
                               pt_kv_spill_dir(kv), strerror(e));
            }
            src = tmp;
        }
        copy_rows(kv, src, dst, n_pos, i * PT_KV_PAGE, 0, r1, false);
    }
    free(tmp);
    return PT_OK;
}

pt_status pt_kv_import_layer(pt_kv_cache *kv, int layer, int n_pos, const void *src, pt_error *err) {
    pt_status st = check_span(kv, layer, n_pos, err);
    if (st != PT_OK || n_pos == 0) return st;
    st = begin_layer(kv, layer, 0, n_pos, false, err); /* every page RAM: copied into below */
    if (st != PT_OK) return st;
    for (int i = 0; i * PT_KV_PAGE < n_pos; i++) {
        const int r1 = n_pos - i * PT_KV_PAGE < PT_KV_PAGE ? n_pos - i * PT_KV_PAGE : PT_KV_PAGE;
        copy_rows(kv, page_at(kv, layer, i)->ram, (uint8_t *)src, n_pos, i * PT_KV_PAGE, 0, r1, true);
    }
    return PT_OK;
}
