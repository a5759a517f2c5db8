/*
 * llm_forward.c — the run state of one sequence and the forward pass of
 * the llama / qwen2 / qwen3 / gemma3 decoder (weights: llm_internal.h).
 *
 * A call to pt_llm_forward is split into chunks of at most n_batch tokens.
 * Each chunk goes through every layer with all its tokens at once, so each
 * weight row is read once per chunk:
 *
 *   x = token_embd[tokens] (* embd_scale: gemma3)           [n][E]
 *   per layer:
 *     xn = rmsnorm(x) * attn_norm
 *     q, k, v = Wq xn (+bq), Wk xn (+bk), Wv xn (+bv)
 *     qwen3, gemma3: q, k = per-head rmsnorm(q) * q_norm, rmsnorm(k) * k_norm
 *     q, k = rope(q, k) at positions n_past + t (gemma3's local layers:
 *            their own base)
 *     store k, v in the cache at those positions
 *     att[t] = causal softmax(q k^T * attn_scale) v  over positions
 *              0..n_past+t (local layers: the last n_swa of them)
 *     a = Wo att;  gemma3: a = rmsnorm(a) * attn_post_norm
 *     x += a
 *     xn = rmsnorm(x) * ffn_norm
 *     f = Wdown (act(Wgate xn) * Wup xn)   act: silu, gemma3 GELU (tanh)
 *     gemma3: f = rmsnorm(f) * ffn_post_norm
 *     x += f
 *   logits = Wout (rmsnorm(x) * output_norm)   only for the rows asked for
 *   gemma3 with final_logit_softcapping c: logits = c tanh(logits / c)
 *
 * Products go through the matmul runner (matmul.h): a repacked matrix
 * (weight.packed) multiplies the int8 quantization of its input (pt_qact,
 * made here once per input and shared by Q/K/V and by gate/up); any other
 * matrix goes through pt_matmul_ref on the float input. Attention is the
 * fused online-softmax kernel of attention.h over the KV cache's pages
 * (kv_cache.h pt_kv_attend).
 *
 * Threads. Every step runs on the state's pool, held (pt_threadpool_acquire)
 * for the whole of a pt_llm_forward call:
 *   - products: split by matmul.h (an even share per thread for one token,
 *     a weighted run with stealing for a batch); the matrices that read
 *     one input (Q, K, V; gate and up with silu fused) go in one pool run;
 *   - attention: tasks of (KV head, tile of 16 tokens, part of the KV
 *     head's query heads), the costliest (latest) tiles first;
 *   - per-token steps (residual add + rmsnorm + quantization, bias / norm
 *     / rope / cache store): split by tokens for a batch, done inline by
 *     the calling thread for a single token (a pool run costs more).
 * No result depends on the split: each output element is computed by the
 * same operations whichever thread or chunk computes it.
 *
 * A model placed on a device (pt_llm_place, llm_graph.h) runs there
 * instead: pt_llm_state_new, _free, _kv_bytes and pt_llm_forward hand its
 * state and chunks to llm_graph.c; n_past, reset and truncate stay here.
 *
 * Invariant: positions [0, n_past) of the KV cache hold the keys and values
 * of the tokens seen so far; a failed call (bad token, context full) is
 * detected before anything is computed and leaves the state unchanged; a
 * KV spill failure in the middle of a call (kv_cache.h) leaves n_past as
 * it was (positions past it are stale, as after a truncate).
 */
#include "llm_internal.h"

#include "attention.h"
#include "kv_cache.h"
#include "llm_graph.h"
#include "matmul.h"
#include "ops.h"
#include "ops_simd.h"
#include "quant.h"
#include "status.h"
#include "threadpool.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ATTN_TILE 16  /* query tokens per attention task */

