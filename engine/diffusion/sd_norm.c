/*
 * sd_norm.c — GroupNorm / LayerNorm layers and the element-wise ops of the
 * image graphs on the pool (sd_nn.h).
 *
 * GroupNorm statistics are the one reduction across pixels. They are
 * summed per fixed chunk of GN_PIX pixels of one image (a pool task each,
 * into its own slot of [chunk][2][groups] doubles), then the chunks of an
 * image are added in chunk order on the calling thread: the same sums,
 * so the same bits, for any thread count. The normalization itself is
 * per pixel (pt_groupnorm_apply) over the same chunks.
 */
#include "sd_nn_impl.h"

#include "image_ops.h"
#include "ops.h"
#include "status.h"

#include <string.h>

#define GN_PIX 512 /* pixels per statistics chunk (fixed: it sets the sums' order) */

pt_status sd_norm_load(sd_runtime *rt, const sd_weights *w, const char *prefix, int c, int groups,
                       float eps, sd_norm *nm, pt_error *err) {
    memset(nm, 0, sizeof *nm);
    if (c < 1 || groups < 0 || (groups > 0 && c % groups))
        return pt_fail(err, PT_ERR_FORMAT, "%s: %d channels do not split into %d groups", prefix,
                       c, groups);
    nm->c = c;
    nm->groups = groups;
    nm->eps = eps;
    pt_status st = sd_load_vector(rt, w, prefix, ".weight", c, true, &nm->gamma, err);
    if (st == PT_OK) st = sd_load_vector(rt, w, prefix, ".bias", c, true, &nm->beta, err);
    if (st) sd_norm_free(rt, nm);
    return st;
}

void sd_norm_free(sd_runtime *rt, sd_norm *nm) {
    if (!nm) return;
    sd_free_vector(rt, nm->gamma, nm->c);
    sd_free_vector(rt, nm->beta, nm->c);
    nm->gamma = nm->beta = NULL;
}

/* ---- GroupNorm ------------------------------------------------------------ */

typedef struct gn_job {
    const sd_runtime *rt;
    const sd_norm *nm;
    float *y;
    const float *x;
    int64_t n_pix;      /* per image */
    int64_t chunks;     /* per image: ceil(n_pix / GN_PIX) */
    double *sums;       /* [n * chunks][2][groups] */
    const float *stats; /* [n][2][groups]: mean, rstd */
    bool silu;
} gn_job;

static void gn_sums_task(void *ctx, int task, int n_tasks, int thread) {
    (void)n_tasks, (void)thread;
    const gn_job *j = ctx;
    const int G = j->nm->groups, c = j->nm->c;
    const int64_t img = task / j->chunks, p0 = task % j->chunks * GN_PIX;
    const int64_t p1 = p0 + GN_PIX < j->n_pix ? p0 + GN_PIX : j->n_pix;
    double *s = j->sums + (size_t)task * 2 * G;
    memset(s, 0, 2 * (size_t)G * sizeof(double));
    pt_groupnorm_sums(j->x + img * j->n_pix * c, p0, p1, c, G, s, s + G);
}

static void gn_apply_task(void *ctx, int task, int n_tasks, int thread) {
    (void)n_tasks, (void)thread;
    const gn_job *j = ctx;
    const sd_norm *nm = j->nm;
    const int G = nm->groups, c = nm->c;
    const int64_t img = task / j->chunks, p0 = task % j->chunks * GN_PIX;
    const int64_t p1 = p0 + GN_PIX < j->n_pix ? p0 + GN_PIX : j->n_pix;
    const float *st = j->stats + (size_t)img * 2 * G;
    const int64_t off = img * j->n_pix * c;
    pt_groupnorm_apply(&j->rt->cpu, j->y + off, j->x + off, p0, p1, c, G, st, st + G, nm->gamma,
                       nm->beta, j->silu);
}

