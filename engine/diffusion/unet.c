/* unet.c — UNet2DConditionModel forward (unet.h). */
#include "unet.h"

#include "sd_nn_impl.h"
#include "unet_impl.h"
#include "status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define P "unet."

static pt_status stage_load(sd_unet *u, const sd_weights *w, const char *pre, int c_in, int c_out,
                            bool attn, int heads, int depth, int level, unet_stage *s,
                            pt_error *err, const char *attn_pre) {
    const sd_unet_config *c = &u->cfg;
    s->level = level;
    pt_status st = sd_resnet_load(u->rt, w, pre, c_in, c_out, c->time_embed_dim, c->groups,
                                  c->norm_eps, &s->res, err);
    if (!st && attn) {
        s->has_attn = true;
        st = sd_transformer_load(u->rt, w, attn_pre, c_out, heads, depth, c->cross_dim, c->groups,
                                 &s->attn, err);
    }
    return st;
}

static void stage_free(sd_runtime *rt, unet_stage *s) {
    sd_resnet_free(rt, &s->res);
    sd_transformer_free(rt, &s->attn);
}

void sd_unet_release_buffers(sd_unet *u) {
    if (!u || !u->buf) return;
    sd_rt_dealloc(u->rt, u->buf, u->buf_n * sizeof(float), SD_MEM_ACTS);
    u->buf = NULL;
    u->buf_n = 0;
    u->bn = 0;
}

void sd_unet_free(sd_unet *u) {
    if (!u) return;
    sd_runtime *rt = u->rt;
    sd_unet_release_buffers(u);
    sd_linear_free(rt, &u->t1);
    sd_linear_free(rt, &u->t2);
    sd_conv_free(rt, &u->conv_in);
    for (int i = 0; i < SD_MAX_LEVELS; i++) {
        for (int j = 0; j < UNET_MAX_LPB; j++) stage_free(rt, &u->down[i][j]);
        for (int j = 0; j < UNET_MAX_LPB + 1; j++) stage_free(rt, &u->up[i][j]);
        sd_conv_free(rt, &u->downsample[i]);
        sd_conv_free(rt, &u->upsample[i]);
    }
    stage_free(rt, &u->mid0);
    stage_free(rt, &u->mid1);
    sd_norm_free(rt, &u->norm_out);
    sd_conv_free(rt, &u->conv_out);
    free(u);
}

static pt_status load_all(sd_unet *u, const sd_weights *w, pt_error *err) {
    const sd_unet_config *c = &u->cfg;
    sd_runtime *rt = u->rt;
    const int L = c->layers_per_block, nl = c->n_levels, ch0 = c->channels[0];
    char pre[SD_NAME_MAX], apre[SD_NAME_MAX];
    pt_status st = sd_linear_load(rt, w, P "time_embedding.linear_1", ch0, c->time_embed_dim, true,
                                  &u->t1, err);
    if (!st)
        st = sd_linear_load(rt, w, P "time_embedding.linear_2", c->time_embed_dim,
                            c->time_embed_dim, true, &u->t2, err);
    if (!st) st = sd_conv_load(rt, w, P "conv_in", c->in_channels, ch0, 3, 1, 1, &u->conv_in, err);
    for (int i = 0; !st && i < nl; i++) {
        const int c_out = c->channels[i], c_prev = i ? c->channels[i - 1] : ch0;
        for (int j = 0; !st && j < L; j++) {
            sd_name(pre, P "down_blocks.", "%d.resnets.%d", i, j);
            sd_name(apre, P "down_blocks.", "%d.attentions.%d", i, j);
            st = stage_load(u, w, pre, j ? c_out : c_prev, c_out, c->cross_attn[i], c->heads[i],
                            c->transformer_depth[i], i, &u->down[i][j], err, apre);
        }
        if (!st && i < nl - 1)
            st = sd_conv_load(rt, w, sd_name(pre, P "down_blocks.", "%d.downsamplers.0.conv", i),
                              c_out, c_out, 3, 2, 1, &u->downsample[i], err);
    }
    const int cm = c->channels[nl - 1];
    if (!st)
        st = stage_load(u, w, P "mid_block.resnets.0", cm, cm, true, c->heads[nl - 1],
                        c->transformer_depth[nl - 1], nl - 1, &u->mid0, err,
                        P "mid_block.attentions.0");
    if (!st)
        st = stage_load(u, w, P "mid_block.resnets.1", cm, cm, false, 0, 0, nl - 1, &u->mid1, err,
                        NULL);
    int out_ch = c->channels[nl - 1];
    for (int i = 0; !st && i < nl; i++) {
        const int li = nl - 1 - i; /* the level mirrored */
        const int prev = out_ch;
        out_ch = c->channels[li];
        const int in_ch = c->channels[li > 0 ? li - 1 : 0];
        for (int j = 0; !st && j <= L; j++) {
            const int skip = j == L ? in_ch : out_ch, res_in = j ? out_ch : prev;
            sd_name(pre, P "up_blocks.", "%d.resnets.%d", i, j);
            sd_name(apre, P "up_blocks.", "%d.attentions.%d", i, j);
            st = stage_load(u, w, pre, res_in + skip, out_ch, c->cross_attn[li], c->heads[li],
                            c->transformer_depth[li], li, &u->up[i][j], err, apre);
        }
        if (!st && i < nl - 1)
            st = sd_conv_load(rt, w, sd_name(pre, P "up_blocks.", "%d.upsamplers.0.conv", i),
                              out_ch, out_ch, 3, 1, 1, &u->upsample[i], err);
    }
    if (!st) st = sd_norm_load(rt, w, P "conv_norm_out", ch0, c->groups, c->norm_eps, &u->norm_out, err);
    if (!st)
        st = sd_conv_load(rt, w, P "conv_out", ch0, c->out_channels, 3, 1, 1, &u->conv_out, err);
    return st;
}

