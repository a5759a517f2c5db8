/*
 * vae_acts.c — ping-pong activation buffers and the layer steps of the
 * VAE-style graphs (see vae_acts.h).
 */
#include "vae_acts.h"

#include "image_ops.h"
#include "status.h"

pt_status vae_acts_need(sd_runtime *rt, vae_acts *a, int i, size_t n, pt_error *err) {
    if (a->cap[i] >= n) return PT_OK;
    if (a->buf[i]) sd_rt_dealloc(rt, a->buf[i], a->cap[i] * sizeof(float), SD_MEM_ACTS);
    a->buf[i] = NULL;
    a->cap[i] = 0;
    if (n > SIZE_MAX / sizeof(float) ||
        !(a->buf[i] = sd_rt_alloc(rt, n * sizeof(float), SD_MEM_ACTS)))
        return pt_fail(err, PT_ERR_NOMEM, "out of memory for %.1f MiB of activations",
                       (double)n * sizeof(float) / 1048576.0);
    a->cap[i] = n;
    return PT_OK;
}

void vae_acts_free(sd_runtime *rt, vae_acts *a) {
    for (int i = 0; i < 3; i++) {
        if (a->buf[i]) sd_rt_dealloc(rt, a->buf[i], a->cap[i] * sizeof(float), SD_MEM_ACTS);
        a->buf[i] = NULL;
        a->cap[i] = 0;
    }
}

pt_status vae_conv(sd_runtime *rt, vae_acts *a, const sd_conv *c, int *h, int *w, pt_error *err) {
    int ho = pt_conv_out_size(*h, c->k, c->stride, c->pad);
    int wo = pt_conv_out_size(*w, c->k, c->stride, c->pad);
    pt_status st = vae_acts_need(rt, a, 1 - a->cur, (size_t)ho * (size_t)wo * (size_t)c->c_out, err);
    if (st == PT_OK) st = sd_conv_run(rt, c, vae_x(a), 1, *h, *w, vae_y(a), NULL, err);
    if (st != PT_OK) return st;
    vae_swap(a);
    *h = ho, *w = wo;
    return PT_OK;
}

pt_status vae_resnet(sd_runtime *rt, vae_acts *a, const sd_resnet *r, int h, int w,
                     pt_error *err) {
    int64_t n_pix = (int64_t)h * w;
    pt_status st = vae_acts_need(rt, a, 1 - a->cur, (size_t)n_pix * (size_t)r->c_out, err);
    if (st == PT_OK) st = vae_acts_need(rt, a, VAE_SCRATCH, sd_resnet_scratch_floats(r, 1, n_pix), err);
    if (st == PT_OK)
        st = sd_resnet_run(rt, r, vae_y(a), vae_x(a), 1, h, w, NULL, a->buf[VAE_SCRATCH], err);
    if (st != PT_OK) return st;
    vae_swap(a);
    return PT_OK;
}

pt_status vae_attention(sd_runtime *rt, vae_acts *a, const sd_norm *norm, const sd_attn *at,
                        int64_t n_pix, pt_error *err) {
    /* scratch: [n_pix][c] GroupNorm(x), then the attention's own scratch */
    size_t n = (size_t)n_pix * (size_t)at->dim;
    pt_status st = vae_acts_need(rt, a, 1 - a->cur, n, err);
    if (st == PT_OK)
        st = vae_acts_need(rt, a, VAE_SCRATCH, n + sd_attn_scratch_floats(at, 1, n_pix, n_pix), err);
    float *xn = a->buf[VAE_SCRATCH];
    if (st == PT_OK) st = sd_groupnorm_run(rt, norm, xn, vae_x(a), 1, n_pix, false, err);
    if (st == PT_OK) st = sd_attn_run(rt, at, vae_y(a), xn, 1, n_pix, xn, n_pix, xn + n, err);
    if (st != PT_OK) return st;
    sd_add_run(rt, vae_y(a), vae_x(a), (int64_t)n); /* residual_connection */
    vae_swap(a);
    return PT_OK;
}

pt_status vae_upsample(sd_runtime *rt, vae_acts *a, int *h, int *w, int c, pt_error *err) {
    pt_status st = vae_acts_need(rt, a, 1 - a->cur, (size_t)4 * *h * *w * c, err);
    if (st != PT_OK) return st;
    sd_upsample_run(rt, vae_y(a), vae_x(a), 1, *h, *w, c);
    vae_swap(a);
    *h *= 2, *w *= 2;
    return PT_OK;
}
