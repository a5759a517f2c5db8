/*
 * sd_conv.c — Conv2d as im2col tiles + the matrix product (sd_nn.h).
 *
 * The output pixels of the whole batch, p in [0, n * h_out * w_out), are
 * cut into tiles of `tile` pixels; each tile is one pool task that, on its
 * thread's own buffers,
 *   cols [tile][k_pad]  = im2col of its pixels (pt_im2col_hwc; a tile may
 *                         span images: one call per image it touches)
 *   qa                  = the int8 quantization of cols (packed weights)
 *   y[p0 .. p1)         = cols x W^T + bias (+ add), rows of c_out: HWC
 * with a one-thread product (pt_matmul_run with a runner of one thread on
 * the task's scratch). Every output value is computed by the same kernel
 * with the same inputs whatever the tiling, so the tile size may follow
 * the thread count without changing results. 1x1 convs of stride 1 need
 * no im2col: they are sd_linear_run over the pixels.
 */
#include "sd_nn_impl.h"

#include "image_ops.h"
#include "ops.h"
#include "status.h"

#include <stdio.h>
#include <string.h>

/* Bytes of im2col columns a tile aims at (per thread), and the bounds of
 * the tile size in pixels. */
#define CONV_TILE_BYTES (512 * 1024)
#define CONV_TILE_MIN 8
#define CONV_TILE_MAX 256

pt_status sd_conv_init(sd_runtime *rt, const sd_tensor *wt, const sd_tensor *bias,
                       const char *name, int c_in, int c_out, int k, int stride, int pad,
                       sd_conv *c, pt_error *err) {
    memset(c, 0, sizeof *c);
    if (c_in < 1 || c_out < 1 || k < 1 || (stride != 1 && stride != 2) || pad < 0 || pad >= k)
        return pt_fail(err, PT_ERR_ARG, "%s: conv %d -> %d, %dx%d, stride %d, pad %d", name,
                       c_in, c_out, k, k, stride, pad);
    if (wt->n_dims != 4 || wt->shape[0] != c_out || wt->shape[1] != c_in || wt->shape[2] != k ||
        wt->shape[3] != k)
        return pt_fail(err, PT_ERR_FORMAT, "tensor %s: shape [%lld, %lld, %lld, %lld] (%d dims), "
                       "expected [%d, %d, %d, %d]", name, (long long)wt->shape[0],
                       (long long)wt->shape[1], (long long)wt->shape[2], (long long)wt->shape[3],
                       wt->n_dims, c_out, c_in, k, k);
    c->c_in = c_in;
    c->c_out = c_out;
    c->k = k;
    c->stride = stride;
    c->pad = pad;
    c->mm.in = k * k * c_in;
    c->mm.out = c_out;
    pt_status st = sd_prepare_matrix(rt, wt, name, c_out, c_in, k, &c->mm, err);
    if (st == PT_OK && bias) st = sd_vector_from_tensor(rt, bias, name, c_out, &c->mm.bias, err);
    if (st) sd_conv_free(rt, c);
    return st;
}

pt_status sd_conv_load(sd_runtime *rt, const sd_weights *w, const char *prefix, int c_in,
                       int c_out, int k, int stride, int pad, sd_conv *c, pt_error *err) {
    memset(c, 0, sizeof *c);
    char wname[SD_NAME_MAX], bname[SD_NAME_MAX];
    sd_name(wname, prefix, ".weight");
    sd_name(bname, prefix, ".bias");
    sd_tensor t, b;
    if (!sd_weights_get(w, wname, &t)) return pt_fail(err, PT_ERR_FORMAT, "missing tensor %s", wname);
    /* a missing bias is none (TAESD's convs after up-sampling) */
    const bool has_bias = sd_weights_get(w, bname, &b);
    return sd_conv_init(rt, &t, has_bias ? &b : NULL, wname, c_in, c_out, k, stride, pad, c, err);
}

void sd_conv_free(sd_runtime *rt, sd_conv *c) {
    if (c) sd_linear_free(rt, &c->mm);
}

typedef struct conv_job {
    sd_runtime *rt;
    const sd_conv *c;
    const float *x;    /* [n][h][w][c_in] */
    float *y;          /* [n][h_out][w_out][c_out] */
    const float *add;  /* like y, or NULL */
    int h, w, h_out, w_out;
    int64_t n_pix;     /* n * h_out * w_out */
    int64_t tile;      /* pixels per task */
} conv_job;