pt_status sd_unet_load(const sd_weights *w, const sd_unet_config *cfg, sd_runtime *rt,
                       sd_unet **out, pt_error *err) {
    *out = NULL;
    if (cfg->n_levels < 1 || cfg->n_levels > SD_MAX_LEVELS || cfg->layers_per_block < 1 ||
        cfg->layers_per_block > UNET_MAX_LPB || cfg->time_embed_dim < 1 || cfg->channels[0] < 2 ||
        cfg->channels[0] % 2 || cfg->in_channels < 1 || cfg->out_channels < 1 || cfg->groups < 1)
        return pt_fail(err, PT_ERR_UNSUPPORTED, "unet: unsupported config (%d levels, %d layers "
                       "per block)", cfg->n_levels, cfg->layers_per_block);
    sd_unet *u = calloc(1, sizeof *u);
    if (!u) return pt_fail(err, PT_ERR_NOMEM, "out of memory for the unet");
    u->cfg = *cfg;
    u->rt = rt;
    pt_status st = load_all(u, w, err);
    if (st) {
        sd_unet_free(u);
        return st;
    }
    *out = u;
    return PT_OK;
}

/* ---- buffers ----------------------------------------------------------------- */

typedef struct unet_plan {
    size_t skips, act, cat, work, temb;
} unet_plan;

static size_t zmax(size_t a, size_t b) { return a > b ? a : b; }

static void plan_stage(const unet_stage *s, int n, int h, int w, int n_ctx, unet_plan *p) {
    const int64_t pix = (int64_t)(h >> s->level) * (w >> s->level);
    p->act = zmax(p->act, (size_t)n * pix * (size_t)s->res.c_out);
    p->work = zmax(p->work, sd_resnet_scratch_floats(&s->res, n, pix));
    if (s->has_attn) p->work = zmax(p->work, sd_transformer_scratch_floats(&s->attn, n, pix, n_ctx));
}

