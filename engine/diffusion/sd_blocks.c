/*
 * sd_blocks.c — the composite layers of diffusers' UNet and VAE: the ResNet
 * block (ResnetBlock2D) and the spatial transformer (Transformer2DModel
 * with BasicTransformerBlocks), on sd_nn.h's layers.
 */
#include "sd_nn_impl.h"

#include "ops.h"
#include "status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- ResNet block ------------------------------------------------------------- */

pt_status sd_resnet_load(sd_runtime *rt, const sd_weights *w, const char *prefix, int c_in,
                         int c_out, int temb_dim, int groups, float eps, sd_resnet *r,
                         pt_error *err) {
    memset(r, 0, sizeof *r);
    r->c_in = c_in;
    r->c_out = c_out;
    r->temb_dim = temb_dim;
    r->has_shortcut = c_in != c_out;
    char name[256];
    pt_status st;
    sd_name(name, prefix, ".norm1");
    st = sd_norm_load(rt, w, name, c_in, groups, eps, &r->norm1, err);
    sd_name(name, prefix, ".conv1");
    if (st == PT_OK) st = sd_conv_load(rt, w, name, c_in, c_out, 3, 1, 1, &r->conv1, err);
    sd_name(name, prefix, ".norm2");
    if (st == PT_OK) st = sd_norm_load(rt, w, name, c_out, groups, eps, &r->norm2, err);
    sd_name(name, prefix, ".conv2");
    if (st == PT_OK) st = sd_conv_load(rt, w, name, c_out, c_out, 3, 1, 1, &r->conv2, err);
    sd_name(name, prefix, ".time_emb_proj");
    if (st == PT_OK && temb_dim > 0)
        st = sd_linear_load(rt, w, name, temb_dim, c_out, true, &r->temb, err);
    sd_name(name, prefix, ".conv_shortcut");
    if (st == PT_OK && r->has_shortcut)
        st = sd_conv_load(rt, w, name, c_in, c_out, 1, 1, 0, &r->shortcut, err);
    if (st) sd_resnet_free(rt, r);
    return st;
}

void sd_resnet_free(sd_runtime *rt, sd_resnet *r) {
    if (!r) return;
    sd_norm_free(rt, &r->norm1);
    sd_norm_free(rt, &r->norm2);
    sd_conv_free(rt, &r->conv1);
    sd_conv_free(rt, &r->conv2);
    if (r->temb_dim > 0) sd_linear_free(rt, &r->temb);
    if (r->has_shortcut) sd_conv_free(rt, &r->shortcut);
}

/* scratch: a [n][n_pix][max(c_in, c_out)] (the normalized inputs of the
 * convs) | b [n][n_pix][c_out] (conv1's output, then the shortcut's) |
 * t [n][c_out] (the time embedding's projection) */
size_t sd_resnet_scratch_floats(const sd_resnet *r, int n, int64_t n_pix) {
    const size_t cmax = (size_t)(r->c_in > r->c_out ? r->c_in : r->c_out);
    return (size_t)n * ((size_t)n_pix * (cmax + (size_t)r->c_out) + (size_t)r->c_out);
}

/* b[img][p] += t[img] for every pixel p of every image. */
typedef struct temb_job {
    float *b;
    const float *t;
    int64_t n_pix, total; /* total = n * n_pix */
    int c;
} temb_job;

static void temb_task(void *ctx, int task, int n_tasks, int thread) {
    (void)thread;
    const temb_job *j = ctx;
    int64_t p0, p1;
    sd_split(j->total, task, n_tasks, &p0, &p1);
    for (int64_t p = p0; p < p1; p++) pt_add(j->b + p * j->c, j->t + p / j->n_pix * j->c, j->c);
}

pt_status sd_resnet_run(sd_runtime *rt, const sd_resnet *r, float *y, const float *x, int n, int h,
                        int w, const float *temb_silu, float *scratch, pt_error *err) {
    const int64_t n_pix = (int64_t)h * w, total = n_pix * n;
    const size_t cmax = (size_t)(r->c_in > r->c_out ? r->c_in : r->c_out);
    float *a = scratch, *b = a + (size_t)total * cmax, *t = b + (size_t)total * r->c_out;
    pt_status st = sd_groupnorm_run(rt, &r->norm1, a, x, n, n_pix, true, err);
    if (st == PT_OK) st = sd_conv_run(rt, &r->conv1, a, n, h, w, b, NULL, err);
    if (st == PT_OK && r->temb_dim > 0) {
        if (!temb_silu) return pt_fail(err, PT_ERR_ARG, "resnet: no time embedding");
        st = sd_linear_run(rt, &r->temb, temb_silu, n, t, err);
        temb_job tj = {b, t, n_pix, total, r->c_out};
        if (st == PT_OK) sd_rt_run(rt, temb_task, &tj, sd_tasks_for(rt, total * r->c_out));
    }
    if (st == PT_OK) st = sd_groupnorm_run(rt, &r->norm2, a, b, n, n_pix, true, err);
    const float *skip = x;
    if (st == PT_OK && r->has_shortcut) {
        st = sd_conv_run(rt, &r->shortcut, x, n, h, w, b, NULL, err);
        skip = b;
    }
    if (st == PT_OK) st = sd_conv_run(rt, &r->conv2, a, n, h, w, y, skip, err);
    return st;
}

