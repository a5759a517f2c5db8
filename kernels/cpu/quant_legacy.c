/*
 * quant_legacy.c — decoders for GGML's original 32-value block types
 * (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0). Layouts: quant_blocks.h.
 *
 * Bitwise agreement with ggml / gguf-py: each value is d * (integer code)
 * (+ m), computed in float with the same operation order. d is a half, so
 * d * code (11-bit mantissa times an integer of at most 8 bits) is exact
 * in float; the only rounding is the final "+ m" of Q4_1 / Q5_1. Exact
 * products also make the result independent of FMA contraction.
 */
#include "quant_blocks.h"

void pt_dequant_block_q4_0(const pt_block_q4_0 *restrict b, float *restrict y) {
    const float d = pt_half_to_float(b->d);
    for (int j = 0; j < 16; j++) {
        y[j] = d * (float)((b->qs[j] & 0x0f) - 8);
        y[j + 16] = d * (float)((b->qs[j] >> 4) - 8);
    }
}

void pt_dequant_block_q4_1(const pt_block_q4_1 *restrict b, float *restrict y) {
    const float d = pt_half_to_float(b->d);
    const float m = pt_half_to_float(b->m);
    for (int j = 0; j < 16; j++) {
        y[j] = d * (float)(b->qs[j] & 0x0f) + m;
        y[j + 16] = d * (float)(b->qs[j] >> 4) + m;
    }
}

/* Q5 high bits: bit 4 of code i is bit i of qh read as a little-endian
 * uint32. Testing it against a table of single-bit masks, rather than
 * shifting by a varying amount, lets the loops vectorize. */
static const uint32_t bit_of[16] = {
    1u << 0, 1u << 1, 1u << 2,  1u << 3,  1u << 4,  1u << 5,  1u << 6,  1u << 7,
    1u << 8, 1u << 9, 1u << 10, 1u << 11, 1u << 12, 1u << 13, 1u << 14, 1u << 15,
};

static uint32_t q5_high_bits(const uint8_t qh[4]) {
    return (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 | (uint32_t)qh[3] << 24;
}

void pt_dequant_block_q5_0(const pt_block_q5_0 *restrict b, float *restrict y) {
    const float d = pt_half_to_float(b->d);
    const uint32_t qh = q5_high_bits(b->qh);
    for (int j = 0; j < 16; j++) {
        int q0 = (b->qs[j] & 0x0f) | ((qh & bit_of[j]) ? 16 : 0);
        int q1 = (b->qs[j] >> 4) | ((qh & bit_of[j] << 16) ? 16 : 0);
        y[j] = d * (float)(q0 - 16);
        y[j + 16] = d * (float)(q1 - 16);
    }
}

void pt_dequant_block_q5_1(const pt_block_q5_1 *restrict b, float *restrict y) {
    const float d = pt_half_to_float(b->d);
    const float m = pt_half_to_float(b->m);
    const uint32_t qh = q5_high_bits(b->qh);
    for (int j = 0; j < 16; j++) {
        int q0 = (b->qs[j] & 0x0f) | ((qh & bit_of[j]) ? 16 : 0);
        int q1 = (b->qs[j] >> 4) | ((qh & bit_of[j] << 16) ? 16 : 0);
        y[j] = d * (float)q0 + m;
        y[j + 16] = d * (float)q1 + m;
    }
}

void pt_dequant_block_q8_0(const pt_block_q8_0 *restrict b, float *restrict y) {
    const float d = pt_half_to_float(b->d);
    for (int j = 0; j < 32; j++) y[j] = d * (float)b->qs[j];
}
