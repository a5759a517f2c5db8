/*
 * llm_forward.c — the run state of one sequence and the forward pass of
 * the llama / qwen2 / qwen3 decoder (weights: llm_internal.h).
 *
 * A call to pt_llm_forward is split into chunks of at most n_batch tokens.
 * Each chunk goes through every layer with all its tokens at once, so each
 * weight row is dequantized once per chunk (pt_matmul_ref):
 *
 *   x = token_embd[tokens]                                  [n][E]
 *   per layer:
 *     xn = rmsnorm(x) * attn_norm
 *     q, k, v = Wq xn (+bq), Wk xn (+bk), Wv xn (+bv)
 *     qwen3: q, k = per-head rmsnorm(q) * q_norm, rmsnorm(k) * k_norm
 *     q, k = rope(q, k) at positions n_past + t
 *     store k, v in the cache at those positions
 *     att[t] = causal softmax(q k^T / sqrt(D)) v  over positions 0..n_past+t
 *     x += Wo att
 *     xn = rmsnorm(x) * ffn_norm
 *     x += Wdown (silu(Wgate xn) * Wup xn)
 *   logits = Wout (rmsnorm(x) * output_norm)   only for the rows asked for
 *
 * Invariant: positions [0, n_past) of the KV cache hold the keys and values
 * of the tokens seen so far; a failed call (bad token, context full) is
 * detected before anything is computed and leaves the state unchanged.
 */
#include "llm_internal.h"

#include "kv_cache.h"
#include "ops.h"
#include "quant.h"
#include "status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct pt_llm_state {
    int n_ctx;          /* KV cache capacity in positions */
    int n_batch;        /* most tokens per chunk */
    int n_threads;      /* accepted; the reference path is single-threaded */
    int n_past;         /* positions [0, n_past) are in the cache */
    pt_kv_cache kv;
    float *inv_freq;    /* [n_rot/2] rotary inverse frequencies */
    float *rope_cs;     /* [n_batch][n_rot] cos/sin pairs of the chunk's positions */
    float *x;           /* [n_batch][E] residual stream */
    float *xn;          /* [n_batch][E] a sublayer's normalized input, then its output */
    float *q;           /* [n_batch][H*D] */
    float *k;           /* [n_batch][Hkv*D] */
    float *v;           /* [n_batch][Hkv*D] */
    float *att;         /* [n_batch][H*D] attention output, before Wo */
    float *gate;        /* [n_batch][F] gate, then silu(gate) * up */
    float *up;          /* [n_batch][F] */
    float *scores;      /* [n_ctx] attention weights of one query head */
};

/* ---- state -------------------------------------------------------------- */

pt_status pt_llm_state_new(const pt_llm *m, int n_ctx, int n_batch, int n_threads,
                           pt_llm_state **out, pt_error *err) {
    *out = NULL;
    if (n_ctx <= 0 || n_batch <= 0)
        return pt_fail(err, PT_ERR_ARG, "context size (%d) and batch size (%d) must be positive",
                       n_ctx, n_batch);
    const pt_llm_hparams *hp = &m->hp;
    if (n_batch > n_ctx) n_batch = n_ctx;
    pt_llm_state *s = calloc(1, sizeof *s);
    if (!s) return pt_fail(err, PT_ERR_NOMEM, "out of memory for the run state");
    s->n_ctx = n_ctx;
    s->n_batch = n_batch;
    s->n_threads = n_threads > 0 ? n_threads : 1;

    pt_status st = pt_kv_init(&s->kv, hp->n_layer, n_ctx, hp->n_head_kv * hp->head_dim, err);
    if (st) {
        free(s);
        return st;
    }
    const size_t nb = (size_t)n_batch, E = (size_t)hp->n_embd, F = (size_t)hp->n_ff;
    const size_t QD = (size_t)hp->n_head * hp->head_dim, KD = (size_t)hp->n_head_kv * hp->head_dim;
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
    s->scores = malloc((size_t)n_ctx * sizeof(float));
    if (!s->inv_freq || !s->rope_cs || !s->x || !s->xn || !s->q || !s->k || !s->v || !s->att ||
        !s->gate || !s->up || !s->scores) {
        pt_llm_state_free(s);
        return pt_fail(err, PT_ERR_NOMEM, "out of memory for scratch buffers of a %d-token batch",
                       n_batch);
    }
    pt_rope_inv_freq(s->inv_freq, hp->n_rot, hp->rope_base, hp->rope_freq_scale, m->rope_freqs);
    *out = s;
    return PT_OK;
}

void pt_llm_state_free(pt_llm_state *s) {
    if (!s) return;
    pt_kv_release(&s->kv);
    free(s->inv_freq);
    free(s->rope_cs);
    free(s->x);
    free(s->xn);
    free(s->q);
    free(s->k);
    free(s->v);
    free(s->att);
    free(s->gate);
    free(s->up);
    free(s->scores);
    free(s);
}

void pt_llm_state_reset(pt_llm_state *s) { s->n_past = 0; }
int pt_llm_state_n_past(const pt_llm_state *s) { return s->n_past; }

/* ---- forward ------------------------------------------------------------ */

/* y[n][w->rows] = W x[n][w->cols] */
static void matmul(const pt_llm_weight *w, const float *x, int n, float *y) {
    pt_matmul_ref(w->type, w->data, w->rows, w->cols, x, n, y, 0, w->rows);
}

/* y[t] += b for each of n rows of len values; b may be NULL. */
static void add_bias(float *y, const float *b, int n, int len) {
    if (!b) return;
    for (int t = 0; t < n; t++) pt_add(y + (size_t)t * len, b, len);
}

