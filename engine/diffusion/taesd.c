/*
 * taesd.c — the TAESD decoder and encoder (see taesd.h for the layer
 * order and the scaling conventions).
 */
#include "taesd.h"

#include "status.h"
#include "vae_acts.h"
#include "vae_tiles.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAESD_MAX_STAGES 8
#define TAESD_MAX_BLOCKS 8
#define TAESD_MAX_SIDE 2048 /* latent pixels per side */

/* AutoencoderTinyBlock: conv.0, conv.2, conv.4 (c -> c, 3x3, bias). */
typedef struct taesd_block {
    sd_conv conv[3];
} taesd_block;

/* One stage: its blocks and the conv after them (decoder: after the 2x
 * up-sampling, or the output conv in the last stage; encoder: the
 * stride-2 conv before them). */
typedef struct taesd_stage {
    taesd_block blocks[TAESD_MAX_BLOCKS];
    int n_blocks;
    sd_conv conv;
} taesd_stage;

struct sd_taesd {
    sd_taesd_config cfg;
    int scale, n_stages;                   /* 2^U, U + 1 */
    sd_conv dec_in;                        /* layers.0: lc -> c */
    taesd_stage dec[TAESD_MAX_STAGES];
    bool has_enc;
    sd_conv enc_in;                        /* layers.0: 3 -> c */
    taesd_stage enc[TAESD_MAX_STAGES];     /* enc[0].conv is enc_out (c -> lc) */
};

static pt_status load_block(sd_runtime *rt, const sd_weights *w, const char *pre, int idx, int c,
                            taesd_block *b, pt_error *err) {
    char name[160];
    for (int k = 0; k < 3; k++) {
        snprintf(name, sizeof name, "%s.layers.%d.conv.%d", pre, idx, 2 * k);
        pt_status st = sd_conv_load(rt, w, name, c, c, 3, 1, 1, &b->conv[k], err);
        if (st != PT_OK) return st;
    }
    return PT_OK;
}

static void free_stage(sd_runtime *rt, taesd_stage *s) {
    for (int i = 0; i < TAESD_MAX_BLOCKS; i++)
        for (int k = 0; k < 3; k++) sd_conv_free(rt, &s->blocks[i].conv[k]);
    sd_conv_free(rt, &s->conv);
}

/* Decoder layer indices: 0 conv, 1 ReLU, then per stage its blocks, and
 * except in the last stage an Upsample (no parameters) and a conv; the
 * last stage's conv is the output conv. */
static pt_status load_decoder(sd_runtime *rt, const sd_weights *w, sd_taesd *t, pt_error *err) {
    const sd_taesd_config *c = &t->cfg;
    char name[160];
    pt_status st = sd_conv_load(rt, w, "taesd.decoder.layers.0", c->latent_channels, c->channels,
                                3, 1, 1, &t->dec_in, err);
    int idx = 2;
    for (int s = 0; s < t->n_stages && st == PT_OK; s++) {
        bool last = s == t->n_stages - 1;
        taesd_stage *sg = &t->dec[s];
        sg->n_blocks = last ? 1 : c->blocks_per_stage;
        for (int b = 0; b < sg->n_blocks && st == PT_OK; b++)
            st = load_block(rt, w, "taesd.decoder", idx++, c->channels, &sg->blocks[b], err);
        if (!last) idx++; /* the Upsample */
        snprintf(name, sizeof name, "taesd.decoder.layers.%d", idx++);
        if (st == PT_OK)
            st = sd_conv_load(rt, w, name, c->channels, last ? 3 : c->channels, 3, 1, 1, &sg->conv, err);
    }
    return st;
}

/* Encoder layer indices: 0 conv, then stage 0's one block; per further
 * stage a stride-2 conv and its blocks; then the output conv (kept as
 * enc[0].conv). */
static pt_status load_encoder(sd_runtime *rt, const sd_weights *w, sd_taesd *t, pt_error *err) {
    const sd_taesd_config *c = &t->cfg;
    char name[160];
    pt_status st = sd_conv_load(rt, w, "taesd.encoder.layers.0", 3, c->channels, 3, 1, 1,
                                &t->enc_in, err);
    int idx = 1;
    for (int s = 0; s < t->n_stages && st == PT_OK; s++) {
        taesd_stage *sg = &t->enc[s];
        if (s > 0) {
            snprintf(name, sizeof name, "taesd.encoder.layers.%d", idx++);
            st = sd_conv_load(rt, w, name, c->channels, c->channels, 3, 2, 1, &sg->conv, err);
        }
        sg->n_blocks = s == 0 ? 1 : c->blocks_per_stage;
        for (int b = 0; b < sg->n_blocks && st == PT_OK; b++)
            st = load_block(rt, w, "taesd.encoder", idx++, c->channels, &sg->blocks[b], err);
    }
    snprintf(name, sizeof name, "taesd.encoder.layers.%d", idx);
    if (st == PT_OK)
        st = sd_conv_load(rt, w, name, c->channels, c->latent_channels, 3, 1, 1, &t->enc[0].conv, err);
    return st;
}

