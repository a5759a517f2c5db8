/*
 * ops_simd.h — SIMD builds of the ops.h kernels whose cost shows in a
 * forward pass. Each gives bitwise the result of its ops.h reference (the
 * same float operations, lane by lane, never fused), with the vector width
 * of cpu->variant (4 lanes plain / NEON, 8 AVX2, 16 AVX-512; NULL: plain).
 * No engine types cross this header.
 */
#ifndef PETREL_OPS_SIMD_H
#define PETREL_OPS_SIMD_H

#include "cpu_features.h"

/* pt_silu_mul: out[i] = silu(gate[i]) * up[i]; out may alias gate or up. */
void pt_silu_mul_simd(const pt_cpu *cpu, float *out, const float *gate, const float *up, int n);

#endif
