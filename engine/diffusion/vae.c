/*
 * vae.c — the AutoencoderKL decoder and encoder (see vae.h for the
 * architecture and the conventions).
 */
#include "vae.h"

#include "status.h"
#include "vae_acts.h"
#include "vae_impl.h"
#include "vae_tiles.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VAE_EPS 1e-6f      /* every GroupNorm of diffusers' Encoder / Decoder */

static pt_status load_mid(sd_runtime *rt, const sd_weights *w, const char *pre, int c, int groups,
                          vae_mid *m, pt_error *err) {
    char name[160];
    snprintf(name, sizeof name, "%s.resnets.0", pre);
    pt_status st = sd_resnet_load(rt, w, name, c, c, 0, groups, VAE_EPS, &m->r0, err);
    if (st != PT_OK) return st;
    snprintf(name, sizeof name, "%s.resnets.1", pre);
    if ((st = sd_resnet_load(rt, w, name, c, c, 0, groups, VAE_EPS, &m->r1, err)) != PT_OK) return st;
    snprintf(name, sizeof name, "%s.attentions.0.group_norm", pre);
    if ((st = sd_norm_load(rt, w, name, c, groups, VAE_EPS, &m->norm, err)) != PT_OK) return st;
    snprintf(name, sizeof name, "%s.attentions.0", pre);
    return sd_attn_load(rt, w, name, c, c, 1, &m->attn, err);
}

static void free_mid(sd_runtime *rt, vae_mid *m) {
    sd_resnet_free(rt, &m->r0);
    sd_resnet_free(rt, &m->r1);
    sd_norm_free(rt, &m->norm);
    sd_attn_free(rt, &m->attn);
}

/* A level's ResNets prefix.resnets.0 .. n-1 (c_in -> c, then c -> c). */
static pt_status load_level(sd_runtime *rt, const sd_weights *w, const char *pre, int n, int c_in,
                            int c, int groups, vae_level *l, pt_error *err) {
    char name[200]; /* pre is at most 160 */
    for (int j = 0; j < n; j++) {
        snprintf(name, sizeof name, "%s.resnets.%d", pre, j);
        pt_status st = sd_resnet_load(rt, w, name, j ? c : c_in, c, 0, groups, VAE_EPS, &l->res[j], err);
        if (st != PT_OK) return st;
        l->n_res = j + 1;
    }
    return PT_OK;
}

/* Every slot, loaded or not: the sd_nn free functions take zeroed and
 * partly loaded layers (a load that failed half-way). */
static void free_level(sd_runtime *rt, vae_level *l) {
    for (int j = 0; j < VAE_MAX_RES; j++) sd_resnet_free(rt, &l->res[j]);
    sd_conv_free(rt, &l->sample);
}

static pt_status check_config(const sd_vae_config *c, pt_error *err) {
    if (c->n_levels < 1 || c->n_levels > SD_MAX_LEVELS || c->layers_per_block < 1 ||
        c->layers_per_block + 1 > VAE_MAX_RES || c->groups < 1 || c->latent_channels < 1 ||
        c->in_channels < 1 || c->out_channels < 1)
        return pt_fail(err, PT_ERR_FORMAT,
                       "vae: unsupported config (%d levels, %d layers per block, %d groups)",
                       c->n_levels, c->layers_per_block, c->groups);
    for (int i = 0; i < c->n_levels; i++)
        if (c->channels[i] < 1 || c->channels[i] % c->groups)
            return pt_fail(err, PT_ERR_FORMAT,
                           "vae: block_out_channels[%d] = %d is not a multiple of %d groups", i,
                           c->channels[i], c->groups);
    return PT_OK;
}

