/*
 * quant_quantize.c — float rows to GGML types: F16, BF16 and the legacy
 * 32-value blocks (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0); the K-quants (Q4_K,
 * Q5_K, Q6_K) are in quant_quantize_k.c. Layouts: quant_blocks.h.
 *
 * Each quantizer is a line-by-line port of ggml's quantize_row_*_ref
 * (ggml-quants.c), the functions llama-quantize reaches through
 * ggml_quantize_chunk when no importance matrix is given, so the blocks
 * are byte-identical to llama-quantize's from the same float input. What
 * that takes:
 *   - the same float operations in the same order (the scale d, its
 *     reciprocal id, x * id, then "+ 8.5f" / "+ 0.5f" and truncation
 *     through int8_t exactly as ggml writes it);
 *   - no fused multiply-add: ggml-quants.c is in ggml-base, which ggml
 *     builds without -march flags even with GGML_NATIVE, so on x86-64 its
 *     x * id and the following add are two roundings. petrel is built as
 *     ISO C17 (GCC: -ffp-contract=off) and every product below is its own
 *     statement (Clang's default contracts only within one expression),
 *     so ours are two roundings as well. A ggml built with FMA contraction
 *     in ggml-base (GCC on aarch64 contracts by default) can differ from
 *     both in a code at an exact .5 tie: rare, and a difference of one
 *     code step;
 *   - float -> half rounding to nearest even (pt_f32_to_fp16, as ggml's
 *     software GGML_FP32_TO_FP16) and float -> bfloat16 likewise.
 * Non-finite inputs are the caller's to refuse (llama-quantize refuses
 * them when it loads the tensors): NaN would flow into the codes here as
 * in ggml.
 */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF /* belt and braces: see above */
#endif

#include <float.h>
#include <math.h>

#include "quant_blocks.h"

/* Round to nearest even, NaN kept quiet: ggml_compute_fp32_to_bf16. */
uint16_t pt_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 64); /* nan: force quiet */
    return (uint16_t)((u + (0x7fffu + ((u >> 16) & 1))) >> 16);
}

/* The value of largest magnitude in a block, with its sign (the first of
 * equal magnitudes), as ggml finds it for Q4_0 and Q5_0. */
static float block_signed_max(const float *x) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < PT_QK_LEGACY; j++)
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    return max;
}

static void quantize_q4_0(const float *restrict x, pt_block_q4_0 *restrict y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += PT_QK_LEGACY) {
        const float max = block_signed_max(x);
        const float d = max / -8;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = pt_f32_to_fp16(d);
        for (int j = 0; j < PT_QK_LEGACY / 2; j++) {
            const float x0 = x[j] * id;
            const float x1 = x[j + 16] * id;
            const int8_t c0 = (int8_t)(x0 + 8.5f), c1 = (int8_t)(x1 + 8.5f);
            const uint8_t q0 = (uint8_t)(c0 < 15 ? c0 : 15), q1 = (uint8_t)(c1 < 15 ? c1 : 15);
            y[i].qs[j] = (uint8_t)(q0 | q1 << 4);
        }
    }
}

/* min and max of a block, as ggml finds them (FLT_MAX / -FLT_MAX start). */
static void block_min_max(const float *x, float *min, float *max) {
    float lo = FLT_MAX, hi = -FLT_MAX;
    for (int j = 0; j < PT_QK_LEGACY; j++) {
        if (x[j] < lo) lo = x[j];
        if (x[j] > hi) hi = x[j];
    }
    *min = lo;
    *max = hi;
}

static void quantize_q4_1(const float *restrict x, pt_block_q4_1 *restrict y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += PT_QK_LEGACY) {
        float min, max;
        block_min_max(x, &min, &max);
        const float d = (max - min) / 15;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = pt_f32_to_fp16(d);
        y[i].m = pt_f32_to_fp16(min);
        for (int j = 0; j < PT_QK_LEGACY / 2; j++) {
            const float x0 = (x[j] - min) * id;
            const float x1 = (x[j + 16] - min) * id;
            const int8_t c0 = (int8_t)(x0 + 0.5f), c1 = (int8_t)(x1 + 0.5f);
            const uint8_t q0 = (uint8_t)(c0 < 15 ? c0 : 15), q1 = (uint8_t)(c1 < 15 ? c1 : 15);
            y[i].qs[j] = (uint8_t)(q0 | q1 << 4);
        }
    }
}

