/*
 * test_fmatmul.c — the float products of kernels/cpu/fmatmul.h (F32, F16
 * and BF16 weights as stored, float32 activations, FMA in F32):
 *   - pt_fmatmul_ref against a double-precision product within a
 *     worst-case bound of its own order;
 *   - every CPU variant this machine runs BITWISE equal to the oracle
 *     (the same image on every PETREL_CPU variant), on odd shapes: columns
 *     below, at and past multiples of 16, rows and tokens that leave
 *     partial register blocks, row ranges [r0, r1) in pieces, F16
 *     subnormal weights;
 *   - the engine's product (matmul.h pt_matmul_run) of an unpacked F16
 *     matrix uses it: bitwise the oracle.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cpu_features.h"
#include "cpu_variants.h"
#include "fmatmul.h"
#include "matmul.h"
#include "quant.h"

static uint64_t rng_state = 0x853C49E6748FEA9Bull;
static float frand(void) { /* uniform in [-1, 1) */
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rng_state >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}
static int irand(int n) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (int)((rng_state >> 33) % (uint64_t)n);
}

static uint16_t to_bf16(float f) { /* truncation is fine for test data */
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

/* A random rows x cols matrix of `type`; wf gets its exact float values. */
static void *make_w(uint32_t type, int64_t rows, int64_t cols, float *wf) {
    const size_t es = type == PT_TYPE_F32 ? 4 : 2;
    uint8_t *w = malloc((size_t)(rows * cols) * es);
    for (int64_t i = 0; i < rows * cols; i++) {
        float v = frand();
        if (type == PT_TYPE_F16 && irand(17) == 0) v *= 1e-6f; /* F16 subnormals (< 6.1e-5) */
        if (type == PT_TYPE_F32) {
            memcpy(w + i * 4, &v, 4);
            wf[i] = v;
        } else if (type == PT_TYPE_F16) {
            const uint16_t h = pt_f32_to_fp16(v);
            memcpy(w + i * 2, &h, 2);
            wf[i] = pt_fp16_to_f32(h);
        } else {
            const uint16_t h = to_bf16(v);
            memcpy(w + i * 2, &h, 2);
            wf[i] = pt_bf16_to_f32(h);
        }
    }
    return w;
}

int main(void) {
    pt_cpu base, cpus[PT_CPU_VARIANT_COUNT];
    pt_cpu_detect_with(&base, NULL);
    int n_cpus = 0;
    for (int v = 0; v < PT_CPU_VARIANT_COUNT; v++)
        if (pt_cpu_with_variant(&base, (pt_cpu_variant)v, &cpus[n_cpus])) n_cpus++;
    bool ran[PT_CPU_VARIANT_COUNT] = {false};
    for (int i = 0; i < n_cpus; i++) ran[cpus[i].variant] = true;
    check_variants_ran("fmatmul", ran);

    static const uint32_t types[] = {PT_TYPE_F16, PT_TYPE_BF16, PT_TYPE_F32};
    static const int col_choices[] = {1, 5, 15, 16, 17, 31, 32, 33, 48, 100, 257, 325};
    for (int rep = 0; rep < 60; rep++) {
        const uint32_t type = types[rep % 3];
        const int64_t cols = col_choices[irand(12)];
        const int64_t rows = 1 + irand(rep % 4 ? 13 : 41), n = 1 + irand(rep % 5 ? 14 : 40);
        float *wf = malloc((size_t)(rows * cols) * sizeof(float));
        void *w = make_w(type, rows, cols, wf);
        float *x = malloc((size_t)(n * cols) * sizeof(float));
        for (int64_t i = 0; i < n * cols; i++) x[i] = frand() * 2.0f;
        char what[96];
        snprintf(what, sizeof what, "%s %lldx%lld n=%lld", pt_type_name(type), (long long)rows, (long long)cols, (long long)n);

        float *ref = malloc((size_t)(n * rows) * sizeof(float));
        pt_fmatmul_ref(type, w, rows, cols, x, n, ref, 0, rows);
        /* Bound: each lane's chain of ceil(cols / 16) fused steps and the
         * 4 levels of the reduction each round once, relative to the sum
         * of |terms| that reached them: (cols / 16 + 6) ulp of sum |w x|. */
        bool ok = true;
        for (int64_t t = 0; t < n; t++)
            for (int64_t r = 0; r < rows; r++) {
                double want = 0, mag = 0;
                for (int64_t c = 0; c < cols; c++) {
                    want += (double)wf[r * cols + c] * x[t * cols + c];
                    mag += fabs((double)wf[r * cols + c] * x[t * cols + c]);
                }
                ok &= fabs(ref[t * rows + r] - want) <= ((double)cols / 16 + 6) * FLT_EPSILON * mag;
            }
        CHECK(ok, "%s: oracle off the double product", what);

        /* the plain variant without FMA / F16C (the scalar oracle's own
         * code on x86-64), then every variant this CPU runs */
        pt_cpu plain = cpus[0];
        plain.fma = plain.f16c = false;
        for (int v = -1; v < n_cpus; v++) {
            const pt_cpu *cv = v < 0 ? &plain : &cpus[v];
            const char *vn = v < 0 ? "ref without fma" : pt_cpu_variant_name(cv->variant);
            float *y = malloc((size_t)(n * rows) * sizeof(float));
            for (int64_t i = 0; i < n * rows; i++) y[i] = NAN;
            /* rows in random pieces, as threads split them */
            for (int64_t r0 = 0; r0 < rows;) {
                int64_t r1 = r0 + 1 + irand(9);
                r1 = r1 < rows ? r1 : rows;
                pt_fmatmul(cv, type, w, rows, cols, x, n, y, r0, r1);
                r0 = r1;
            }
            CHECK(memcmp(y, ref, (size_t)(n * rows) * sizeof(float)) == 0, "%s [%s]: not bitwise the oracle", what, vn);
            free(y);
        }
        free(wf), free(w), free(x), free(ref);
    }

    /* the engine's product of an unpacked F16 matrix */
    {
        const int64_t rows = 37, cols = 83, n = 9;
        float *wf = malloc((size_t)(rows * cols) * sizeof(float));
        void *w = make_w(PT_TYPE_F16, rows, cols, wf);
        float *x = malloc((size_t)(n * cols) * sizeof(float)), *ref = malloc((size_t)(n * rows) * sizeof(float));
        float *y = malloc((size_t)(n * rows) * sizeof(float));
        for (int64_t i = 0; i < n * cols; i++) x[i] = frand();
        pt_fmatmul_ref(PT_TYPE_F16, w, rows, cols, x, n, ref, 0, rows);
        for (int v = 0; v < n_cpus; v++) {
            pt_weight wt = {PT_TYPE_F16, w, rows, cols, NULL};
            pt_matmul_runner run = {&cpus[v], NULL, 1, NULL, 0, NULL};
            pt_matmul job = {.n_w = 1, .w = {&wt}, .y = {y}, .x = x, .n = (int)n};
            pt_matmul_run(&run, &job);
            CHECK(memcmp(y, ref, (size_t)(n * rows) * sizeof(float)) == 0, "pt_matmul_run F16 [%s] not the oracle",
                  pt_cpu_variant_name(cpus[v].variant));
        }
        free(wf), free(w), free(x), free(ref), free(y);
    }
    return check_done("fmatmul");
}