static pt_status load_decoder(sd_runtime *rt, const sd_weights *w, sd_vae *v, pt_error *err) {
    const sd_vae_config *c = &v->cfg;
    int n = c->n_levels, lc = c->latent_channels, top = c->channels[n - 1];
    pt_status st = sd_conv_load(rt, w, "vae.post_quant_conv", lc, lc, 1, 1, 0, &v->post_quant, err);
    if (st == PT_OK) st = sd_conv_load(rt, w, "vae.decoder.conv_in", lc, top, 3, 1, 1, &v->dec_in, err);
    if (st == PT_OK) st = load_mid(rt, w, "vae.decoder.mid_block", top, c->groups, &v->dec_mid, err);
    char name[160];
    int prev = top;
    for (int i = 0; i < n && st == PT_OK; i++) {
        int ch = c->channels[n - 1 - i];
        snprintf(name, sizeof name, "vae.decoder.up_blocks.%d", i);
        st = load_level(rt, w, name, c->layers_per_block + 1, prev, ch, c->groups, &v->up[i], err);
        if (st == PT_OK && i < n - 1) {
            snprintf(name, sizeof name, "vae.decoder.up_blocks.%d.upsamplers.0.conv", i);
            st = sd_conv_load(rt, w, name, ch, ch, 3, 1, 1, &v->up[i].sample, err);
            v->up[i].has_sample = st == PT_OK;
        }
        prev = ch;
    }
    if (st == PT_OK)
        st = sd_norm_load(rt, w, "vae.decoder.conv_norm_out", c->channels[0], c->groups, VAE_EPS,
                          &v->dec_norm, err);
    if (st == PT_OK)
        st = sd_conv_load(rt, w, "vae.decoder.conv_out", c->channels[0], c->out_channels, 3, 1, 1,
                          &v->dec_out, err);
    return st;
}

static pt_status load_encoder(sd_runtime *rt, const sd_weights *w, sd_vae *v, pt_error *err) {
    const sd_vae_config *c = &v->cfg;
    int n = c->n_levels, lc = c->latent_channels, top = c->channels[n - 1];
    pt_status st = sd_conv_load(rt, w, "vae.encoder.conv_in", c->in_channels, c->channels[0], 3, 1,
                                1, &v->enc_in, err);
    char name[160];
    int prev = c->channels[0];
    for (int i = 0; i < n && st == PT_OK; i++) {
        int ch = c->channels[i];
        snprintf(name, sizeof name, "vae.encoder.down_blocks.%d", i);
        st = load_level(rt, w, name, c->layers_per_block, prev, ch, c->groups, &v->down[i], err);
        if (st == PT_OK && i < n - 1) {
            /* stride 2, padding 0: the input gets its extra zero row and
             * column (bottom, right) in encode_core */
            snprintf(name, sizeof name, "vae.encoder.down_blocks.%d.downsamplers.0.conv", i);
            st = sd_conv_load(rt, w, name, ch, ch, 3, 2, 0, &v->down[i].sample, err);
            v->down[i].has_sample = st == PT_OK;
        }
        prev = ch;
    }
    if (st == PT_OK) st = load_mid(rt, w, "vae.encoder.mid_block", top, c->groups, &v->enc_mid, err);
    if (st == PT_OK)
        st = sd_norm_load(rt, w, "vae.encoder.conv_norm_out", top, c->groups, VAE_EPS, &v->enc_norm, err);
    if (st == PT_OK)
        st = sd_conv_load(rt, w, "vae.encoder.conv_out", top, 2 * lc, 3, 1, 1, &v->enc_out, err);
    if (st == PT_OK) st = sd_conv_load(rt, w, "vae.quant_conv", 2 * lc, 2 * lc, 1, 1, 0, &v->quant, err);
    return st;
}

pt_status sd_vae_load(sd_runtime *rt, const sd_weights *w, bool encoder, sd_vae **out,
                      pt_error *err) {
    *out = NULL;
    sd_vae *v = calloc(1, sizeof *v);
    if (!v) return pt_fail(err, PT_ERR_NOMEM, "vae: out of memory");
    v->cfg = sd_weights_config(w)->vae;
    pt_status st = check_config(&v->cfg, err);
    v->scale = 1 << (v->cfg.n_levels - 1);
    if (st == PT_OK) st = load_decoder(rt, w, v, err);
    if (st == PT_OK && encoder) {
        v->has_enc = true;
        st = load_encoder(rt, w, v, err);
    }
    if (st != PT_OK) {
        sd_vae_free(rt, v);
        return st;
    }
    *out = v;
    return PT_OK;
}

