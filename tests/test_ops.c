/*
 * test_ops.c — the reference graph kernels of kernels/cpu/ops.h against
 * straightforward double-precision formulas, on odd sizes (not multiples
 * of the 8 accumulator lanes), partial rope, strided KV rows, in-place
 * use and extreme inputs; and the SIMD builds of ops_simd.h bitwise
 * against those references.
 *
 * Tolerances: the kernels compute in float32, so each result is compared
 * within a few float ulps of the double reference scaled by the size of
 * the terms involved (stated at each check).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cpu_variants.h"
#include "cpu_features.h"
#include "ops.h"
#include "ops_simd.h"

#define EPS_F 1.1920929e-7 /* float ulp at 1 */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

/* uniform in [-1, 1) */
static float frand(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rng_state >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static float *rand_vec(int n, float scale) {
    float *v = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    for (int i = 0; i < n; i++) v[i] = frand() * scale;
    return v;
}

static void test_rmsnorm(void) {
    const int sizes[] = {1, 7, 33, 577};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        const int n = sizes[si];
        float *x = rand_vec(n, 30.0f), *w = rand_vec(n, 2.0f), *y = malloc(n * sizeof(float));
        double ss = 0;
        for (int i = 0; i < n; i++) ss += (double)x[i] * x[i];
        const double eps = 1e-5, r = 1.0 / sqrt(ss / n + eps);
        pt_rmsnorm(y, x, w, n, (float)eps);
        double maxd = 0;
        for (int i = 0; i < n; i++) maxd = fmax(maxd, fabs(y[i] - x[i] * r * w[i]) / (fabs(x[i] * r * w[i]) + 1e-30));
        /* relative: three float roundings (r, x*r, *w) */
        CHECK(maxd <= 4 * EPS_F, "rmsnorm n=%d: rel err %g", n, maxd);
        pt_rmsnorm(y, x, NULL, n, (float)eps);
        maxd = 0;
        for (int i = 0; i < n; i++) maxd = fmax(maxd, fabs(y[i] - x[i] * r) / (fabs(x[i] * r) + 1e-30));
        CHECK(maxd <= 3 * EPS_F, "rmsnorm n=%d no weight: rel err %g", n, maxd);
        /* in place equals out of place */
        float *z = malloc(n * sizeof(float));
        pt_rmsnorm(y, x, w, n, (float)eps);
        memcpy(z, x, n * sizeof(float));
        pt_rmsnorm(z, z, w, n, (float)eps);
        CHECK(memcmp(y, z, n * sizeof(float)) == 0, "rmsnorm n=%d in place differs", n);
        free(x), free(w), free(y), free(z);
    }
    /* the eps matters for a zero vector: output 0, not NaN */
    float zero[5] = {0}, out[5];
    pt_rmsnorm(out, zero, NULL, 5, 1e-6f);
    CHECK(out[0] == 0.0f && out[4] == 0.0f, "rmsnorm of zeros: %g", out[0]);
}

