/*
 * unet_opencl.c — the UNet's forward (unet.h) on an OpenCL device: the
 * same sequence of layers as unet.c's forward, on device buffers
 * (sd_opencl.h). Only the latents, the context rows and the timestep's
 * sinusoid go up, and only the prediction comes back.
 *
 * Buffers are the device's slots from SD_OCL_SLOT_USER (U_* below): the
 * inputs, the time embedding, the ping-pong activations a and b, the
 * concatenation / up-sampling buffer and one slot per pushed skip
 * activation. A slot only grows right before it is written, never while
 * it holds a value still to be read.
 */
#include "sd_opencl.h"
#include "status.h"
#include "unet_impl.h"

#include <math.h>
#include <stdlib.h>

#ifdef PETREL_HAVE_OPENCL

enum {
    U_X = SD_OCL_SLOT_USER, U_CTX, U_TSIN, U_E1, U_TS, U_A, U_B, U_CAT, U_OUT,
    U_SKIP /* .. U_SKIP + SD_MAX_LEVELS * (UNET_MAX_LPB + 1) */
};
_Static_assert(U_SKIP + SD_MAX_LEVELS * (UNET_MAX_LPB + 1) + 1 <= SD_OCL_SLOTS,
               "sd_opencl.h has a slot for every skip activation");

typedef struct ocl_run {
    sd_ocl *d;
    int n, h, w, n_ctx;
    pt_ocl_mem *ctx, *temb_silu;
    pt_error *err;
} ocl_run;

/* y = stage(x) at the stage's level. */
static pt_status run_stage(const ocl_run *r, const unet_stage *s, pt_ocl_mem *y, pt_ocl_mem *x) {
    const int h = r->h >> s->level, w = r->w >> s->level;
    pt_status st = sd_ocl_resnet(r->d, &s->res, y, x, r->n, h, w, r->temb_silu, r->err);
    if (!st && s->has_attn)
        st = sd_ocl_transformer(r->d, &s->attn, y, r->n, (int64_t)h * w, r->ctx, r->n_ctx, r->err);
    return st;
}

/* Slot `slot` grown to n * pix * c floats. */
static pt_ocl_mem *act(const ocl_run *r, int slot, int64_t pix, int c) {
    return sd_ocl_slot(r->d, slot, (size_t)r->n * (size_t)pix * (size_t)c, r->err);
}

