/*
 * llm_graph.c — the decoder on the op table (llm_graph.h). Per chunk of n
 * tokens at positions p0..:
 *
 *   host: x = token_embd[tokens] * embd_scale, the rope tables cs of the
 *         positions (and the sliding-window layers' cs_swa), sent to every
 *         device in use
 *   per layer, on its device (x moved from the previous layer's device
 *   when they differ):
 *     xn = rmsnorm(x) attn_norm;  q, k, v = Wq xn + bq, Wk xn + bk, Wv xn + bv
 *     q, k = per-head rmsnorm (q_norm, k_norm) when present; rope
 *     kc, vc [p0 .. p0 + n) = k, v;  att = attention(q, kc, vc)
 *     xn = Wo att (rmsnorm attn_post_norm: gemma3);  x += xn
 *     xn = rmsnorm(x) ffn_norm;  gate = act(Wgate xn) * Wup xn
 *     xn = Wdown gate (rmsnorm ffn_post_norm: gemma3);  x += xn
 *   output device: logits = Wout (rmsnorm(x) output_norm), OUT_ROWS rows
 *   at a time; host: soft-capping (gemma3)
 */
#include "llm_graph.h"

#include "llm_internal.h"
#include "ops.h"
#include "quant.h"

#include <stdlib.h>
#include <string.h>

#define OUT_ROWS 32 /* logits rows computed at once: bounds the [rows][V] buffer */

typedef struct layer_bufs {
    pt_buf *attn_norm, *wq, *wk, *wv, *wo, *bq, *bk, *bv, *q_norm, *k_norm, *attn_post_norm;
    pt_buf *ffn_norm, *ffn_post_norm, *w_gate, *w_up, *w_down;
} layer_bufs;

struct pt_llm_graph {
    pt_device *dev[2];    /* [0] the CPU, [1] the accelerator */
    uint8_t *place;       /* [n_layer]: index into dev */
    int out_place;
    layer_bufs *lb;       /* [n_layer], each on its layer's device */
    pt_buf *output_norm, *output;
    int n_dev_layers;
};

const pt_llm_graph *pt_llm_graph_of(const pt_llm *m) { return m->graph; }
int pt_llm_graph_device_layers(const pt_llm_graph *g) { return g->n_dev_layers; }
const char *pt_llm_graph_device_name(const pt_llm_graph *g) { return g->dev[1]->name; }

/* ---- placement ---------------------------------------------------------- */

static pt_buf *up_vec(pt_device *d, const float *v, int n, bool *ok) {
    if (!v) return NULL;
    pt_buf *b = d->ops->alloc(d, (size_t)n * sizeof(float), v);
    if (!b) *ok = false;
    return b;
}

static pt_buf *up_mat(pt_device *d, const pt_weight *w, bool *ok) {
    pt_buf *b = d->ops->weight(d, w->data, pt_type_row_bytes(w->type, w->cols) * (size_t)w->rows);
    if (!b) *ok = false;
    return b;
}