pt_status sd_taesd_load(sd_runtime *rt, const sd_weights *w, bool encoder, sd_taesd **out,
                        pt_error *err) {
    *out = NULL;
    const sd_taesd_config *c = &sd_weights_config(w)->taesd;
    if (!c->present) return pt_fail(err, PT_ERR_ARG, "taesd: the model has no TAESD decoder");
    if (c->latent_channels < 1 || c->channels < 1 || c->blocks_per_stage < 1 ||
        c->blocks_per_stage > TAESD_MAX_BLOCKS || c->n_upsamples < 0 ||
        c->n_upsamples + 1 > TAESD_MAX_STAGES)
        return pt_fail(err, PT_ERR_FORMAT, "taesd: unsupported config (%d channels, %d blocks, %d up-samplings)",
                       c->channels, c->blocks_per_stage, c->n_upsamples);
    sd_taesd *t = calloc(1, sizeof *t);
    if (!t) return pt_fail(err, PT_ERR_NOMEM, "taesd: out of memory");
    t->cfg = *c;
    t->n_stages = c->n_upsamples + 1;
    t->scale = 1 << c->n_upsamples;
    pt_status st = load_decoder(rt, w, t, err);
    sd_tensor probe;
    if (st == PT_OK && encoder && sd_weights_get(w, "taesd.encoder.layers.0.weight", &probe)) {
        t->has_enc = true;
        st = load_encoder(rt, w, t, err);
    }
    if (st != PT_OK) {
        sd_taesd_free(rt, t);
        return st;
    }
    *out = t;
    return PT_OK;
}

void sd_taesd_free(sd_runtime *rt, sd_taesd *t) {
    if (!t) return;
    sd_conv_free(rt, &t->dec_in);
    sd_conv_free(rt, &t->enc_in);
    for (int s = 0; s < TAESD_MAX_STAGES; s++) {
        free_stage(rt, &t->dec[s]);
        free_stage(rt, &t->enc[s]);
    }
    free(t);
}

bool sd_taesd_has_encoder(const sd_taesd *t) { return t->has_enc; }
int sd_taesd_scale(const sd_taesd *t) { return t->scale; }