static void test_rope(void) {
    /* inverse frequencies */
    const int n_rot = 10;
    float inv[5], ff[5] = {1.0f, 2.0f, 0.5f, 8.0f, 3.0f};
    pt_rope_inv_freq(inv, n_rot, 50000.0f, 0.25f, NULL);
    for (int i = 0; i < n_rot / 2; i++) {
        double want = 0.25 * pow(50000.0, -2.0 * i / n_rot);
        CHECK(fabs(inv[i] - want) <= EPS_F * want, "inv_freq[%d] %g vs %g", i, inv[i], want);
    }
    pt_rope_inv_freq(inv, n_rot, 50000.0f, 1.0f, ff);
    for (int i = 0; i < n_rot / 2; i++) {
        double want = pow(50000.0, -2.0 * i / n_rot) / ff[i];
        CHECK(fabs(inv[i] - want) <= EPS_F * want, "inv_freq[%d] with factors %g vs %g", i, inv[i], want);
    }

    /* table: cos/sin of pos * inv_freq; the angle is a float product, so
     * allow its rounding (|angle| * 2^-24) plus a float ulp */
    const int positions[] = {0, 1, 17, 4095};
    float cs[10];
    for (size_t pi = 0; pi < sizeof positions / sizeof positions[0]; pi++) {
        const int pos = positions[pi];
        pt_rope_table(cs, inv, n_rot, pos);
        for (int i = 0; i < n_rot / 2; i++) {
            double a = (double)pos * inv[i], tol = fabs(a) * EPS_F / 2 + EPS_F;
            CHECK(fabs(cs[2 * i] - cos(a)) <= tol && fabs(cs[2 * i + 1] - sin(a)) <= tol,
                  "rope table pos %d pair %d: (%g, %g) vs (%g, %g)", pos, i, cs[2 * i], cs[2 * i + 1],
                  cos(a), sin(a));
        }
    }

    /* rotation: 3 heads of 14 values in rows of 16 (stride > head_dim),
     * 10 rotated dims; the rest (and the stride gap) untouched */
    const int H = 3, stride = 16;
    pt_rope_table(cs, inv, n_rot, 23);
    for (int neox = 0; neox <= 1; neox++) {
        float *x = rand_vec(H * stride, 3.0f), *y = malloc(H * stride * sizeof(float));
        memcpy(y, x, H * stride * sizeof(float));
        pt_rope(y, H, stride, n_rot, cs, neox);
        double maxd = 0;
        bool rest_same = true;
        for (int h = 0; h < H; h++) {
            const float *xh = x + h * stride, *yh = y + h * stride;
            for (int i = 0; i < n_rot / 2; i++) {
                int a = neox ? i : 2 * i, b = neox ? i + n_rot / 2 : 2 * i + 1;
                double c = cs[2 * i], s = cs[2 * i + 1];
                maxd = fmax(maxd, fabs(yh[a] - (xh[a] * c - xh[b] * s)));
                maxd = fmax(maxd, fabs(yh[b] - (xh[a] * s + xh[b] * c)));
            }
            for (int d = n_rot; d < stride; d++) rest_same &= yh[d] == xh[d];
        }
        /* |x| <= 3: two products and a sum, each rounded */
        CHECK(maxd <= 3 * 3.0 * EPS_F, "rope neox=%d: abs err %g", neox, maxd);
        CHECK(rest_same, "rope neox=%d touched dims past n_rot", neox);
        /* position 0 is the identity */
        float cs0[10];
        pt_rope_table(cs0, inv, n_rot, 0);
        memcpy(y, x, H * stride * sizeof(float));
        pt_rope(y, H, stride, n_rot, cs0, neox);
        CHECK(memcmp(x, y, H * stride * sizeof(float)) == 0, "rope at position 0 is not the identity");
        free(x), free(y);
    }
}

static void test_softmax(void) {
    const int sizes[] = {1, 5, 9, 1001};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        const int n = sizes[si];
        float *x = rand_vec(n, 20.0f);
        for (int i = 0; i < n; i++) x[i] += 1000.0f; /* exp would overflow without the max shift */
        double mx = -INFINITY, sum = 0;
        for (int i = 0; i < n; i++) mx = fmax(mx, x[i]);
        double *want = malloc(n * sizeof(double));
        for (int i = 0; i < n; i++) sum += want[i] = exp((double)x[i] - mx);
        pt_softmax(x, n);
        double maxd = 0, total = 0;
        for (int i = 0; i < n; i++) {
            want[i] /= sum;
            /* x - max is exact (floats within a factor 2 of each other),
             * then expf, the reciprocal of the sum and a product round */
            maxd = fmax(maxd, fabs(x[i] - want[i]) / (want[i] + 1e-30));
            total += x[i];
        }
        CHECK(maxd <= 8 * EPS_F, "softmax n=%d: rel err %g", n, maxd);
        CHECK(fabs(total - 1.0) <= n * EPS_F, "softmax n=%d sums to %.9f", n, total);
        free(x), free(want);
    }
    float one[1] = {-3.0f};
    pt_softmax(one, 1);
    CHECK(one[0] == 1.0f, "softmax of one value: %g", one[0]);
}

