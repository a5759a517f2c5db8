/*
 * sd_attn.c — multi-head attention (sd_mha_run) and diffusers' Attention
 * module (sd_attn_*) on pt_attn_full (sd_nn.h).
 *
 * Keys go into the runtime's kt buffer in attention.h's blocked,
 * transposed layout, one region per (sequence, head):
 *   kt[(s * heads + h) * kt_head + (j / BK) * BK * D + d * BK + j % BK]
 *   kt_head = blocks * BK * D, blocks = ceil(n_kv / BK)
 * with the unused lanes of the last block zeroed (finite, as the kernel
 * asks). Values and queries are read in place (head h at column h * D of
 * each row). Work is one task per (sequence, head, tile of ATTN_QT
 * queries). Causal attention (CLIP) gives query i the first i + 1 keys:
 * one pt_attn_full call per query, so causal and full attention run the
 * same kernel (and so agree across CPU variants as image_ops.h states).
 */
#include "sd_nn_impl.h"

#include "attention.h"
#include "image_ops.h"
#include "status.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define ATTN_QT 32 /* queries per task */

typedef struct mha_job {
    const sd_runtime *rt;
    float *out;
    const float *q, *k, *v;
    float *kt;
    int64_t kt_head;   /* floats per (sequence, head) region */
    int n_q, n_kv, heads, D, q_tiles;
    bool causal;
    float scale;
} mha_job;

/* Store the keys of (sequence, head) `task` into its blocked region. */
static void store_task(void *ctx, int task, int n_tasks, int thread) {
    (void)n_tasks, (void)thread;
    const mha_job *j = ctx;
    const int s = task / j->heads, h = task % j->heads, HD = j->heads * j->D;
    float *kt = j->kt + (int64_t)task * j->kt_head;
    const int last = (j->n_kv - 1) / PT_ATTN_BK; /* the last block: zero its unused lanes */
    memset(kt + (int64_t)last * PT_ATTN_BK * j->D, 0, (size_t)PT_ATTN_BK * j->D * sizeof(float));
    const float *k = j->k + (int64_t)s * j->n_kv * HD + (int64_t)h * j->D;
    for (int p = 0; p < j->n_kv; p++)
        pt_attn_store_key(kt, (int64_t)PT_ATTN_BK * j->D, p, k + (int64_t)p * HD, j->D);
}

static void attn_task(void *ctx, int task, int n_tasks, int thread) {
    (void)n_tasks;
    const mha_job *j = ctx;
    const int sh = task / j->q_tiles, tile = task % j->q_tiles;
    const int s = sh / j->heads, h = sh % j->heads, HD = j->heads * j->D;
    const int i0 = tile * ATTN_QT, nq = j->n_q - i0 < ATTN_QT ? j->n_q - i0 : ATTN_QT;
    const int64_t qoff = ((int64_t)s * j->n_q + i0) * HD + (int64_t)h * j->D;
    const float *kt = j->kt + (int64_t)sh * j->kt_head;
    const float *v = j->v + (int64_t)s * j->n_kv * HD + (int64_t)h * j->D;
    float *scratch = sd_rt_thread_buf(j->rt, SD_TBUF_ATTN, thread);
    const int64_t bs = (int64_t)PT_ATTN_BK * j->D;
    if (!j->causal) {
        pt_attn_full(&j->rt->cpu, j->out + qoff, HD, j->q + qoff, HD, nq, kt, bs, v, HD, j->n_kv,
                     j->D, j->scale, scratch);
        return;
    }
    for (int i = 0; i < nq; i++) /* query i0 + i sees keys 0 .. i0 + i */
        pt_attn_full(&j->rt->cpu, j->out + qoff + (int64_t)i * HD, HD, j->q + qoff + (int64_t)i * HD,
                     HD, 1, kt, bs, v, HD, i0 + i + 1, j->D, j->scale, scratch);
}

