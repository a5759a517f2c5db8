/*
 * test_opencl_sd_ops.c — every op of the image graphs on OpenCL
 * (sd_opencl.h: conv.cl, sd_ops.cl, the float matmul) against the CPU's
 * layers (sd_nn.h on the plain C kernels' results: the image graphs'
 * reference), on random inputs of random and odd shapes: convolutions
 * (3x3 stride 1 and 2, 1x1; any channel counts; bias; the residual add;
 * F32 and F16 weights), Linear (F32, F16), GroupNorm with and without the fused SiLU (also in place;
 * statistics over one and over many of the kernel's slices of pixels),
 * LayerNorm, SiLU, GELU, GEGLU, nearest 2x up-sampling, concatenation,
 * non-causal multi-head attention (self and cross shapes, query and key
 * counts across the kernels' tiles, the tiled kernels' head sizes and the
 * larger ones of the other kernel) and the Attention module, and a
 * ResNet block with its time embedding; Q8_0 and Q4_0 Linear and
 * convolutions and a Q4_1 Linear (kept in their blocks on the device) and the bytes the
 * device holds for them (test_qlinear's comment has their tolerances).
 *
 * Tolerance: the largest absolute difference from the CPU's result within
 * TOL times the CPU result's largest magnitude (or 1 when that is
 * smaller). Both sides are float32 arithmetic in another order (the CPU
 * sums norms' statistics in double, the device in float; exp and erf of
 * two libraries), so the differences are rounding, about 1e-6 relative;
 * 1e-4 leaves a margin of 100 that a wrong index or a lost term (errors
 * of order 1) cannot pass. Measured on PoCL: at most 6e-7.
 */
#include "check.h"
#include "opencl_test.h"
#include "sd_opencl.h"
#include "sd_test.h"

#include "image_ops.h"
#include "ocl.h"
#include "quant.h"

#include <math.h>

#define TOL 1e-4

static sd_runtime *rt;
static sd_ocl *dev;
static double worst_rel; /* the largest difference seen, relative to its magnitude */

/* A device buffer holding v [n] (NULL: as it is): the graphs' slots taken
 * round-robin, so a test's few buffers never share one. */
static pt_ocl_mem *up(const float *v, size_t n) {
    static int next = SD_OCL_SLOT_USER;
    pt_error err = {0};
    if (next >= SD_OCL_SLOTS) next = SD_OCL_SLOT_USER;
    pt_ocl_mem *b = sd_ocl_slot(dev, next++, n, &err);
    if (!b || (v && sd_ocl_write(dev, b, v, n, &err) != PT_OK)) {
        fprintf(stderr, "device buffer: %s\n", err.msg);
        exit(1);
    }
    return b;
}

/* got (device, n floats) against ref: within tol of max(1, max |ref|);
 * the largest relative difference into *worst_seen. */
static void compare_tol(const char *what, pt_ocl_mem *got, const float *ref, size_t n, double tol,
                        double *worst_seen) {
    float *g = malloc(n * sizeof *g + 4);
    pt_error err = {0};
    CHECK(sd_ocl_read(dev, got, g, n, &err) == PT_OK, "%s: read: %s", what, err.msg);
    double worst = 0, mag = 1;
    bool finite = true;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(g[i])) finite = false;
        worst = fmax(worst, fabs((double)g[i] - ref[i]));
        mag = fmax(mag, fabs((double)ref[i]));
    }
    if (worst / mag > *worst_seen) *worst_seen = worst / mag;
    CHECK(finite && worst <= tol * mag, "%s: max diff %.3g (magnitude %.3g)", what, worst, mag);
    free(g);
}

static void compare(const char *what, pt_ocl_mem *got, const float *ref, size_t n) {
    compare_tol(what, got, ref, n, TOL, &worst_rel);
}

static sd_tensor f32_tensor(const float *data, int n_dims, int64_t a, int64_t b, int64_t c,
                            int64_t d) {
    sd_tensor t = {PT_TYPE_F32, n_dims, {a, b, c, d}, SD_LAYOUT_TORCH, 0, data,
                   (uint64_t)(a * b * c * d) * sizeof(float), false};
    return t;
}

/* The same matrix as F16 (the weights' values rounded to it in place),
 * in *keep, which must outlive the layer. */
static sd_tensor as_f16(float *v, sd_tensor t, uint16_t **keep) {
    const size_t n = t.nbytes / sizeof(float);
    *keep = malloc(n * sizeof **keep);
    for (size_t i = 0; i < n; i++) {
        (*keep)[i] = pt_f32_to_fp16(v[i]);
        v[i] = pt_fp16_to_f32((*keep)[i]);
    }
    t.type = PT_TYPE_F16;
    t.data = *keep;
    t.nbytes = n * 2;
    return t;
}