static void test_silu_mul_add_dot(void) {
    const int n = 37;
    float *g = rand_vec(n, 12.0f), *u = rand_vec(n, 3.0f), *o = malloc(n * sizeof(float));
    g[0] = -200.0f, g[1] = 200.0f, g[2] = 0.0f; /* saturation and zero */
    pt_silu_mul(o, g, u, n);
    double maxd = 0;
    for (int i = 1; i < n; i++) { /* g[0] = -200: checked below */
        double want = (double)g[i] / (1.0 + exp(-(double)g[i])) * u[i];
        maxd = fmax(maxd, fabs(o[i] - want) / (fabs(want) + 1e-30));
    }
    /* expf, the division and two products round */
    CHECK(maxd <= 6 * EPS_F, "silu_mul: rel err %g", maxd);
    CHECK(isfinite(o[0]) && fabs(o[0]) < 1e-30 && fabs(o[1] - 200.0 * u[1]) <= 200 * 4 * EPS_F,
          "silu saturation: %g %g", o[0], o[1]);
    /* in place over gate */
    float *g2 = malloc(n * sizeof(float));
    memcpy(g2, g, n * sizeof(float));
    pt_silu_mul(g2, g2, u, n);
    CHECK(memcmp(g2, o, n * sizeof(float)) == 0, "silu_mul in place differs");

    float *a = rand_vec(n, 5.0f), *b = rand_vec(n, 5.0f), *c = malloc(n * sizeof(float));
    memcpy(c, a, n * sizeof(float));
    pt_add(c, b, n);
    bool add_ok = true;
    for (int i = 0; i < n; i++) add_ok &= c[i] == a[i] + b[i];
    CHECK(add_ok, "add");

    const int dsizes[] = {0, 1, 7, 8, 9, 1000};
    for (size_t si = 0; si < sizeof dsizes / sizeof dsizes[0]; si++) {
        const int m = dsizes[si];
        float *x = rand_vec(m, 2.0f), *y = rand_vec(m, 2.0f);
        double want = 0, mag = 0;
        for (int i = 0; i < m; i++) want += (double)x[i] * y[i], mag += fabs((double)x[i] * y[i]);
        float got = pt_dot_f32(x, y, m);
        /* error of a float sum of m terms: <= m * ulp * sum |terms| (loose
         * worst case; blocked sums do far better) */
        CHECK(fabs(got - want) <= (m + 1) * EPS_F * mag + 1e-30, "dot n=%d: %g vs %g", m, got, want);
        free(x), free(y);
    }
    free(g), free(u), free(o), free(g2), free(a), free(b), free(c);
}

static void test_attend(void) {
    const int D = 9, stride = 3 * D + 2; /* head 1 of 3-head rows, padded */
    const int nkvs[] = {1, 5, 37};
    for (size_t ni = 0; ni < sizeof nkvs / sizeof nkvs[0]; ni++) {
        const int n_kv = nkvs[ni];
        float *q = rand_vec(D, 2.0f), *k = rand_vec(n_kv * stride, 2.0f), *v = rand_vec(n_kv * stride, 3.0f);
        float out[9], *scores = malloc(n_kv * sizeof(float));
        const float scale = 1.0f / 3.0f;
        const float *kh = k + D, *vh = v + D; /* head 1 */
        pt_attend_one(out, q, kh, vh, stride, n_kv, D, scale, scores);
        double *p = malloc(n_kv * sizeof(double)), mx = -INFINITY, sum = 0;
        for (int j = 0; j < n_kv; j++) {
            double s = 0;
            for (int d = 0; d < D; d++) s += (double)q[d] * kh[j * stride + d];
            p[j] = s * scale;
            mx = fmax(mx, p[j]);
        }
        for (int j = 0; j < n_kv; j++) sum += p[j] = exp(p[j] - mx);
        double maxd = 0;
        for (int d = 0; d < D; d++) {
            double want = 0;
            for (int j = 0; j < n_kv; j++) want += p[j] / sum * vh[j * stride + d];
            maxd = fmax(maxd, fabs(out[d] - want));
        }
        /* |v| <= 3, scores |s| <= 12: a few ulps of each */
        CHECK(maxd <= 3.0 * 16 * EPS_F, "attend n_kv=%d: abs err %g", n_kv, maxd);
        free(q), free(k), free(v), free(scores), free(p);
    }
    /* one key: the output is exactly its value */
    float q[4] = {1, 2, 3, 4}, k[4] = {4, 3, 2, 1}, v[4] = {0.5f, -1, 7, 2}, out[4], sc[1];
    pt_attend_one(out, q, k, v, 4, 1, 4, 0.5f, sc);
    CHECK(memcmp(out, v, sizeof v) == 0, "attention over one key is not its value");
}