struct pt_llm_state {
    int n_ctx;          /* KV cache capacity in positions */
    int n_batch;        /* most tokens per chunk */
    int n_threads;      /* threads of the pool */
    int n_past;         /* positions [0, n_past) are in the cache */
    pt_kv_cache kv;
    const pt_cpu *cpu;  /* the model's kernel variant */
    pt_threadpool *tp;  /* the pool every step runs on, held for a whole forward call */
    bool owns_tp;       /* a private pool (made by pt_llm_state_new), else the caller's */
    pt_pool *pool;      /* tp->pool */
    float *inv_freq;    /* [n_rot/2] rotary inverse frequencies */
    float *rope_cs;     /* [n_batch][n_rot] cos/sin pairs of the chunk's positions */
    float *inv_freq_swa; /* [n_rot/2] those of the sliding-window layers, or NULL (no n_swa) */
    float *rope_cs_swa;  /* [n_batch][n_rot] their table, or NULL */
    float *x;           /* [n_batch][E] residual stream */
    float *xn;          /* [n_batch][E] a sublayer's normalized input, then its output */
    float *q;           /* [n_batch][H*D] */
    float *k;           /* [n_batch][Hkv*D] */
    float *v;           /* [n_batch][Hkv*D] */
    float *att;         /* [n_batch][H*D] attention output, before Wo */
    float *gate;        /* [n_batch][F] gate, then silu(gate) * up */
    float *up;          /* [n_batch][F] */
    void *qa_buf;       /* pt_qact_bytes(n_batch, max(E, H*D, F)) */
    pt_qact qa;         /* the current input of the packed products */
    float *attn_scratch;     /* [n_threads][attn_scratch_n] */
    size_t attn_scratch_n;   /* floats per thread */
    uint8_t *mm_scratch;     /* [n_threads][mm_scratch_n]: the packed products' (qmatmul.h) */
    size_t mm_scratch_n;     /* bytes per thread (0: the kernels need none) */
    const pt_lora_run *lora; /* active LoRA adapters (the context's), or NULL */
    pt_graph_state *graph;   /* a model placed on a device runs here (llm_graph.h);
                                then nothing above but n_ctx, n_batch, n_past is set */
};

/* ---- state -------------------------------------------------------------- */

pt_status pt_llm_state_new(const pt_llm *m, int n_ctx, int n_batch, int n_threads,
                           pt_threadpool *pool, pt_llm_state **out, pt_error *err) {
    return pt_llm_state_new_kv(m, n_ctx, n_batch, n_threads, pool, NULL, out, err);
}