static unet_plan plan(const sd_unet *u, int n, int h, int w, int n_ctx) {
    const sd_unet_config *c = &u->cfg;
    const int L = c->layers_per_block, nl = c->n_levels;
    unet_plan p = {0};
    const size_t pix0 = (size_t)h * w;
    p.skips = (size_t)n * pix0 * c->channels[0];
    p.act = zmax((size_t)n * pix0 * c->channels[0], (size_t)n * pix0 * c->out_channels);
    for (int i = 0; i < nl; i++) {
        const size_t pix = (size_t)(h >> i) * (w >> i);
        for (int j = 0; j < L; j++) {
            plan_stage(&u->down[i][j], n, h, w, n_ctx, &p);
            p.skips += (size_t)n * pix * c->channels[i];
        }
        if (i < nl - 1) p.skips += (size_t)n * (pix / 4) * c->channels[i];
    }
    plan_stage(&u->mid0, n, h, w, n_ctx, &p);
    plan_stage(&u->mid1, n, h, w, n_ctx, &p);
    for (int i = 0; i < nl; i++) {
        const int li = nl - 1 - i;
        const size_t pix = (size_t)(h >> li) * (w >> li);
        for (int j = 0; j <= L; j++) {
            plan_stage(&u->up[i][j], n, h, w, n_ctx, &p);
            p.cat = zmax(p.cat, (size_t)n * pix * u->up[i][j].res.c_in);
        }
        if (i < nl - 1) { /* the up-sampled activation (cat) and its conv's output (a/b) */
            p.cat = zmax(p.cat, (size_t)n * pix * 4 * c->channels[li]);
            p.act = zmax(p.act, (size_t)n * pix * 4 * c->channels[li]);
        }
    }
    p.temb = (size_t)n * (2 * (size_t)c->time_embed_dim + (size_t)c->channels[0]);
    return p;
}

/* ---- forward ------------------------------------------------------------------ */

void sd_timestep_embedding(float *e, int n, int dim, float t, bool flip, float shift) {
    const int half = dim / 2;
    for (int i = 0; i < half; i++) {
        const float ex = (float)i * (float)-log(10000.0) / ((float)half - shift);
        const float arg = t * expf(ex);
        const float s = sinf(arg), co = cosf(arg);
        e[i] = flip ? co : s;
        e[half + i] = flip ? s : co;
    }
    for (int r = 1; r < n; r++) memcpy(e + (size_t)r * dim, e, (size_t)dim * sizeof(float));
}

typedef struct unet_run_ctx {
    sd_unet *u;
    sd_runtime *rt;
    int n, h, w, n_ctx;
    const float *ctx;
    const float *temb_silu;
    float *work;
    pt_error *err;
} unet_run_ctx;

/* y = stage(x) at the stage's level. */
static pt_status run_stage(const unet_run_ctx *r, const unet_stage *s, float *y, const float *x) {
    const int h = r->h >> s->level, w = r->w >> s->level;
    pt_status st = sd_resnet_run(r->rt, &s->res, y, x, r->n, h, w, r->temb_silu, r->work, r->err);
    if (!st && s->has_attn)
        st = sd_transformer_run(r->rt, &s->attn, y, r->n, (int64_t)h * w, r->ctx, r->n_ctx, r->work,
                                r->err);
    return st;
}

