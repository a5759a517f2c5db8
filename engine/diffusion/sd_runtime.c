/* sd_runtime.c — the image graphs' runtime: cpu, pool, per-thread and
 * shared scratch, memory accounting (sd_nn.h). */
#include "sd_nn_impl.h"

#include "status.h"

#include <stdlib.h>
#include <sys/mman.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <string.h>

pt_status sd_rt_new(const sd_runtime_params *p, sd_runtime **out, pt_error *err) {
    *out = NULL;
    if (!p) return pt_fail(err, PT_ERR_ARG, "image runtime: no parameters");
    if (p->policy != SD_WEIGHTS_STORED && p->policy != SD_WEIGHTS_Q8_0 &&
        p->policy != SD_WEIGHTS_Q4_0 && p->policy != SD_WEIGHTS_F16)
        return pt_fail(err, PT_ERR_ARG, "image runtime: unknown weight policy %d", (int)p->policy);
    sd_runtime *rt = calloc(1, sizeof *rt);
    if (!rt) return pt_fail(err, PT_ERR_NOMEM, "out of memory for the image runtime");
    if (pt_cpu_detect_with(&rt->cpu, p->cpu) != 0) {
        free(rt);
        return pt_fail(err, PT_ERR_UNSUPPORTED, "cpu variant '%s' is unknown or not supported here",
                       p->cpu ? p->cpu : "");
    }
    rt->policy = p->policy;
    if (p->threadpool) {
        rt->tp = p->threadpool;
    } else {
        pt_status st = pt_threadpool_new(p->n_threads, &rt->tp, err);
        if (st) {
            free(rt);
            return st;
        }
        rt->owns_tp = true;
    }
    rt->pool = rt->tp->pool;
    rt->n_threads = pt_pool_threads(rt->pool);
    *out = rt;
    return PT_OK;
}

/* ---- the runtime's allocator ------------------------------------------------ */

/* Every buffer of the runtime (activations, tiles, scratch, reordered
 * weights) comes from rt_alloc and goes back through rt_free. Layout of a
 * block: a 64-byte header holding its size (so the payload keeps 64-byte
 * alignment for the vector kernels), then the payload. Blocks of at least
 * RT_MMAP_MIN bytes are mapped straight from the system and unmapped on
 * free: glibc would serve many of them (up to its dynamic threshold of 32
 * MiB) from its heaps, where freed pages stay resident -- a 512x512 VAE
 * decode grows its activation buffers level by level, and the outgrown ones
 * kept 0.6 GiB of RSS that was no longer in use. */
#define RT_HDR 64
#define RT_MMAP_MIN ((size_t)1 << 20)

static void *rt_alloc(size_t n) {
    const size_t total = n + RT_HDR;
    char *b;
    if (total >= RT_MMAP_MIN) {
        b = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (b == MAP_FAILED) return NULL;
    } else if (!(b = aligned_alloc(RT_HDR, (total + RT_HDR - 1) / RT_HDR * RT_HDR))) {
        return NULL;
    }
    *(size_t *)b = total;
    return b + RT_HDR;
}

static void rt_free(void *p) {
    if (!p) return;
    char *b = (char *)p - RT_HDR;
    const size_t total = *(size_t *)b;
    if (total >= RT_MMAP_MIN) munmap(b, total);
    else free(b);
}

void sd_rt_free(sd_runtime *rt) {
    if (!rt) return;
    if (rt->owns_tp) pt_threadpool_free(rt->tp);
    rt_free(rt->mm_scratch);
    rt_free(rt->qa_buf);
    rt_free(rt->pad_buf);
    rt_free(rt->gn_buf);
    rt_free(rt->kt_buf);
    for (int i = 0; i < SD_TBUF_COUNT; i++) rt_free(rt->tbuf[i]);
    free(rt);
}

void sd_rt_begin(sd_runtime *rt) { pt_threadpool_acquire(rt->tp); }
void sd_rt_end(sd_runtime *rt) { pt_threadpool_release(rt->tp); }

/* ---- memory accounting ---------------------------------------------------- */

static uint64_t *mem_field(sd_runtime *rt, sd_mem_kind kind) {
    switch (kind) {
    case SD_MEM_WEIGHTS: return &rt->mem.weights;
    case SD_MEM_MAPPED: return &rt->mem.mapped;
    default: return &rt->mem.acts;
    }
}