pt_status pt_llm_state_new_kv(const pt_llm *m, int n_ctx, int n_batch, int n_threads,
                              pt_threadpool *pool, const pt_llm_kv_params *kvp, pt_llm_state **out,
                              pt_error *err) {
    *out = NULL;
    if (n_ctx <= 0 || n_batch <= 0)
        return pt_fail(err, PT_ERR_ARG, "context size (%d) and batch size (%d) must be positive",
                       n_ctx, n_batch);
    const pt_llm_hparams *hp = &m->hp;
    if (n_batch > n_ctx) n_batch = n_ctx;
    if (n_threads <= 0) n_threads = 1;
    if (n_threads > PT_POOL_MAX_THREADS) n_threads = PT_POOL_MAX_THREADS;
    pt_llm_state *s = calloc(1, sizeof *s);
    if (!s) return pt_fail(err, PT_ERR_NOMEM, "out of memory for the run state");
    s->n_ctx = n_ctx;
    s->n_batch = n_batch;
    s->cpu = &m->cpu;
    if (m->graph) {
        if (kvp && (kvp->type != PT_KV_F32 || kvp->budget_bytes)) {
            free(s);
            return pt_fail(err, PT_ERR_UNSUPPORTED,
                           "a model on a GPU device keeps a float32 KV cache in its memory: no KV type or budget");
        }
        pt_status st = pt_graph_state_new(m, n_ctx, n_batch, &s->graph, err);
        if (st != PT_OK) {
            free(s);
            return st;
        }
        *out = s;
        return PT_OK;
    }

    const pt_kv_opts kvo = {kvp ? kvp->type : PT_KV_F32, &m->cpu, kvp ? kvp->budget_bytes : 0,
                            kvp ? kvp->spill_dir : NULL, kvp ? kvp->qk : PT_KV_QK_AUTO};
    pt_status st = pt_kv_init(&s->kv, hp->n_layer, n_ctx, hp->n_head_kv, hp->head_dim, &kvo, err);
    if (st == PT_OK && !pool) {
        st = pt_threadpool_new(n_threads, &s->tp, err);
        s->owns_tp = st == PT_OK;
    } else {
        s->tp = pool;
    }
    if (st) {
        pt_llm_state_free(s);
        return st;
    }
    s->pool = s->tp->pool;
    s->n_threads = n_threads = pt_pool_threads(s->pool); /* the scratch below is per thread */
    const size_t nb = (size_t)n_batch, E = (size_t)hp->n_embd, F = (size_t)hp->n_ff;
    const size_t QD = (size_t)hp->n_head * hp->head_dim, KD = (size_t)hp->n_head_kv * hp->head_dim;
    size_t max_cols = E > QD ? E : QD;
    if (F > max_cols) max_cols = F;
    const int group = hp->n_head / hp->n_head_kv;
    s->attn_scratch_n = pt_kv_attend_scratch_floats(&s->kv, ATTN_TILE * group);
    s->inv_freq = malloc((size_t)hp->n_rot / 2 * sizeof(float));
    s->rope_cs = malloc(nb * (size_t)hp->n_rot * sizeof(float));
    s->x = malloc(nb * E * sizeof(float));
    s->xn = malloc(nb * E * sizeof(float));
    s->q = malloc(nb * QD * sizeof(float));
    s->k = malloc(nb * KD * sizeof(float));
    s->v = malloc(nb * KD * sizeof(float));
    s->att = malloc(nb * QD * sizeof(float));
    s->gate = malloc(nb * F * sizeof(float));
    s->up = malloc(nb * F * sizeof(float));
    s->qa_buf = malloc(pt_qact_bytes((int64_t)nb, (int64_t)max_cols));
    s->attn_scratch = malloc((size_t)n_threads * s->attn_scratch_n * sizeof(float));
    s->mm_scratch_n = pt_matmul_scratch_bytes(&m->cpu, (int64_t)max_cols);
    if (s->mm_scratch_n) s->mm_scratch = malloc((size_t)n_threads * s->mm_scratch_n);
    if (hp->n_swa > 0) {
        s->inv_freq_swa = malloc((size_t)hp->n_rot / 2 * sizeof(float));
        s->rope_cs_swa = malloc(nb * (size_t)hp->n_rot * sizeof(float));
    }
    if (!s->inv_freq || !s->rope_cs || (hp->n_swa > 0 && (!s->inv_freq_swa || !s->rope_cs_swa)) ||
        !s->x || !s->xn || !s->q || !s->k || !s->v || !s->att || !s->gate || !s->up || !s->qa_buf ||
        !s->attn_scratch || (s->mm_scratch_n && !s->mm_scratch)) {
        pt_llm_state_free(s);
        return pt_fail(err, PT_ERR_NOMEM, "out of memory for scratch buffers of a %d-token batch",
                       n_batch);
    }
    pt_rope_inv_freq(s->inv_freq, hp->n_rot, hp->rope_base, hp->rope_freq_scale, m->rope_freqs);
    if (s->inv_freq_swa) pt_rope_inv_freq(s->inv_freq_swa, hp->n_rot, hp->rope_base_swa, 1.0f, NULL);
    *out = s;
    return PT_OK;
}

void pt_llm_state_free(pt_llm_state *s) {
    if (!s) return;
    if (s->graph) {
        pt_graph_state_free(s->graph);
        free(s);
        return;
    }
    if (s->owns_tp) pt_threadpool_free(s->tp);
    pt_kv_release(&s->kv);
    free(s->inv_freq);
    free(s->rope_cs);
    free(s->inv_freq_swa);
    free(s->rope_cs_swa);
    free(s->x);
    free(s->xn);
    free(s->q);
    free(s->k);
    free(s->v);
    free(s->att);
    free(s->gate);
    free(s->up);
    free(s->qa_buf);
    free(s->attn_scratch);
    free(s->mm_scratch);
    free(s);
}

void pt_llm_state_kv_stats(const pt_llm_state *s, pt_kv_stats *out) {
    if (s->graph) { /* a device's float32 cache: all in its memory, no budget */
        *out = (pt_kv_stats){0};
        out->ram_bytes = pt_graph_kv_bytes(s->graph);
        return;
    }
    pt_kv_get_stats(&s->kv, out);
}

void pt_llm_state_reset(pt_llm_state *s) { s->n_past = 0; }
void pt_llm_state_truncate(pt_llm_state *s, int n_keep) { s->n_past = n_keep; }
int pt_llm_state_n_past(const pt_llm_state *s) { return s->n_past; }
uint64_t pt_llm_state_kv_bytes(const pt_llm_state *s) {
    return s->graph ? pt_graph_kv_bytes(s->graph) : pt_kv_bytes(&s->kv);
}
/* NULL for a state on a device: its cache lives there (llm_graph.c) */
pt_kv_cache *pt_llm_state_kv(pt_llm_state *s) { return s->graph ? NULL : &s->kv; }
void pt_llm_state_set_n_past(pt_llm_state *s, int n) { s->n_past = n; }
void pt_llm_state_set_lora(pt_llm_state *s, const pt_lora_run *lora) { s->lora = lora; }
int pt_llm_state_n_threads(const pt_llm_state *s) { return s->n_threads; }