static bool layer_fits(const pt_device *d, const pt_llm_hparams *hp, const pt_llm_layer *L) {
    if (d->max_head_dim && hp->head_dim > d->max_head_dim) return false;
    const pt_weight *ws[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
    for (size_t i = 0; i < sizeof ws / sizeof *ws; i++)
        if (!d->ops->has_type(ws[i]->type) || ws[i]->packed) return false;
    return true;
}

static void free_layer(pt_device *d, layer_bufs *b) {
    pt_buf *all[] = {b->attn_norm, b->wq, b->wk, b->wv, b->wo, b->bq, b->bk, b->bv, b->q_norm,
                     b->k_norm, b->attn_post_norm, b->ffn_norm, b->ffn_post_norm, b->w_gate,
                     b->w_up, b->w_down};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (all[i]) d->ops->free(d, all[i]);
}

void pt_llm_graph_free(pt_llm_graph *g) {
    if (!g) return;
    for (int il = 0; g->lb && g->place && g->lb[il].attn_norm; il++)
        free_layer(g->dev[g->place[il]], &g->lb[il]);
    if (g->output_norm) g->dev[g->out_place]->ops->free(g->dev[g->out_place], g->output_norm);
    if (g->output) g->dev[g->out_place]->ops->free(g->dev[g->out_place], g->output);
    free(g->lb);
    free(g->place);
    pt_device_close(g->dev[0]);
    pt_device_close(g->dev[1]);
    free(g);
}

pt_status pt_llm_place(pt_llm *m, pt_device *dev, const bool *on_dev, bool out_on_dev, pt_error *err) {
    const pt_llm_hparams *hp = &m->hp;
    pt_llm_graph *g = calloc(1, sizeof *g);
    pt_status st = PT_OK;
    if (!g) {
        pt_device_close(dev);
        return pt_fail(err, PT_ERR_NOMEM, "out of memory placing the model");
    }
    g->dev[1] = dev;
    /* lb gets one spare zeroed entry: pt_llm_graph_free stops at the first
     * layer whose attn_norm is NULL (every uploaded layer has one) */
    g->lb = calloc((size_t)hp->n_layer + 1, sizeof *g->lb);
    g->place = calloc((size_t)hp->n_layer, 1);
    if (!g->lb || !g->place) st = pt_fail(err, PT_ERR_NOMEM, "out of memory placing the model");
    if (st == PT_OK) st = pt_device_cpu_open(&g->dev[0], err);
    const int E = hp->n_embd, QD = hp->n_head * hp->head_dim, KD = hp->n_head_kv * hp->head_dim;
    for (int il = 0; st == PT_OK && il < hp->n_layer; il++) {
        const pt_llm_layer *L = &m->layers[il];
        g->place[il] = on_dev[il] && layer_fits(dev, hp, L);
        g->n_dev_layers += g->place[il];
        pt_device *d = g->dev[g->place[il]];
        layer_bufs *b = &g->lb[il];
        bool ok = true;
        b->attn_norm = up_vec(d, L->attn_norm, E, &ok);
        b->wq = up_mat(d, &L->wq, &ok);
        b->wk = up_mat(d, &L->wk, &ok);
        b->wv = up_mat(d, &L->wv, &ok);
        b->wo = up_mat(d, &L->wo, &ok);
        b->bq = up_vec(d, L->bq, QD, &ok);
        b->bk = up_vec(d, L->bk, KD, &ok);
        b->bv = up_vec(d, L->bv, KD, &ok);
        b->q_norm = up_vec(d, L->q_norm, hp->head_dim, &ok);
        b->k_norm = up_vec(d, L->k_norm, hp->head_dim, &ok);
        b->attn_post_norm = up_vec(d, L->attn_post_norm, E, &ok);
        b->ffn_norm = up_vec(d, L->ffn_norm, E, &ok);
        b->ffn_post_norm = up_vec(d, L->ffn_post_norm, E, &ok);
        b->w_gate = up_mat(d, &L->w_gate, &ok);
        b->w_up = up_mat(d, &L->w_up, &ok);
        b->w_down = up_mat(d, &L->w_down, &ok);
        if (!ok) {
            free_layer(d, b);
            memset(b, 0, sizeof *b);
            st = pt_fail(err, PT_ERR_NOMEM, "%s: no memory for the weights of layer %d", d->name, il);
        }
    }
    if (st == PT_OK) {
        g->out_place = out_on_dev && dev->ops->has_type(m->output.type) && !m->output.packed;
        pt_device *d = g->dev[g->out_place];
        bool ok = true;
        g->output_norm = up_vec(d, m->output_norm, E, &ok);
        g->output = up_mat(d, &m->output, &ok);
        if (!ok) st = pt_fail(err, PT_ERR_NOMEM, "%s: no memory for the output matrix", d->name);
    }
    if (st != PT_OK) {
        pt_llm_graph_free(g);
        return st;
    }
    pt_llm_graph_free(m->graph);
    m->graph = g;
    return PT_OK;
}

pt_status pt_llm_place_last(pt_llm *m, pt_device *dev, int n, pt_error *err) {
    const int L = m->hp.n_layer;
    bool *on = calloc((size_t)L, sizeof *on);
    if (!on) {
        pt_device_close(dev);
        return pt_fail(err, PT_ERR_NOMEM, "out of memory placing the model");
    }
    if (n < 0 || n > L) n = L;
    for (int il = L - n; il < L; il++) on[il] = true;
    const pt_status st = pt_llm_place(m, dev, on, n > 0, err);
    free(on);
    return st;
}

/* ---- state -------------------------------------------------------------- */

typedef struct dev_bufs {
    pt_buf *x, *xn, *q, *k, *v, *att, *gate, *up, *cs, *cs_swa, *xo, *logits;
} dev_bufs;

struct pt_graph_state {
    const pt_llm_graph *g;
    int n_ctx, n_batch;
    bool used[2];
    dev_bufs b[2];
    pt_buf **kc, **vc;   /* [n_layer] on the layer's device: [n_ctx][Hkv][D] */
    float *xh;           /* [n_batch][E] host copy of x (embeddings, crossings) */
    float *cs, *cs_swa;  /* [n_batch][n_rot] rope tables of the chunk */
    float *inv_freq, *inv_freq_swa; /* [n_rot / 2] */
    uint64_t kv_bytes;
};

static void free_bufs(pt_device *d, dev_bufs *b) {
    pt_buf *all[] = {b->x, b->xn, b->q, b->k, b->v, b->att, b->gate, b->up, b->cs, b->cs_swa, b->xo, b->logits};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (all[i]) d->ops->free(d, all[i]);
}

void pt_graph_state_free(pt_graph_state *s) {
    if (!s) return;
    const pt_llm_graph *g = s->g;
    for (int i = 0; i < 2; i++)
        if (s->used[i]) free_bufs(g->dev[i], &s->b[i]);
    /* kc / vc are NULL past the last allocated layer */
    for (int il = 0; s->kc && s->kc[il]; il++) {
        pt_device *d = g->dev[g->place[il]];
        d->ops->free(d, s->kc[il]);
        if (s->vc[il]) d->ops->free(d, s->vc[il]);
    }
    free(s->kc);
    free(s->vc);
    free(s->xh);
    free(s->cs);
    free(s->cs_swa);
    free(s->inv_freq);
    free(s->inv_freq_swa);
    free(s);
}

uint64_t pt_graph_kv_bytes(const pt_graph_state *s) { return s->kv_bytes; }

static pt_buf *zeros(pt_device *d, size_t floats, bool *ok) {
    pt_buf *b = d->ops->alloc(d, floats * sizeof(float), NULL);
    if (!b) *ok = false;
    return b;
}

pt_status pt_graph_state_new(const pt_llm *m, int n_ctx, int n_batch, pt_graph_state **out,
                             pt_error *err) {
    *out = NULL;
    const pt_llm_hparams *hp = &m->hp;
    const pt_llm_graph *g = m->graph;
    pt_graph_state *s = calloc(1, sizeof *s);
    if (!s) return pt_fail(err, PT_ERR_NOMEM, "out of memory for the run state");
    s->g = g;
    s->n_ctx = n_ctx;
    s->n_batch = n_batch;
    const size_t nb = (size_t)n_batch, E = (size_t)hp->n_embd, F = (size_t)hp->n_ff;
    const size_t QD = (size_t)hp->n_head * hp->head_dim, KD = (size_t)hp->n_head_kv * hp->head_dim;
    const size_t nrot = (size_t)hp->n_rot;
    bool ok = true;
    for (int il = 0; il < hp->n_layer; il++) s->used[g->place[il]] = true;
    s->used[g->out_place] = true;
    for (int i = 0; i < 2 && ok; i++) {
        if (!s->used[i]) continue;
        pt_device *d = g->dev[i];
        dev_bufs *b = &s->b[i];
        b->x = zeros(d, nb * E, &ok);
        b->xn = zeros(d, nb * E, &ok);
        b->q = zeros(d, nb * QD, &ok);
        b->k = zeros(d, nb * KD, &ok);
        b->v = zeros(d, nb * KD, &ok);
        b->att = zeros(d, nb * QD, &ok);
        b->gate = zeros(d, nb * F, &ok);
        b->up = zeros(d, nb * F, &ok);
        b->cs = zeros(d, nb * nrot, &ok);
        if (hp->n_swa > 0) b->cs_swa = zeros(d, nb * nrot, &ok);
        b->xo = zeros(d, OUT_ROWS * E, &ok);
        if (i == g->out_place) b->logits = zeros(d, (size_t)OUT_ROWS * hp->n_vocab, &ok);
    }
    s->kc = calloc((size_t)hp->n_layer + 1, sizeof *s->kc);
    s->vc = calloc((size_t)hp->n_layer + 1, sizeof *s->vc);
    ok = ok && s->kc && s->vc;
    for (int il = 0; ok && il < hp->n_layer; il++) {
        pt_device *d = g->dev[g->place[il]];
        s->kc[il] = zeros(d, (size_t)n_ctx * KD, &ok);
        if (ok) s->vc[il] = zeros(d, (size_t)n_ctx * KD, &ok);
        s->kv_bytes += 2 * (uint64_t)n_ctx * KD * sizeof(float);
    }
    s->xh = malloc(nb * E * sizeof(float));
    s->cs = malloc(nb * nrot * sizeof(float));
    s->inv_freq = malloc(nrot / 2 * sizeof(float) + 1);
    if (hp->n_swa > 0) {
        s->cs_swa = malloc(nb * nrot * sizeof(float));
        s->inv_freq_swa = malloc(nrot / 2 * sizeof(float) + 1);
        ok = ok && s->cs_swa && s->inv_freq_swa;
    }
    if (!ok || !s->xh || !s->cs || !s->inv_freq) {
        pt_graph_state_free(s);
        return pt_fail(err, PT_ERR_NOMEM,
                       "out of device memory for the run state (%d positions, %d-token batches)", n_ctx,
                       n_batch);
    }
    pt_rope_inv_freq(s->inv_freq, hp->n_rot, hp->rope_base, hp->rope_freq_scale, m->rope_freqs);
    if (s->inv_freq_swa) pt_rope_inv_freq(s->inv_freq_swa, hp->n_rot, hp->rope_base_swa, 1.0f, NULL);
    *out = s;
    return PT_OK;
}

/* ---- forward ------------------------------------------------------------ */

/* Run one op; on failure copy the device's message into err and return. */
#define TRY(d, call)                                                                               \
    do {                                                                                           \
        if ((call) != PT_OK) return pt_fail(err, (d)->err.code, "%s: %s", (d)->name, (d)->err.msg); \
    } while (0)

/* x (n rows) from device `from` to device `to`, through the host. */
static pt_status move_x(pt_graph_state *s, int from, int to, int n, int E, pt_error *err) {
    pt_device *a = s->g->dev[from], *b = s->g->dev[to];
    const size_t bytes = (size_t)n * E * sizeof(float);
    TRY(a, a->ops->read(a, s->b[from].x, 0, s->xh, bytes));
    TRY(b, b->ops->write(b, s->b[to].x, 0, s->xh, bytes));
    return PT_OK;
}

/* y = W x + bias (bias NULL: none), or with tmp (a scratch of y's shape)
 * y += W x: one fused step where the device has it (backend.h), else
 * matmul, add_bias and add one by one. */
static pt_status product(pt_device *d, const pt_weight *W, pt_buf *w, pt_buf *x, int n, pt_buf *y,
                         pt_buf *bias, pt_buf *tmp, pt_error *err) {
    const pt_device_ops *op = d->ops;
    if (op->matmul_fuses && op->matmul_fuses(d, W->type, n)) {
        TRY(d, op->matmul_fused(d, W->type, w, W->rows, W->cols, x, n, y, bias, tmp != NULL));
        return PT_OK;
    }
    pt_buf *out = tmp ? tmp : y;
    TRY(d, op->matmul(d, W->type, w, W->rows, W->cols, x, n, out));
    if (bias) TRY(d, op->add_bias(d, out, bias, n, (int)W->rows));
    if (tmp) TRY(d, op->add(d, y, tmp, (int64_t)n * W->rows));
    return PT_OK;
}

/* Run product(), returning its failure. */
#define PRODUCT(...)                                                                               \
    do {                                                                                           \
        pt_status st_ = product(__VA_ARGS__, err);                                                 \
        if (st_ != PT_OK) return st_;                                                              \
    } while (0)

/* The residual stream b->x += post_norm(W in), through b->xn: fused into
 * the product where there is no post-norm (product()'s accumulate). */
static pt_status residual(pt_device *d, const pt_weight *W, pt_buf *w, pt_buf *in, int n, pt_buf *post_norm,
                          float eps, dev_bufs *b, pt_error *err) {
    if (!post_norm) return product(d, W, w, in, n, b->x, NULL, b->xn, err);
    const pt_device_ops *op = d->ops;
    TRY(d, op->matmul(d, W->type, w, W->rows, W->cols, in, n, b->xn));
    TRY(d, op->rmsnorm(d, b->xn, b->xn, post_norm, n, (int)W->rows, eps));
    TRY(d, op->add(d, b->x, b->xn, (int64_t)n * W->rows));
    return PT_OK;
}

static pt_status layer(const pt_llm *m, pt_graph_state *s, int il, int n, int p0, pt_error *err) {
    const pt_llm_hparams *hp = &m->hp;
    const pt_llm_layer *L = &m->layers[il];
    const layer_bufs *w = &s->g->lb[il];
    pt_device *d = s->g->dev[s->g->place[il]];
    const pt_device_ops *op = d->ops;
    dev_bufs *b = &s->b[s->g->place[il]];
    const int E = hp->n_embd, H = hp->n_head, Hkv = hp->n_head_kv, D = hp->head_dim;
    const int KD = Hkv * D, F = hp->n_ff;
    const float eps = hp->norm_eps;

    TRY(d, op->rmsnorm(d, b->xn, b->x, w->attn_norm, n, E, eps));
    PRODUCT(d, &L->wq, w->wq, b->xn, n, b->q, w->bq, NULL);
    PRODUCT(d, &L->wk, w->wk, b->xn, n, b->k, w->bk, NULL);
    PRODUCT(d, &L->wv, w->wv, b->xn, n, b->v, w->bv, NULL);
    if (w->q_norm) {
        TRY(d, op->rmsnorm(d, b->q, b->q, w->q_norm, n * H, D, eps));
        TRY(d, op->rmsnorm(d, b->k, b->k, w->k_norm, n * Hkv, D, eps));
    }
    pt_buf *cs = L->swa ? b->cs_swa : b->cs;
    const pt_attn_shape a = {n, H, Hkv, D, p0, L->swa ? hp->n_swa : 0, hp->attn_scale};
    if (op->rope_store && op->rope_stores(d, D, hp->n_rot)) {
        TRY(d, op->rope_store(d, b->q, b->k, b->v, cs, s->kc[il], s->vc[il], &a, hp->n_rot, hp->rope_neox));
    } else {
        TRY(d, op->rope(d, b->q, cs, n, H, D, hp->n_rot, hp->rope_neox));
        TRY(d, op->rope(d, b->k, cs, n, Hkv, D, hp->n_rot, hp->rope_neox));
        const size_t at = (size_t)p0 * KD * sizeof(float), bytes = (size_t)n * KD * sizeof(float);
        TRY(d, op->copy(d, s->kc[il], at, b->k, 0, bytes));
        TRY(d, op->copy(d, s->vc[il], at, b->v, 0, bytes));
    }
    TRY(d, op->attention(d, b->att, b->q, s->kc[il], s->vc[il], &a));
    pt_status st = residual(d, &L->wo, w->wo, b->att, n, w->attn_post_norm, eps, b, err);
    if (st != PT_OK) return st;

    TRY(d, op->rmsnorm(d, b->xn, b->x, w->ffn_norm, n, E, eps));
    if (op->matmul_glu && L->w_gate.type == L->w_up.type && op->matmul_fuses(d, L->w_gate.type, n)) {
        TRY(d, op->matmul_glu(d, L->w_gate.type, w->w_gate, w->w_up, L->w_gate.rows, L->w_gate.cols, b->xn, n,
                              b->gate, hp->ffn_act));
    } else {
        TRY(d, op->matmul(d, L->w_gate.type, w->w_gate, L->w_gate.rows, L->w_gate.cols, b->xn, n, b->gate));
        TRY(d, op->matmul(d, L->w_up.type, w->w_up, L->w_up.rows, L->w_up.cols, b->xn, n, b->up));
        TRY(d, op->act_mul(d, b->gate, b->up, (int64_t)n * F, hp->ffn_act));
    }
    return residual(d, &L->w_down, w->w_down, b->gate, n, w->ffn_post_norm, eps, b, err);
}

pt_status pt_graph_forward(const pt_llm *m, pt_graph_state *s, const pt_token *tokens, int n, int p0,
                           float *all_logits, float *last_logits, pt_error *err) {
    const pt_llm_hparams *hp = &m->hp;
    const pt_llm_graph *g = s->g;
    const int E = hp->n_embd, V = hp->n_vocab;
    for (int t = 0; t < n; t++) {
        pt_weight_row(&m->tok_embd, tokens[t], s->xh + (size_t)t * E);
        if (hp->embd_scale != 1.0f) pt_scale(s->xh + (size_t)t * E, hp->embd_scale, E);
        pt_rope_table(s->cs + (size_t)t * hp->n_rot, s->inv_freq, hp->n_rot, p0 + t);
        if (s->cs_swa) pt_rope_table(s->cs_swa + (size_t)t * hp->n_rot, s->inv_freq_swa, hp->n_rot, p0 + t);
    }
    const size_t cs_bytes = (size_t)n * hp->n_rot * sizeof(float);
    for (int i = 0; i < 2; i++) {
        if (!s->used[i]) continue;
        pt_device *d = g->dev[i];
        TRY(d, d->ops->write(d, s->b[i].cs, 0, s->cs, cs_bytes));
        if (s->cs_swa) TRY(d, d->ops->write(d, s->b[i].cs_swa, 0, s->cs_swa, cs_bytes));
    }
    int cur = g->place[0];
    TRY(g->dev[cur], g->dev[cur]->ops->write(g->dev[cur], s->b[cur].x, 0, s->xh, (size_t)n * E * sizeof(float)));
    for (int il = 0; il < hp->n_layer; il++) {
        if (g->place[il] != cur) {
            pt_status st = move_x(s, cur, g->place[il], n, E, err);
            if (st != PT_OK) return st;
            cur = g->place[il];
        }
        pt_status st = layer(m, s, il, n, p0, err);
        if (st != PT_OK) return st;
    }
    if (!all_logits && !last_logits) return PT_OK;
    if (g->out_place != cur) {
        pt_status st = move_x(s, cur, g->out_place, n, E, err);
        if (st != PT_OK) return st;
    }
    pt_device *d = g->dev[g->out_place];
    dev_bufs *b = &s->b[g->out_place];
    const int first = all_logits ? 0 : n - 1;
    for (int r0 = first; r0 < n; r0 += OUT_ROWS) {
        const int k = n - r0 < OUT_ROWS ? n - r0 : OUT_ROWS;
        const size_t row = (size_t)E * sizeof(float);
        TRY(d, d->ops->copy(d, b->xo, 0, b->x, (size_t)r0 * row, (size_t)k * row));
        TRY(d, d->ops->rmsnorm(d, b->xo, b->xo, g->output_norm, k, E, hp->norm_eps));
        TRY(d, d->ops->matmul(d, m->output.type, g->output, m->output.rows, m->output.cols, b->xo, k,
                              b->logits));
        float *y = all_logits ? all_logits + (size_t)r0 * V : last_logits;
        TRY(d, d->ops->read(d, b->logits, 0, y, (size_t)k * V * sizeof(float)));
        if (hp->logit_softcap > 0.0f)
            for (int t = 0; t < k; t++) pt_softcap(y + (size_t)t * V, hp->logit_softcap, V);
    }
    if (all_logits && last_logits)
        memcpy(last_logits, all_logits + (size_t)(n - 1) * V, (size_t)V * sizeof(float));
    return PT_OK;
}