static pt_status forward(sd_unet *u, sd_runtime *rt, const float *x, float t, float *out,
                         const unet_run_ctx *r, const unet_plan *p) {
    const sd_unet_config *c = &u->cfg;
    const int n = r->n, L = c->layers_per_block, nl = c->n_levels, T = c->time_embed_dim;
    float *skips = u->buf, *a = skips + p->skips, *b = a + p->act, *cat = b + p->act;
    float *tsin = cat + p->cat + p->work, *e1 = tsin + (size_t)n * c->channels[0], *ts = e1 + (size_t)n * T;
    pt_error *err = r->err;
    /* time embedding: ts = silu(linear_2(silu(linear_1(sinusoid)))) */
    sd_timestep_embedding(tsin, n, c->channels[0], t, c->flip_sin_to_cos, c->freq_shift);
    pt_status st = sd_linear_run(rt, &u->t1, tsin, n, e1, err);
    if (st) return st;
    sd_act_run(rt, SD_SILU, e1, (int64_t)n * T);
    if ((st = sd_linear_run(rt, &u->t2, e1, n, ts, err))) return st;
    sd_act_run(rt, SD_SILU, ts, (int64_t)n * T);
    /* down path: every output goes into the next skip slot */
    float *slot[SD_MAX_LEVELS * (UNET_MAX_LPB + 1) + 1];
    int chan[SD_MAX_LEVELS * (UNET_MAX_LPB + 1) + 1], top = 0;
    float *next = skips;
    if ((st = sd_conv_run(rt, &u->conv_in, x, n, r->h, r->w, next, NULL, err))) return st;
    slot[top] = next;
    chan[top++] = c->channels[0];
    next += (size_t)n * r->h * r->w * c->channels[0];
    for (int i = 0; i < nl; i++) {
        const size_t pix = (size_t)(r->h >> i) * (r->w >> i);
        for (int j = 0; j < L; j++) {
            if ((st = run_stage(r, &u->down[i][j], next, slot[top - 1]))) return st;
            slot[top] = next;
            chan[top++] = c->channels[i];
            next += (size_t)n * pix * c->channels[i];
        }
        if (i < nl - 1) {
            if ((st = sd_conv_run(rt, &u->downsample[i], slot[top - 1], n, r->h >> i, r->w >> i,
                                  next, NULL, err)))
                return st;
            slot[top] = next;
            chan[top++] = c->channels[i];
            next += (size_t)n * (pix / 4) * c->channels[i];
        }
    }
    /* mid */
    if ((st = run_stage(r, &u->mid0, a, slot[top - 1]))) return st;
    if ((st = run_stage(r, &u->mid1, b, a))) return st;
    float *cur = b, *other = a;
    /* up path */
    for (int i = 0; i < nl; i++) {
        const int li = nl - 1 - i;
        const int64_t pix = (int64_t)(r->h >> li) * (r->w >> li);
        for (int j = 0; j <= L; j++) {
            const unet_stage *s = &u->up[i][j];
            const int ccur = s->res.c_in - chan[top - 1];
            top--;
            sd_concat_run(rt, cat, cur, ccur, slot[top], chan[top], (int64_t)n * pix);
            if ((st = run_stage(r, s, other, cat))) return st;
            float *tmp = cur;
            cur = other;
            other = tmp;
        }
        if (i < nl - 1) {
            const int ch = c->channels[li];
            sd_upsample_run(rt, cat, cur, n, r->h >> li, r->w >> li, ch);
            if ((st = sd_conv_run(rt, &u->upsample[i], cat, n, (r->h >> li) * 2, (r->w >> li) * 2,
                                  other, NULL, err)))
                return st;
            float *tmp = cur;
            cur = other;
            other = tmp;
        }
    }
    /* out */
    const int64_t pix0 = (int64_t)r->h * r->w;
    if ((st = sd_groupnorm_run(rt, &u->norm_out, other, cur, n, pix0, true, err))) return st;
    return sd_conv_run(rt, &u->conv_out, other, n, r->h, r->w, out, NULL, err);
}

pt_status sd_unet_check_args(const sd_unet *u, int n, int h, int w, float t, const float *ctx,
                             int n_ctx, pt_error *err) {
    const int m = 1 << (u->cfg.n_levels - 1);
    if (n < 1 || h < m || w < m || h % m || w % m || h > 4096 || w > 4096 || n_ctx < 1 || !ctx)
        return pt_fail(err, PT_ERR_ARG, "unet: %d latents of %dx%d (a multiple of %d) with %d "
                       "context rows", n, w, h, m, n_ctx);
    if (!isfinite(t)) return pt_fail(err, PT_ERR_ARG, "unet: timestep is not finite");
    return PT_OK;
}

pt_status sd_unet_run(sd_unet *u, sd_runtime *rt, const float *x, int n, int h, int w, float t,
                      const float *ctx, int n_ctx, float *out, pt_error *err) {
    const sd_unet_config *c = &u->cfg;
    pt_status ck = sd_unet_check_args(u, n, h, w, t, ctx, n_ctx, err);
    if (ck) return ck;
    const unet_plan p = plan(u, n, h, w, n_ctx);
    if (!u->buf || u->bn != n || u->bh != h || u->bw != w || u->bctx != n_ctx) {
        sd_unet_release_buffers(u);
        const size_t total = p.skips + 2 * p.act + p.cat + p.work + p.temb;
        u->buf = sd_rt_alloc(rt, total * sizeof(float), SD_MEM_ACTS);
        if (!u->buf)
            return pt_fail(err, PT_ERR_NOMEM, "out of memory for the unet's activations (%zu MB)",
                           total * sizeof(float) >> 20);
        u->buf_n = total;
        u->bn = n, u->bh = h, u->bw = w, u->bctx = n_ctx;
    }
    unet_run_ctx r = {u, rt, n, h, w, n_ctx, ctx, NULL, NULL, err};
    r.work = u->buf + p.skips + 2 * p.act + p.cat;
    r.temb_silu = r.work + p.work + (size_t)n * (c->channels[0] + c->time_embed_dim);
    sd_rt_begin(rt);
    pt_status st = forward(u, rt, x, t, out, &r, &p);
    sd_rt_end(rt);
    return st;
}
