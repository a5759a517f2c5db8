/* matmul.c — weight matrices and the runner of their products (matmul.h). */
#include "matmul.h"

#include "fmatmul.h"
#include "ops.h"
#include "ops_simd.h"
#include "quant.h"

#include <stdatomic.h>
#include <string.h>

#define ROW_ALIGN 8   /* row split granularity of unpacked matrices */

/* ---- weights ------------------------------------------------------------ */

uint64_t pt_weight_source_bytes(const pt_weight *w) {
    return (uint64_t)pt_type_row_bytes(w->type, w->cols) * (uint64_t)w->rows;
}

bool pt_weight_can_pack(const pt_weight *w, const pt_cpu *cpu) {
    return pt_qweights_supported(w->type, w->rows, w->cols, cpu);
}

bool pt_weight_pack(pt_weight *w, const pt_cpu *cpu) {
    w->packed = pt_qweights_pack(w->type, w->data, w->rows, w->cols, cpu);
    return w->packed != NULL;
}

void pt_weight_row(const pt_weight *w, int64_t r, float *dst) {
    if (w->packed) {
        pt_qweights_dequant_row(w->packed, r, dst);
    } else {
        const size_t row = pt_type_row_bytes(w->type, w->cols);
        pt_dequant_row(w->type, (const uint8_t *)w->data + (size_t)r * row, dst, w->cols);
    }
}

/* The tiled float path of matmul.h (other quantized types on a fast
 * variant): KQ_ROWS rows dequantized at once into the thread's scratch,
 * multiplied by KQ_TOKS tokens at a time into a small [KQ_TOKS][KQ_ROWS]
 * result, then copied out. Scratch: the rows, then the result. */
#define KQ_ROWS 16
#define KQ_TOKS 32

static size_t kq_bytes(int64_t cols) {
    return ((size_t)KQ_ROWS * (size_t)cols + (size_t)KQ_TOKS * KQ_ROWS) * sizeof(float);
}

size_t pt_matmul_scratch_bytes(const pt_cpu *cpu, int64_t max_cols) {
    size_t n = pt_qmatmul_scratch_bytes(cpu, max_cols);
    /* the same per-thread scratch serves both: a thread runs one product at a time */
    if (cpu->variant != PT_CPU_REF && kq_bytes(max_cols) > n) n = kq_bytes(max_cols);
    return (n + 63) & ~(size_t)63;
}

/* ---- products ----------------------------------------------------------- */

/* The LoRA terms of one job: for matrix i and active adapter k, the pair
 * adapting w[i] (or NULL) and u = scale * (A x) for the job's n tokens
 * ([n][rank], in the run's scratch). */
typedef struct mm_lora {
    int n;                                  /* active adapters */
    const pt_lora_pair *pair[3][PT_LORA_MAX_ACTIVE];
    float *u[3][PT_LORA_MAX_ACTIVE];        /* [n][rank], or [n][g][ucols] on the int8 path */
    bool q8[3][PT_LORA_MAX_ACTIVE];         /* the int8 path: u quantized into qu */
    pt_qact qu[3][PT_LORA_MAX_ACTIVE];
    float *tmp;                             /* [threads][PT_LORA_TMP_TOKENS][max_rows] */
    int64_t tmp_stride;                     /* PT_LORA_TMP_TOKENS * max_rows */
    /* A product left to the run (a decode step on several threads): the
     * first thread into mm_task takes it (u_taken) and computes every u
     * before its own rows, then sets u_ready; a thread waits for u_ready
     * only before its first B product, after its base rows, so the A
     * products overlap the other threads' base rows instead of running
     * alone before them. No deadlock: whoever waits has entered mm_task,
     * so the taker has too, and it waits for nothing while computing. */
    bool deferred;
    atomic_bool u_taken, u_ready;
} mm_lora;

/* How a job's rows are split: into parts of units, which the tasks take
 * from a weighted run's claims or evenly by task. */
typedef struct mm_plan {
    const pt_matmul *j;
    const pt_matmul_runner *runner;
    const pt_cpu *cpu;
    pt_pool *pool;          /* claim from this weighted run; NULL: even split by task */
    uint8_t *scratch;       /* [threads][scratch_n] for the kernels, or NULL */
    size_t scratch_n;
    int n_parts;            /* one per matrix, or one for gate and up together */
    int64_t align[3];       /* rows per unit of each part */
    int64_t units[3];       /* units of each part */
    mm_lora *lora;          /* NULL: no adapter touches the job */
} mm_plan;