/* ---- products ---------------------------------------------------------------- */

static void test_conv(int k, int stride, int pad, bool add, bool f16) {
    const int n = irand(1, 2), c_in = irand(1, 37), c_out = irand(1, 29);
    const int h = irand(k, 13), w = irand(k, 11);
    float *wt = rand_vec((size_t)c_out * c_in * k * k, 0.5f), *b = rand_vec((size_t)c_out, 1.0f);
    sd_tensor tw = f32_tensor(wt, 4, c_out, c_in, k, k);
    const sd_tensor tb = f32_tensor(b, 1, c_out, 1, 1, 1);
    uint16_t *half = NULL;
    if (f16) tw = as_f16(wt, tw, &half);
    sd_conv c;
    pt_error err = {0};
    CHECK(sd_conv_init(rt, &tw, &tb, "conv", c_in, c_out, k, stride, pad, &c, &err) == PT_OK, "%s",
          err.msg);
    const int ho = pt_conv_out_size(h, k, stride, pad), wo = pt_conv_out_size(w, k, stride, pad);
    const size_t nx = (size_t)n * h * w * c_in, ny = (size_t)n * ho * wo * c_out;
    float *x = rand_vec(nx, 1.0f), *r = rand_vec(ny, 1.0f), *y = malloc(ny * sizeof *y);
    CHECK(sd_conv_run(rt, &c, x, n, h, w, y, add ? r : NULL, &err) == PT_OK, "%s", err.msg);
    pt_ocl_mem *dx = up(x, nx), *dy = up(NULL, ny), *dr = add ? up(r, ny) : NULL;
    CHECK(sd_ocl_conv(dev, &c, dx, n, h, w, dy, dr, &err) == PT_OK, "%s", err.msg);
    char what[128];
    snprintf(what, sizeof what, "conv %dx%d/%d %d -> %d, %d x %dx%d%s%s", k, k, stride, c_in, c_out,
             n, h, w, add ? " + add" : "", f16 ? ", F16" : "");
    compare(what, dy, y, ny);
    sd_ocl_forget_weights(dev, -1); /* the layer goes: its address may come back */
    sd_conv_free(rt, &c);
    free(wt), free(b), free(x), free(r), free(y), free(half);
}

static void test_linear(bool f16) {
    const int in = irand(1, 70), out = irand(1, 45), n = irand(1, 40);
    float *wt = rand_vec((size_t)out * in, 0.5f), *b = rand_vec((size_t)out, 1.0f);
    sd_tensor tw = f32_tensor(wt, 2, out, in, 1, 1);
    const sd_tensor tb = f32_tensor(b, 1, out, 1, 1, 1);
    uint16_t *half = NULL;
    if (f16) tw = as_f16(wt, tw, &half);
    sd_linear l;
    pt_error err = {0};
    CHECK(sd_linear_init(rt, &tw, &tb, "linear", in, out, &l, &err) == PT_OK, "%s", err.msg);
    float *x = rand_vec((size_t)n * in, 1.0f), *y = malloc((size_t)n * out * sizeof *y);
    CHECK(sd_linear_run(rt, &l, x, n, y, &err) == PT_OK, "%s", err.msg);
    pt_ocl_mem *dx = up(x, (size_t)n * in), *dy = up(NULL, (size_t)n * out);
    CHECK(sd_ocl_linear(dev, &l, dx, n, dy, &err) == PT_OK, "%s", err.msg);
    char what[96];
    snprintf(what, sizeof what, "linear %d -> %d over %d rows%s", in, out, n, f16 ? ", F16" : "");
    compare(what, dy, y, (size_t)n * out);
    sd_ocl_forget_weights(dev, -1);
    sd_linear_free(rt, &l);
    free(wt), free(b), free(x), free(y), free(half);
}

/* ---- quantized products ---------------------------------------------------------- */

/* Q8_0 / Q4_0 layers (the policies quantize the random float weights at
 * load) and a Linear stored in Q4_1 (kept as stored), on runtimes that repack them for the int8 kernels (the device
 * reads the blocks back from the packed copy) and on "ref" (no repacking:
 * the device copies the CPU's blocks). Two references:
 *   - float: the product in double of the CPU's dequantized weights
 *     (pt_weight_row) and the float input: the device multiplies the same
 *     values in float, so TOL holds (measured: at most 6.3e-7);
 *   - the CPU's layer, which multiplies the int8 quantization of each
 *     input block (qmatmul.h): that rounding, up to half a step of
 *     max|x| / 127 per value, dominates; measured at most 4.8e-3 of the
 *     result's magnitude (Q8_0 and Q4_0 alike: the rounding is the
 *     input's), Q_TOL = 2e-2 (a lost block or a wrong scale is of order
 *     1).
 * And the device's bytes: rows of k_pad / 32 blocks (34 bytes a block for
 * Q8_0, 18 for Q4_0, 20 for Q4_1) plus the float bias. */
