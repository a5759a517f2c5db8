/*
 * vae_opencl.c — the VAE decoder (vae.h) on an OpenCL device: vae.c's
 * decode_core as the same layers on device buffers (sd_opencl.h), tile by
 * tile through vae_tiles.c when the latent is large. Activations ping-pong
 * between two slots (V_A, V_B) as vae_acts.h's buffers do on the CPU.
 */
#include "sd_opencl.h"
#include "status.h"
#include "vae_impl.h"
#include "vae_tiles.h"

#ifdef PETREL_HAVE_OPENCL

enum { V_LAT = SD_OCL_SLOT_USER, V_A, V_B, V_NORM, V_RGB };

typedef struct ocl_dec {
    sd_ocl *d;
    const sd_vae *v;
    pt_ocl_mem *x; /* the current activation */
    int slot;      /* its slot */
    pt_error *err;
} ocl_dec;

/* The slot to write the next activation into (n floats), never x's. */
static pt_ocl_mem *next(ocl_dec *c, size_t n, int *slot) {
    *slot = c->slot == V_A ? V_B : V_A;
    return sd_ocl_slot(c->d, *slot, n, c->err);
}

static void advance(ocl_dec *c, pt_ocl_mem *y, int slot) {
    c->x = y;
    c->slot = slot;
}

static pt_status conv(ocl_dec *c, const sd_conv *cv, int *h, int *w) {
    const int ho = (*h + 2 * cv->pad - cv->k) / cv->stride + 1, wo = (*w + 2 * cv->pad - cv->k) / cv->stride + 1;
    int slot;
    pt_ocl_mem *y = next(c, (size_t)ho * wo * cv->c_out, &slot);
    if (!y) return c->err->code;
    pt_status st = sd_ocl_conv(c->d, cv, c->x, 1, *h, *w, y, NULL, c->err);
    if (!st) advance(c, y, slot), *h = ho, *w = wo;
    return st;
}

static pt_status resnet(ocl_dec *c, const sd_resnet *r, int h, int w) {
    int slot;
    pt_ocl_mem *y = next(c, (size_t)h * w * r->c_out, &slot);
    if (!y) return c->err->code;
    pt_status st = sd_ocl_resnet(c->d, r, y, c->x, 1, h, w, NULL, c->err);
    if (!st) advance(c, y, slot);
    return st;
}

/* x + to_out(attention(GroupNorm(x))), one head over the pixels. */
static pt_status attention(ocl_dec *c, const vae_mid *m, int64_t n_pix) {
    const size_t n = (size_t)n_pix * (size_t)m->attn.dim;
    int slot;
    pt_ocl_mem *y = next(c, n, &slot), *xn = y ? sd_ocl_slot(c->d, V_NORM, n, c->err) : NULL;
    if (!xn) return c->err->code;
    pt_status st = sd_ocl_groupnorm(c->d, &m->norm, xn, c->x, 1, n_pix, false, c->err);
    if (!st) st = sd_ocl_attn(c->d, &m->attn, y, xn, 1, n_pix, xn, n_pix, c->err);
    if (!st) st = sd_ocl_add(c->d, y, c->x, (int64_t)n, c->err);
    if (!st) advance(c, y, slot);
    return st;
}

static pt_status upsample(ocl_dec *c, int *h, int *w, int ch) {
    int slot;
    pt_ocl_mem *y = next(c, (size_t)4 * *h * *w * ch, &slot);
    if (!y) return c->err->code;
    pt_status st = sd_ocl_upsample(c->d, y, c->x, 1, *h, *w, ch, c->err);
    if (!st) advance(c, y, slot), *h *= 2, *w *= 2;
    return st;
}

/* An sd_tile_decode_fn: lat [h][w][lc] -> rgb [s h][s w][3]. */
static pt_status decode_core(void *ctx, const float *lat, int h, int w, float *rgb, pt_error *err) {
    ocl_dec c = *(ocl_dec *)ctx;
    c.err = err;
    const sd_vae *v = c.v;
    const sd_vae_config *cfg = &v->cfg;
    const size_t n_lat = (size_t)h * w * cfg->latent_channels;
    c.x = sd_ocl_slot(c.d, V_LAT, n_lat, err);
    c.slot = V_LAT;
    pt_status st = c.x ? sd_ocl_write(c.d, c.x, lat, n_lat, err) : err->code;
    if (!st) st = conv(&c, &v->post_quant, &h, &w);
    if (!st) st = conv(&c, &v->dec_in, &h, &w);
    if (!st) st = resnet(&c, &v->dec_mid.r0, h, w);
    if (!st) st = attention(&c, &v->dec_mid, (int64_t)h * w);
    if (!st) st = resnet(&c, &v->dec_mid.r1, h, w);
    for (int i = 0; i < cfg->n_levels && !st; i++) {
        const vae_level *l = &v->up[i];
        for (int j = 0; j < l->n_res && !st; j++) st = resnet(&c, &l->res[j], h, w);
        if (!st && l->has_sample) {
            st = upsample(&c, &h, &w, l->sample.c_in);
            if (!st) st = conv(&c, &l->sample, &h, &w);
        }
    }
    const size_t n_rgb = (size_t)h * w * cfg->out_channels;
    pt_ocl_mem *y = st ? NULL : sd_ocl_slot(c.d, V_RGB, n_rgb, err);
    if (!st && !y) st = err->code;
    if (!st) st = sd_ocl_groupnorm(c.d, &v->dec_norm, c.x, c.x, 1, (int64_t)h * w, true, err);
    if (!st) st = sd_ocl_conv(c.d, &v->dec_out, c.x, 1, h, w, y, NULL, err);
    if (!st) st = sd_ocl_read(c.d, y, rgb, n_rgb, err);
    return st;
}

pt_status sd_vae_decode_ocl(sd_ocl *d, const sd_vae *v, const float *latent, int h, int w,
                            float *rgb, const sd_vae_tiling *tiling, pt_error *err) {
    const int tile = tiling ? tiling->tile : 0, overlap = tiling ? tiling->overlap : 0;
    pt_status ck = sd_decode_check_args("vae", h, w, VAE_MAX_SIDE, tile, overlap, err);
    if (ck) return ck;
    sd_ocl_weights_group(d, SD_OCL_W_VAE);
    ocl_dec ctx = {d, v, NULL, 0, err};
    if (tile > 0 && (h > tile || w > tile))
        return sd_decode_tiled(decode_core, &ctx, latent, h, w, v->cfg.latent_channels, v->scale,
                               v->cfg.out_channels, tile, overlap, rgb, NULL, err);
    return decode_core(&ctx, latent, h, w, rgb, err);
}

#else

pt_status sd_vae_decode_ocl(sd_ocl *d, const sd_vae *v, const float *latent, int h, int w,
                            float *rgb, const sd_vae_tiling *tiling, pt_error *err) {
    (void)d, (void)v, (void)latent, (void)h, (void)w, (void)rgb, (void)tiling;
    return pt_fail(err, PT_ERR_UNSUPPORTED, "petrel was built without OpenCL (PETREL_OPENCL=OFF)");
}

#endif