/* Attention sublayer of layer il for the chunk's n tokens at positions
 * p0..p0+n-1: from xn (normalized input) to xn = Wo att. */
static void attention(const pt_llm *m, pt_llm_state *s, int il, int p0, int n) {
    const pt_llm_hparams *hp = &m->hp;
    const pt_llm_layer *L = &m->layers[il];
    const int H = hp->n_head, Hkv = hp->n_head_kv, D = hp->head_dim;
    const int QD = H * D, KD = Hkv * D, group = H / Hkv;

    matmul(&L->wq, s->xn, n, s->q);
    matmul(&L->wk, s->xn, n, s->k);
    matmul(&L->wv, s->xn, n, s->v);
    add_bias(s->q, L->bq, n, QD);
    add_bias(s->k, L->bk, n, KD);
    add_bias(s->v, L->bv, n, KD);

    for (int t = 0; t < n; t++) {
        float *q = s->q + (size_t)t * QD, *k = s->k + (size_t)t * KD;
        if (L->q_norm) {
            for (int h = 0; h < H; h++) pt_rmsnorm(q + h * D, q + h * D, L->q_norm, D, hp->norm_eps);
            for (int h = 0; h < Hkv; h++) pt_rmsnorm(k + h * D, k + h * D, L->k_norm, D, hp->norm_eps);
        }
        const float *cs = s->rope_cs + (size_t)t * hp->n_rot;
        pt_rope(q, H, D, hp->n_rot, cs, hp->rope_neox);
        pt_rope(k, Hkv, D, hp->n_rot, cs, hp->rope_neox);
        pt_kv_store(&s->kv, il, p0 + t, k, s->v + (size_t)t * KD);
    }

    const float scale = (float)(1.0 / sqrt((double)D));
    const float *keys = pt_kv_keys(&s->kv, il), *vals = pt_kv_values(&s->kv, il);
    const int64_t stride = pt_kv_stride(&s->kv);
    for (int t = 0; t < n; t++) {
        const int n_kv = p0 + t + 1; /* causal: positions 0..p0+t */
        for (int h = 0; h < H; h++) {
            const int kvh = h / group;
            pt_attend_one(s->att + (size_t)t * QD + h * D, s->q + (size_t)t * QD + h * D,
                          keys + kvh * D, vals + kvh * D, stride, n_kv, D, scale, s->scores);
        }
    }
    matmul(&L->wo, s->att, n, s->xn);
}

/* Feed-forward sublayer: from xn to xn = Wdown (silu(Wgate xn) * Wup xn). */
static void feed_forward(const pt_llm *m, pt_llm_state *s, int il, int n) {
    const pt_llm_layer *L = &m->layers[il];
    const int F = m->hp.n_ff;
    matmul(&L->w_gate, s->xn, n, s->gate);
    matmul(&L->w_up, s->xn, n, s->up);
    pt_silu_mul(s->gate, s->gate, s->up, n * F);
    matmul(&L->w_down, s->gate, n, s->xn);
}

/* One chunk of n <= n_batch tokens at positions n_past.. . Writes the
 * logits of every token to all_logits ([n][V]) when non-NULL, and those
 * of the last token to last_logits ([V]) when non-NULL. */
static void forward_chunk(const pt_llm *m, pt_llm_state *s, const pt_token *tokens, int n,
                          float *all_logits, float *last_logits) {
    const pt_llm_hparams *hp = &m->hp;
    const int E = hp->n_embd, p0 = s->n_past;
    const size_t embd_row = pt_type_row_bytes(m->tok_embd.type, E);

    for (int t = 0; t < n; t++) {
        pt_dequant_row(m->tok_embd.type, (const uint8_t *)m->tok_embd.data + (size_t)tokens[t] * embd_row,
                       s->x + (size_t)t * E, E);
        pt_rope_table(s->rope_cs + (size_t)t * hp->n_rot, s->inv_freq, hp->n_rot, p0 + t);
    }

    for (int il = 0; il < hp->n_layer; il++) {
        const pt_llm_layer *L = &m->layers[il];
        for (int t = 0; t < n; t++)
            pt_rmsnorm(s->xn + (size_t)t * E, s->x + (size_t)t * E, L->attn_norm, E, hp->norm_eps);
        attention(m, s, il, p0, n);
        pt_add(s->x, s->xn, n * E);
        for (int t = 0; t < n; t++)
            pt_rmsnorm(s->xn + (size_t)t * E, s->x + (size_t)t * E, L->ffn_norm, E, hp->norm_eps);
        feed_forward(m, s, il, n);
        pt_add(s->x, s->xn, n * E);
    }
    s->n_past += n;

    if (all_logits) {
        for (int t = 0; t < n; t++)
            pt_rmsnorm(s->xn + (size_t)t * E, s->x + (size_t)t * E, m->output_norm, E, hp->norm_eps);
        matmul(&m->output, s->xn, n, all_logits);
        if (last_logits)
            memcpy(last_logits, all_logits + (size_t)(n - 1) * hp->n_vocab, (size_t)hp->n_vocab * sizeof(float));
    } else if (last_logits) {
        pt_rmsnorm(s->xn, s->x + (size_t)(n - 1) * E, m->output_norm, E, hp->norm_eps);
        matmul(&m->output, s->xn, 1, last_logits);
    }
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
    for (int i0 = 0; i0 < n; i0 += s->n_batch) {
        const int nc = n - i0 < s->n_batch ? n - i0 : s->n_batch;
        const bool last = i0 + nc == n;
        forward_chunk(m, s, tokens + i0, nc, all_logits ? all_logits + (size_t)i0 * m->hp.n_vocab : NULL,
                      last ? last_logits : NULL);
    }
    return PT_OK;
}