#define Q_TOL 2e-2
static sd_runtime *rt_q[2][2]; /* [Q8_0, Q4_0][repacking, "ref"] */
static sd_runtime *rt_stored[2]; /* [repacking, "ref"] */
static double worst_q_float, worst_q_cpu;

static void check_qbytes(const char *what, uint32_t type, int rows, int k) {
    const uint64_t k_pad = ((uint64_t)k + 31) / 32 * 32;
    const uint64_t block = type == PT_TYPE_Q8_0 ? 34 : type == PT_TYPE_Q4_0 ? 18 : 20;
    const uint64_t want = (uint64_t)rows * (k_pad / 32) * block + (uint64_t)rows * sizeof(float);
    const uint64_t got = sd_ocl_weight_bytes(dev, -1);
    CHECK(got == want, "%s: the device holds %llu weight bytes, the blocks are %llu", what,
          (unsigned long long)got, (unsigned long long)want);
}

/* y [n][out] = x [n][in] W^T + b in double, W the dequantized rows of l. */
static void qlinear_ref(const sd_linear *l, const float *x, int64_t n, float *y) {
    float *row = malloc((size_t)l->w.cols * sizeof *row);
    for (int r = 0; r < l->out; r++) {
        pt_weight_row(&l->w, r, row);
        for (int64_t t = 0; t < n; t++) {
            double acc = l->bias ? l->bias[r] : 0.0;
            for (int c = 0; c < l->in; c++) acc += (double)row[c] * x[t * l->in + c];
            y[t * l->out + r] = (float)acc;
        }
    }
    free(row);
}

/* q 0, 1: Q8_0, Q4_0 by the policy; 2: a Q4_1 matrix as stored (a GGUF's
 * Linear; whole blocks), on a runtime of the stored policy. */
static void test_qlinear(int q, int variant) {
    sd_runtime *r = q < 2 ? rt_q[q][variant] : rt_stored[variant];
    const int in = q < 2 && irand(0, 2) ? irand(1, 90) : 32 * irand(1, 3), out = irand(1, 45);
    const int n = irand(1, 40);
    float *wt = rand_vec((size_t)out * in, 0.5f), *b = rand_vec((size_t)out, 1.0f);
    sd_tensor tw = f32_tensor(wt, 2, out, in, 1, 1);
    const sd_tensor tb = f32_tensor(b, 1, out, 1, 1, 1);
    const size_t rb = pt_type_row_bytes(PT_TYPE_Q4_1, in);
    uint8_t *q41 = q == 2 ? malloc((size_t)out * rb) : NULL;
    if (q41) {
        for (int o = 0; o < out; o++)
            pt_quantize_row(PT_TYPE_Q4_1, wt + (size_t)o * in, q41 + (size_t)o * rb, in);
        tw.type = PT_TYPE_Q4_1;
        tw.data = q41;
        tw.nbytes = (uint64_t)out * rb;
    }
    sd_linear l;
    pt_error err = {0};
    CHECK(sd_linear_init(r, &tw, &tb, "qlinear", in, out, &l, &err) == PT_OK, "%s", err.msg);
    const uint32_t type = q == 2 ? PT_TYPE_Q4_1 : q ? PT_TYPE_Q4_0 : PT_TYPE_Q8_0;
    CHECK(l.w.type == type, "the policy gave %s", pt_type_name(l.w.type));
    float *x = rand_vec((size_t)n * in, 1.0f), *y = malloc((size_t)n * out * sizeof *y);
    float *yf = malloc((size_t)n * out * sizeof *yf);
    sd_rt_begin(r);
    CHECK(sd_linear_run(r, &l, x, n, y, &err) == PT_OK, "%s", err.msg);
    sd_rt_end(r);
    qlinear_ref(&l, x, n, yf);
    pt_ocl_mem *dx = up(x, (size_t)n * in), *dy = up(NULL, (size_t)n * out);
    CHECK(sd_ocl_linear(dev, &l, dx, n, dy, &err) == PT_OK, "%s", err.msg);
    char what[128];
    snprintf(what, sizeof what, "linear %d -> %d over %d rows, %s%s", in, out, n,
             pt_type_name(type), variant ? " (ref)" : "");
    compare_tol(what, dy, yf, (size_t)n * out, TOL, &worst_q_float);
    compare_tol(what, dy, y, (size_t)n * out, Q_TOL, &worst_q_cpu);
    check_qbytes(what, type, out, in);
    sd_ocl_forget_weights(dev, -1);
    CHECK(sd_ocl_weight_bytes(dev, -1) == 0, "forgotten weights still count");
    sd_linear_free(r, &l);
    free(wt), free(b), free(x), free(y), free(yf), free(q41);
}