void sd_vae_free(sd_runtime *rt, sd_vae *v) {
    if (!v) return;
    sd_conv_free(rt, &v->post_quant);
    sd_conv_free(rt, &v->dec_in);
    free_mid(rt, &v->dec_mid);
    for (int i = 0; i < SD_MAX_LEVELS; i++) free_level(rt, &v->up[i]);
    sd_norm_free(rt, &v->dec_norm);
    sd_conv_free(rt, &v->dec_out);
    sd_conv_free(rt, &v->enc_in);
    for (int i = 0; i < SD_MAX_LEVELS; i++) free_level(rt, &v->down[i]);
    free_mid(rt, &v->enc_mid);
    sd_norm_free(rt, &v->enc_norm);
    sd_conv_free(rt, &v->enc_out);
    sd_conv_free(rt, &v->quant);
    free(v);
}

int sd_vae_scale(const sd_vae *v) { return v->scale; }

static pt_status run_mid(sd_runtime *rt, vae_acts *a, const vae_mid *m, int h, int w,
                         pt_error *err) {
    pt_status st = vae_resnet(rt, a, &m->r0, h, w, err);
    if (st == PT_OK) st = vae_attention(rt, a, &m->norm, &m->attn, (int64_t)h * w, err);
    if (st == PT_OK) st = vae_resnet(rt, a, &m->r1, h, w, err);
    return st;
}

/* The decoder on one latent (or tile): lat [h][w][lc] -> rgb [s h][s w][3]
 * (an sd_tile_decode_fn; ctx is a decode_ctx). Inside sd_rt_begin/end. */
typedef struct decode_ctx {
    sd_runtime *rt;
    const sd_vae *v;
} decode_ctx;

static pt_status decode_core(void *ctx, const float *lat, int h, int w, float *rgb, pt_error *err) {
    sd_runtime *rt = ((decode_ctx *)ctx)->rt;
    const sd_vae *v = ((decode_ctx *)ctx)->v;
    const sd_vae_config *c = &v->cfg;
    vae_acts a = {0};
    int lc = c->latent_channels;
    /* the latent into buf[0] so every step reads x from the buffers */
    pt_status st = vae_acts_need(rt, &a, 0, (size_t)h * w * lc, err);
    if (st == PT_OK) {
        memcpy(a.buf[0], lat, (size_t)h * w * lc * sizeof(float));
        st = vae_conv(rt, &a, &v->post_quant, &h, &w, err);
    }
    if (st == PT_OK) st = vae_conv(rt, &a, &v->dec_in, &h, &w, err);
    if (st == PT_OK) st = run_mid(rt, &a, &v->dec_mid, h, w, err);
    for (int i = 0; i < c->n_levels && st == PT_OK; i++) {
        const vae_level *l = &v->up[i];
        for (int j = 0; j < l->n_res && st == PT_OK; j++) st = vae_resnet(rt, &a, &l->res[j], h, w, err);
        if (st == PT_OK && l->has_sample) {
            st = vae_upsample(rt, &a, &h, &w, l->sample.c_in, err);
            if (st == PT_OK) st = vae_conv(rt, &a, &l->sample, &h, &w, err);
        }
    }
    if (st == PT_OK) st = sd_groupnorm_run(rt, &v->dec_norm, vae_x(&a), vae_x(&a), 1, (int64_t)h * w, true, err);
    if (st == PT_OK) st = sd_conv_run(rt, &v->dec_out, vae_x(&a), 1, h, w, rgb, NULL, err);
    vae_acts_free(rt, &a);
    return st;
}

pt_status sd_vae_decode(sd_runtime *rt, const sd_vae *v, const float *latent, int h, int w,
                        float *rgb, const sd_vae_tiling *tiling, pt_error *err) {
    const int tile = tiling ? tiling->tile : 0, overlap = tiling ? tiling->overlap : 0;
    pt_status ck = sd_decode_check_args("vae", h, w, VAE_MAX_SIDE, tile, overlap, err);
    if (ck) return ck;
    decode_ctx ctx = {rt, v};
    sd_rt_begin(rt);
    pt_status st;
    if (tile > 0 && (h > tile || w > tile)) {
        int64_t extra = (int64_t)sd_decode_tiled_bytes(h, w, v->cfg.latent_channels, v->scale,
                                                        v->cfg.out_channels, tile);
        sd_rt_count(rt, extra, SD_MEM_ACTS); /* the tile buffers vae_tiles.c holds */
        st = sd_decode_tiled(decode_core, &ctx, latent, h, w, v->cfg.latent_channels, v->scale,
                             v->cfg.out_channels, tile, overlap, rgb, NULL, err);
        sd_rt_count(rt, -extra, SD_MEM_ACTS);
    } else {
        st = decode_core(&ctx, latent, h, w, rgb, err);
    }
    sd_rt_end(rt);
    return st;
}

