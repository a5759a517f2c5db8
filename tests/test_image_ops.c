/*
 * test_image_ops.c — the image kernels of kernels/cpu/image_ops.h.
 *
 * Each reference (*_ref) against a straightforward double-precision
 * formula written here, with a stated tolerance; then every CPU variant
 * this machine runs against the reference, BITWISE (the issue demands
 * that a seed gives the same image on every PETREL_CPU variant), on random
 * odd shapes: channel counts that are not multiples of 4/8/16 lanes, pixel
 * counts that are not multiples of the vector width, head sizes of 20,
 * 33, 36, 40, 64, 80, key counts that are not multiples of the 16-key
 * blocks.
 *
 *   activations  silu, gelu, quick_gelu, geglu vs libm in double
 *   groupnorm    ref vs the two-pass double formula; apply (with and
 *                without silu, gamma/beta NULL) per variant bitwise;
 *                split sums within double rounding of one call
 *   layernorm    ref vs double; variants bitwise
 *   im2col       + a double matmul over reordered (ky, kx, c) weights vs
 *                pt_conv2d_ref (two independent convolutions); pieces
 *                [p0, p1) bitwise the whole; k_pad columns zero
 *   upsample     every output pixel is its source pixel
 *   attention    pt_attn_full vs pt_attn_full_ref (double, two-pass)
 *                within a worst-case float bound; every variant bitwise
 *                the plain one; any split of the queries bitwise the whole
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "check.h"
#include "cpu_features.h"
#include "cpu_variants.h"
#include "image_ops.h"

#define EPS_F ((double)FLT_EPSILON) /* float ulp at 1 */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static float frand(void) { /* uniform in [-1, 1) */
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rng_state >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}
static int irand(int n) { /* uniform in [0, n) */
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (int)((rng_state >> 33) % (uint64_t)n);
}
/* the end of a random piece [p, end) of at most max_len items before n */
static int64_t piece_end(int64_t p, int max_len, int64_t n) {
    const int64_t e = p + 1 + irand(max_len);
    return e < n ? e : n;
}
static float *fmalloc(int64_t n) {
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}
static float *frandom(int64_t n, float mag) {
    float *p = fmalloc(n);
    for (int64_t i = 0; i < n; i++) p[i] = frand() * mag;
    return p;
}
static float *fcopy(const float *x, int64_t n) {
    float *p = fmalloc(n);
    memcpy(p, x, (size_t)n * sizeof(float));
    return p;
}

/* every variant this CPU can run, plain C first */
static pt_cpu cpus[PT_CPU_VARIANT_COUNT];
static int n_cpus;

/* ---- activations ----------------------------------------------------------- */

static double silu_d(double x) { return x / (1.0 + exp(-x)); }
static double gelu_d(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }
static double qgelu_d(double x) { return x / (1.0 + exp(-1.702 * x)); }

/* Values over [-lim, lim] densely, plus edge values. */
static int64_t act_inputs(float *x, int64_t n, float lim) {
    static const float edges[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-7f, -1e-7f, 87.5f, -87.5f,
                                  100.0f, -100.0f, 1e6f, -1e6f};
    int64_t k = 0;
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) x[k++] = edges[i];
    for (; k < n; k++) x[k] = lim * (2.0f * (float)k / (float)n - 1.0f);
    return k;
}

