/*
 * fmatmul.h — products of float32 activations with F32, F16 or BF16
 * weight matrices as stored (row-major, no packing), accumulated in F32
 * with fused multiply-adds; the fast path for the unquantized weights of
 * the image graphs (convolutions and linears kept F16). No engine types
 * cross this header.
 *
 *   Y[t][r] = sum_c W[r][c] * X[t][c]   for rows r in [r0, r1), t in [0, n)
 *   W: rows x cols values of `type` (row stride cols * 4 or * 2 bytes)
 *   X: n x cols floats, Y: n x rows floats (the layout of pt_matmul_ref)
 *
 * Order (every variant, bitwise): the columns, padded with zero weights
 * and zero inputs up to a multiple of 16, go to 16 lanes, c to lane
 * c % 16; each lane starts at +0 and takes acc = fma(W[r][c], X[t][c], acc)
 * for its columns in increasing c (one rounding each; F16 / BF16 values
 * convert to float exactly). Then s8[i] = lane[i] + lane[i + 8],
 * s4[i] = s8[i] + s8[i + 4], s2[i] = s4[i] + s4[i + 2], Y = s2[0] + s2[1].
 * The SIMD builds (AVX-512: one 16-lane vector per sum; AVX2: two of 8;
 * NEON: four of 4) run these operations per lane, register-blocked over
 * several rows and tokens; the plain build is scalar fmaf code.
 */
#ifndef PETREL_FMATMUL_H
#define PETREL_FMATMUL_H

#include <stdbool.h>
#include <stdint.h>

#include "cpu_features.h"

/* Whether pt_fmatmul takes weights of this GGML type id (F32, F16, BF16). */
bool pt_fmatmul_supported(uint32_t type);

/* The product above with cpu's variant (NULL: plain C). */
void pt_fmatmul(const pt_cpu *cpu, uint32_t type, const void *w, int64_t rows, int64_t cols,
                const float *x, int64_t n, float *y, int64_t r0, int64_t r1);

/* The oracle: one output at a time, scalar fmaf, the same order. */
void pt_fmatmul_ref(uint32_t type, const void *w, int64_t rows, int64_t cols, const float *x,
                    int64_t n, float *y, int64_t r0, int64_t r1);

#endif