/* Tokens [t0, t1) of task `task` of n_tasks over n. */
static void split_even(int64_t n, int task, int n_tasks, int64_t *t0, int64_t *t1) {
    *t0 = n * task / n_tasks;
    *t1 = n * (task + 1) / n_tasks;
}

/* Rows per unit of w: whole row groups of a packed matrix, ROW_ALIGN rows
 * otherwise, so every range of units is a valid row range for its kernel. */
static int64_t row_align(const pt_weight *w) {
    return w->packed ? pt_qweights_row_align(w->packed) : ROW_ALIGN;
}

static int64_t gcd64(int64_t a, int64_t b) {
    while (b) {
        const int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* The parts of a job: one per matrix, except gate and up (silu), which
 * are one part of units valid for both (a multiple of both alignments),
 * so a claimed range covers the same rows of both and silu can follow. */
static mm_plan mm_parts(const pt_matmul *j, const pt_matmul_runner *r, pt_pool *pool) {
    mm_plan pl = {j, r, r->cpu, pool, r->scratch, r->scratch_n, j->silu ? 1 : j->n_w, {0}, {0}, NULL};
    if (j->silu) {
        const int64_t a = row_align(j->w[0]), b = row_align(j->w[1]);
        pl.align[0] = a / gcd64(a, b) * b;
    } else {
        for (int i = 0; i < j->n_w; i++) pl.align[i] = row_align(j->w[i]);
    }
    for (int i = 0; i < pl.n_parts; i++)
        pl.units[i] = (j->w[i]->rows + pl.align[i] - 1) / pl.align[i];
    return pl;
}

/* Tokens [t0, t0 + n) of a: the same arrays from token t0 on (every
 * array of pt_qact is [n_tok][...], row-major). */
static pt_qact qact_view(const pt_qact *a, int64_t t0, int64_t n) {
    pt_qact v = *a;
    v.n_tok = n;
    v.q += t0 * a->cols;
    v.d += t0 * a->nb;
    v.ds += t0 * a->nb;
    v.s += t0 * a->nb;
    v.s_m8 += t0 * a->nb;
    v.s_m128 += t0 * a->nb;
    return v;
}

/* y[t][r] += B[r] . u[t] for rows [r0, r1): the low-rank terms of the
 * adapters of matrix i (u already holds scale * A x). The int8 path runs
 * B on the quantized u PT_LORA_TMP_TOKENS tokens at a time into the
 * calling thread's own tmp, then adds. */
static void mm_lora_rows(const mm_plan *pl, int i, int64_t r0, int64_t r1, uint8_t *scratch, int thread) {
    const pt_matmul *j = pl->j;
    mm_lora *ml = pl->lora;
    const int64_t rows = j->w[i]->rows;
    /* the taker's A products are short; should it lose its core, yield
     * rather than spin through the time slice */
    for (int64_t spins = 0; ml->deferred && !atomic_load_explicit(&ml->u_ready, memory_order_acquire); spins++)
        pt_spin_backoff(spins, 4096);
    for (int k = 0; k < ml->n; k++) {
        const pt_lora_pair *p = ml->pair[i][k];
        if (!p) continue;
        if (ml->q8[i][k]) {
            /* rows [r0, r1) of B are rows [r0 / g, r1 / g) of b8 (r0, r1
             * multiples of g); output row r'*g + jj of token t is row r' of
             * activation row t*g + jj, at tmp[(t*g + jj) * (rows / g) + r'] */
            const int g = p->g;
            const int64_t rg = rows / g;
            float *tmp = ml->tmp + (size_t)thread * (size_t)ml->tmp_stride;
            for (int64_t t0 = 0; t0 < j->n; t0 += PT_LORA_TMP_TOKENS) {
                const int64_t nt = j->n - t0 < PT_LORA_TMP_TOKENS ? j->n - t0 : PT_LORA_TMP_TOKENS;
                const pt_qact v = qact_view(&ml->qu[i][k], t0 * g, nt * g);
                pt_qmatmul(p->b8, &v, tmp, r0 / g, r1 / g, scratch);
                for (int64_t t = 0; t < nt; t++) {
                    float *y = j->y[i] + (size_t)(t0 + t) * rows;
                    for (int jj = 0; jj < g; jj++) {
                        const float *d = tmp + (size_t)(t * g + jj) * rg;
                        for (int64_t r = r0 / g; r < r1 / g; r++) y[r * g + jj] += d[r];
                    }
                }
            }
            continue;
        }
        for (int t = 0; t < j->n; t++) {
            const float *u = ml->u[i][k] + (size_t)t * p->rank;
            float *y = j->y[i] + (size_t)t * rows;
            for (int64_t r = r0; r < r1; r++) y[r] += pt_dot_f32(p->b + (size_t)r * p->rank, u, p->rank);
        }
    }
}

/* Rows [r0, r1) of y = W x for a quantized W with no int8 fast path
 * (K-quants, Q5_1), through the FMA kernels: each tile of KQ_ROWS rows is
 * dequantized exactly (pt_dequant_row) into scratch as F32 and multiplied
 * by pt_fmatmul, so every output is pt_fmatmul_ref's over the dequantized
 * row, whatever the tile or token chunk it falls in (fmatmul.h's order is
 * per output). */
static void kq_product(const pt_cpu *cpu, const pt_weight *w, const float *x, int64_t n, float *y,
                       int64_t r0, int64_t r1, float *scratch) {
    const size_t row_bytes = pt_type_row_bytes(w->type, w->cols);
    float *tile = scratch, *yt = scratch + (size_t)KQ_ROWS * (size_t)w->cols; /* [KQ_TOKS][nr] */
    for (int64_t r = r0; r < r1; r += KQ_ROWS) {
        const int64_t nr = r1 - r < KQ_ROWS ? r1 - r : KQ_ROWS;
        for (int64_t k = 0; k < nr; k++)
            pt_dequant_row(w->type, (const uint8_t *)w->data + (size_t)(r + k) * row_bytes,
                           tile + (size_t)k * (size_t)w->cols, w->cols);
        for (int64_t t0 = 0; t0 < n; t0 += KQ_TOKS) {
            const int64_t nt = n - t0 < KQ_TOKS ? n - t0 : KQ_TOKS;
            pt_fmatmul(cpu, PT_TYPE_F32, tile, nr, w->cols, x + (size_t)t0 * (size_t)w->cols, nt, yt, 0, nr);
            for (int64_t t = 0; t < nt; t++)
                memcpy(y + (size_t)(t0 + t) * (size_t)w->rows + (size_t)r, yt + (size_t)t * (size_t)nr,
                       (size_t)nr * sizeof(float));
        }
    }
}

/* y = W x for rows [r0, r1) of matrix i, on the calling thread's scratch,
 * plus the LoRA terms of W's adapters for those rows. */
static void mm_product(const mm_plan *pl, int i, int64_t r0, int64_t r1, int thread) {
    const pt_matmul *j = pl->j;
    const pt_weight *w = j->w[i];
    uint8_t *scratch = pl->scratch ? pl->scratch + (size_t)thread * pl->scratch_n : NULL;
    if (w->packed)
        pt_qmatmul(w->packed, j->qa, j->y[i], r0, r1, scratch);
    else if (j->int8_ref && pt_qmatmul_ref_type(w->type, w->cols))
        /* an int8 type the CPU variant does not pack (cpu "ref"), when the
         * caller quantized x: the int8 product in plain C, bitwise what the
         * packed kernels of every other variant give (qmatmul.h) */
        pt_qmatmul_ref(w->type, w->data, w->rows, w->cols, j->qa, j->y[i], r0, r1);
    else if (pt_fmatmul_supported(w->type)) /* F32 / F16 / BF16: register-blocked FMA */
        pt_fmatmul(pl->cpu, w->type, w->data, w->rows, w->cols, j->x, j->n, j->y[i], r0, r1);
    else if (!j->int8_ref && pl->cpu->variant != PT_CPU_REF && pl->scratch &&
             pl->scratch_n >= kq_bytes(w->cols))
        kq_product(pl->cpu, w, j->x, j->n, j->y[i], r0, r1,
                   (float *)(void *)(pl->scratch + (size_t)thread * pl->scratch_n));
    else
        pt_matmul_ref(w->type, w->data, w->rows, w->cols, j->x, j->n, j->y[i], r0, r1);
    /* the scratch is free again: the base product above is done with it */
    if (pl->lora) mm_lora_rows(pl, i, r0, r1, scratch, thread);
}

/* Units [u0, u1) of part `part`. Every row is computed by exactly one
 * range with the same kernel, so no result depends on the split. */
static void mm_units(const mm_plan *pl, int part, int64_t u0, int64_t u1, int thread) {
    const pt_matmul *j = pl->j;
    const int64_t rows = j->w[part]->rows, a = pl->align[part]; /* gate and up: equal rows */
    const int64_t r0 = u0 * a < rows ? u0 * a : rows, r1 = u1 * a < rows ? u1 * a : rows;
    if (r0 >= r1) return;
    if (!j->silu) {
        mm_product(pl, part, r0, r1, thread);
        return;
    }
    /* rows [r0, r1) of both gate and up are this range's alone */
    mm_product(pl, 0, r0, r1, thread);
    mm_product(pl, 1, r0, r1, thread);
    for (int t = 0; t < j->n; t++) {
        float *g = j->y[0] + t * rows + r0;
        pt_silu_mul_simd(pl->cpu, g, g, j->y[1] + t * rows + r0, (int)(r1 - r0));
    }
}

/* The parts one after another: claimed from the weighted run (own share,
 * then stolen), or task `task`'s even share of n_tasks. */
static void lora_u_deferred(const mm_plan *pl, int thread);

static void mm_task(void *ctx, int task, int n_tasks, int thread) {
    const mm_plan *pl = ctx;
    if (pl->lora && pl->lora->deferred && !atomic_exchange_explicit(&pl->lora->u_taken, true, memory_order_relaxed))
        lora_u_deferred(pl, thread);
    for (int part = 0; part < pl->n_parts; part++) {
        int64_t u0, u1;
        if (pl->pool) {
            while (pt_pool_claim(pl->pool, thread, part, &u0, &u1)) mm_units(pl, part, u0, u1, thread);
        } else {
            split_even(pl->units[part], task, n_tasks, &u0, &u1);
            mm_units(pl, part, u0, u1, thread);
        }
    }
}

size_t pt_lora_run_u_floats(int max_tokens, int max_rank) {
    return (size_t)3 * PT_LORA_MAX_ACTIVE * (size_t)max_tokens * (size_t)max_rank;
}

/* The pair of one adapter's (sorted by target address) that adapts w. */
static const pt_lora_pair *lora_find(const pt_lora_pair *pairs, int n, const pt_weight *w) {
    int lo = 0, hi = n;
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if ((uintptr_t)pairs[mid].target < (uintptr_t)w)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && pairs[lo].target == w ? &pairs[lo] : NULL;
}

/* u = scale * A x for tokens [t0, t1) of every LoRA term of the job. */
typedef struct lora_u_job {
    const pt_matmul_runner *r;
    const pt_matmul *j;
    mm_lora *ml;
} lora_u_job;

/* The int8 path's u for tokens [t0, t1): A on the job's int8 x, written
 * at u with stride rank, then each token's rank values spread in place to
 * its g activation rows of ucols (matmul.h), scaled, the rest zero; then
 * quantized into qu. Tokens go from the last down: token t's rows
 * [t*E, (t+1)*E) (E = g * ucols >= rank) lie past the A output of every
 * earlier token, so a source is moved (memmove: it may overlap its own
 * destination) before anything is written over it. Its values go first
 * where row g-1 wants them, at E - rank (the end of the region), then to
 * the other rows. */
static void lora_u_q8(const pt_cpu *cpu, const pt_matmul *j, const pt_lora_pair *p, float s, float *u, pt_qact *qu,
                      int64_t t0, int64_t t1, uint8_t *scratch) {
    const int rank = p->rank, g = p->g, uc = p->ucols, E = g * uc;
    const pt_qact v = qact_view(j->qa, t0, t1 - t0);
    float *ut = u + t0 * E;
    pt_qmatmul(p->a8, &v, ut, 0, rank, scratch);
    for (int64_t t = t1 - t0 - 1; t >= 0; t--) {
        float *dst = ut + t * E;
        float *last = dst + (g - 1) * uc + (g - 1) * rank; /* row g-1's place: E - rank when g > 1, 0 when g = 1 */
        memmove(last, ut + t * rank, (size_t)rank * sizeof *last);
        for (int e = 0; e < rank; e++) last[e] *= s;
        for (int jj = 0; jj < g - 1; jj++) {
            float *row = dst + jj * uc;
            memset(row, 0, (size_t)uc * sizeof *row);
            memcpy(row + jj * rank, last, (size_t)rank * sizeof *row);
        }
        float *row = dst + (g - 1) * uc; /* the last row around its values */
        memset(row, 0, (size_t)((g - 1) * rank) * sizeof *row);
        memset(last + rank, 0, (size_t)(dst + E - (last + rank)) * sizeof *row);
    }
    pt_qact_quantize(cpu, u, qu, t0 * g, t1 * g);
}

static void lora_u_task(void *ctx, int task, int n_tasks, int thread) {
    const lora_u_job *lj = ctx;
    const pt_matmul_runner *r = lj->r;
    const pt_matmul *j = lj->j;
    int64_t t0, t1;
    split_even(j->n, task, n_tasks, &t0, &t1);
    if (t0 >= t1) return;
    uint8_t *scratch = r->scratch ? r->scratch + (size_t)thread * r->scratch_n : NULL;
    for (int i = 0; i < j->n_w; i++)
        for (int k = 0; k < lj->ml->n; k++) {
            const pt_lora_pair *p = lj->ml->pair[i][k];
            if (!p) continue;
            const float s = p->scale * r->lora->scale[k];
            if (lj->ml->q8[i][k]) {
                lora_u_q8(r->cpu, j, p, s, lj->ml->u[i][k], &lj->ml->qu[i][k], t0, t1, scratch);
                continue;
            }
            const int64_t cols = j->w[i]->cols;
            float *u = lj->ml->u[i][k] + t0 * p->rank;
            pt_fmatmul(r->cpu, PT_TYPE_F32, p->a, p->rank, cols, j->x + t0 * cols, t1 - t0, u, 0, p->rank);
            for (int64_t e = 0; e < (t1 - t0) * p->rank; e++) u[e] *= s;
        }
}

/* The deferred A products (mm_lora.deferred), on the calling thread. */
static void lora_u_deferred(const mm_plan *pl, int thread) {
    lora_u_job lj = {pl->runner, pl->j, pl->lora};
    lora_u_task(&lj, 0, 1, thread);
    atomic_store_explicit(&pl->lora->u_ready, true, memory_order_release);
}

/* Which matrices of j the active adapters touch, on which path; their u
 * = scale * A x computed (split by tokens on the pool for a batch), or
 * left to the run for a single token on several threads (deferred).
 * false: none. */
static bool lora_prepare(const pt_matmul_runner *r, const pt_matmul *j, mm_lora *ml) {
    const pt_lora_run *run = r->lora;
    /* max_tokens covers every job of its owner (the LLM's chunks and logit
     * rows are at most n_batch, pt_context_set_loras sizes u for that) */
    if (!run || run->n == 0 || !j->x || j->n > run->max_tokens) return false;
    bool any = false;
    ml->n = run->n;
    ml->tmp = run->tmp;
    ml->tmp_stride = (int64_t)PT_LORA_TMP_TOKENS * run->max_rows;
    const bool tmp_ok = run->tmp && run->tmp_threads >= r->n_threads;
    for (int i = 0; i < j->n_w; i++) {
        for (int k = 0; k < run->n; k++) {
            const pt_lora_pair *p = lora_find(run->pairs[k], run->n_pairs[k], j->w[i]);
            const size_t ik = (size_t)i * PT_LORA_MAX_ACTIVE + (size_t)k;
            ml->pair[i][k] = p;
            ml->u[i][k] = run->u + ik * (size_t)run->max_tokens * (size_t)run->max_rank;
            /* int8 where the pair has its factors (so its base is packed
             * and the job quantized x into qa) and the run room for u's
             * activation rows and B's rows */
            ml->q8[i][k] = p && !run->f32 && p->a8 && p->b8 && j->qa && run->qu && tmp_ok &&
                           p->g * p->ucols <= run->max_rank && j->w[i]->rows <= run->max_rows;
            if (ml->q8[i][k])
                pt_qact_init(&ml->qu[i][k], run->qu + ik * run->qu_bytes, (int64_t)j->n * p->g, p->ucols);
            any |= p != NULL;
        }
    }
    if (!any) return false;
    ml->deferred = j->n == 1 && r->n_threads > 1;
    atomic_init(&ml->u_taken, false);
    atomic_init(&ml->u_ready, false);
    if (ml->deferred) return true;
    lora_u_job lj = {r, j, ml};
    if (j->n > 1 && r->n_threads > 1)
        pt_pool_run(r->pool, lora_u_task, &lj, j->n < r->n_threads ? j->n : r->n_threads);
    else
        lora_u_task(&lj, 0, 1, 0);
    return true;
}

void pt_matmul_run(const pt_matmul_runner *r, const pt_matmul *j) {
    mm_lora ml;
    const bool lora = lora_prepare(r, j, &ml);
    /* a single token's rows are split evenly, unless one thread takes the
     * A products first: then the others claim and steal its rows */
    const bool weighted = r->n_threads > 1 && (j->n > 1 || (lora && ml.deferred));
    mm_plan pl = mm_parts(j, r, weighted ? r->pool : NULL);
    if (lora) pl.lora = &ml;
    if (weighted)
        pt_pool_run_weighted(r->pool, mm_task, &pl, pl.units, pl.n_parts);
    else if (r->n_threads == 1)
        mm_task(&pl, 0, 1, 0);
    else
        pt_pool_run(r->pool, mm_task, &pl, r->n_threads);
}