static void test_activation_refs(void) {
    const int64_t n = 400003;
    float *x = fmalloc(n);
    act_inputs(x, n, 20.0f);
    float *s = fcopy(x, n), *g = fcopy(x, n), *q = fcopy(x, n);
    pt_silu_ref(s, n);
    pt_gelu_ref(g, n);
    pt_quick_gelu_ref(q, n);
    /* silu / quick_gelu: exp within 2 ulp (clamped at -87 / 88 where the
     * result is x or ~0 anyway), one add and one division: 6 ulp of the
     * result, plus 1e-30 absolute for results below the clamp (true value
     * < 1e-36 there). gelu: A&S 7.1.26's absolute erf error 1.5e-7 plus a
     * few roundings of 1 + erf (<= 2) scale 0.5 |x|: 2.5e-7 |x|, plus 4
     * ulp of the result. */
    double es = 0, eg = 0, eq = 0;
    bool ok_s = true, ok_g = true, ok_q = true;
    for (int64_t i = 0; i < n; i++) {
        const double xs = x[i];
        const double ws = silu_d(xs), wg = gelu_d(xs), wq = qgelu_d(xs);
        const double ds = fabs(s[i] - ws), dg = fabs(g[i] - wg), dq = fabs(q[i] - wq);
        ok_s &= ds <= 6 * EPS_F * fabs(ws) + 1e-30;
        /* quick_gelu also rounds t = -1.702 x (and 1.702f is not 1.702):
         * exp(t) then errs by |t| ulp more */
        ok_q &= dq <= (6 + 1.702 * fabs(xs)) * EPS_F * fabs(wq) + 1e-30;
        ok_g &= dg <= 2.5e-7 * fabs(xs) + 4 * EPS_F * fabs(wg) + 1e-30;
        if (fabs(ws) > 1e-30) es = fmax(es, ds / fabs(ws));
        if (fabs(wq) > 1e-30) eq = fmax(eq, dq / fabs(wq));
        if (fabs(xs) > 1e-30) eg = fmax(eg, dg / fabs(xs));
    }
    CHECK(ok_s, "silu_ref off (max rel %.3g)", es);
    CHECK(ok_q, "quick_gelu_ref off (max rel %.3g)", eq);
    CHECK(ok_g, "gelu_ref off (max |err|/|x| %.3g)", eg);
    printf("activations: silu max rel %.3g, quick_gelu max rel %.3g, gelu max |err|/|x| %.3g\n", es, eq, eg);
    CHECK(s[0] == 0.0f && g[0] == 0.0f && q[0] == 0.0f, "act(0) != 0");
    /* no NaN from finite input; NaN in gives NaN out */
    bool finite = true;
    for (int64_t i = 0; i < n; i++) finite &= isfinite(s[i]) && isfinite(g[i]) && isfinite(q[i]);
    CHECK(finite, "an activation of a finite input is not finite");
    float nan_in[3] = {NAN, NAN, NAN};
    pt_silu_ref(nan_in, 1);
    pt_gelu_ref(nan_in + 1, 1);
    pt_quick_gelu_ref(nan_in + 2, 1);
    CHECK(isnan(nan_in[0]) && isnan(nan_in[1]) && isnan(nan_in[2]), "NaN input did not stay NaN");
    free(x), free(s), free(g), free(q);

    /* geglu: a * gelu(b) per row */
    const int rows = 7, inner = 37;
    float *xx = frandom((int64_t)rows * 2 * inner, 4.0f), *out = fmalloc((int64_t)rows * inner);
    pt_geglu_ref(out, xx, rows, inner);
    bool ok = true;
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < inner; i++) {
            const double a = xx[r * 2 * inner + i], b = xx[r * 2 * inner + inner + i];
            const double want = a * gelu_d(b);
            /* gelu's bound times |a|, one more rounding */
            ok &= fabs(out[r * inner + i] - want) <= fabs(a) * (2.5e-7 * fabs(b) + 5 * EPS_F * fabs(gelu_d(b))) + 1e-30;
        }
    CHECK(ok, "geglu_ref off");
    free(xx), free(out);
}