/* The SIMD silu of every variant this CPU runs is bitwise ops.c's, on
 * lengths with and without a vector tail and on extreme inputs. */
static void test_silu_simd(void) {
    pt_cpu base, cpu;
    pt_cpu_detect_with(&base, NULL);
    const int sizes[] = {1, 5, 16, 33, 100, 1536};
    int n_variants = 0;
    bool ran[PT_CPU_VARIANT_COUNT] = {false};
    for (int v = 0; v < PT_CPU_VARIANT_COUNT; v++) {
        if (!pt_cpu_with_variant(&base, (pt_cpu_variant)v, &cpu)) continue;
        n_variants++;
        ran[v] = true;
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            const int n = sizes[si];
            float *g = rand_vec(n, 12.0f), *u = rand_vec(n, 3.0f);
            float *want = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
            static const float extreme[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 87.5f, -87.5f, 100.0f, -100.0f, 1e30f, -1e30f};
            for (int i = 0; i < n && i < 10; i++) g[i] = extreme[i];
            pt_silu_mul(want, g, u, n);
            pt_silu_mul_simd(&cpu, got, g, u, n);
            CHECK(memcmp(want, got, n * sizeof(float)) == 0, "silu_mul_simd (%s) n=%d differs from pt_silu_mul",
                  pt_cpu_variant_name(cpu.variant), n);
            pt_silu_mul_simd(&cpu, g, g, u, n); /* in place */
            CHECK(memcmp(want, g, n * sizeof(float)) == 0, "silu_mul_simd (%s) n=%d in place differs",
                  pt_cpu_variant_name(cpu.variant), n);
            free(g), free(u), free(want), free(got);
        }
    }
    CHECK(n_variants >= 1, "no variant");
    check_variants_ran("ops silu_mul_simd", ran);
}

/* pt_fwht against the Hadamard matrix written out (H[i][j] = (-1)^popcount(i & j),
 * in double) on random vectors of every power of two up to 512; applying it
 * twice gives the input back (H / sqrt(n) is orthogonal and symmetric). */
static void test_fwht(void) {
    for (int n = 1; n <= 512; n *= 2) {
        float *x = rand_vec(n, 4.0f), *y = malloc(n * sizeof *y);
        memcpy(y, x, n * sizeof *y);
        pt_fwht(y, n);
        double maxd = 0, maxv = 0;
        for (int i = 0; i < n; i++) {
            double want = 0;
            for (int j = 0; j < n; j++) want += (__builtin_popcount((unsigned)(i & j)) & 1 ? -1.0 : 1.0) * x[j];
            want /= sqrt((double)n);
            if (fabs(y[i] - want) > maxd) maxd = fabs(y[i] - want);
            if (fabs(want) > maxv) maxv = fabs(want);
        }
        CHECK(maxd <= 4.0 * (1 + log2(n)) * EPS_F * 4.0 * sqrt((double)n), "fwht n=%d: abs err %g", n, maxd);
        pt_fwht(y, n);
        double back = 0;
        for (int i = 0; i < n; i++) back = fmax(back, fabs(y[i] - x[i]));
        CHECK(back <= 8.0 * (1 + log2(n)) * EPS_F * 4.0, "fwht twice n=%d: off by %g", n, back);
        free(x);
        free(y);
    }
}

int main(void) {
    test_fwht();
    test_rmsnorm();
    test_rope();
    test_softmax();
    test_silu_mul_add_dot();
    test_attend();
    test_silu_simd();
    return check_done("ops");
}
