/* clip_encoder.c — CLIPTextModel forward (clip_encoder.h). */
#include "clip_encoder.h"

#include "sd_nn_impl.h"
#include "quant.h"
#include "status.h"

#include <stdlib.h>
#include <string.h>

typedef struct clip_layer {
    sd_norm ln1, ln2;
    sd_linear q, k, v, o; /* [H x H] each, with biases */
    sd_linear fc1;        /* [I x H] */
    sd_linear fc2;        /* [H x I] */
} clip_layer;

struct sd_clip {
    sd_clip_config cfg;
    sd_runtime *rt;       /* the runtime the weights are counted in */
    pt_weight tok;        /* [vocab x H]: a view into the mapping (any type
                           * pt_weight_row reads) */
    float *pos;           /* [max_pos][H] owned */
    clip_layer *layers;   /* [n_run] */
    int n_run;            /* layers run: cfg.layers - (cfg.skip - 1) */
    sd_norm final_ln;
};

#define P "text_encoder.text_model."

static pt_status layer_load(sd_clip *m, const sd_weights *w, int il, clip_layer *L, pt_error *err) {
    sd_runtime *rt = m->rt;
    const int H = m->cfg.hidden, I = m->cfg.intermediate;
    const float eps = m->cfg.ln_eps;
    char pre[SD_NAME_MAX], name[SD_NAME_MAX];
    sd_name(pre, P "encoder.layers.", "%d", il);
    pt_status st = sd_norm_load(rt, w, sd_name(name, pre, ".layer_norm1"), H, 0, eps, &L->ln1, err);
    if (!st) st = sd_norm_load(rt, w, sd_name(name, pre, ".layer_norm2"), H, 0, eps, &L->ln2, err);
    if (!st) st = sd_linear_load(rt, w, sd_name(name, pre, ".self_attn.q_proj"), H, H, true, &L->q, err);
    if (!st) st = sd_linear_load(rt, w, sd_name(name, pre, ".self_attn.k_proj"), H, H, true, &L->k, err);
    if (!st) st = sd_linear_load(rt, w, sd_name(name, pre, ".self_attn.v_proj"), H, H, true, &L->v, err);
    if (!st) st = sd_linear_load(rt, w, sd_name(name, pre, ".self_attn.out_proj"), H, H, true, &L->o, err);
    if (!st) st = sd_linear_load(rt, w, sd_name(name, pre, ".mlp.fc1"), H, I, true, &L->fc1, err);
    if (!st) st = sd_linear_load(rt, w, sd_name(name, pre, ".mlp.fc2"), I, H, true, &L->fc2, err);
    return st;
}

static void layer_free(sd_runtime *rt, clip_layer *L) {
    sd_norm_free(rt, &L->ln1);
    sd_norm_free(rt, &L->ln2);
    sd_linear_free(rt, &L->q);
    sd_linear_free(rt, &L->k);
    sd_linear_free(rt, &L->v);
    sd_linear_free(rt, &L->o);
    sd_linear_free(rt, &L->fc1);
    sd_linear_free(rt, &L->fc2);
}

void sd_clip_free(sd_clip *m) {
    if (!m) return;
    for (int i = 0; i < m->n_run && m->layers; i++) layer_free(m->rt, &m->layers[i]);
    free(m->layers);
    sd_norm_free(m->rt, &m->final_ln);
    if (m->pos) sd_free_vector(m->rt, m->pos, m->cfg.max_pos * m->cfg.hidden);
    if (m->tok.data) sd_rt_count(m->rt, -(int64_t)pt_weight_source_bytes(&m->tok), SD_MEM_MAPPED);
    free(m);
}

pt_status sd_clip_load(const sd_weights *w, const sd_clip_config *cfg, sd_runtime *rt,
                       sd_clip **out, pt_error *err) {
    *out = NULL;
    if (cfg->hidden < 1 || cfg->heads < 1 || cfg->hidden % cfg->heads || cfg->layers < 1 ||
        cfg->skip < 1 || cfg->skip > cfg->layers || cfg->max_pos < 1 || cfg->vocab < 1 ||
        cfg->intermediate < 1 || (cfg->act != SD_ACT_QUICK_GELU && cfg->act != SD_ACT_GELU))
        return pt_fail(err, PT_ERR_FORMAT, "text encoder: bad config (hidden %d, heads %d, layers "
                       "%d, skip %d)", cfg->hidden, cfg->heads, cfg->layers, cfg->skip);
    sd_clip *m = calloc(1, sizeof *m);
    if (!m) return pt_fail(err, PT_ERR_NOMEM, "out of memory for the text encoder");
    m->cfg = *cfg;
    m->rt = rt;
    const int H = cfg->hidden;
    const int64_t tshape[2] = {cfg->vocab, H};
    sd_tensor t;
    pt_status st = sd_weights_need(w, P "embeddings.token_embedding.weight", 2, tshape, &t, err);
    if (!st && (!pt_type_get(t.type) || !pt_type_get(t.type)->supported ||
                pt_type_row_bytes(t.type, H) * (uint64_t)cfg->vocab != t.nbytes))
        st = pt_fail(err, PT_ERR_UNSUPPORTED, "tensor " P "embeddings.token_embedding.weight: "
                     "type %s", pt_type_name(t.type));
    if (!st) {
        m->tok = (pt_weight){t.type, t.data, cfg->vocab, H, NULL};
        sd_rt_count(rt, (int64_t)pt_weight_source_bytes(&m->tok), SD_MEM_MAPPED);
        st = sd_load_vector(rt, w, P "embeddings.position_embedding", ".weight",
                            cfg->max_pos * H, true, &m->pos, err);
    }
    if (!st) st = sd_norm_load(rt, w, P "final_layer_norm", H, 0, cfg->ln_eps, &m->final_ln, err);
    m->layers = st ? NULL : calloc((size_t)cfg->layers, sizeof *m->layers);
    if (!st && !m->layers) st = pt_fail(err, PT_ERR_NOMEM, "out of memory for the text encoder");
    for (int i = 0; !st && i < cfg->layers - (cfg->skip - 1); i++) {
        m->n_run = i + 1;
        st = layer_load(m, w, i, &m->layers[i], err);
    }
    if (st) {
        sd_clip_free(m);
        return st;
    }
    *out = m;
    return PT_OK;
}