static void test_activation_variants(void) {
    for (int rep = 0; rep < 40; rep++) {
        const int64_t n = 1 + irand(rep < 20 ? 70 : 5000); /* odd lengths, tails of every size */
        const int off = irand(4);                          /* unaligned starts */
        float *x = frandom(n + off, rep % 2 ? 30.0f : 3.0f);
        float *ref[3];
        for (int a = 0; a < 3; a++) ref[a] = fcopy(x + off, n);
        pt_silu_ref(ref[0], n);
        pt_gelu_ref(ref[1], n);
        pt_quick_gelu_ref(ref[2], n);
        const int rows = 1 + irand(5), inner = 1 + irand(90);
        float *gx = frandom((int64_t)rows * 2 * inner, 5.0f), *gref = fmalloc((int64_t)rows * inner);
        pt_geglu_ref(gref, gx, rows, inner);
        for (int v = 0; v < n_cpus; v++) {
            const char *vn = pt_cpu_variant_name(cpus[v].variant);
            float *y = fmalloc(n + off);
            memcpy(y, x, (size_t)(n + off) * sizeof(float));
            pt_silu_inplace(&cpus[v], y + off, n);
            CHECK(memcmp(y + off, ref[0], (size_t)n * sizeof(float)) == 0, "silu [%s] n=%lld not bitwise", vn, (long long)n);
            memcpy(y, x, (size_t)(n + off) * sizeof(float));
            pt_gelu_inplace(&cpus[v], y + off, n);
            CHECK(memcmp(y + off, ref[1], (size_t)n * sizeof(float)) == 0, "gelu [%s] n=%lld not bitwise", vn, (long long)n);
            memcpy(y, x, (size_t)(n + off) * sizeof(float));
            pt_quick_gelu_inplace(&cpus[v], y + off, n);
            CHECK(memcmp(y + off, ref[2], (size_t)n * sizeof(float)) == 0, "quick_gelu [%s] n=%lld not bitwise", vn, (long long)n);
            free(y);
            float *go = fmalloc((int64_t)rows * inner);
            pt_geglu(&cpus[v], go, gx, rows, inner);
            CHECK(memcmp(go, gref, (size_t)rows * inner * sizeof(float)) == 0, "geglu [%s] %dx%d not bitwise", vn, rows, inner);
            free(go);
        }
        for (int a = 0; a < 3; a++) free(ref[a]);
        free(x), free(gx), free(gref);
    }
}

/* ---- groupnorm -------------------------------------------------------------- */

/* y against the two-pass double formula. Bound: the apply's float ops
 * (x - mean, * s, + beta, each one rounding, mean and s rounded to
 * float) err by a few ulp of the terms |x - mean| |s|, |mean| |s| (the
 * rounding of mean), |beta|; silu adds 6 ulp of its result. */
static void check_gn_double(const float *y, const float *x, int64_t n_pix, int c, int groups,
                            const float *gamma, const float *beta, float eps, bool silu, const char *what) {
    const int cg = c / groups;
    double worst = 0;
    bool ok = true;
    for (int g = 0; g < groups; g++) {
        double sum = 0, var = 0;
        const double n = (double)n_pix * cg;
        for (int64_t p = 0; p < n_pix; p++)
            for (int i = 0; i < cg; i++) sum += x[p * c + g * cg + i];
        const double mean = sum / n;
        for (int64_t p = 0; p < n_pix; p++)
            for (int i = 0; i < cg; i++) {
                const double d = x[p * c + g * cg + i] - mean;
                var += d * d;
            }
        const double rstd = 1.0 / sqrt(var / n + eps);
        for (int64_t p = 0; p < n_pix; p++)
            for (int i = 0; i < cg; i++) {
                const int ch = g * cg + i;
                const double gm = gamma ? gamma[ch] : 1.0, bt = beta ? beta[ch] : 0.0;
                const double xv = x[p * c + ch];
                double want = (xv - mean) * rstd * gm + bt;
                const double s = fabs(rstd * gm);
                double tol = 4 * EPS_F * (fabs(xv - mean) * s + fabs(mean) * s + fabs(bt)) + 1e-30;
                if (silu) {
                    /* silu' is within [-0.1, 1.1] */
                    tol = 1.1 * tol + 6 * EPS_F * fabs(silu_d(want));
                    want = silu_d(want);
                }
                const double e = fabs(y[p * c + ch] - want);
                worst = fmax(worst, e / tol);
                ok &= e <= tol;
            }
    }
    CHECK(ok, "%s: groupnorm off the double formula (worst err/bound %.3g)", what, worst);
}

