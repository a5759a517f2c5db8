/*
 * test_sd_nn.c — the image graphs' shared layers (sd_nn.h) against plain
 * C references on random shapes with odd sizes:
 *   - sd_conv (3x3 and 1x1, stride 1 and 2, c_in 4 and 36: rows padded
 *     from 36 / 324 to 64 / 352) against pt_conv2d_ref (direct, double),
 *     on the float path (weights as stored, F32) and on the Q8_0 path
 *     (weights quantized at load), each output within a bound derived
 *     per output; thread counts 1 and 3 bitwise equal;
 *   - sd_linear with 48 input columns (padded to 64 when quantized);
 *   - GroupNorm (+SiLU) over images larger than one statistics chunk,
 *     against pt_groupnorm_ref; 1 and 3 threads bitwise equal;
 *   - multi-head attention, full and causal, against pt_attn_full_ref;
 *   - the memory accounting returning to zero once layers are freed.
 */
#include "check.h"

#include "image_ops.h"
#include "quant.h"
#include "sd_nn.h"
#include "sd_test.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* xorshift64*: a fixed sequence of uniform values in [-1, 1). */
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float frand(void) {
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (float)((double)((rng * 2685821657736338717ull) >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}
static void fill(float *x, size_t n, float scale) {
    for (size_t i = 0; i < n; i++) x[i] = frand() * scale;
}

static sd_tensor f32_tensor(const float *data, int n_dims, int64_t a, int64_t b, int64_t c,
                            int64_t d) {
    /* caller memory: from_file false, so preparing never gives its pages away */
    sd_tensor t = {PT_TYPE_F32, n_dims, {a, b, c, d}, SD_LAYOUT_TORCH, 0, data,
                   (uint64_t)(a * b * c * d) * sizeof(float), false};
    return t;
}

/* ---- conv ------------------------------------------------------------------- */

typedef struct conv_case {
    int n, h, w, c_in, c_out, k, stride, pad;
} conv_case;

/* The layer's effective weight (as its kernels see it: dequantized for
 * Q8_0) back in torch layout [c_out][c_in][k][k]. */
static void effective_weight(const sd_conv *c, float *wt) {
    float *row = malloc((size_t)c->mm.k_pad * sizeof(float));
    for (int o = 0; o < c->c_out; o++) {
        pt_weight_row(&c->mm.w, o, row);
        for (int ci = 0; ci < c->c_in; ci++)
            for (int ky = 0; ky < c->k; ky++)
                for (int kx = 0; kx < c->k; kx++)
                    wt[((o * c->c_in + ci) * c->k + ky) * c->k + kx] =
                        row[(ky * c->k + kx) * c->c_in + ci];
        for (int i = c->k * c->k * c->c_in; i < c->mm.k_pad; i++)
            CHECK(row[i] == 0.0f, "padding column %d of row %d is %g", i, o, row[i]);
    }
    free(row);
}

/* Per output (image, pixel, o): S = sum |w| |x| + |b| (float rounding
 * scale) and A = sum over the 32-blocks k of the im2col row of
 * (amax_k / 254) * sum_{i in k} |w[o][i]| (the int8 activation rounding
 * bound of qmatmul.h), both from a hand-written im2col. */
static void bounds(const conv_case *cc, const float *x, const float *wt, const float *b,
                   int64_t k_pad, double *S, double *A) {
    k_pad = (k_pad + 31) / 32 * 32; /* a float 1x1 layer keeps c_in columns: pad here */
    const int h_out = pt_conv_out_size(cc->h, cc->k, cc->stride, cc->pad);
    const int w_out = pt_conv_out_size(cc->w, cc->k, cc->stride, cc->pad);
    float *col = calloc((size_t)k_pad, sizeof(float));
    float *wr = calloc((size_t)k_pad, sizeof(float));
    size_t out = 0;
    for (int img = 0; img < cc->n; img++)
        for (int oy = 0; oy < h_out; oy++)
            for (int ox = 0; ox < w_out; ox++) {
                memset(col, 0, (size_t)k_pad * sizeof(float));
                for (int ky = 0; ky < cc->k; ky++)
                    for (int kx = 0; kx < cc->k; kx++) {
                        const int iy = oy * cc->stride - cc->pad + ky;
                        const int ix = ox * cc->stride - cc->pad + kx;
                        if (iy < 0 || iy >= cc->h || ix < 0 || ix >= cc->w) continue;
                        for (int ci = 0; ci < cc->c_in; ci++)
                            col[(ky * cc->k + kx) * cc->c_in + ci] =
                                x[(((size_t)img * cc->h + iy) * cc->w + ix) * cc->c_in + ci];
                    }
                for (int o = 0; o < cc->c_out; o++, out++) {
                    memset(wr, 0, (size_t)k_pad * sizeof(float));
                    for (int ci = 0; ci < cc->c_in; ci++)
                        for (int ky = 0; ky < cc->k; ky++)
                            for (int kx = 0; kx < cc->k; kx++)
                                wr[(ky * cc->k + kx) * cc->c_in + ci] =
                                    wt[((o * cc->c_in + ci) * cc->k + ky) * cc->k + kx];
                    double s = fabs(b[o]), a = 0;
                    for (int64_t k0 = 0; k0 < k_pad; k0 += 32) {
                        double amax = 0, wsum = 0;
                        for (int i = 0; i < 32; i++) {
                            s += fabs((double)wr[k0 + i] * col[k0 + i]);
                            amax = fmax(amax, fabs(col[k0 + i]));
                            wsum += fabs(wr[k0 + i]);
                        }
                        a += amax / 254.0 * wsum;
                    }
                    S[out] = s;
                    A[out] = a;
                }
            }
    free(col);
    free(wr);
}

/* Run case cc under policy on 1 and 3 threads; check against the oracle. */
static void test_conv_case(const conv_case *cc, sd_weight_policy policy) {
    const int h_out = pt_conv_out_size(cc->h, cc->k, cc->stride, cc->pad);
    const int w_out = pt_conv_out_size(cc->w, cc->k, cc->stride, cc->pad);
    const size_t nx = (size_t)cc->n * cc->h * cc->w * cc->c_in;
    const size_t img_out = (size_t)h_out * w_out * cc->c_out, ny = img_out * cc->n;
    const size_t nw = (size_t)cc->c_out * cc->c_in * cc->k * cc->k;
    float *x = malloc(nx * sizeof(float)), *wt = malloc(nw * sizeof(float));
    float *b = malloc((size_t)cc->c_out * sizeof(float)), *eff = malloc(nw * sizeof(float));
    float *add = malloc(ny * sizeof(float)), *ref = malloc(ny * sizeof(float));
    float *y1 = malloc(ny * sizeof(float)), *y3 = malloc(ny * sizeof(float));
    fill(x, nx, 2.0f);
    fill(wt, nw, 0.3f);
    fill(b, (size_t)cc->c_out, 0.5f);
    fill(add, ny, 1.0f);
    const sd_tensor tw = f32_tensor(wt, 4, cc->c_out, cc->c_in, cc->k, cc->k);
    const sd_tensor tb = f32_tensor(b, 1, cc->c_out, 1, 1, 1);
    float *ys[2] = {y1, y3};
    const int threads[2] = {1, 3};
    int64_t k_pad = 0;
    bool packed = false;
    for (int t = 0; t < 2; t++) {
        sd_runtime *rt = sdt_runtime(NULL, threads[t], policy);
        sd_conv c;
        pt_error err = {0};
        pt_status st = sd_conv_init(rt, &tw, &tb, "test.conv", cc->c_in, cc->c_out, cc->k,
                                    cc->stride, cc->pad, &c, &err);
        CHECK(st == PT_OK, "sd_conv_init: %s", err.msg);
        if (st) exit(1);
        if (t == 0) {
            effective_weight(&c, eff);
            k_pad = c.mm.k_pad;
            packed = c.mm.w.packed != NULL;
        }
        sd_rt_begin(rt);
        st = sd_conv_run(rt, &c, x, cc->n, cc->h, cc->w, ys[t], add, &err);
        sd_rt_end(rt);
        CHECK(st == PT_OK, "sd_conv_run: %s", err.msg);
        sd_conv_free(rt, &c);
        const sd_mem m = sd_rt_mem(rt);
        CHECK(m.weights == 0 && m.mapped == 0, "weights still counted after free: %llu + %llu",
              (unsigned long long)m.weights, (unsigned long long)m.mapped);
        sd_rt_free(rt);
    }
    CHECK(memcmp(y1, y3, ny * sizeof(float)) == 0,
          "conv %dx%d s%d c_in %d: 1 and 3 threads differ", cc->k, cc->k, cc->stride, cc->c_in);
    if (policy == SD_WEIGHTS_STORED) {
        CHECK(memcmp(eff, wt, nw * sizeof(float)) == 0, "stored F32 weights were changed");
        CHECK(k_pad % 32 == 0 || cc->k == 1, "k_pad %lld", (long long)k_pad);
    } else {
        CHECK(k_pad % 32 == 0, "quantized rows of %lld columns", (long long)k_pad);
        pt_cpu cpu;
        pt_cpu_detect(&cpu);
        if (pt_qweights_supported(PT_TYPE_Q8_0, cc->c_out, k_pad, &cpu))
            CHECK(packed, "Q8_0 weights were not repacked for the int8 kernels");
    }
    /* the oracle on the weights the layer holds (exact for F32; the
     * dequantized Q8_0 rows otherwise), plus add */
    for (int img = 0; img < cc->n; img++)
        pt_conv2d_ref(ref + img * img_out, x + (size_t)img * cc->h * cc->w * cc->c_in, cc->h,
                      cc->w, cc->c_in, eff, b, cc->c_out, cc->k, cc->stride, cc->pad);
    double *S = malloc(ny * sizeof(double)), *A = malloc(ny * sizeof(double));
    bounds(cc, x, eff, b, k_pad ? k_pad : 32, S, A);
    int bad = 0;
    double worst = 0;
    for (size_t i = 0; i < ny; i++) {
        /* float path: float32 sums of at most 352 products in 8 lanes plus
         * 44 group and bias/add steps: relative error below ~60 u = 3.6e-6
         * of S (+ |add|); 1e-5 leaves headroom. Q8_0 path: qmatmul.h's bound
         * A on top (the weights' own rounding is in eff). */
        const double want = (double)ref[i] + add[i];
        const double tol = 1e-5 * (S[i] + fabs(add[i])) + (policy == SD_WEIGHTS_STORED ? 0 : A[i]);
        const double e = fabs((double)y1[i] - want);
        if (e / tol > worst) worst = e / tol;
        if (e > tol && bad++ < 3)
            CHECK(0, "conv %dx%d s%d c_in %d out %zu: %g vs %g (tol %g)", cc->k, cc->k,
                  cc->stride, cc->c_in, i, y1[i], want, tol);
    }
    CHECK(bad == 0, "%d outputs out of bounds", bad);
    /* the Q8_0 path must differ from the float oracle on the original
     * weights by the quantization, not by nothing (a test that cannot fail
     * would also pass if no quantization happened) */
    if (policy != SD_WEIGHTS_STORED) {
        CHECK(memcmp(eff, wt, nw * sizeof(float)) != 0, "Q8_0 weights equal the F32 ones");
        /* and they are the original weights, in the right places, up to
         * Q8_0's rounding: |q d - w| <= d / 2 + 127 |d - fp16(d)| < 0.6 d,
         * d = block amax / 127 <= the row's amax / 127 */
        const size_t per = nw / (size_t)cc->c_out;
        int off = 0;
        for (int o = 0; o < cc->c_out; o++) {
            double amax = 0;
            for (size_t i = 0; i < per; i++) amax = fmax(amax, fabs(wt[o * per + i]));
            for (size_t i = 0; i < per; i++)
                off += fabs((double)eff[o * per + i] - wt[o * per + i]) > 0.6 * amax / 127;
        }
        CHECK(off == 0, "%d Q8_0 weights are not the rounding of the originals", off);
    }
    free(S);
    free(A);
    free(x), free(wt), free(b), free(eff), free(add), free(ref), free(y1), free(y3);
}

static void test_conv(void) {
    const conv_case cases[] = {
        {1, 7, 5, 4, 5, 3, 1, 1},   {2, 9, 6, 36, 7, 3, 2, 1}, {2, 11, 13, 36, 33, 3, 1, 1},
        {1, 5, 7, 36, 33, 1, 1, 0}, {2, 6, 5, 4, 3, 1, 1, 0},  {1, 8, 8, 4, 40, 3, 2, 1},
        {3, 3, 17, 36, 9, 3, 2, 1}, {2, 9, 7, 36, 17, 1, 2, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        test_conv_case(&cases[i], SD_WEIGHTS_STORED);
        test_conv_case(&cases[i], SD_WEIGHTS_Q8_0);
    }
}

/* ---- linear with padded columns --------------------------------------------- */

static void test_linear(void) {
    const int in = 48, out = 20, n = 13;
    float *w = malloc(sizeof(float) * in * out), *b = malloc(sizeof(float) * out);
    float *x = malloc(sizeof(float) * in * n), *y = malloc(sizeof(float) * out * n);
    fill(w, (size_t)in * out, 0.5f);
    fill(b, out, 0.5f);
    fill(x, (size_t)in * n, 3.0f);
    const sd_tensor tw = f32_tensor(w, 2, out, in, 1, 1), tb = f32_tensor(b, 1, out, 1, 1, 1);
    for (int pol = 0; pol < 2; pol++) {
        sd_runtime *rt = sdt_runtime(NULL, 2, pol ? SD_WEIGHTS_Q8_0 : SD_WEIGHTS_STORED);
        sd_linear l;
        pt_error err = {0};
        CHECK(sd_linear_init(rt, &tw, &tb, "lin", in, out, &l, &err) == PT_OK, "%s", err.msg);
        CHECK(l.k_pad == (pol ? 64 : 48), "k_pad %d", l.k_pad);
        sd_rt_begin(rt);
        CHECK(sd_linear_run(rt, &l, x, n, y, &err) == PT_OK, "%s", err.msg);
        sd_rt_end(rt);
        float row[64];
        for (int o = 0; o < out; o++) {
            pt_weight_row(&l.w, o, row);
            for (int t = 0; t < n; t++) {
                double want = b[o], s = fabs(b[o]), a = 0;
                for (int i = 0; i < in; i++) {
                    want += (double)row[i] * x[t * in + i];
                    s += fabs((double)row[i] * x[t * in + i]);
                }
                for (int k0 = 0; k0 < 64; k0 += 32) { /* qmatmul.h's activation bound */
                    double amax = 0, ws = 0;
                    for (int i = k0; i < k0 + 32 && i < in; i++) {
                        amax = fmax(amax, fabs(x[t * in + i]));
                        ws += fabs(row[i]);
                    }
                    a += amax / 254 * ws;
                }
                /* float32 rounding as in test_conv (1e-5 of S), + A when int8 */
                const double tol = 1e-5 * s + (l.w.packed ? a : 0);
                CHECK(fabs(y[t * out + o] - want) <= tol, "linear %s [%d][%d]: %g vs %g",
                      pol ? "Q8_0" : "F32", t, o, y[t * out + o], want);
            }
        }
        sd_linear_free(rt, &l);
        sd_rt_free(rt);
    }
    free(w), free(b), free(x), free(y);
}

/* ---- GroupNorm ---------------------------------------------------------------- */

static void test_groupnorm(void) {
    const int n = 2, c = 12, groups = 4;
    const int64_t n_pix = 37 * 29; /* three statistics chunks per image */
    const size_t nv = (size_t)n * n_pix * c;
    float *x = malloc(nv * sizeof(float)), *ref = malloc(nv * sizeof(float));
    float *y1 = malloc(nv * sizeof(float)), *y3 = malloc(nv * sizeof(float));
    float g[12], b[12];
    for (size_t i = 0; i < nv; i++) x[i] = frand() * 3.0f + 1.5f; /* a mean away from 0 */
    fill(g, c, 1.0f);
    fill(b, c, 1.0f);
    for (int silu = 0; silu < 2; silu++) {
        for (int img = 0; img < n; img++)
            pt_groupnorm_ref(ref + img * n_pix * c, x + img * n_pix * c, n_pix, c, groups, g, b,
                             1e-5f, silu);
        float *ys[2] = {y1, y3};
        const int threads[2] = {1, 3};
        for (int t = 0; t < 2; t++) {
            sd_runtime *rt = sdt_runtime(NULL, threads[t], SD_WEIGHTS_STORED);
            sd_norm nm = {g, b, c, groups, 1e-5f};
            pt_error err = {0};
            sd_rt_begin(rt);
            CHECK(sd_groupnorm_run(rt, &nm, ys[t], x, n, n_pix, silu, &err) == PT_OK, "%s", err.msg);
            sd_rt_end(rt);
            sd_rt_free(rt);
        }
        CHECK(memcmp(y1, y3, nv * sizeof(float)) == 0, "groupnorm: 1 and 3 threads differ");
        double worst = 0;
        for (size_t i = 0; i < nv; i++) worst = fmax(worst, fabs((double)y1[i] - ref[i]));
        /* chunked double sums vs one sum: mean / rstd round to float the
         * same or one ulp apart, so outputs of magnitude < 6 differ by a few
         * ulp of 6: 1e-5 */
        CHECK(worst <= 1e-5, "groupnorm%s: max error %g", silu ? "+silu" : "", worst);
    }
    free(x), free(ref), free(y1), free(y3);
}

/* ---- attention ------------------------------------------------------------------ */

static void test_mha(void) {
    const int n_seq = 2, heads = 3, D = 8, HD = heads * D;
    const int n_q = 37, n_kv = 45;
    const size_t nq = (size_t)n_seq * n_q * HD, nk = (size_t)n_seq * n_kv * HD;
    float *q = malloc(nq * sizeof(float)), *k = malloc(nk * sizeof(float));
    float *v = malloc(nk * sizeof(float)), *o1 = malloc(nk * sizeof(float));
    float *o3 = malloc(nk * sizeof(float)), *ref = malloc(HD * sizeof(float));
    fill(q, nq, 2.0f);
    fill(k, nk, 2.0f);
    fill(v, nk, 1.0f);
    const float scale = (float)(1.0 / sqrt((double)D));
    for (int causal = 0; causal < 2; causal++) {
        const int nqq = causal ? n_kv : n_q;
        const float *qq = causal ? k : q; /* causal: n_q == n_kv (self-attention) */
        float *os[2] = {o1, o3};
        const int threads[2] = {1, 3};
        for (int t = 0; t < 2; t++) {
            sd_runtime *rt = sdt_runtime(NULL, threads[t], SD_WEIGHTS_STORED);
            pt_error err = {0};
            sd_rt_begin(rt);
            CHECK(sd_mha_run(rt, os[t], qq, k, v, n_seq, nqq, n_kv, heads, D, causal, &err) == PT_OK,
                  "%s", err.msg);
            sd_rt_end(rt);
            sd_rt_free(rt);
        }
        CHECK(memcmp(o1, o3, (size_t)n_seq * nqq * HD * sizeof(float)) == 0,
              "attention: 1 and 3 threads differ");
        double worst = 0;
        for (int s = 0; s < n_seq; s++)
            for (int i = 0; i < nqq; i++)
                for (int h = 0; h < heads; h++) {
                    const int64_t off = ((int64_t)s * nqq + i) * HD + h * D;
                    const int64_t koff = (int64_t)s * n_kv * HD + h * D;
                    pt_attn_full_ref(ref, D, qq + off, HD, 1, k + koff, HD, v + koff, HD,
                                     causal ? i + 1 : n_kv, D, scale);
                    for (int d = 0; d < D; d++) worst = fmax(worst, fabs(o1[off + d] - ref[d]));
                }
        /* a convex combination of values in [-1, 1], with petrel's exp
         * (about 2 ulp) and float running sums over <= 45 keys: 1e-5 */
        CHECK(worst <= 1e-5, "attention%s: max error %g", causal ? " (causal)" : "", worst);
    }
    pt_error err = {0};
    sd_runtime *rt = sdt_runtime(NULL, 1, SD_WEIGHTS_STORED);
    CHECK(sd_mha_run(rt, o1, q, k, v, 1, 3, 4, 1, D, true, &err) == PT_ERR_ARG,
          "causal attention with n_q != n_kv accepted");
    sd_rt_free(rt);
    free(q), free(k), free(v), free(o1), free(o3), free(ref);
}

/* ---- small exact ops ------------------------------------------------------------- */

static void test_exact_ops(void) {
    sd_runtime *rt = sdt_runtime(NULL, 3, SD_WEIGHTS_STORED);
    const int n = 2, h = 3, w = 5, c = 3;
    float x[2 * 3 * 5 * 3], up[2 * 6 * 10 * 3], cat[2 * 15 * 5];
    fill(x, sizeof x / sizeof x[0], 1.0f);
    sd_rt_begin(rt);
    sd_upsample_run(rt, up, x, n, h, w, c);
    sd_concat_run(rt, cat, x, 3, x, 2, n * h * w); /* b reads x as 2-channel rows */
    sd_rt_end(rt);
    int bad = 0;
    for (int i = 0; i < n; i++)
        for (int yy = 0; yy < 2 * h; yy++)
            for (int xx = 0; xx < 2 * w; xx++)
                for (int ch = 0; ch < c; ch++)
                    bad += up[((i * 2 * h + yy) * 2 * w + xx) * c + ch] !=
                           x[((i * h + yy / 2) * w + xx / 2) * c + ch];
    CHECK(bad == 0, "upsample: %d wrong values", bad);
    bad = 0;
    for (int p = 0; p < n * h * w; p++)
        for (int ch = 0; ch < 5; ch++)
            bad += cat[p * 5 + ch] != (ch < 3 ? x[p * 3 + ch] : x[p * 2 + ch - 3]);
    CHECK(bad == 0, "concat: %d wrong values", bad);
    sd_rt_free(rt);
}

int main(void) {
    test_conv();
    test_linear();
    test_groupnorm();
    test_mha();
    test_exact_ops();
    return check_done("sd_nn");
}