static void test_qconv(int q, int variant, int k, int stride) {
    sd_runtime *r = rt_q[q][variant];
    const int pad = k / 2, n = irand(1, 2), c_in = irand(1, 37), c_out = irand(1, 29);
    const int h = irand(k, 13), w = irand(k, 11);
    float *wt = rand_vec((size_t)c_out * c_in * k * k, 0.5f), *b = rand_vec((size_t)c_out, 1.0f);
    const sd_tensor tw = f32_tensor(wt, 4, c_out, c_in, k, k), tb = f32_tensor(b, 1, c_out, 1, 1, 1);
    sd_conv c;
    pt_error err = {0};
    CHECK(sd_conv_init(r, &tw, &tb, "qconv", c_in, c_out, k, stride, pad, &c, &err) == PT_OK, "%s",
          err.msg);
    const uint32_t type = q ? PT_TYPE_Q4_0 : PT_TYPE_Q8_0;
    const int ho = pt_conv_out_size(h, k, stride, pad), wo = pt_conv_out_size(w, k, stride, pad);
    const size_t nx = (size_t)n * h * w * c_in, ny = (size_t)n * ho * wo * c_out;
    float *x = rand_vec(nx, 1.0f), *y = malloc(ny * sizeof *y), *yf = malloc(ny * sizeof *yf);
    sd_rt_begin(r);
    CHECK(sd_conv_run(r, &c, x, n, h, w, y, NULL, &err) == PT_OK, "%s", err.msg);
    sd_rt_end(r);
    /* the float reference: the dequantized rows, columns (ky, kx, c_in) */
    float *row = malloc((size_t)c.mm.w.cols * sizeof *row);
    for (int co = 0; co < c_out; co++) {
        pt_weight_row(&c.mm.w, co, row);
        for (int img = 0; img < n; img++)
            for (int oy = 0; oy < ho; oy++)
                for (int ox = 0; ox < wo; ox++) {
                    double acc = b[co];
                    for (int ky = 0; ky < k; ky++)
                        for (int kx = 0; kx < k; kx++) {
                            const int iy = oy * stride - pad + ky, ix = ox * stride - pad + kx;
                            if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                            for (int ci = 0; ci < c_in; ci++)
                                acc += (double)row[(ky * k + kx) * c_in + ci] *
                                       x[(((size_t)img * h + iy) * w + ix) * c_in + ci];
                        }
                    yf[(((size_t)img * ho + oy) * wo + ox) * c_out + co] = (float)acc;
                }
    }
    free(row);
    pt_ocl_mem *dx = up(x, nx), *dy = up(NULL, ny);
    CHECK(sd_ocl_conv(dev, &c, dx, n, h, w, dy, NULL, &err) == PT_OK, "%s", err.msg);
    char what[128];
    snprintf(what, sizeof what, "conv %dx%d/%d %d -> %d, %d x %dx%d, %s%s", k, k, stride, c_in,
             c_out, n, h, w, pt_type_name(type), variant ? " (ref)" : "");
    compare_tol(what, dy, yf, ny, TOL, &worst_q_float);
    compare_tol(what, dy, y, ny, Q_TOL, &worst_q_cpu);
    check_qbytes(what, type, c_out, k * k * c_in);
    sd_ocl_forget_weights(dev, -1);
    sd_conv_free(r, &c);
    free(wt), free(b), free(x), free(y), free(yf);
}

/* ---- norms ------------------------------------------------------------------------ */

static void groupnorm_case(int n, int64_t n_pix, int c, int groups, bool silu, bool in_place) {
    const size_t nx = (size_t)n * n_pix * c;
    sd_norm nm = {rand_vec((size_t)c, 1.0f), rand_vec((size_t)c, 1.0f), c, groups, 1e-5f};
    float *x = rand_vec(nx, 2.0f), *y = malloc(nx * sizeof *y);
    for (size_t i = 0; i < nx; i++) x[i] += 0.5f; /* a mean away from 0 */
    pt_error err = {0};
    CHECK(sd_groupnorm_run(rt, &nm, y, x, n, n_pix, silu, &err) == PT_OK, "%s", err.msg);
    pt_ocl_mem *dx = up(x, nx), *dy = in_place ? dx : up(NULL, nx);
    CHECK(sd_ocl_groupnorm(dev, &nm, dy, dx, n, n_pix, silu, &err) == PT_OK, "%s", err.msg);
    char what[128];
    snprintf(what, sizeof what, "groupnorm %d ch / %d groups, %d x %lld px%s%s", c, groups, n,
             (long long)n_pix, silu ? ", silu" : "", in_place ? ", in place" : "");
    compare(what, dy, y, nx);
    sd_ocl_forget_weights(dev, -1);
    free(nm.gamma), free(nm.beta), free(x), free(y);
}