static void test_groupnorm(void) {
    for (int rep = 0; rep < 30; rep++) {
        const int groups = 1 + irand(rep % 3 ? 8 : 32);
        const int cg = 1 + irand(rep % 4 ? 5 : 40);
        const int c = groups * cg;
        const int64_t n_pix = 1 + irand(rep % 5 ? 60 : 700);
        const bool silu = rep % 2, no_affine = rep % 7 == 3;
        const float offset = rep % 3 == 1 ? 5.0f : 0.0f; /* groups with a mean far from 0 */
        float *x = frandom(n_pix * c, 2.0f);
        for (int64_t i = 0; i < n_pix * c; i++) x[i] += offset;
        float *gamma = no_affine ? NULL : frandom(c, 1.5f), *beta = no_affine ? NULL : frandom(c, 1.0f);
        const float eps = 1e-5f;
        char what[96];
        snprintf(what, sizeof what, "groupnorm c=%d groups=%d pix=%lld silu=%d", c, groups, (long long)n_pix, silu);
        float *ref = fmalloc(n_pix * c);
        pt_groupnorm_ref(ref, x, n_pix, c, groups, gamma, beta, eps, silu);
        check_gn_double(ref, x, n_pix, c, groups, gamma, beta, eps, silu, what);

        /* the two-phase path: sums of pixel pieces, then the apply */
        double *sum = calloc((size_t)groups * 2, sizeof(double)), *sq = sum + groups;
        int64_t p = 0;
        while (p < n_pix) {
            const int64_t p1 = piece_end(p, 40, n_pix);
            pt_groupnorm_sums(x, p, p1, c, groups, sum, sq);
            p = p1;
        }
        float *mean = fmalloc(groups), *rstd = fmalloc(groups);
        pt_groupnorm_stats(sum, sq, groups, n_pix * cg, eps, mean, rstd);
        /* the oracle's own statistics, from one call */
        double *sum1 = calloc((size_t)groups * 2, sizeof(double));
        float *mean1 = fmalloc(groups), *rstd1 = fmalloc(groups);
        pt_groupnorm_sums(x, 0, n_pix, c, groups, sum1, sum1 + groups);
        pt_groupnorm_stats(sum1, sum1 + groups, groups, n_pix * cg, eps, mean1, rstd1);
        bool close = true;
        for (int g = 0; g < groups; g++)
            close &= fabs(mean[g] - mean1[g]) <= EPS_F * (fabs(mean1[g]) + 1e-6) &&
                     fabs(rstd[g] - rstd1[g]) <= EPS_F * fabs(rstd1[g]);
        CHECK(close, "%s: split sums differ from one call by more than an ulp", what);

        for (int v = 0; v < n_cpus; v++) {
            const char *vn = pt_cpu_variant_name(cpus[v].variant);
            float *y = fmalloc(n_pix * c);
            pt_groupnorm_apply(&cpus[v], y, x, 0, n_pix, c, groups, mean1, rstd1, gamma, beta, silu);
            CHECK(memcmp(y, ref, (size_t)(n_pix * c) * sizeof(float)) == 0, "%s [%s]: apply not bitwise the ref", what, vn);
            /* in place, in two pixel ranges */
            float *z = fcopy(x, n_pix * c);
            const int64_t mid = irand((int)n_pix + 1);
            pt_groupnorm_apply(&cpus[v], z, z, 0, mid, c, groups, mean1, rstd1, gamma, beta, silu);
            pt_groupnorm_apply(&cpus[v], z, z, mid, n_pix, c, groups, mean1, rstd1, gamma, beta, silu);
            CHECK(memcmp(z, ref, (size_t)(n_pix * c) * sizeof(float)) == 0, "%s [%s]: in place in pieces not bitwise", what, vn);
            free(y), free(z);
        }
        free(x), free(gamma), free(beta), free(ref), free(sum), free(mean), free(rstd), free(sum1), free(mean1), free(rstd1);
    }
}

/* ---- layernorm -------------------------------------------------------------- */