static pt_status forward(sd_unet *u, ocl_run *r, pt_ocl_mem *x, const float *tsin_host,
                         pt_ocl_mem **out) {
    const sd_unet_config *c = &u->cfg;
    sd_ocl *d = r->d;
    pt_error *err = r->err;
    const int n = r->n, L = c->layers_per_block, nl = c->n_levels, T = c->time_embed_dim;
    /* time embedding: ts = silu(linear_2(silu(linear_1(sinusoid)))) */
    pt_ocl_mem *tsin = act(r, U_TSIN, 1, c->channels[0]), *e1 = tsin ? act(r, U_E1, 1, T) : NULL;
    pt_ocl_mem *ts = e1 ? act(r, U_TS, 1, T) : NULL;
    if (!ts) return err->code;
    pt_status st = sd_ocl_write(d, tsin, tsin_host, (size_t)n * c->channels[0], err);
    if (!st) st = sd_ocl_linear(d, &u->t1, tsin, n, e1, err);
    if (!st) st = sd_ocl_act(d, SD_SILU, e1, (int64_t)n * T, err);
    if (!st) st = sd_ocl_linear(d, &u->t2, e1, n, ts, err);
    if (!st) st = sd_ocl_act(d, SD_SILU, ts, (int64_t)n * T, err);
    if (st) return st;
    r->temb_silu = ts;
    /* down path: every output is pushed as a skip */
    pt_ocl_mem *slot[SD_MAX_LEVELS * (UNET_MAX_LPB + 1) + 1];
    int chan[SD_MAX_LEVELS * (UNET_MAX_LPB + 1) + 1], top = 0;
    pt_ocl_mem *next = act(r, U_SKIP, (int64_t)r->h * r->w, c->channels[0]);
    if (!next) return err->code;
    if ((st = sd_ocl_conv(d, &u->conv_in, x, n, r->h, r->w, next, NULL, err))) return st;
    slot[top] = next;
    chan[top++] = c->channels[0];
    for (int i = 0; i < nl; i++) {
        const int64_t pix = (int64_t)(r->h >> i) * (r->w >> i);
        for (int j = 0; j < L; j++) {
            if (!(next = act(r, U_SKIP + top, pix, c->channels[i]))) return err->code;
            if ((st = run_stage(r, &u->down[i][j], next, slot[top - 1]))) return st;
            slot[top] = next;
            chan[top++] = c->channels[i];
        }
        if (i < nl - 1) {
            if (!(next = act(r, U_SKIP + top, pix / 4, c->channels[i]))) return err->code;
            if ((st = sd_ocl_conv(d, &u->downsample[i], slot[top - 1], n, r->h >> i, r->w >> i,
                                  next, NULL, err)))
                return st;
            slot[top] = next;
            chan[top++] = c->channels[i];
        }
    }
    /* mid */
    const int cm = c->channels[nl - 1];
    const int64_t pix_mid = (int64_t)(r->h >> (nl - 1)) * (r->w >> (nl - 1));
    pt_ocl_mem *a = act(r, U_A, pix_mid, cm), *b = a ? act(r, U_B, pix_mid, cm) : NULL;
    if (!b) return err->code;
    if ((st = run_stage(r, &u->mid0, a, slot[top - 1]))) return st;
    if ((st = run_stage(r, &u->mid1, b, a))) return st;
    pt_ocl_mem *cur = b;
    int cur_slot = U_B, other_slot = U_A;
    /* up path */
    for (int i = 0; i < nl; i++) {
        const int li = nl - 1 - i;
        const int64_t pix = (int64_t)(r->h >> li) * (r->w >> li);
        for (int j = 0; j <= L; j++) {
            const unet_stage *s = &u->up[i][j];
            const int ccur = s->res.c_in - chan[top - 1];
            top--;
            pt_ocl_mem *cat = act(r, U_CAT, pix, s->res.c_in);
            pt_ocl_mem *other = cat ? act(r, other_slot, pix, s->res.c_out) : NULL;
            if (!other) return err->code;
            if ((st = sd_ocl_concat(d, cat, cur, ccur, slot[top], chan[top], (int64_t)n * pix, err)))
                return st;
            if ((st = run_stage(r, s, other, cat))) return st;
            cur = other;
            const int t = cur_slot;
            cur_slot = other_slot, other_slot = t;
        }
        if (i < nl - 1) {
            const int ch = c->channels[li];
            pt_ocl_mem *cat = act(r, U_CAT, 4 * pix, ch);
            pt_ocl_mem *other = cat ? act(r, other_slot, 4 * pix, ch) : NULL;
            if (!other) return err->code;
            if ((st = sd_ocl_upsample(d, cat, cur, n, r->h >> li, r->w >> li, ch, err))) return st;
            if ((st = sd_ocl_conv(d, &u->upsample[i], cat, n, (r->h >> li) * 2, (r->w >> li) * 2,
                                  other, NULL, err)))
                return st;
            cur = other;
            const int t = cur_slot;
            cur_slot = other_slot, other_slot = t;
        }
    }
    /* out */
    const int64_t pix0 = (int64_t)r->h * r->w;
    pt_ocl_mem *other = act(r, other_slot, pix0, c->channels[0]);
    pt_ocl_mem *y = other ? act(r, U_OUT, pix0, c->out_channels) : NULL;
    if (!y) return err->code;
    if ((st = sd_ocl_groupnorm(d, &u->norm_out, other, cur, n, pix0, true, err))) return st;
    if ((st = sd_ocl_conv(d, &u->conv_out, other, n, r->h, r->w, y, NULL, err))) return st;
    *out = y;
    return PT_OK;
}

pt_status sd_unet_run_ocl(sd_unet *u, sd_ocl *d, const float *x, int n, int h, int w, float t,
                          const float *ctx, int n_ctx, float *out, pt_error *err) {
    const sd_unet_config *c = &u->cfg;
    pt_status ck = sd_unet_check_args(u, n, h, w, t, ctx, n_ctx, err);
    if (ck) return ck;
    float *tsin = malloc((size_t)n * c->channels[0] * sizeof *tsin);
    if (!tsin) return pt_fail(err, PT_ERR_NOMEM, "out of memory for the time embedding");
    sd_timestep_embedding(tsin, n, c->channels[0], t, c->flip_sin_to_cos, c->freq_shift);
    ocl_run r = {d, n, h, w, n_ctx, NULL, NULL, err};
    sd_ocl_weights_group(d, SD_OCL_W_UNET);
    const size_t nx = (size_t)n * h * w * c->in_channels, nc = (size_t)n * n_ctx * c->cross_dim;
    pt_ocl_mem *dx = sd_ocl_slot(d, U_X, nx, err), *dc = dx ? sd_ocl_slot(d, U_CTX, nc, err) : NULL;
    pt_ocl_mem *y = NULL;
    pt_status st = dc ? PT_OK : err->code;
    if (!st) st = sd_ocl_write(d, dx, x, nx, err);
    if (!st) st = sd_ocl_write(d, dc, ctx, nc, err);
    r.ctx = dc;
    if (!st) st = forward(u, &r, dx, tsin, &y);
    if (!st) st = sd_ocl_read(d, y, out, (size_t)n * h * w * c->out_channels, err);
    free(tsin);
    return st;
}

#else

pt_status sd_unet_run_ocl(sd_unet *u, sd_ocl *d, const float *x, int n, int h, int w, float t,
                          const float *ctx, int n_ctx, float *out, pt_error *err) {
    (void)u, (void)d, (void)x, (void)n, (void)h, (void)w, (void)t, (void)ctx, (void)n_ctx, (void)out;
    return pt_fail(err, PT_ERR_UNSUPPORTED, "petrel was built without OpenCL (PETREL_OPENCL=OFF)");
}

#endif