/* ---- running steps on the pool ----------------------------------------- */

/* Tokens [t0, t1) of task `task` of n_tasks over n tokens. */
static void split_even(int64_t n, int task, int n_tasks, int64_t *t0, int64_t *t1) {
    *t0 = n * task / n_tasks;
    *t1 = n * (task + 1) / n_tasks;
}

/* A per-token step over n tokens: inline for one token, else one task per
 * thread (each a contiguous range of tokens). */
static void run_tokens(pt_llm_state *s, pt_pool_fn fn, void *job, int n) {
    if (n == 1 || s->n_threads == 1)
        fn(job, 0, 1, 0);
    else
        pt_pool_run(s->pool, fn, job, n < s->n_threads ? n : s->n_threads);
}

/* ---- matrix products ---------------------------------------------------- */

/* y_i = W_i x on the state's pool and scratch (matmul.h). */
static void matmul_run(pt_llm_state *s, const pt_matmul *j) {
    const pt_matmul_runner r = {s->cpu, s->pool, s->n_threads, s->mm_scratch, s->mm_scratch_n, s->lora};
    pt_matmul_run(&r, j);
}

static bool any_packed(const pt_weight *a, const pt_weight *b, const pt_weight *c) {
    return a->packed || (b && b->packed) || (c && c->packed);
}

/* ---- per-token steps ---------------------------------------------------- */

/* x[t] += delta[t] (when delta; first normalized in place,
 * delta[t] = rmsnorm(delta[t]) * post, when post: gemma3's post-norms),
 * xn[t] = rmsnorm(x[t]) * w, then the quantization of xn[t] (when
 * quantize). Each token's row of delta may be xn's own (read before it is
 * overwritten). */
typedef struct norm_job {
    const pt_llm *m;
    pt_llm_state *s;
    float *delta;
    const float *post;
    const float *w;
    int n;
    bool quantize;
} norm_job;

static void norm_task(void *ctx, int task, int n_tasks, int thread) {
    (void)thread;
    const norm_job *j = ctx;
    pt_llm_state *s = j->s;
    const int E = j->m->hp.n_embd;
    int64_t t0, t1;
    split_even(j->n, task, n_tasks, &t0, &t1);
    for (int64_t t = t0; t < t1; t++) {
        float *x = s->x + t * E, *xn = s->xn + t * E;
        if (j->delta) {
            float *d = j->delta + t * E;
            if (j->post) pt_rmsnorm(d, d, j->post, E, j->m->hp.norm_eps);
            pt_add(x, d, E);
        }
        pt_rmsnorm(xn, x, j->w, E, j->m->hp.norm_eps);
    }
    if (j->quantize && t0 < t1) pt_qact_quantize(&j->m->cpu, s->xn, &s->qa, t0, t1);
}

/* Quantize tokens of src ([n][cols]) into s->qa. */
typedef struct quant_job {
    const pt_llm *m;
    pt_llm_state *s;
    const float *src;
    int n;
} quant_job;

static void quant_task(void *ctx, int task, int n_tasks, int thread) {
    (void)thread;
    const quant_job *j = ctx;
    int64_t t0, t1;
    split_even(j->n, task, n_tasks, &t0, &t1);
    if (t0 < t1) pt_qact_quantize(&j->m->cpu, j->src, &j->s->qa, t0, t1);
}

static void quantize_input(const pt_llm *m, pt_llm_state *s, const float *src, int n, int64_t cols) {
    pt_qact_init(&s->qa, s->qa_buf, n, cols);
    quant_job j = {m, s, src, n};
    run_tokens(s, quant_task, &j, n);
}

/* Norm step: x += delta (post-normed when post); xn = rmsnorm(x) * w;
 * quantized when `quantize`. */
static void norm_step(const pt_llm *m, pt_llm_state *s, float *delta, const float *post,
                      const float *w, int n, bool quantize) {
    if (quantize) pt_qact_init(&s->qa, s->qa_buf, n, m->hp.n_embd);
    norm_job j = {m, s, delta, post, w, n, quantize};
    run_tokens(s, norm_task, &j, n);
}