static void test_layernorm(void) {
    for (int rep = 0; rep < 30; rep++) {
        const int n = 1 + irand(rep % 3 ? 100 : 1300);
        const int64_t rows = 1 + irand(20);
        const bool no_affine = rep % 6 == 5;
        float *x = frandom(rows * n, 3.0f);
        if (rep % 4 == 1)
            for (int64_t i = 0; i < rows * n; i++) x[i] += 7.0f;
        float *gamma = no_affine ? NULL : frandom(n, 2.0f), *beta = no_affine ? NULL : frandom(n, 1.0f);
        const float eps = 1e-5f;
        float *ref = fmalloc(rows * n);
        pt_layernorm_ref(ref, x, rows, n, gamma, beta, eps);
        bool ok = true;
        double worst = 0;
        for (int64_t r = 0; r < rows; r++) {
            double mean = 0, var = 0;
            for (int i = 0; i < n; i++) mean += x[r * n + i];
            mean /= n;
            for (int i = 0; i < n; i++) var += (x[r * n + i] - mean) * (x[r * n + i] - mean);
            const double rs = 1.0 / sqrt(var / n + eps);
            for (int i = 0; i < n; i++) {
                const double gm = gamma ? gamma[i] : 1, bt = beta ? beta[i] : 0;
                const double xv = x[r * n + i];
                const double want = (xv - mean) * rs * gm + bt;
                /* four float roundings of terms no larger than these, plus
                 * mean and r rounded to float */
                const double tol = 5 * EPS_F * ((fabs(xv - mean) + fabs(mean)) * rs * fabs(gm) + fabs(bt)) + 1e-30;
                const double e = fabs(ref[r * n + i] - want);
                worst = fmax(worst, e / tol);
                ok &= e <= tol;
            }
        }
        CHECK(ok, "layernorm_ref n=%d off the double formula (worst err/bound %.3g)", n, worst);
        for (int v = 0; v < n_cpus; v++) {
            float *y = fcopy(x, rows * n);
            pt_layernorm(&cpus[v], y, y, rows, n, gamma, beta, eps); /* in place */
            CHECK(memcmp(y, ref, (size_t)(rows * n) * sizeof(float)) == 0, "layernorm [%s] n=%d not bitwise",
                  pt_cpu_variant_name(cpus[v].variant), n);
            free(y);
        }
        free(x), free(gamma), free(beta), free(ref);
    }
}

/* ---- convolution ------------------------------------------------------------ */

static void test_conv(void) {
    for (int rep = 0; rep < 40; rep++) {
        const int k = rep % 3 == 0 ? 1 : 3;
        const int stride = 1 + (rep % 4 == 1);
        const int pad = k == 3 ? (rep % 5 == 4 ? 0 : 1) : 0;
        const int h = k + irand(11), w = k + irand(13);
        const int c_in = 1 + irand(rep % 2 ? 9 : 40), c_out = 1 + irand(23);
        const int h_out = pt_conv_out_size(h, k, stride, pad), w_out = pt_conv_out_size(w, k, stride, pad);
        const int64_t kkc = (int64_t)k * k * c_in, k_pad = (kkc + 31) / 32 * 32;
        const int64_t n_out = (int64_t)h_out * w_out;
        float *x = frandom((int64_t)h * w * c_in, 2.0f);
        float *wt = frandom((int64_t)c_out * c_in * k * k, 1.0f);
        float *bias = rep % 3 == 2 ? NULL : frandom(c_out, 1.0f);
        char what[128];
        snprintf(what, sizeof what, "conv %dx%dx%d -> %d k%d s%d p%d", h, w, c_in, c_out, k, stride, pad);

        float *y = fmalloc(n_out * c_out);
        pt_conv2d_ref(y, x, h, w, c_in, wt, bias, c_out, k, stride, pad);

        /* im2col of all pixels at once (NaN-filled first, so every column
         * must be written), and in random pieces, bitwise */
        float *cols = fmalloc(n_out * k_pad), *cols2 = fmalloc(n_out * k_pad);
        for (int64_t i = 0; i < n_out * k_pad; i++) cols[i] = cols2[i] = NAN;
        pt_im2col_hwc(cols, k_pad, x, h, w, c_in, k, stride, pad, 0, n_out);
        for (int64_t p = 0; p < n_out;) {
            const int64_t p1 = piece_end(p, 9, n_out);
            pt_im2col_hwc(cols2 + p * k_pad, k_pad, x, h, w, c_in, k, stride, pad, p, p1);
            p = p1;
        }
        CHECK(memcmp(cols, cols2, (size_t)(n_out * k_pad) * sizeof(float)) == 0, "%s: im2col in pieces differs", what);
        bool pad_zero = true;
        for (int64_t p = 0; p < n_out; p++)
            for (int64_t j = kkc; j < k_pad; j++) pad_zero &= cols[p * k_pad + j] == 0.0f;
        CHECK(pad_zero, "%s: k_pad columns not zero", what);

        /* weights reordered to rows of (ky, kx, c_in), then a double
         * matmul: an independent convolution. Both sum the same products
         * in double in different orders, then round to float: within an
         * ulp of the result plus double rounding of the terms' size. */
        double *wr = malloc((size_t)c_out * kkc * sizeof(double));
        for (int co = 0; co < c_out; co++)
            for (int ci = 0; ci < c_in; ci++)
                for (int ky = 0; ky < k; ky++)
                    for (int kx = 0; kx < k; kx++)
                        wr[co * kkc + (ky * k + kx) * c_in + ci] = wt[((co * c_in + ci) * k + ky) * k + kx];
        bool ok = true;
        for (int64_t p = 0; p < n_out; p++)
            for (int co = 0; co < c_out; co++) {
                double acc = bias ? bias[co] : 0.0, mag = fabs(acc);
                for (int64_t j = 0; j < kkc; j++) {
                    acc += cols[p * k_pad + j] * wr[co * kkc + j];
                    mag += fabs(cols[p * k_pad + j] * wr[co * kkc + j]);
                }
                const double got = y[p * c_out + co];
                ok &= isfinite(got) && fabs(got - acc) <= EPS_F * fabs(acc) + 1e-12 * mag;
            }
        CHECK(ok, "%s: conv2d_ref and im2col + matmul disagree", what);
        free(x), free(wt), free(bias), free(y), free(cols), free(cols2), free(wr);
    }
}

