/*
 * test_matmul_kq.c — the engine's product (matmul.h pt_matmul_run) of a
 * quantized matrix with no int8 fast path (Q4_K, Q5_K, Q6_K, Q5_1) on a
 * fast CPU variant: the tiled float path of matmul.c (rows dequantized in
 * tiles into the thread's scratch, then fmatmul.h's FMA kernels).
 *
 * Its plain C reference: pt_fmatmul_ref over the whole matrix dequantized
 * with pt_dequant_row (the order fmatmul.h defines per output). Checked on
 * random matrices (pt_quantize_row of random values) of odd shapes: rows
 * below, at and past the 16-row tile, 1..70 tokens (past the 32-token
 * chunk), 1 and 3 threads (split into ranges that cut tiles):
 *   - every variant this CPU runs gives bitwise the reference;
 *   - the reference is within float rounding of pt_matmul_ref (the
 *     reference path's own order);
 *   - without scratch, or on the "ref" variant, or for a job that asks for
 *     int8_ref (the image graphs), the product is pt_matmul_ref, bitwise.
 */
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
#include "threadpool.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float frand(void) { /* [-1, 1) */
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static void *random_matrix(uint32_t type, int64_t rows, int64_t cols) {
    const size_t rb = pt_type_row_bytes(type, cols);
    uint8_t *w = malloc(rb * (size_t)rows);
    float *row = malloc((size_t)cols * sizeof(float));
    for (int64_t r = 0; r < rows; r++) {
        const float mag = r % 5 == 0 ? 1e-3f : 1.0f; /* mixed magnitudes */
        for (int64_t c = 0; c < cols; c++) row[c] = frand() * mag;
        pt_quantize_row(type, row, w + (size_t)r * rb, cols);
    }
    free(row);
    return w;
}

static bool same_bits(const float *a, const float *b, size_t n) { return memcmp(a, b, n * sizeof(float)) == 0; }

/* One product through pt_matmul_run. */
static void run(const pt_cpu *cpu, pt_pool *pool, int n_threads, uint8_t *scratch, size_t scratch_n,
                const pt_weight *w, const float *x, int64_t n, bool int8_ref, float *y) {
    const pt_matmul_runner r = {cpu, pool, n_threads, scratch, scratch_n, NULL};
    pt_matmul job = {.n_w = 1, .w = {w}, .y = {y}, .x = x, .n = (int)n, .int8_ref = int8_ref};
    pt_matmul_run(&r, &job);
}

int main(void) {
    pt_cpu base, cpus[PT_CPU_VARIANT_COUNT];
    pt_cpu_detect_with(&base, NULL);
    int n_cpus = 0;
    for (int v = 0; v < PT_CPU_VARIANT_COUNT; v++)
        if (pt_cpu_with_variant(&base, (pt_cpu_variant)v, &cpus[n_cpus])) n_cpus++;
    bool ran[PT_CPU_VARIANT_COUNT] = {false};
    for (int i = 0; i < n_cpus; i++) ran[cpus[i].variant] = true;
    check_variants_ran("matmul_kq", ran);

    pt_pool *pool = NULL;
    pt_error err = {0};
    CHECK(pt_pool_new(3, &pool, &err) == PT_OK, "pool: %s", err.msg);
    if (!pool) return check_done("matmul_kq");

    static const uint32_t types[] = {PT_TYPE_Q4_K, PT_TYPE_Q5_K, PT_TYPE_Q6_K, PT_TYPE_Q5_1};
    static const int64_t rows_list[] = {1, 7, 16, 17, 40, 101};
    static const int64_t toks_list[] = {1, 2, 31, 33, 70};
    int n_shapes = 0;
    for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++) {
        const uint32_t type = types[ti];
        const int64_t blk = pt_type_get(type)->block_elems;
        for (size_t ri = 0; ri < sizeof rows_list / sizeof *rows_list; ri++) {
            const int64_t rows = rows_list[ri];
            const int64_t cols = blk * (1 + (int64_t)((ri + ti) % 3)); /* 1..3 blocks: 32..768 */
            const int64_t n = toks_list[(ri + 2 * ti) % 5];
            void *wq = random_matrix(type, rows, cols);
            float *wf = malloc((size_t)(rows * cols) * sizeof(float));
            for (int64_t r = 0; r < rows; r++)
                pt_dequant_row(type, (uint8_t *)wq + (size_t)r * pt_type_row_bytes(type, cols), wf + r * cols, cols);
            float *x = malloc((size_t)(n * cols) * sizeof(float));
            for (int64_t i = 0; i < n * cols; i++) x[i] = frand();
            const size_t ny = (size_t)(n * rows);
            float *want = malloc(ny * sizeof(float)), *slow = malloc(ny * sizeof(float));
            float *y = malloc(ny * sizeof(float));
            pt_fmatmul_ref(PT_TYPE_F32, wf, rows, cols, x, n, want, 0, rows);
            pt_matmul_ref(type, wq, rows, cols, x, n, slow, 0, rows);
            /* the reference within rounding of the reference path's order */
            double worst = 0;
            for (int64_t t = 0; t < n; t++)
                for (int64_t r = 0; r < rows; r++) {
                    double mag = 0;
                    for (int64_t c = 0; c < cols; c++) mag += fabs((double)wf[r * cols + c] * x[t * cols + c]);
                    const double d = fabs((double)want[t * rows + r] - slow[t * rows + r]);
                    worst = fmax(worst, d / (mag * 2 * cols * 1.2e-7 + 1e-30));
                }
            CHECK(worst <= 1.0, "%s %lldx%lld: fmatmul order vs pt_matmul_ref: %.3g of the rounding bound",
                  pt_type_name(type), (long long)rows, (long long)cols, worst);

            const pt_weight w = {type, wq, rows, cols, NULL};
            for (int v = 0; v < n_cpus; v++) {
                const pt_cpu *cpu = &cpus[v];
                const size_t sn = pt_matmul_scratch_bytes(cpu, cols);
                uint8_t *scratch = malloc(3 * sn + 64);
                const bool tiled = cpu->variant != PT_CPU_REF;
                for (int threads = 1; threads <= 3; threads += 2) {
                    for (size_t i = 0; i < ny; i++) y[i] = NAN;
                    run(cpu, threads > 1 ? pool : NULL, threads, scratch, sn, &w, x, n, false, y);
                    CHECK(same_bits(y, tiled ? want : slow, ny), "%s %s %lldx%lld, %lld tokens, %d threads: "
                          "not the %s, bitwise", pt_cpu_variant_name(cpu->variant), pt_type_name(type),
                          (long long)rows, (long long)cols, (long long)n, threads,
                          tiled ? "tiled path's reference" : "reference path");
                }
                /* no scratch, or an int8_ref job: the reference path */
                run(cpu, NULL, 1, NULL, 0, &w, x, n, false, y);
                CHECK(same_bits(y, slow, ny), "%s %s without scratch: not pt_matmul_ref",
                      pt_cpu_variant_name(cpu->variant), pt_type_name(type));
                run(cpu, NULL, 1, scratch, sn, &w, x, n, true, y);
                CHECK(same_bits(y, slow, ny), "%s %s int8_ref job: not pt_matmul_ref",
                      pt_cpu_variant_name(cpu->variant), pt_type_name(type));
                free(scratch);
            }
            free(wq), free(wf), free(x), free(want), free(slow), free(y);
            n_shapes++;
        }
    }
    printf("%d shapes checked\n", n_shapes);
    pt_pool_free(pool);
    return check_done("matmul_kq");
}