static void test_groupnorm(bool silu, bool in_place) {
    const int groups = irand(1, 8), c = groups * irand(1, 5), n = irand(1, 2);
    groupnorm_case(n, irand(1, 700), c, groups, silu, in_place);
}

/* Shapes whose statistics span several of the kernel's slices of pixels
 * (about 2048 values of a group each, ocl_impl.h's GN_SLICE_VALUES), the
 * last one shorter: channels per group of 1 (slices of 2048 pixels), 4
 * (the VAE's 128 / 32; 512), 40 (SD's 1280 / 32; 51), more than a slice
 * (slices of one pixel), and a random one. */
static void test_groupnorm_slices(void) {
    for (int i = 0; i < 2; i++) {
        const bool silu = i, in_place = !i;
        groupnorm_case(1, 2 * 2048 + 3, 2, 2, silu, in_place);
        groupnorm_case(2, 9 * 512 + 17, 128, 32, silu, in_place);
        groupnorm_case(2, 33 * 51 + 50, 80, 2, silu, in_place);
        groupnorm_case(1, 3, 4100, 2, silu, in_place);
        const int groups = irand(1, 8);
        groupnorm_case(irand(1, 3), irand(2000, 9000), groups * irand(1, 12), groups, silu, in_place);
    }
}

static void test_layernorm(void) {
    const int c = irand(1, 300), rows = irand(1, 50);
    const size_t nx = (size_t)rows * c;
    sd_norm nm = {rand_vec((size_t)c, 1.0f), rand_vec((size_t)c, 1.0f), c, 0, 1e-5f};
    float *x = rand_vec(nx, 3.0f), *y = malloc(nx * sizeof *y);
    sd_layernorm_run(rt, &nm, y, x, rows);
    pt_ocl_mem *dx = up(x, nx), *dy = up(NULL, nx);
    pt_error err = {0};
    CHECK(sd_ocl_layernorm(dev, &nm, dy, dx, rows, &err) == PT_OK, "%s", err.msg);
    char what[64];
    snprintf(what, sizeof what, "layernorm %d rows of %d", rows, c);
    compare(what, dy, y, nx);
    sd_ocl_forget_weights(dev, -1);
    free(nm.gamma), free(nm.beta), free(x), free(y);
}

/* ---- element-wise ------------------------------------------------------------------ */

static void test_elementwise(void) {
    pt_error err = {0};
    char what[96];
    for (int f = 0; f < 2; f++) { /* SiLU, GELU */
        const int64_t n = irand(1, 5000);
        float *x = rand_vec((size_t)n, 6.0f);
        pt_ocl_mem *dx = up(x, (size_t)n);
        sd_act_run(rt, f ? SD_GELU : SD_SILU, x, n);
        CHECK(sd_ocl_act(dev, f ? SD_GELU : SD_SILU, dx, n, &err) == PT_OK, "%s", err.msg);
        snprintf(what, sizeof what, "%s of %lld", f ? "gelu" : "silu", (long long)n);
        compare(what, dx, x, (size_t)n);
        free(x);
    }
    { /* GEGLU */
        const int rows = irand(1, 40), inner = irand(1, 90);
        float *x = rand_vec((size_t)rows * 2 * inner, 4.0f), *y = malloc((size_t)rows * inner * 4);
        sd_geglu_run(rt, y, x, rows, inner);
        pt_ocl_mem *dx = up(x, (size_t)rows * 2 * inner), *dy = up(NULL, (size_t)rows * inner);
        CHECK(sd_ocl_geglu(dev, dy, dx, rows, inner, &err) == PT_OK, "%s", err.msg);
        snprintf(what, sizeof what, "geglu %d rows of %d", rows, inner);
        compare(what, dy, y, (size_t)rows * inner);
        free(x), free(y);
    }
    { /* nearest 2x up-sampling */
        const int n = irand(1, 2), h = irand(1, 9), w = irand(1, 7), c = irand(1, 13);
        const size_t nx = (size_t)n * h * w * c;
        float *x = rand_vec(nx, 1.0f), *y = malloc(4 * nx * sizeof *y);
        sd_upsample_run(rt, y, x, n, h, w, c);
        pt_ocl_mem *dx = up(x, nx), *dy = up(NULL, 4 * nx);
        CHECK(sd_ocl_upsample(dev, dy, dx, n, h, w, c, &err) == PT_OK, "%s", err.msg);
        snprintf(what, sizeof what, "upsample %d x %dx%dx%d", n, h, w, c);
        compare(what, dy, y, 4 * nx);
        free(x), free(y);
    }
    { /* concatenation */
        const int ca = irand(1, 21), cb = irand(1, 17);
        const int64_t n_pix = irand(1, 200);
        float *a = rand_vec((size_t)n_pix * ca, 1.0f), *b = rand_vec((size_t)n_pix * cb, 1.0f);
        float *y = malloc((size_t)n_pix * (ca + cb) * sizeof *y);
        sd_concat_run(rt, y, a, ca, b, cb, n_pix);
        pt_ocl_mem *da = up(a, (size_t)n_pix * ca), *db = up(b, (size_t)n_pix * cb);
        pt_ocl_mem *dy = up(NULL, (size_t)n_pix * (ca + cb));
        CHECK(sd_ocl_concat(dev, dy, da, ca, db, cb, n_pix, &err) == PT_OK, "%s", err.msg);
        snprintf(what, sizeof what, "concat %d + %d over %lld px", ca, cb, (long long)n_pix);
        compare(what, dy, y, (size_t)n_pix * (ca + cb));
        free(a), free(b), free(y);
    }
}