static void test_upsample(void) {
    const int h = 5, w = 7, c = 3;
    float *x = frandom(h * w * c, 1.0f), *y = fmalloc(4 * h * w * c);
    pt_upsample2x_hwc(y, x, h, w, c);
    bool ok = true;
    for (int oy = 0; oy < 2 * h; oy++)
        for (int ox = 0; ox < 2 * w; ox++)
            for (int ch = 0; ch < c; ch++)
                ok &= y[(oy * 2 * w + ox) * c + ch] == x[((oy / 2) * w + ox / 2) * c + ch];
    CHECK(ok, "upsample2x: an output pixel is not its source");
    free(x), free(y);
}

/* ---- attention -------------------------------------------------------------- */

static void test_attention_full(void) {
    static const int dims[] = {20, 33, 36, 40, 64, 80, 1, 7};
    for (int rep = 0; rep < 48; rep++) {
        const int D = dims[rep % 8];
        const int n_q = 1 + irand(rep % 4 == 0 ? 150 : 23);
        const int n_kv = 1 + irand(rep % 3 == 0 ? 300 : 40);
        const float qmag = rep % 5 == 0 ? 4.0f : 1.0f; /* scores of tens: the max moves */
        const int64_t qs = D + irand(5), os = D + irand(3), vs = D + irand(4);
        const int64_t kbs = (int64_t)PT_ATTN_BK * D + 16 * irand(2);
        const int n_blocks = (n_kv + PT_ATTN_BK - 1) / PT_ATTN_BK;
        const float scale = 1.0f / sqrtf((float)D);
        float *q = frandom(n_q * qs, qmag), *k = frandom((int64_t)n_kv * D, 2.0f), *v = frandom(n_kv * vs, 3.0f);
        float *kt = fmalloc(n_blocks * kbs);
        for (int64_t i = 0; i < n_blocks * kbs; i++) kt[i] = 1e30f; /* unused lanes: finite garbage */
        for (int j = 0; j < n_kv; j++) pt_attn_store_key(kt, kbs, j, k + (int64_t)j * D, D);
        char what[96];
        snprintf(what, sizeof what, "attn_full D=%d n_q=%d n_kv=%d", D, n_q, n_kv);

        float *want = fmalloc(n_q * os);
        pt_attn_full_ref(want, os, q, qs, n_q, k, D, v, vs, n_kv, D, scale);
        float *scratch = fmalloc((int64_t)pt_attn_scratch_floats(n_q, D));
        float *plain = NULL;
        /* first the plain variant without FMA instructions (scalar fmaf
         * code on x86-64), then every variant this CPU runs */
        pt_cpu no_fma = cpus[0];
        no_fma.fma = false;
        for (int vi = -1; vi < n_cpus; vi++) {
            const pt_cpu *cv = vi < 0 ? &no_fma : &cpus[vi];
            const char *vn = vi < 0 ? "ref without fma" : pt_cpu_variant_name(cv->variant);
            float *out = fmalloc(n_q * os);
            for (int64_t i = 0; i < n_q * os; i++) out[i] = -7.0f;
            pt_attn_full(cv, out, os, q, qs, n_q, kt, kbs, v, vs, n_kv, D, scale, scratch);
            if (!plain) {
                /* Bound against the double oracle: a score is off by up to
                 * ~(D + 4) ulp of its terms' size (smag), scaling its
                 * weight by that relative error; the running sums of up to
                 * n_kv weighted values and weights add (n_kv + 16) ulp of
                 * sum |e v| / sum e <= max |v| = 3 (worst case). */
                bool ok = true;
                double worst = 0;
                for (int i = 0; i < n_q; i++) {
                    double smag = 0;
                    for (int j = 0; j < n_kv; j++) {
                        double a = 0;
                        for (int d = 0; d < D; d++) a += fabs((double)q[i * qs + d] * k[(int64_t)j * D + d]);
                        smag = fmax(smag, a * scale);
                    }
                    const double tol = 3.0 * (2 * (D + 4) * EPS_F * (1.0 + smag) + (n_kv + 16) * EPS_F);
                    for (int d = 0; d < D; d++) {
                        const double e = fabs((double)out[i * os + d] - want[i * os + d]);
                        worst = fmax(worst, e / tol);
                        ok &= e <= tol;
                    }
                }
                CHECK(ok, "%s [%s]: off the double oracle (worst err/bound %.3g)", what, vn, worst);
                plain = out;
            } else {
                bool same = true;
                for (int i = 0; i < n_q; i++) same &= memcmp(out + i * os, plain + i * os, (size_t)D * sizeof(float)) == 0;
                CHECK(same, "%s [%s]: not bitwise the plain variant", what, vn);
                free(out);
            }
        }
        /* the fastest variant on random pieces of the queries: bitwise */
        const pt_cpu *fast = &cpus[n_cpus - 1];
        float *pieces = fmalloc(n_q * os);
        for (int i0 = 0; i0 < n_q;) {
            const int i1 = (int)piece_end(i0, 9, n_q);
            pt_attn_full(fast, pieces + i0 * os, os, q + i0 * qs, qs, i1 - i0, kt, kbs, v, vs, n_kv, D, scale, scratch);
            i0 = i1;
        }
        bool same = true;
        for (int i = 0; i < n_q; i++) same &= memcmp(pieces + i * os, plain + i * os, (size_t)D * sizeof(float)) == 0;
        CHECK(same, "%s: queries in pieces differ from all at once", what);
        free(q), free(k), free(v), free(kt), free(want), free(scratch), free(plain), free(pieces);
    }
    /* no keys: zeros, not NaN */
    float qz[4] = {1, 2, 3, 4}, oz[4] = {9, 9, 9, 9}, kz[16 * 4] = {0}, sz[64];
    pt_attn_full(&cpus[n_cpus - 1], oz, 4, qz, 4, 1, kz, 64, kz, 4, 0, 4, 0.5f, sz);
    CHECK(oz[0] == 0 && oz[3] == 0, "attn_full with no keys is not zero");
}

int main(void) {
    pt_cpu base;
    pt_cpu_detect_with(&base, NULL);
    for (int v = 0; v < PT_CPU_VARIANT_COUNT; v++)
        if (pt_cpu_with_variant(&base, (pt_cpu_variant)v, &cpus[n_cpus])) n_cpus++;
    bool ran[PT_CPU_VARIANT_COUNT] = {false};
    for (int i = 0; i < n_cpus; i++) ran[cpus[i].variant] = true;
    check_variants_ran("image_ops", ran);

    test_activation_refs();
    test_activation_variants();
    test_groupnorm();
    test_layernorm();
    test_conv();
    test_upsample();
    test_attention_full();
    return check_done("image_ops");
}