static void relu(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

/* x -> ReLU(conv3(ReLU(conv2(ReLU(conv1(x))))) + x), c channels, h x w. */
static pt_status run_block(sd_runtime *rt, vae_acts *a, const taesd_block *b, int h, int w,
                           pt_error *err) {
    int64_t n = (int64_t)h * w * b->conv[0].c_out;
    pt_status st = vae_acts_need(rt, a, 1 - a->cur, (size_t)n, err);
    if (st == PT_OK) st = vae_acts_need(rt, a, VAE_SCRATCH, (size_t)n, err);
    float *x = vae_x(a), *y = vae_y(a), *s = a->buf[VAE_SCRATCH];
    if (st == PT_OK) st = sd_conv_run(rt, &b->conv[0], x, 1, h, w, y, NULL, err);
    if (st == PT_OK) relu(y, n), st = sd_conv_run(rt, &b->conv[1], y, 1, h, w, s, NULL, err);
    if (st == PT_OK) relu(s, n), st = sd_conv_run(rt, &b->conv[2], s, 1, h, w, y, x, err);
    if (st != PT_OK) return st;
    relu(y, n);
    vae_swap(a);
    return PT_OK;
}

typedef struct decode_ctx {
    sd_runtime *rt;
    const sd_taesd *t;
} decode_ctx;

/* latent [h][w][lc] -> rgb [s h][s w][3] (an sd_tile_decode_fn). */
static pt_status decode_core(void *ctx, const float *lat, int h, int w, float *rgb, pt_error *err) {
    sd_runtime *rt = ((decode_ctx *)ctx)->rt;
    const sd_taesd *t = ((decode_ctx *)ctx)->t;
    int c = t->cfg.channels;
    size_t n_lat = (size_t)h * w * t->cfg.latent_channels;
    vae_acts a = {0};
    pt_status st = vae_acts_need(rt, &a, 0, n_lat, err);
    if (st == PT_OK) {
        for (size_t i = 0; i < n_lat; i++) a.buf[0][i] = tanhf(lat[i] / 3.0f) * 3.0f;
        st = vae_conv(rt, &a, &t->dec_in, &h, &w, err);
    }
    if (st == PT_OK) relu(vae_x(&a), (int64_t)h * w * c);
    for (int s = 0; s < t->n_stages && st == PT_OK; s++) {
        const taesd_stage *sg = &t->dec[s];
        for (int b = 0; b < sg->n_blocks && st == PT_OK; b++) st = run_block(rt, &a, &sg->blocks[b], h, w, err);
        if (st != PT_OK) break;
        if (s < t->n_stages - 1) {
            st = vae_upsample(rt, &a, &h, &w, c, err);
            if (st == PT_OK) st = vae_conv(rt, &a, &sg->conv, &h, &w, err);
        } else {
            st = sd_conv_run(rt, &sg->conv, vae_x(&a), 1, h, w, rgb, NULL, err);
            if (st == PT_OK)
                for (int64_t i = 0; i < (int64_t)h * w * 3; i++) rgb[i] = rgb[i] * 2.0f - 1.0f;
        }
    }
    vae_acts_free(rt, &a);
    return st;
}

pt_status sd_taesd_decode(sd_runtime *rt, const sd_taesd *t, const float *latent, int h, int w,
                          float *rgb, const sd_vae_tiling *tiling, pt_error *err) {
    const int tile = tiling ? tiling->tile : 0, overlap = tiling ? tiling->overlap : 0;
    pt_status ck = sd_decode_check_args("taesd", h, w, TAESD_MAX_SIDE, tile, overlap, err);
    if (ck) return ck;
    decode_ctx ctx = {rt, t};
    int lc = t->cfg.latent_channels;
    sd_rt_begin(rt);
    pt_status st;
    if (tile > 0 && (h > tile || w > tile)) {
        int64_t extra = (int64_t)sd_decode_tiled_bytes(h, w, lc, t->scale, 3, tile);
        sd_rt_count(rt, extra, SD_MEM_ACTS);
        st = sd_decode_tiled(decode_core, &ctx, latent, h, w, lc, t->scale, 3, tile, overlap, rgb,
                             NULL, err);
        sd_rt_count(rt, -extra, SD_MEM_ACTS);
    } else {
        st = decode_core(&ctx, latent, h, w, rgb, err);
    }
    sd_rt_end(rt);
    return st;
}

static pt_status encode_core(sd_runtime *rt, const sd_taesd *t, const float *rgb, int h, int w,
                             float *lat, pt_error *err) {
    size_t n_in = (size_t)h * w * 3;
    vae_acts a = {0};
    pt_status st = vae_acts_need(rt, &a, 0, n_in, err);
    if (st == PT_OK) {
        for (size_t i = 0; i < n_in; i++) a.buf[0][i] = (rgb[i] + 1.0f) / 2.0f;
        st = vae_conv(rt, &a, &t->enc_in, &h, &w, err);
    }
    for (int s = 0; s < t->n_stages && st == PT_OK; s++) {
        const taesd_stage *sg = &t->enc[s];
        if (s > 0) st = vae_conv(rt, &a, &sg->conv, &h, &w, err);
        for (int b = 0; b < sg->n_blocks && st == PT_OK; b++) st = run_block(rt, &a, &sg->blocks[b], h, w, err);
    }
    if (st == PT_OK) st = sd_conv_run(rt, &t->enc[0].conv, vae_x(&a), 1, h, w, lat, NULL, err);
    vae_acts_free(rt, &a);
    return st;
}

pt_status sd_taesd_encode(sd_runtime *rt, const sd_taesd *t, const float *rgb, int H, int W,
                          float *latent, pt_error *err) {
    if (!t->has_enc) return pt_fail(err, PT_ERR_ARG, "taesd encode: no TAESD encoder loaded");
    if (H < t->scale || W < t->scale || H % t->scale || W % t->scale ||
        H / t->scale > TAESD_MAX_SIDE || W / t->scale > TAESD_MAX_SIDE)
        return pt_fail(err, PT_ERR_ARG, "taesd encode: image %dx%d (each side a multiple of %d, at most %d)",
                       W, H, t->scale, TAESD_MAX_SIDE * t->scale);
    sd_rt_begin(rt);
    pt_status st = encode_core(rt, t, rgb, H, W, latent, err);
    sd_rt_end(rt);
    return st;
}