/* ---- attention -------------------------------------------------------------------------- */

static void test_mha(int n_seq, int n_q, int n_kv, int heads, int D) {
    const size_t HD = (size_t)heads * D, nq = (size_t)n_seq * n_q * HD, nkv = (size_t)n_seq * n_kv * HD;
    float *q = rand_vec(nq, 1.0f), *k = rand_vec(nkv, 1.0f), *v = rand_vec(nkv, 1.0f);
    float *o = malloc(nq * sizeof *o);
    pt_error err = {0};
    CHECK(sd_mha_run(rt, o, q, k, v, n_seq, n_q, n_kv, heads, D, false, &err) == PT_OK, "%s",
          err.msg);
    pt_ocl_mem *dq = up(q, nq), *dk = up(k, nkv), *dv = up(v, nkv), *dout = up(NULL, nq);
    CHECK(sd_ocl_mha(dev, dout, dq, dk, dv, n_seq, n_q, n_kv, heads, D, &err) == PT_OK, "%s",
          err.msg);
    char what[128];
    snprintf(what, sizeof what, "attention %d seq x %d queries, %d keys, %d heads of %d", n_seq, n_q,
             n_kv, heads, D);
    compare(what, dout, o, nq);
    free(q), free(k), free(v), free(o);
}

/* sd_attn from four random Linear layers (to_q, to_k, to_v without bias,
 * to_out with one), self-attention when ctx_dim is 0. */
static void test_attn_module(int ctx_dim) {
    const int heads = irand(1, 3), D = irand(1, 9), dim = heads * D;
    const bool self = ctx_dim == 0;
    const int cd = self ? dim : ctx_dim, n_seq = irand(1, 2), n_q = irand(1, 70);
    const int n_kv = self ? n_q : irand(1, 20);
    sd_attn a = {.dim = dim, .ctx_dim = cd, .heads = heads, .head_dim = D};
    sd_linear *ls[4] = {&a.q, &a.k, &a.v, &a.out};
    const int ins[4] = {dim, cd, cd, dim};
    float *wts[4], *bias = rand_vec((size_t)dim, 1.0f);
    pt_error err = {0};
    for (int i = 0; i < 4; i++) {
        wts[i] = rand_vec((size_t)dim * ins[i], 0.5f);
        const sd_tensor tw = f32_tensor(wts[i], 2, dim, ins[i], 1, 1);
        const sd_tensor tb = f32_tensor(bias, 1, dim, 1, 1, 1);
        CHECK(sd_linear_init(rt, &tw, i == 3 ? &tb : NULL, "attn", ins[i], dim, ls[i], &err) == PT_OK,
              "%s", err.msg);
    }
    const size_t nx = (size_t)n_seq * n_q * dim, nc = (size_t)n_seq * n_kv * cd;
    float *x = rand_vec(nx, 1.0f), *ctx = self ? x : rand_vec(nc, 1.0f);
    float *y = malloc(nx * sizeof *y);
    float *scratch = malloc(sd_attn_scratch_floats(&a, n_seq, n_q, n_kv) * sizeof(float));
    CHECK(sd_attn_run(rt, &a, y, x, n_seq, n_q, ctx, n_kv, scratch, &err) == PT_OK, "%s", err.msg);
    pt_ocl_mem *dx = up(x, nx), *dc = self ? dx : up(ctx, nc), *dy = up(NULL, nx);
    CHECK(sd_ocl_attn(dev, &a, dy, dx, n_seq, n_q, dc, n_kv, &err) == PT_OK, "%s", err.msg);
    char what[128];
    snprintf(what, sizeof what, "%s-attention module, dim %d (%d heads), %d x %d queries, %d keys",
             self ? "self" : "cross", dim, heads, n_seq, n_q, n_kv);
    compare(what, dy, y, nx);
    sd_ocl_forget_weights(dev, -1);
    for (int i = 0; i < 4; i++) sd_linear_free(rt, ls[i]), free(wts[i]);
    if (!self) free(ctx);
    free(bias), free(x), free(y), free(scratch);
}