/* After the Q/K/V products: biases, qwen3's per-head norms, rope, and the
 * keys and values into the cache at positions p0 + t. */
typedef struct qkv_job {
    const pt_llm *m;
    pt_llm_state *s;
    int il, p0, n;
} qkv_job;

static void qkv_task(void *ctx, int task, int n_tasks, int thread) {
    (void)thread;
    const qkv_job *j = ctx;
    const pt_llm_hparams *hp = &j->m->hp;
    const pt_llm_layer *L = &j->m->layers[j->il];
    pt_llm_state *s = j->s;
    const int H = hp->n_head, Hkv = hp->n_head_kv, D = hp->head_dim;
    const int QD = H * D, KD = Hkv * D;
    int64_t t0, t1;
    split_even(j->n, task, n_tasks, &t0, &t1);
    for (int64_t t = t0; t < t1; t++) {
        float *q = s->q + t * QD, *k = s->k + t * KD, *v = s->v + t * KD;
        if (L->bq) pt_add(q, L->bq, QD);
        if (L->bk) pt_add(k, L->bk, KD);
        if (L->bv) pt_add(v, L->bv, KD);
        if (L->q_norm) {
            for (int h = 0; h < H; h++) pt_rmsnorm(q + h * D, q + h * D, L->q_norm, D, hp->norm_eps);
            for (int h = 0; h < Hkv; h++) pt_rmsnorm(k + h * D, k + h * D, L->k_norm, D, hp->norm_eps);
        }
        const float *cs = (L->swa ? s->rope_cs_swa : s->rope_cs) + t * hp->n_rot;
        pt_rope(q, H, D, hp->n_rot, cs, hp->rope_neox);
        pt_rope(k, Hkv, D, hp->n_rot, cs, hp->rope_neox);
        pt_kv_store(&s->kv, j->il, j->p0 + (int)t, k, v);
    }
}

/* ---- attention ---------------------------------------------------------- */

typedef struct attn_job {
    const pt_llm *m;
    pt_llm_state *s;
    int il, p0, n;
    int n_tiles;     /* token tiles of ATTN_TILE */
    int parts;       /* pieces each KV head's query heads are split into */
    int window;      /* sliding window, or 0 */
    float scale;
} attn_job;

static void attn_task(void *ctx, int task, int n_tasks, int thread) {
    (void)n_tasks;
    const attn_job *j = ctx;
    const pt_llm_hparams *hp = &j->m->hp;
    pt_llm_state *s = j->s;
    const int Hkv = hp->n_head_kv, D = hp->head_dim, QD = hp->n_head * D;
    const int group = hp->n_head / Hkv;
    const int per_tile = Hkv * j->parts;
    /* the last tiles attend to the most positions: hand them out first */
    const int tile = j->n_tiles - 1 - task / per_tile;
    const int kvh = task % per_tile / j->parts, part = task % j->parts;
    const int h0 = group * part / j->parts, h1 = group * (part + 1) / j->parts;
    const int t0 = tile * ATTN_TILE;
    const int nt = j->n - t0 < ATTN_TILE ? j->n - t0 : ATTN_TILE;
    if (h0 >= h1 || nt <= 0) return;
    const size_t off = (size_t)t0 * QD + (size_t)(kvh * group + h0) * D;
    pt_kv_attend(&s->kv, j->il, kvh, s->att + off, QD, s->q + off, QD, nt, h1 - h0, j->p0 + t0,
                 j->window, j->scale, s->attn_scratch + (size_t)thread * s->attn_scratch_n);
}

static void attention(const pt_llm *m, pt_llm_state *s, int il, int p0, int n) {
    const pt_llm_hparams *hp = &m->hp;
    const int group = hp->n_head / hp->n_head_kv;
    attn_job j = {m, s, il, p0, n, (n + ATTN_TILE - 1) / ATTN_TILE, 1,
                  m->layers[il].swa ? hp->n_swa : 0, hp->attn_scale};
    /* too few (KV head, tile) tasks to keep every thread busy: split the
     * query heads of each KV head too (they then read its K/V separately) */
    const int want = 2 * s->n_threads;
    if (s->n_threads > 1 && hp->n_head_kv * j.n_tiles < want) {
        j.parts = (want + hp->n_head_kv * j.n_tiles - 1) / (hp->n_head_kv * j.n_tiles);
        if (j.parts > group) j.parts = group;
    }
    const int tasks = hp->n_head_kv * j.parts * j.n_tiles;
    if (s->n_threads == 1) {
        for (int i = 0; i < tasks; i++) attn_task(&j, i, tasks, 0);
    } else {
        pt_pool_run(s->pool, attn_task, &j, tasks);
    }
}