void sd_rt_count(sd_runtime *rt, int64_t n, sd_mem_kind kind) {
    uint64_t *f = mem_field(rt, kind);
    if (n < 0 && (uint64_t)-n > *f)
        *f = 0; /* never below zero, whatever a caller's bookkeeping did */
    else
        *f += (uint64_t)n;
    const uint64_t now = rt->mem.weights + rt->mem.mapped + rt->mem.acts;
    if (now > rt->mem.peak) rt->mem.peak = now;
}

void *sd_rt_alloc(sd_runtime *rt, size_t n, sd_mem_kind kind) {
    void *p = rt_alloc(n);
    if (p) sd_rt_count(rt, (int64_t)n, kind);
    return p;
}

void sd_rt_dealloc(sd_runtime *rt, void *p, size_t n, sd_mem_kind kind) {
    if (!p) return;
    rt_free(p);
    sd_rt_count(rt, -(int64_t)n, kind);
}

void sd_rt_mem_mark(sd_runtime *rt) {
    rt->mem.peak = rt->mem.weights + rt->mem.mapped + rt->mem.acts;
}

sd_mem sd_rt_mem(const sd_runtime *rt) { return rt->mem; }

/* glibc serves blocks below its dynamic mmap threshold (which rises to as
 * much as 32 MiB once a big block is freed) from its heaps, one per thread
 * that allocated, and free() leaves those pages resident. The UNet's
 * weights are prepared on the pool threads in blocks of 0.1-30 MiB, so
 * after it was dropped 0.7 GiB of freed memory stayed in the process's RSS
 * through the 512x512 VAE decode (1.8 GiB peak RSS against 1.1 GiB in use).
 * malloc_trim(0) returns every free page of every heap to the system.
 * Other C libraries (Android's scudo, musl's mallocng) unmap big blocks
 * on free already. */
void sd_rt_give_back(void) {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

/* ---- scratch ------------------------------------------------------------------ */

/* Grow *buf (counted as activations) to at least `want` bytes; its
 * contents are not kept. */
static pt_status grow(sd_runtime *rt, void **buf, size_t *have, size_t want, const char *what,
                      pt_error *err) {
    if (want <= *have) return PT_OK;
    void *p = rt_alloc(want);
    if (!p) return pt_fail(err, PT_ERR_NOMEM, "out of memory for %s (%zu bytes)", what, want);
    rt_free(*buf);
    sd_rt_count(rt, (int64_t)want - (int64_t)*have, SD_MEM_ACTS);
    *buf = p;
    *have = want;
    return PT_OK;
}

pt_status sd_rt_reserve_cols(sd_runtime *rt, int64_t cols, pt_error *err) {
    if (cols <= rt->mm_cols) return PT_OK;
    const size_t per = pt_matmul_scratch_bytes(&rt->cpu, cols);
    size_t have = rt->mm_scratch_n * (size_t)rt->n_threads;
    void *buf = rt->mm_scratch;
    pt_status st = grow(rt, &buf, &have, per * (size_t)rt->n_threads, "the kernels' scratch", err);
    if (st) return st;
    rt->mm_scratch = buf;
    rt->mm_scratch_n = per;
    rt->mm_cols = cols;
    return PT_OK;
}

pt_status sd_rt_reserve_thread(sd_runtime *rt, int slot, size_t bytes, pt_error *err) {
    bytes = (bytes + 63) & ~(size_t)63;
    if (bytes <= rt->tbuf_n[slot]) return PT_OK;
    size_t have = rt->tbuf_n[slot] * (size_t)rt->n_threads;
    void *buf = rt->tbuf[slot];
    pt_status st = grow(rt, &buf, &have, bytes * (size_t)rt->n_threads, "per-thread tiles", err);
    if (st) return st;
    rt->tbuf[slot] = buf;
    rt->tbuf_n[slot] = bytes;
    return PT_OK;
}

pt_status sd_rt_reserve_shared(sd_runtime *rt, void **buf, size_t *have_elems, size_t elem,
                               size_t want_elems, const char *what, pt_error *err) {
    size_t have = *have_elems * elem;
    pt_status st = grow(rt, buf, &have, want_elems * elem, what, err);
    if (st == PT_OK && want_elems > *have_elems) *have_elems = want_elems;
    return st;
}

void sd_rt_run(sd_runtime *rt, pt_pool_fn fn, void *ctx, int n_tasks) {
    if (n_tasks <= 0) return;
    if (rt->n_threads == 1) {
        for (int i = 0; i < n_tasks; i++) fn(ctx, i, n_tasks, 0);
    } else {
        pt_pool_run(rt->pool, fn, ctx, n_tasks);
    }
}