/* ---- ResNet block --------------------------------------------------------------------------- */

static void conv_rand(sd_conv *c, float **keep, int c_in, int c_out, int k) {
    keep[0] = rand_vec((size_t)c_out * c_in * k * k, 0.3f);
    keep[1] = rand_vec((size_t)c_out, 0.5f);
    const sd_tensor tw = f32_tensor(keep[0], 4, c_out, c_in, k, k);
    const sd_tensor tb = f32_tensor(keep[1], 1, c_out, 1, 1, 1);
    pt_error err = {0};
    CHECK(sd_conv_init(rt, &tw, &tb, "resnet conv", c_in, c_out, k, 1, k / 2, c, &err) == PT_OK,
          "%s", err.msg);
}

static void test_resnet(void) {
    const int groups = irand(1, 4), c_in = groups * irand(1, 4), c_out = groups * irand(1, 4);
    const int n = irand(1, 2), h = irand(1, 9), w = irand(1, 8), T = irand(1, 24);
    sd_resnet r = {.c_in = c_in, .c_out = c_out, .temb_dim = T, .has_shortcut = c_in != c_out};
    r.norm1 = (sd_norm){rand_vec((size_t)c_in, 1.0f), rand_vec((size_t)c_in, 1.0f), c_in, groups, 1e-5f};
    r.norm2 = (sd_norm){rand_vec((size_t)c_out, 1.0f), rand_vec((size_t)c_out, 1.0f), c_out, groups, 1e-5f};
    float *keep[8] = {0};
    conv_rand(&r.conv1, keep, c_in, c_out, 3);
    conv_rand(&r.conv2, keep + 2, c_out, c_out, 3);
    if (r.has_shortcut) conv_rand(&r.shortcut, keep + 4, c_in, c_out, 1);
    keep[6] = rand_vec((size_t)c_out * T, 0.5f);
    keep[7] = rand_vec((size_t)c_out, 0.5f);
    const sd_tensor tw = f32_tensor(keep[6], 2, c_out, T, 1, 1), tb = f32_tensor(keep[7], 1, c_out, 1, 1, 1);
    pt_error err = {0};
    CHECK(sd_linear_init(rt, &tw, &tb, "temb", T, c_out, &r.temb, &err) == PT_OK, "%s", err.msg);
    const size_t nx = (size_t)n * h * w * c_in, ny = (size_t)n * h * w * c_out;
    float *x = rand_vec(nx, 1.0f), *temb = rand_vec((size_t)n * T, 1.0f), *y = malloc(ny * 4);
    float *scratch = malloc(sd_resnet_scratch_floats(&r, n, (int64_t)h * w) * sizeof(float));
    CHECK(sd_resnet_run(rt, &r, y, x, n, h, w, temb, scratch, &err) == PT_OK, "%s", err.msg);
    pt_ocl_mem *dx = up(x, nx), *dt = up(temb, (size_t)n * T), *dy = up(NULL, ny);
    CHECK(sd_ocl_resnet(dev, &r, dy, dx, n, h, w, dt, &err) == PT_OK, "%s", err.msg);
    char what[128];
    snprintf(what, sizeof what, "resnet %d -> %d (%d groups), %d x %dx%d, temb %d", c_in, c_out,
             groups, n, h, w, T);
    compare(what, dy, y, ny);
    sd_ocl_forget_weights(dev, -1);
    sd_conv_free(rt, &r.conv1);
    sd_conv_free(rt, &r.conv2);
    if (r.has_shortcut) sd_conv_free(rt, &r.shortcut);
    sd_linear_free(rt, &r.temb);
    free(r.norm1.gamma), free(r.norm1.beta), free(r.norm2.gamma), free(r.norm2.beta);
    for (int i = 0; i < 8; i++) free(keep[i]);
    free(x), free(temb), free(y), free(scratch);
}