/* ---- spatial transformer ---------------------------------------------------------- */

#define FF_ROWS 256 /* rows of the feed-forward at a time (its 8*c-wide
                     * intermediate would be the largest activation) */

static pt_status tblock_load(sd_runtime *rt, const sd_weights *w, const char *prefix, int c,
                             int heads, int ctx_dim, sd_tblock *b, pt_error *err) {
    memset(b, 0, sizeof *b);
    char name[256];
    sd_tensor t;
    sd_name(name, prefix, ".ff.net.2.weight");
    if (!sd_weights_get(w, name, &t) || t.n_dims != 2 || t.shape[0] != c || t.shape[1] < 1 ||
        t.shape[1] > (1 << 24))
        return pt_fail(err, PT_ERR_FORMAT, "missing or misshapen tensor %s", name);
    b->inner = (int)t.shape[1];
    pt_status st;
    sd_name(name, prefix, ".norm1");
    st = sd_norm_load(rt, w, name, c, 0, 1e-5f, &b->norm1, err);
    sd_name(name, prefix, ".norm2");
    if (st == PT_OK) st = sd_norm_load(rt, w, name, c, 0, 1e-5f, &b->norm2, err);
    sd_name(name, prefix, ".norm3");
    if (st == PT_OK) st = sd_norm_load(rt, w, name, c, 0, 1e-5f, &b->norm3, err);
    sd_name(name, prefix, ".attn1");
    if (st == PT_OK) st = sd_attn_load(rt, w, name, c, c, heads, &b->attn1, err);
    sd_name(name, prefix, ".attn2");
    if (st == PT_OK) st = sd_attn_load(rt, w, name, c, ctx_dim, heads, &b->attn2, err);
    sd_name(name, prefix, ".ff.net.0.proj");
    if (st == PT_OK) st = sd_linear_load(rt, w, name, c, 2 * b->inner, true, &b->ff_in, err);
    sd_name(name, prefix, ".ff.net.2");
    if (st == PT_OK) st = sd_linear_load(rt, w, name, b->inner, c, true, &b->ff_out, err);
    return st;
}

static void tblock_free(sd_runtime *rt, sd_tblock *b) {
    sd_norm_free(rt, &b->norm1);
    sd_norm_free(rt, &b->norm2);
    sd_norm_free(rt, &b->norm3);
    sd_attn_free(rt, &b->attn1);
    sd_attn_free(rt, &b->attn2);
    sd_linear_free(rt, &b->ff_in);
    sd_linear_free(rt, &b->ff_out);
}

pt_status sd_transformer_load(sd_runtime *rt, const sd_weights *w, const char *prefix, int c,
                              int heads, int depth, int ctx_dim, int groups, sd_transformer *t,
                              pt_error *err) {
    memset(t, 0, sizeof *t);
    if (depth < 1 || depth > 64)
        return pt_fail(err, PT_ERR_FORMAT, "%s: %d transformer blocks", prefix, depth);
    t->c = c;
    t->heads = heads;
    t->ctx_dim = ctx_dim;
    t->blocks = calloc((size_t)depth, sizeof *t->blocks);
    if (!t->blocks) return pt_fail(err, PT_ERR_NOMEM, "out of memory loading %s", prefix);
    char name[256];
    pt_status st;
    sd_name(name, prefix, ".norm");
    st = sd_norm_load(rt, w, name, c, groups, 1e-6f, &t->norm, err);
    sd_name(name, prefix, ".proj_in");
    if (st == PT_OK) st = sd_linear_load(rt, w, name, c, c, true, &t->proj_in, err);
    sd_name(name, prefix, ".proj_out");
    if (st == PT_OK) st = sd_linear_load(rt, w, name, c, c, true, &t->proj_out, err);
    for (int i = 0; st == PT_OK && i < depth; i++) {
        sd_name(name, prefix, ".transformer_blocks.%d", i);
        st = tblock_load(rt, w, name, c, heads, ctx_dim, &t->blocks[i], err);
        t->depth = i + 1; /* blocks [0, depth) need freeing */
    }
    if (st) sd_transformer_free(rt, t);
    return st;
}