static void quantize_q5_0(const float *restrict x, pt_block_q5_0 *restrict y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += PT_QK_LEGACY) {
        const float max = block_signed_max(x);
        const float d = max / -16;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = pt_f32_to_fp16(d);
        uint32_t qh = 0;
        for (int j = 0; j < PT_QK_LEGACY / 2; j++) {
            const float x0 = x[j] * id;
            const float x1 = x[j + 16] * id;
            const int8_t c0 = (int8_t)(x0 + 16.5f), c1 = (int8_t)(x1 + 16.5f);
            const uint8_t q0 = (uint8_t)(c0 < 31 ? c0 : 31), q1 = (uint8_t)(c1 < 31 ? c1 : 31);
            y[i].qs[j] = (uint8_t)((q0 & 0x0f) | (q1 & 0x0f) << 4);
            qh |= ((q0 & 0x10u) >> 4) << j;
            qh |= ((q1 & 0x10u) >> 4) << (j + 16);
        }
        for (int b = 0; b < 4; b++) y[i].qh[b] = (uint8_t)(qh >> (8 * b)); /* little-endian */
    }
}

static void quantize_q5_1(const float *restrict x, pt_block_q5_1 *restrict y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += PT_QK_LEGACY) {
        float min, max;
        block_min_max(x, &min, &max);
        const float d = (max - min) / 31;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = pt_f32_to_fp16(d);
        y[i].m = pt_f32_to_fp16(min);
        uint32_t qh = 0;
        for (int j = 0; j < PT_QK_LEGACY / 2; j++) {
            const float x0 = (x[j] - min) * id;
            const float x1 = (x[j + 16] - min) * id;
            /* ggml: no clamp here (the codes cannot pass 31 but by
             * rounding of x0 + 0.5f at the very top) */
            const uint8_t q0 = (uint8_t)(x0 + 0.5f), q1 = (uint8_t)(x1 + 0.5f);
            y[i].qs[j] = (uint8_t)((q0 & 0x0f) | (q1 & 0x0f) << 4);
            qh |= ((q0 & 0x10u) >> 4) << j;
            qh |= ((q1 & 0x10u) >> 4) << (j + 16);
        }
        for (int b = 0; b < 4; b++) y[i].qh[b] = (uint8_t)(qh >> (8 * b));
    }
}

static void quantize_q8_0(const float *restrict x, pt_block_q8_0 *restrict y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += PT_QK_LEGACY) {
        float amax = 0.0f;
        for (int j = 0; j < PT_QK_LEGACY; j++) {
            const float a = fabsf(x[j]);
            amax = amax > a ? amax : a; /* ggml's MAX(), not fmaxf */
        }
        const float d = amax / 127;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = pt_f32_to_fp16(d);
        for (int j = 0; j < PT_QK_LEGACY; j++) {
            const float x0 = x[j] * id;
            y[i].qs[j] = (int8_t)roundf(x0);
        }
    }
}

bool pt_can_quantize(uint32_t type) {
    switch (type) {
    case PT_TYPE_F32: case PT_TYPE_F16: case PT_TYPE_BF16: case PT_TYPE_Q4_0: case PT_TYPE_Q4_1:
    case PT_TYPE_Q5_0: case PT_TYPE_Q5_1: case PT_TYPE_Q8_0: case PT_TYPE_Q6_K:
    case PT_TYPE_Q4_K: case PT_TYPE_Q5_K:
        return true;
    default:
        return false;
    }
}

size_t pt_quantize_row(uint32_t type, const float *restrict x, void *restrict dst, int64_t n) {
    const size_t bytes = pt_type_row_bytes(type, n);
    if (!bytes || !pt_can_quantize(type)) return 0;
    const int64_t nb = n / PT_QK_LEGACY;
    switch (type) {
    case PT_TYPE_F32:
        memcpy(dst, x, bytes);
        break;
    case PT_TYPE_F16:
        for (int64_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = pt_f32_to_fp16(x[i]);
        break;
    case PT_TYPE_BF16:
        for (int64_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = pt_f32_to_bf16(x[i]);
        break;
    case PT_TYPE_Q4_0: quantize_q4_0(x, dst, nb); break;
    case PT_TYPE_Q4_1: quantize_q4_1(x, dst, nb); break;
    case PT_TYPE_Q5_0: quantize_q5_0(x, dst, nb); break;
    case PT_TYPE_Q5_1: quantize_q5_1(x, dst, nb); break;
    case PT_TYPE_Q8_0: quantize_q8_0(x, dst, nb); break;
    case PT_TYPE_Q6_K: pt_quantize_q6_K(x, dst, n / PT_QK_K); break;
    case PT_TYPE_Q4_K: pt_quantize_q4_K(x, dst, n / PT_QK_K); break;
    case PT_TYPE_Q5_K: pt_quantize_q5_K(x, dst, n / PT_QK_K); break;
    default: return 0;
    }
    return bytes;
}