int main(void) {
    ocl_test_rng = 0x2545f4914f6cdd1dull;
    dev = ocl_test_open_sd("opencl_sd_ops");
    rt = sdt_runtime(NULL, 1, SD_WEIGHTS_STORED);
    sd_rt_begin(rt);
    /* round 0 on the device's own kernels (PoCL: matmul.cl's row kernels),
     * round 1 on the work-group and tiled products a GPU runs */
    for (int i = 0; i < 8; i++) {
        if (i == 4) pt_ocl_use_group_kernels(sd_ocl_driver(dev), true);
        /* odd rounds: an im2col budget of 1 float, so the convolutions run
         * in chunks of the fewest pixels whose rows of y keep a
         * sub-buffer's alignment (32 on PoCL: most test images are
         * larger) */
        sd_ocl_set_conv_cols(dev, i & 1 ? 1 : SD_OCL_CONV_COLS);
        test_conv(3, 1, 1, i & 1, i & 2);
        test_conv(3, 2, 1, false, i & 1);
        test_conv(1, 1, 0, i & 1, i & 2);
        test_linear(false);
        test_linear(true);
        test_groupnorm(i & 1, i & 2);
        test_layernorm();
        test_elementwise();
        test_attn_module(0);
        test_attn_module(irand(1, 12));
        test_resnet();
    }
    test_groupnorm_slices();
    /* attention shapes: a single key and query, query and key counts
     * across the tiled kernel's tiles of 32 and the other's chunks of 64,
     * the UNet's self and cross shapes (77 context rows), head sizes of
     * each tiled kernel (up to 40, 64, 80, 160: SD's 40, 80, 160 and 64,
     * and odd ones) and of the other one (past 160: the VAE's one head of
     * 512, the largest) */
    test_mha(1, 1, 1, 1, 1);
    test_mha(2, 5, 63, 3, 7);
    test_mha(1, 33, 129, 2, 40);
    test_mha(2, 64, 77, 8, 5);
    test_mha(1, 17, 70, 1, 160);
    test_mha(1, 3, 9, 2, PT_OCL_MHA_MAX_D);
    test_mha(1, 70, 70, 1, 500);
    test_mha(2, 100, 77, 2, 40);
    test_mha(1, 97, 97, 2, 40);
    test_mha(1, 65, 33, 2, 80);
    test_mha(1, 47, 95, 1, 160);
    test_mha(1, 31, 31, 2, 64);
    test_mha(2, 33, 1, 1, 41);
    test_mha(1, 40, 35, 1, 79);
    test_mha(1, 9, 40, 3, 159);
    test_mha(1, 29, 45, 1, 161);
    test_mha(1, 33, 65, 1, 512);
    for (int i = 0; i < 6; i++)
        test_mha(irand(1, 2), irand(1, 80), irand(1, 140), irand(1, 4), irand(1, 170));
    sd_rt_end(rt);
    /* Q8_0 and Q4_0, after the rest (their random numbers leave the
     * sequences above as they were): both kernel families, whole and
     * chunked convolutions */
    for (int q = 0; q < 2; q++)
        for (int v = 0; v < 2; v++)
            rt_q[q][v] = sdt_runtime(v ? "ref" : NULL, 1, q ? SD_WEIGHTS_Q4_0 : SD_WEIGHTS_Q8_0);
    for (int v = 0; v < 2; v++) rt_stored[v] = sdt_runtime(v ? "ref" : NULL, 1, SD_WEIGHTS_STORED);
    for (int i = 0; i < 8; i++) {
        pt_ocl_use_group_kernels(sd_ocl_driver(dev), i >= 4);
        sd_ocl_set_conv_cols(dev, i & 1 ? 1 : SD_OCL_CONV_COLS);
        const int q = i & 1, v = (i >> 1) & 1;
        test_qlinear(q, v);
        test_qlinear(2, v);
        test_qconv(q, v, 3, 1);
        test_qconv(q, v, 3, 2);
        test_qconv(q, v, 1, 1);
    }
    for (int q = 0; q < 2; q++)
        for (int v = 0; v < 2; v++) sd_rt_free(rt_q[q][v]);
    for (int v = 0; v < 2; v++) sd_rt_free(rt_stored[v]);
    printf("largest difference: %.3g of the result's magnitude (tolerance %g)\n", worst_rel, TOL);
    printf("Q8_0 / Q4_0 / Q4_1: %.3g against float on the dequantized weights (tolerance %g), %.3g "
           "against the CPU's int8 products (tolerance %g)\n",
           worst_q_float, TOL, worst_q_cpu, Q_TOL);
    sd_ocl_close(dev);
    sd_rt_free(rt);
    return check_done("opencl_sd_ops");
}