/* Pad x (h x w x c) with one zero row at the bottom and one zero column at
 * the right into y ((h + 1) x (w + 1) x c): diffusers' Downsample2D with
 * padding 0 (F.pad(x, (0, 1, 0, 1))). */
static void pad_bottom_right(float *y, const float *x, int h, int w, int c) {
    size_t row = (size_t)w * c, prow = (size_t)(w + 1) * c;
    for (int i = 0; i < h; i++) {
        memcpy(y + i * prow, x + i * row, row * sizeof(float));
        memset(y + i * prow + row, 0, (size_t)c * sizeof(float));
    }
    memset(y + (size_t)h * prow, 0, prow * sizeof(float));
}

static pt_status encode_core(sd_runtime *rt, const sd_vae *v, const float *rgb, int h, int w,
                             float *mean, pt_error *err) {
    const sd_vae_config *c = &v->cfg;
    vae_acts a = {0};
    pt_status st = vae_acts_need(rt, &a, 0, (size_t)h * w * c->in_channels, err);
    if (st == PT_OK) {
        memcpy(a.buf[0], rgb, (size_t)h * w * c->in_channels * sizeof(float));
        st = vae_conv(rt, &a, &v->enc_in, &h, &w, err);
    }
    for (int i = 0; i < c->n_levels && st == PT_OK; i++) {
        const vae_level *l = &v->down[i];
        for (int j = 0; j < l->n_res && st == PT_OK; j++) st = vae_resnet(rt, &a, &l->res[j], h, w, err);
        if (st == PT_OK && l->has_sample) {
            int ch = l->sample.c_in;
            st = vae_acts_need(rt, &a, 1 - a.cur, (size_t)(h + 1) * (w + 1) * ch, err);
            if (st != PT_OK) break;
            pad_bottom_right(vae_y(&a), vae_x(&a), h, w, ch);
            vae_swap(&a);
            h++, w++;
            st = vae_conv(rt, &a, &l->sample, &h, &w, err);
        }
    }
    if (st == PT_OK) st = run_mid(rt, &a, &v->enc_mid, h, w, err);
    if (st == PT_OK) st = sd_groupnorm_run(rt, &v->enc_norm, vae_x(&a), vae_x(&a), 1, (int64_t)h * w, true, err);
    if (st == PT_OK) st = vae_conv(rt, &a, &v->enc_out, &h, &w, err);
    if (st == PT_OK) st = vae_conv(rt, &a, &v->quant, &h, &w, err);
    if (st == PT_OK) { /* x [h][w][2 lc] = [mean | logvar]: keep the mean */
        int lc = c->latent_channels;
        const float *x = vae_x(&a);
        for (int64_t p = 0; p < (int64_t)h * w; p++)
            memcpy(mean + p * lc, x + p * 2 * lc, (size_t)lc * sizeof(float));
    }
    vae_acts_free(rt, &a);
    return st;
}

pt_status sd_vae_encode(sd_runtime *rt, const sd_vae *v, const float *rgb, int H, int W,
                        float *mean, pt_error *err) {
    if (!v->has_enc) return pt_fail(err, PT_ERR_ARG, "vae encode: the VAE was loaded without its encoder");
    if (H < v->scale || W < v->scale || H % v->scale || W % v->scale ||
        H / v->scale > VAE_MAX_SIDE || W / v->scale > VAE_MAX_SIDE)
        return pt_fail(err, PT_ERR_ARG, "vae encode: image %dx%d (each side a multiple of %d, at most %d)",
                       W, H, v->scale, VAE_MAX_SIDE * v->scale);
    sd_rt_begin(rt);
    pt_status st = encode_core(rt, v, rgb, H, W, mean, err);
    sd_rt_end(rt);
    return st;
}
