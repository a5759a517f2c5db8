/*
 * image_ops_simd.c — SIMD builds of image_ops.h's element-wise ops and
 * norms (image_ops_simd.h). Not written yet: every entry returns false,
 * so the public entry points run the plain C references.
 */
#include "image_ops_simd.h"

bool pti_act_simd(const pt_cpu *cpu, pti_act act, float *x, int64_t n) {
    (void)cpu, (void)act, (void)x, (void)n;
    return false;
}
bool pti_geglu_simd(const pt_cpu *cpu, float *out, const float *x, int64_t n_rows, int inner) {
    (void)cpu, (void)out, (void)x, (void)n_rows, (void)inner;
    return false;
}
bool pti_gn_apply_simd(const pt_cpu *cpu, float *y, const float *x, int64_t p0, int64_t p1, int c,
                       int groups, const float *mean, const float *rstd, const float *gamma,
                       const float *beta, bool silu) {
    (void)cpu, (void)y, (void)x, (void)p0, (void)p1, (void)c, (void)groups, (void)mean, (void)rstd,
        (void)gamma, (void)beta, (void)silu;
    return false;
}
bool pti_layernorm_simd(const pt_cpu *cpu, float *y, const float *x, int64_t n_rows, int n,
                        const float *gamma, const float *beta, float eps) {
    (void)cpu, (void)y, (void)x, (void)n_rows, (void)n, (void)gamma, (void)beta, (void)eps;
    return false;
}