pt_status sd_groupnorm_run(sd_runtime *rt, const sd_norm *nm, float *y, const float *x, int n,
                           int64_t n_pix, bool silu, pt_error *err) {
    if (nm->groups < 1 || n < 1 || n_pix < 1)
        return pt_fail(err, PT_ERR_ARG, "groupnorm: %d groups, %d images of %lld pixels",
                       nm->groups, n, (long long)n_pix);
    const int G = nm->groups;
    const int64_t chunks = (n_pix + GN_PIX - 1) / GN_PIX, tasks = chunks * n;
    if (tasks > PT_POOL_MAX_TASKS) return pt_fail(err, PT_ERR_ARG, "groupnorm: image too large");
    /* [tasks][2][G] sums, then [n][2][G] floats of statistics (as doubles' room) */
    const size_t need = (size_t)tasks * 2 * G + (size_t)n * G;
    pt_status st = sd_rt_reserve_shared(rt, (void **)&rt->gn_buf, &rt->gn_n, sizeof(double), need,
                                        "groupnorm statistics", err);
    if (st) return st;
    float *stats = (float *)(rt->gn_buf + (size_t)tasks * 2 * G);
    gn_job j = {rt, nm, y, x, n_pix, chunks, rt->gn_buf, stats, silu};
    sd_rt_run(rt, gn_sums_task, &j, (int)tasks);
    for (int img = 0; img < n; img++) {
        double *acc = rt->gn_buf + (size_t)img * chunks * 2 * G; /* chunk 0 of the image */
        for (int64_t k = 1; k < chunks; k++) /* in chunk order */
            for (int g = 0; g < 2 * G; g++) acc[g] += acc[k * 2 * G + g];
        float *s = stats + (size_t)img * 2 * G;
        pt_groupnorm_stats(acc, acc + G, G, n_pix * (nm->c / G), nm->eps, s, s + G);
    }
    sd_rt_run(rt, gn_apply_task, &j, (int)tasks);
    return PT_OK;
}

/* ---- LayerNorm ---------------------------------------------------------------- */

typedef struct ln_job {
    const sd_runtime *rt;
    const sd_norm *nm;
    float *y;
    const float *x;
    int64_t n_rows;
} ln_job;

static void ln_task(void *ctx, int task, int n_tasks, int thread) {
    (void)thread;
    const ln_job *j = ctx;
    const int c = j->nm->c;
    int64_t r0, r1;
    sd_split(j->n_rows, task, n_tasks, &r0, &r1);
    if (r0 < r1)
        pt_layernorm(&j->rt->cpu, j->y + r0 * c, j->x + r0 * c, r1 - r0, c, j->nm->gamma,
                     j->nm->beta, j->nm->eps);
}

void sd_layernorm_run(sd_runtime *rt, const sd_norm *nm, float *y, const float *x, int64_t n_rows) {
    ln_job j = {rt, nm, y, x, n_rows};
    sd_rt_run(rt, ln_task, &j, sd_tasks_for(rt, n_rows * nm->c));
}

/* ---- element-wise ------------------------------------------------------------- */

/* One job type for the ops below: each task takes an even share of n
 * units (values or rows) and applies `op` to it. */
typedef enum ew_op { EW_ACT, EW_ADD, EW_GEGLU, EW_UPSAMPLE, EW_CONCAT } ew_op;

typedef struct ew_job {
    const sd_runtime *rt;
    ew_op op;
    sd_eltwise act;
    float *y;
    const float *a, *b;
    int ca, cb;        /* geglu: inner (ca); concat: channels of a and b;
                        * upsample: w (ca) and c (cb) */
    int64_t n;         /* units: values (act, add), rows (geglu, concat),
                        * input rows of pixels (upsample: n images * h) */
} ew_job;