pt_status sd_mha_run(sd_runtime *rt, float *out, const float *q, const float *k, const float *v,
                     int n_seq, int n_q, int n_kv, int heads, int head_dim, bool causal,
                     pt_error *err) {
    if (n_seq < 1 || n_q < 1 || n_kv < 1 || heads < 1 || head_dim < 1 || (causal && n_q != n_kv))
        return pt_fail(err, PT_ERR_ARG, "attention: %d sequences of %d queries, %d keys, %d heads "
                       "of %d%s", n_seq, n_q, n_kv, heads, head_dim, causal ? ", causal" : "");
    const int blocks = (n_kv + PT_ATTN_BK - 1) / PT_ATTN_BK;
    const int64_t kt_head = (int64_t)blocks * PT_ATTN_BK * head_dim;
    const int q_tiles = (n_q + ATTN_QT - 1) / ATTN_QT;
    const int64_t tasks = (int64_t)n_seq * heads * q_tiles;
    if (tasks > PT_POOL_MAX_TASKS) return pt_fail(err, PT_ERR_ARG, "attention: too many queries");
    pt_status st = sd_rt_reserve_shared(rt, (void **)&rt->kt_buf, &rt->kt_n, sizeof(float),
                                        (size_t)n_seq * heads * kt_head, "attention keys", err);
    if (st == PT_OK)
        st = sd_rt_reserve_thread(rt, SD_TBUF_ATTN,
                                  pt_attn_scratch_floats(ATTN_QT, head_dim) * sizeof(float), err);
    if (st) return st;
    mha_job j = {rt, out, q, k, v, rt->kt_buf, kt_head, n_q, n_kv, heads, head_dim, q_tiles,
                 causal, (float)(1.0 / sqrt((double)head_dim))};
    sd_rt_run(rt, store_task, &j, n_seq * heads);
    sd_rt_run(rt, attn_task, &j, (int)tasks);
    return PT_OK;
}

/* ---- diffusers' Attention --------------------------------------------------- */

pt_status sd_attn_load(sd_runtime *rt, const sd_weights *w, const char *prefix, int dim,
                       int ctx_dim, int heads, sd_attn *a, pt_error *err) {
    memset(a, 0, sizeof *a);
    if (heads < 1 || dim % heads)
        return pt_fail(err, PT_ERR_FORMAT, "%s: %d channels do not split into %d heads", prefix,
                       dim, heads);
    a->dim = dim;
    a->ctx_dim = ctx_dim;
    a->heads = heads;
    a->head_dim = dim / heads;
    char name[256];
    pt_status st;
    sd_name(name, prefix, ".to_q");
    st = sd_linear_load(rt, w, name, dim, dim, false, &a->q, err);
    sd_name(name, prefix, ".to_k");
    if (st == PT_OK) st = sd_linear_load(rt, w, name, ctx_dim, dim, false, &a->k, err);
    sd_name(name, prefix, ".to_v");
    if (st == PT_OK) st = sd_linear_load(rt, w, name, ctx_dim, dim, false, &a->v, err);
    sd_name(name, prefix, ".to_out.0");
    if (st == PT_OK) st = sd_linear_load(rt, w, name, dim, dim, true, &a->out, err);
    if (st) sd_attn_free(rt, a);
    return st;
}

void sd_attn_free(sd_runtime *rt, sd_attn *a) {
    if (!a) return;
    sd_linear_free(rt, &a->q);
    sd_linear_free(rt, &a->k);
    sd_linear_free(rt, &a->v);
    sd_linear_free(rt, &a->out);
}

/* scratch: q [n_seq][n_q][dim] | att [n_seq][n_q][dim] | k, v [n_seq][n_kv][dim] */
size_t sd_attn_scratch_floats(const sd_attn *a, int n_seq, int64_t n_q, int64_t n_kv) {
    return (size_t)n_seq * (size_t)a->dim * (2 * (size_t)n_q + 2 * (size_t)n_kv);
}

pt_status sd_attn_run(sd_runtime *rt, const sd_attn *a, float *y, const float *x, int n_seq,
                      int64_t n_q, const float *ctx, int64_t n_kv, float *scratch, pt_error *err) {
    if (n_q > INT32_MAX || n_kv > INT32_MAX)
        return pt_fail(err, PT_ERR_ARG, "attention: sequences too long");
    const size_t dim = (size_t)a->dim;
    float *q = scratch, *att = q + (size_t)n_seq * n_q * dim;
    float *k = att + (size_t)n_seq * n_q * dim, *v = k + (size_t)n_seq * n_kv * dim;
    pt_status st;
    if (ctx == x && a->ctx_dim == a->dim) { /* self-attention: one quantized input for q, k, v */
        const sd_linear *l[3] = {&a->q, &a->k, &a->v};
        float *const out[3] = {q, k, v};
        st = sd_linear_run_n(rt, l, out, 3, x, (int64_t)n_seq * n_q, err);
    } else {
        st = sd_linear_run(rt, &a->q, x, (int64_t)n_seq * n_q, q, err);
        const sd_linear *l[2] = {&a->k, &a->v};
        float *const out[2] = {k, v};
        if (st == PT_OK) st = sd_linear_run_n(rt, l, out, 2, ctx, (int64_t)n_seq * n_kv, err);
    }
    if (st == PT_OK)
        st = sd_mha_run(rt, att, q, k, v, n_seq, (int)n_q, (int)n_kv, a->heads, a->head_dim,
                        false, err);
    if (st == PT_OK) st = sd_linear_run(rt, &a->out, att, (int64_t)n_seq * n_q, y, err);
    return st;
}
