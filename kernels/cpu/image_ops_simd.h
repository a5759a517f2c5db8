/*
 * image_ops_simd.h — the SIMD builds behind image_ops.h's entry points
 * (image_ops_simd.c), internal to the kernels library. Each returns false
 * when cpu's variant has no build of the op (the caller then runs the
 * plain C reference); a build gives bitwise the reference's results.
 */
#ifndef PETREL_IMAGE_OPS_SIMD_H
#define PETREL_IMAGE_OPS_SIMD_H

#include <stdbool.h>
#include <stdint.h>

#include "cpu_features.h"

typedef enum pti_act { PTI_ACT_SILU, PTI_ACT_GELU, PTI_ACT_QUICK_GELU } pti_act;

bool pti_act_simd(const pt_cpu *cpu, pti_act act, float *x, int64_t n);
bool pti_geglu_simd(const pt_cpu *cpu, float *out, const float *x, int64_t n_rows, int inner);
bool pti_gn_apply_simd(const pt_cpu *cpu, float *y, const float *x, int64_t p0, int64_t p1, int c,
                       int groups, const float *mean, const float *rstd, const float *gamma,
                       const float *beta, bool silu);
bool pti_layernorm_simd(const pt_cpu *cpu, float *y, const float *x, int64_t n_rows, int n,
                        const float *gamma, const float *beta, float eps);

/* m = (float)mean and r = (float)(1 / sqrt(var + eps)) of one row, as
 * pt_layernorm_ref computes them (image_ops.c), for every variant. */
void pti_layernorm_row_stats(const float *x, int n, float eps, float *m, float *r);

#endif