/* Buffers of one encode: x, tn, att, tmp [N][H]; q, k, v [N][H];
 * ff [N][I] (N = n_rows * n_tok). */
static pt_status forward(sd_clip *m, sd_runtime *rt, const int32_t *ids, int n_rows, int n_tok,
                         float *out, float *buf, pt_error *err) {
    const int H = m->cfg.hidden, I = m->cfg.intermediate, heads = m->cfg.heads;
    const int64_t N = (int64_t)n_rows * n_tok;
    float *x = buf, *tn = x + N * H, *att = tn + N * H, *tmp = att + N * H;
    float *q = tmp + N * H, *k = q + N * H, *v = k + N * H, *ff = v + N * H;
    for (int64_t r = 0; r < N; r++) { /* embeddings */
        pt_weight_row(&m->tok, ids[r], x + r * H);
        const float *p = m->pos + (r % n_tok) * H;
        for (int i = 0; i < H; i++) x[r * H + i] += p[i];
    }
    pt_status st = PT_OK;
    for (int il = 0; !st && il < m->n_run; il++) {
        const clip_layer *L = &m->layers[il];
        sd_layernorm_run(rt, &L->ln1, tn, x, N);
        const sd_linear *qkv[3] = {&L->q, &L->k, &L->v};
        float *const y3[3] = {q, k, v};
        st = sd_linear_run_n(rt, qkv, y3, 3, tn, N, err);
        if (!st) st = sd_mha_run(rt, att, q, k, v, n_rows, n_tok, n_tok, heads, H / heads, true, err);
        if (!st) st = sd_linear_run(rt, &L->o, att, N, tmp, err);
        if (st) break;
        sd_add_run(rt, x, tmp, N * H);
        sd_layernorm_run(rt, &L->ln2, tn, x, N);
        st = sd_linear_run(rt, &L->fc1, tn, N, ff, err);
        if (st) break;
        sd_act_run(rt, m->cfg.act == SD_ACT_GELU ? SD_GELU : SD_QUICK_GELU, ff, N * I);
        st = sd_linear_run(rt, &L->fc2, ff, N, tmp, err);
        if (!st) sd_add_run(rt, x, tmp, N * H);
    }
    if (!st) sd_layernorm_run(rt, &m->final_ln, out, x, N);
    return st;
}

pt_status sd_clip_encode(sd_clip *m, sd_runtime *rt, const int32_t *ids, int n_rows, int n_tok,
                         float *out, pt_error *err) {
    const sd_clip_config *c = &m->cfg;
    if (n_rows < 1 || n_tok < 1 || n_tok > c->max_pos)
        return pt_fail(err, PT_ERR_ARG, "text encoder: %d rows of %d tokens (at most %d)", n_rows,
                       n_tok, c->max_pos);
    for (int64_t i = 0; i < (int64_t)n_rows * n_tok; i++)
        if (ids[i] < 0 || ids[i] >= c->vocab)
            return pt_fail(err, PT_ERR_ARG, "text encoder: token id %d outside the vocabulary of "
                           "%d", ids[i], c->vocab);
    const size_t N = (size_t)n_rows * n_tok;
    const size_t n = N * (7 * (size_t)c->hidden + (size_t)c->intermediate);
    float *buf = sd_rt_alloc(rt, n * sizeof(float), SD_MEM_ACTS);
    if (!buf) return pt_fail(err, PT_ERR_NOMEM, "out of memory for the text encoder's activations");
    sd_rt_begin(rt);
    pt_status st = forward(m, rt, ids, n_rows, n_tok, out, buf, err);
    sd_rt_end(rt);
    sd_rt_dealloc(rt, buf, n * sizeof(float), SD_MEM_ACTS);
    return st;
}
