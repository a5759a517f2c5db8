/*
 * kv_qk.h — attention scores of float queries against int8 keys held in
 * the KV cache's row form (kv_codec.h q8 and q8r), computed as integer
 * dot products: each query is quantized to int8 once (symmetric, in the
 * keys' blocks), so a score is a sum over blocks of integer sums times
 * two scales, with no key decoded to float. No engine types cross this
 * header.
 *
 * Blocks. blk is the number of values per scale along head_dim D: 32
 * for q8 (PT_KV_Q8_BLOCK) and D for q8r (one scale per row); a block
 * length other than D must be a multiple of 32, and a row has
 * nb = ceil(D / blk) <= PT_KV_QK_MAXB blocks (the last may be shorter).
 *
 * Key rows (kv_codec.h's row form): nb f16 scales kd[b] (little-endian,
 * unaligned), then D int8 codes k[d]; row j at k + j * krow.
 *
 * Quantized queries (pt_kv_qk_quantize), per query: PT_KV_QK_QSTRIDE(D)
 * int8 codes q[d] (zero past D), nb float scales qd[b] = amax_b / 127 and
 * nb int32 sums qs[b] = sum of the block's codes (the VNNI kernels use
 * them); codes are round-to-nearest-even(x / qd[b]), in [-127, 127].
 *
 * Score of query i against row j, for every variant:
 *     isum_b = sum_{d in block b} q[d] * k[d]          (exact, int32)
 *     acc    = 0;  acc = acc + (qd[b] * kd[b]) * (float)isum_b, b in order
 *     s      = acc * scale
 * each operation rounded on its own (no fused multiply-add), so every
 * variant gives bitwise the reference's scores. Key codes may be -128
 * (an imported session's bytes); query codes never are.
 */
#ifndef PETREL_KV_QK_H
#define PETREL_KV_QK_H

#include <stddef.h>
#include <stdint.h>

#include "cpu_features.h"

#define PT_KV_QK_MAXB 32 /* blocks per row at most (q8: D <= 1024) */
#define PT_KV_QK_QSTRIDE(D) (((D) + 31) / 32 * 32) /* bytes of one query's codes */

/* Quantize one query x[0..D) in blocks of blk: codes q
 * [PT_KV_QK_QSTRIDE(D)], scales qd[nb], sums qs[nb]. A block of zeros
 * (or non-finite values) has scale 0 and codes 0. */
void pt_kv_qk_quantize(const float *x, int D, int blk, int8_t *q, float *qd, int32_t *qs);

/* Scores of nq quantized queries (query i: codes q + i * QSTRIDE(D),
 * scales qd + i * nb, sums qs + i * nb) against n key rows:
 * s[i * s_stride + j] for i < nq, j < n (nothing else written). */
typedef void (*pt_kv_qk_fn)(const int8_t *q, const float *qd, const int32_t *qs, int nq, int D, int blk,
                            const uint8_t *k, size_t krow, int n, float scale, float *s, int64_t s_stride);

/* The plain C reference. */
void pt_kv_qk_ref(const int8_t *q, const float *qd, const int32_t *qs, int nq, int D, int blk,
                  const uint8_t *k, size_t krow, int n, float scale, float *s, int64_t s_stride);

/* The kernel for cpu's variant: x86-64 AVX2 (vpmaddubsw), AVX-VNNI and
 * AVX-512 VNNI (vpdpbusd on ymm), arm64 dotprod (sdot); the reference
 * for "ref", NULL, or a CPU without them. */
pt_kv_qk_fn pt_kv_qk_pick(const pt_cpu *cpu);

/* The variants' kernels (kv_qk_x86.c, kv_qk_neon.c); call through
 * pt_kv_qk_pick. */
void pt_kv_qk_avx2(const int8_t *q, const float *qd, const int32_t *qs, int nq, int D, int blk,
                   const uint8_t *k, size_t krow, int n, float scale, float *s, int64_t s_stride);
void pt_kv_qk_avxvnni(const int8_t *q, const float *qd, const int32_t *qs, int nq, int D, int blk,
                      const uint8_t *k, size_t krow, int n, float scale, float *s, int64_t s_stride);
void pt_kv_qk_avx512vnni(const int8_t *q, const float *qd, const int32_t *qs, int nq, int D, int blk,
                         const uint8_t *k, size_t krow, int n, float scale, float *s, int64_t s_stride);
void pt_kv_qk_dotprod(const int8_t *q, const float *qd, const int32_t *qs, int nq, int D, int blk,
                      const uint8_t *k, size_t krow, int n, float scale, float *s, int64_t s_stride);

#endif