void sd_transformer_free(sd_runtime *rt, sd_transformer *t) {
    if (!t) return;
    sd_norm_free(rt, &t->norm);
    sd_linear_free(rt, &t->proj_in);
    sd_linear_free(rt, &t->proj_out);
    for (int i = 0; i < t->depth && t->blocks; i++) tblock_free(rt, &t->blocks[i]);
    free(t->blocks);
    t->blocks = NULL;
    t->depth = 0;
}

/* scratch: hs, tn, ta [N][c] each (N = n * n_pix: the hidden states, their
 * normalization, a sublayer's output) | the attentions' scratch (the
 * larger of self and cross) | ff: g [FF_ROWS][2*inner], gg [FF_ROWS][inner] */
size_t sd_transformer_scratch_floats(const sd_transformer *t, int n, int64_t n_pix, int64_t n_ctx) {
    size_t attn = 0, ff = 0;
    for (int i = 0; i < t->depth; i++) {
        const sd_tblock *b = &t->blocks[i];
        const size_t a1 = sd_attn_scratch_floats(&b->attn1, n, n_pix, n_pix);
        const size_t a2 = sd_attn_scratch_floats(&b->attn2, n, n_pix, n_ctx);
        const size_t f = (size_t)FF_ROWS * 3 * (size_t)b->inner;
        if (a1 > attn) attn = a1;
        if (a2 > attn) attn = a2;
        if (f > ff) ff = f;
    }
    return 3 * (size_t)n * (size_t)n_pix * (size_t)t->c + (attn > ff ? attn : ff);
}

static pt_status tblock_run(sd_runtime *rt, const sd_tblock *b, float *hs, float *tn, float *ta,
                            float *work, int n, int64_t n_pix, const float *ctx, int64_t n_ctx,
                            pt_error *err) {
    const int c = b->norm1.c;
    const int64_t N = (int64_t)n * n_pix;
    sd_layernorm_run(rt, &b->norm1, tn, hs, N);
    pt_status st = sd_attn_run(rt, &b->attn1, ta, tn, n, n_pix, tn, n_pix, work, err);
    if (st) return st;
    sd_add_run(rt, hs, ta, N * c);
    sd_layernorm_run(rt, &b->norm2, tn, hs, N);
    st = sd_attn_run(rt, &b->attn2, ta, tn, n, n_pix, ctx, n_ctx, work, err);
    if (st) return st;
    sd_add_run(rt, hs, ta, N * c);
    sd_layernorm_run(rt, &b->norm3, tn, hs, N);
    float *g = work, *gg = g + (size_t)FF_ROWS * 2 * b->inner;
    for (int64_t r0 = 0; r0 < N && st == PT_OK; r0 += FF_ROWS) {
        const int64_t rows = N - r0 < FF_ROWS ? N - r0 : FF_ROWS;
        st = sd_linear_run(rt, &b->ff_in, tn + r0 * c, rows, g, err);
        if (st) break;
        sd_geglu_run(rt, gg, g, rows, b->inner);
        st = sd_linear_run(rt, &b->ff_out, gg, rows, ta + r0 * c, err);
    }
    if (st == PT_OK) sd_add_run(rt, hs, ta, N * c);
    return st;
}

pt_status sd_transformer_run(sd_runtime *rt, const sd_transformer *t, float *x, int n,
                             int64_t n_pix, const float *ctx, int64_t n_ctx, float *scratch,
                             pt_error *err) {
    const int64_t N = (int64_t)n * n_pix;
    float *hs = scratch, *tn = hs + (size_t)N * t->c, *ta = tn + (size_t)N * t->c;
    float *work = ta + (size_t)N * t->c;
    pt_status st = sd_groupnorm_run(rt, &t->norm, tn, x, n, n_pix, false, err);
    if (st == PT_OK) st = sd_linear_run(rt, &t->proj_in, tn, N, hs, err);
    for (int i = 0; st == PT_OK && i < t->depth; i++)
        st = tblock_run(rt, &t->blocks[i], hs, tn, ta, work, n, n_pix, ctx, n_ctx, err);
    if (st == PT_OK) st = sd_linear_run(rt, &t->proj_out, hs, N, ta, err);
    if (st == PT_OK) sd_add_run(rt, x, ta, N * t->c);
    return st;
}