static void ew_task(void *ctx, int task, int n_tasks, int thread) {
    (void)thread;
    const ew_job *j = ctx;
    const pt_cpu *cpu = &j->rt->cpu;
    int64_t i0, i1;
    sd_split(j->n, task, n_tasks, &i0, &i1);
    if (i0 >= i1) return;
    switch (j->op) {
    case EW_ACT:
        if (j->act == SD_SILU) pt_silu_inplace(cpu, j->y + i0, i1 - i0);
        else if (j->act == SD_GELU) pt_gelu_inplace(cpu, j->y + i0, i1 - i0);
        else pt_quick_gelu_inplace(cpu, j->y + i0, i1 - i0);
        break;
    case EW_ADD:
        for (int64_t i = i0; i < i1; i += 1 << 20) { /* pt_add takes an int count */
            const int64_t m = i1 - i < (1 << 20) ? i1 - i : (1 << 20);
            pt_add(j->y + i, j->a + i, (int)m);
        }
        break;
    case EW_GEGLU:
        pt_geglu(cpu, j->y + i0 * j->ca, j->a + i0 * 2 * j->ca, i1 - i0, j->ca);
        break;
    case EW_UPSAMPLE: { /* rows [i0, i1) of pixels of the input (n*h rows of w) */
        const int w = j->ca, c = j->cb;
        for (int64_t r = i0; r < i1; r++) {
            const float *src = j->a + r * w * c;
            float *d0 = j->y + 2 * r * (2 * (int64_t)w * c), *d1 = d0 + 2 * (int64_t)w * c;
            for (int x = 0; x < w; x++) {
                memcpy(d0 + 2 * x * c, src + x * c, (size_t)c * sizeof(float));
                memcpy(d0 + (2 * x + 1) * c, src + x * c, (size_t)c * sizeof(float));
            }
            memcpy(d1, d0, 2 * (size_t)w * c * sizeof(float));
        }
        break;
    }
    case EW_CONCAT:
        for (int64_t p = i0; p < i1; p++) {
            float *d = j->y + p * (j->ca + j->cb);
            memcpy(d, j->a + p * j->ca, (size_t)j->ca * sizeof(float));
            memcpy(d + j->ca, j->b + p * j->cb, (size_t)j->cb * sizeof(float));
        }
        break;
    }
}

static void ew_run(sd_runtime *rt, ew_job *j, int64_t values) {
    j->rt = rt;
    sd_rt_run(rt, ew_task, j, sd_tasks_for(rt, values));
}

void sd_act_run(sd_runtime *rt, sd_eltwise f, float *x, int64_t n) {
    ew_job j = {.op = EW_ACT, .act = f, .y = x, .n = n};
    ew_run(rt, &j, n);
}

void sd_add_run(sd_runtime *rt, float *y, const float *x, int64_t n) {
    ew_job j = {.op = EW_ADD, .y = y, .a = x, .n = n};
    ew_run(rt, &j, n);
}

void sd_geglu_run(sd_runtime *rt, float *out, const float *x, int64_t n_rows, int inner) {
    ew_job j = {.op = EW_GEGLU, .y = out, .a = x, .ca = inner, .n = n_rows};
    ew_run(rt, &j, n_rows * 3 * inner);
}

void sd_upsample_run(sd_runtime *rt, float *y, const float *x, int n, int h, int w, int c) {
    /* image i's rows are rows i*h .. i*h+h-1 of the input, and its output
     * rows 2*(i*h + r) and 2*(i*h + r) + 1: the batch is one tall image */
    ew_job j = {.op = EW_UPSAMPLE, .y = y, .a = x, .ca = w, .cb = c, .n = (int64_t)n * h};
    ew_run(rt, &j, (int64_t)n * h * w * c * 4);
}

void sd_concat_run(sd_runtime *rt, float *y, const float *a, int ca, const float *b, int cb,
                   int64_t n_pix) {
    ew_job j = {.op = EW_CONCAT, .y = y, .a = a, .b = b, .ca = ca, .cb = cb, .n = n_pix};
    ew_run(rt, &j, n_pix * (ca + cb));
}