static void conv_task(void *ctx, int task, int n_tasks, int thread) {
    (void)n_tasks;
    const conv_job *j = ctx;
    sd_runtime *rt = j->rt;
    const sd_conv *c = j->c;
    const int64_t k_pad = c->mm.k_pad, hw_out = (int64_t)j->h_out * j->w_out;
    const int64_t p0 = (int64_t)task * j->tile;
    const int64_t p1 = p0 + j->tile < j->n_pix ? p0 + j->tile : j->n_pix;
    if (p0 >= p1) return;
    float *cols = sd_rt_thread_buf(rt, SD_TBUF_COLS, thread);
    for (int64_t p = p0; p < p1;) { /* one im2col call per image the tile touches */
        const int64_t img = p / hw_out, q0 = p - img * hw_out;
        const int64_t q1 = hw_out < q0 + (p1 - p) ? hw_out : q0 + (p1 - p);
        pt_im2col_hwc(cols + (p - p0) * k_pad, k_pad, j->x + img * j->h * j->w * c->c_in, j->h,
                      j->w, c->c_in, c->k, c->stride, c->pad, q0, q1);
        p += q1 - q0;
    }
    pt_qact qa;
    if (sd_int8_input(&c->mm.w)) {
        pt_qact_init(&qa, sd_rt_thread_buf(rt, SD_TBUF_QACT, thread), p1 - p0, k_pad);
        pt_qact_quantize(&rt->cpu, cols, &qa, 0, p1 - p0);
    }
    const pt_matmul_runner one = {&rt->cpu, NULL, 1,
                                  rt->mm_scratch ? rt->mm_scratch + (size_t)thread * rt->mm_scratch_n
                                                 : NULL,
                                  rt->mm_scratch_n, NULL};
    float *y = j->y + p0 * c->c_out;
    const bool int8 = sd_int8_input(&c->mm.w);
    const pt_matmul mj = {1, {&c->mm.w}, {y}, cols, int8 ? &qa : NULL, (int)(p1 - p0), false, int8};
    pt_matmul_run(&one, &mj);
    for (int64_t p = 0; p < p1 - p0; p++) {
        float *yp = y + p * c->c_out;
        if (c->mm.bias) pt_add(yp, c->mm.bias, c->c_out);
        if (j->add) pt_add(yp, j->add + (p0 + p) * c->c_out, c->c_out);
    }
}

pt_status sd_conv_run(sd_runtime *rt, const sd_conv *c, const float *x, int n, int h, int w,
                      float *y, const float *add, pt_error *err) {
    if (n < 1 || h < 1 || w < 1)
        return pt_fail(err, PT_ERR_ARG, "conv: %d images of %dx%d", n, h, w);
    const int h_out = pt_conv_out_size(h, c->k, c->stride, c->pad);
    const int w_out = pt_conv_out_size(w, c->k, c->stride, c->pad);
    if (h_out < 1 || w_out < 1)
        return pt_fail(err, PT_ERR_ARG, "conv: %dx%d input too small for a %dx%d kernel", h, w,
                       c->k, c->k);
    const int64_t n_pix = (int64_t)n * h_out * w_out;
    if (c->k == 1 && c->stride == 1 && c->pad == 0) {
        pt_status st = sd_linear_run(rt, &c->mm, x, n_pix, y, err);
        if (st == PT_OK && add) sd_add_run(rt, y, add, n_pix * c->c_out);
        return st;
    }
    const int64_t k_pad = c->mm.k_pad;
    int64_t tile = CONV_TILE_BYTES / (k_pad * (int64_t)sizeof(float));
    if (tile > CONV_TILE_MAX) tile = CONV_TILE_MAX;
    /* at least two tasks per thread when the image allows (balance) */
    const int64_t fair = (n_pix + 2 * rt->n_threads - 1) / (2 * rt->n_threads);
    if (tile > fair) tile = fair;
    if (tile < CONV_TILE_MIN) tile = CONV_TILE_MIN;
    const int64_t n_tiles = (n_pix + tile - 1) / tile;
    if (n_tiles > PT_POOL_MAX_TASKS) return pt_fail(err, PT_ERR_ARG, "conv: image too large");
    pt_status st = sd_rt_reserve_thread(rt, SD_TBUF_COLS, (size_t)(tile * k_pad) * sizeof(float), err);
    if (st == PT_OK && sd_int8_input(&c->mm.w))
        st = sd_rt_reserve_thread(rt, SD_TBUF_QACT, pt_qact_bytes(tile, k_pad), err);
    if (st) return st;
    conv_job j = {rt, c, x, y, add, h, w, h_out, w_out, n_pix, tile};
    sd_rt_run(rt, conv_task, &j, (int)n_tiles);
    return PT_OK;
}