/* ---- layers ------------------------------------------------------------- */

/* Attention sublayer of layer il for the chunk's n tokens at positions
 * p0..p0+n-1: from xn (normalized input, quantized in s->qa when a
 * product needs it) to xn = Wo att. */
static pt_status attention_block(const pt_llm *m, pt_llm_state *s, int il, int p0, int n,
                                 pt_error *err) {
    const pt_llm_hparams *hp = &m->hp;
    const pt_llm_layer *L = &m->layers[il];
    /* the layer's KV pages resident (read back from the spill file) */
    pt_status st = pt_kv_begin_layer(&s->kv, il, p0, n, err);
    if (st != PT_OK) return st;
    pt_matmul qkv = {3, {&L->wq, &L->wk, &L->wv}, {s->q, s->k, s->v}, s->xn, &s->qa, n, false, false};
    matmul_run(s, &qkv);
    qkv_job post = {m, s, il, p0, n};
    run_tokens(s, qkv_task, &post, n);
    st = pt_kv_end_store(&s->kv, err); /* a spilled page's new row into its slot */
    if (st != PT_OK) return st;
    attention(m, s, il, p0, n);
    if (L->wo.packed) quantize_input(m, s, s->att, n, (int64_t)hp->n_head * hp->head_dim);
    pt_matmul wo = {1, {&L->wo}, {s->xn}, s->att, &s->qa, n, false, false};
    matmul_run(s, &wo);
    return PT_OK;
}

/* gate[t] = gelu(gate[t]) * up[t] (GeGLU's activation, a per-token step). */
typedef struct gelu_job {
    pt_llm_state *s;
    int F, n;
} gelu_job;

static void gelu_task(void *ctx, int task, int n_tasks, int thread) {
    (void)thread;
    const gelu_job *j = ctx;
    int64_t t0, t1;
    split_even(j->n, task, n_tasks, &t0, &t1);
    for (int64_t t = t0; t < t1; t++)
        pt_gelu_tanh_mul(j->s->gate + t * j->F, j->s->gate + t * j->F, j->s->up + t * j->F, j->F);
}

/* Feed-forward sublayer: from xn (quantized in s->qa when needed) to
 * xn = Wdown (act(Wgate xn) * Wup xn). */
static void feed_forward(const pt_llm *m, pt_llm_state *s, int il, int n) {
    const pt_llm_layer *L = &m->layers[il];
    const int F = m->hp.n_ff;
    /* silu inside the product's tasks: gate and up are one part; GELU
     * after the products, per token */
    const bool silu = m->hp.ffn_act == PT_FFN_SILU;
    pt_matmul gu = {2, {&L->w_gate, &L->w_up}, {s->gate, s->up}, s->xn, &s->qa, n, silu, false};
    matmul_run(s, &gu);
    if (!silu) {
        gelu_job g = {s, F, n};
        run_tokens(s, gelu_task, &g, n);
    }
    if (L->w_down.packed) quantize_input(m, s, s->gate, n, F);
    pt_matmul down = {1, {&L->w_down}, {s->xn}, s->gate, &s->qa, n, false, false};
    matmul_run(s, &down);
}

/* One chunk of n <= n_batch tokens at positions n_past.. . Writes the
 * logits of every token to all_logits ([n][V]) when non-NULL, and those
 * of the last token to last_logits ([V]) when non-NULL. */
static pt_status forward_chunk(const pt_llm *m, pt_llm_state *s, const pt_token *tokens, int n,
                               float *all_logits, float *last_logits, pt_error *err) {
    const pt_llm_hparams *hp = &m->hp;
    const int E = hp->n_embd, p0 = s->n_past;

    for (int t = 0; t < n; t++) {
        pt_weight_row(&m->tok_embd, tokens[t], s->x + (size_t)t * E);
        if (hp->embd_scale != 1.0f) pt_scale(s->x + (size_t)t * E, hp->embd_scale, E);
        pt_rope_table(s->rope_cs + (size_t)t * hp->n_rot, s->inv_freq, hp->n_rot, p0 + t);
        if (s->rope_cs_swa)
            pt_rope_table(s->rope_cs_swa + (size_t)t * hp->n_rot, s->inv_freq_swa, hp->n_rot, p0 + t);
    }

    float *delta = NULL;        /* the last sublayer's output, not yet added to x */
    const float *post = NULL;   /* its post-norm (gemma3), or NULL */
    for (int il = 0; il < hp->n_layer; il++) {
        const pt_llm_layer *L = &m->layers[il];
        norm_step(m, s, delta, post, L->attn_norm, n, any_packed(&L->wq, &L->wk, &L->wv));
        pt_status st = attention_block(m, s, il, p0, n, err);
        if (st != PT_OK) return st;
        norm_step(m, s, s->xn, L->attn_post_norm, L->ffn_norm, n, any_packed(&L->w_gate, &L->w_up, NULL));
        feed_forward(m, s, il, n);
        delta = s->xn;
        post = L->ffn_post_norm;
    }
    s->n_past += n;

    if (!all_logits && !last_logits) return PT_OK;
    /* the rows whose logits are asked for: all, or only the last */
    const int first = all_logits ? 0 : n - 1, rows = n - first;
    float *x = s->x + (size_t)first * E, *xn = s->xn + (size_t)first * E;
    for (int t = 0; t < rows; t++) {
        if (post) pt_rmsnorm(xn + (size_t)t * E, xn + (size_t)t * E, post, E, hp->norm_eps);
        pt_add(x + (size_t)t * E, xn + (size_t)t * E, E);
        pt_rmsnorm(s->xn + (size_t)t * E, x + (size_t)t * E, m->output_norm, E, hp->norm_eps);
    }
    if (m->output.packed) quantize_input(m, s, s->xn, rows, E);
    float *y = all_logits ? all_logits : last_logits;
    pt_matmul out = {1, {&m->output}, {y}, s->xn, &s->qa, rows, false, false};
    matmul_run(s, &out);
    if (hp->logit_softcap > 0.0f)
        for (int t = 0; t < rows; t++) pt_softcap(y + (size_t)t * hp->n_vocab, hp->logit_softcap, hp->n_vocab);
    if (all_logits && last_logits)
        memcpy(last_logits, all_logits + (size_t)(n - 1) * hp->n_vocab, (size_t)hp->n_vocab * sizeof(float));
    return PT_OK;
}

pt_status pt_llm_forward(const pt_llm *m, pt_llm_state *s, const pt_token *tokens, int n,
                         float *last_logits, float *all_logits, pt_error *err) {
    if (n < 0 || (n > 0 && !tokens))
        return pt_fail(err, PT_ERR_ARG, "pt_llm_forward: bad token array (n = %d)", n);
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= m->hp.n_vocab)
            return pt_fail(err, PT_ERR_ARG, "token id %d at index %d is outside the vocabulary (0..%d)",
                           (int)tokens[i], i, m->hp.n_vocab - 1);
    if (n > s->n_ctx - s->n_past)
        return pt_fail(err, PT_ERR_CONTEXT_FULL,
                       "context full: %d tokens after %d of %d positions would not fit", n, s->n_past,
                       s->n_ctx);
    if (s->graph) {
        for (int i0 = 0; i0 < n; i0 += s->n_batch) {
            const int nc = n - i0 < s->n_batch ? n - i0 : s->n_batch;
            pt_status st = pt_graph_forward(m, s->graph, tokens + i0, nc, s->n_past,
                                            all_logits ? all_logits + (size_t)i0 * m->hp.n_vocab : NULL,
                                            i0 + nc == n ? last_logits : NULL, err);
            if (st != PT_OK) return st; /* a device failure: positions past n_past are stale */
            s->n_past += nc;
        }
        return PT_OK;
    }
    pt_threadpool_acquire(s->tp); /* other users of a shared pool wait for this call */
    const int n_past0 = s->n_past;
    pt_status st = PT_OK;
    for (int i0 = 0; i0 < n && st == PT_OK; i0 += s->n_batch) {
        const int nc = n - i0 < s->n_batch ? n - i0 : s->n_batch;
        const bool last = i0 + nc == n;
        st = forward_chunk(m, s, tokens + i0, nc, all_logits ? all_logits + (size_t)i0 * m->hp.n_vocab : NULL,
                           last ? last_logits : NULL, err);
    }
    /* a KV spill error (kv_cache.h) stops the call: the positions it wrote
     * are dropped again, so the invariant above holds */
    if (st != PT_OK) s->n_past = n_past0;
    pt_threadpool_release(s->tp);
    return st;
}
