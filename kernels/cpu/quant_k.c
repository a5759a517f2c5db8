/*
 * quant_k.c — decoders for the K-quant super-blocks petrel computes
 * (Q4_K, Q5_K, Q6_K). Layouts: quant_blocks.h.
 *
 * Bitwise agreement with ggml / gguf-py: the float expressions and their
 * order are ggml's:
 *   Q4_K / Q5_K: (d * sc) * q - (dmin * mn). d * sc (half times a 6-bit
 *     integer) and then * q (a 4- or 5-bit integer) stay within float's 24
 *     mantissa bits, so both products are exact and the subtraction is the
 *     only rounding (hence also immune to FMA contraction).
 *   Q6_K: (d * scale) * (q - 32). d * scale is exact (11 + 8 bits); the
 *     second product may round, once, in the same order as ggml.
 */
#include "quant_blocks.h"

/* Scale and min of sub-block s (0..7) from the 12 packed bytes shared by
 * Q4_K and Q5_K; bit layout in quant_blocks.h. */
static void k_scale_min(const uint8_t sc[12], int s, int *scale, int *min) {
    if (s < 4) {
        *scale = sc[s] & 63;
        *min = sc[s + 4] & 63;
    } else {
        *scale = (sc[s + 4] & 0x0f) | (sc[s - 4] >> 6) << 4;
        *min = (sc[s + 4] >> 4) | (sc[s] >> 6) << 4;
    }
}

void pt_dequant_block_q4_K(const pt_block_q4_K *restrict b, float *restrict y) {
    const float d = pt_half_to_float(b->d);
    const float dmin = pt_half_to_float(b->dmin);
    for (int c = 0; c < 4; c++) { /* chunk c: sub-blocks 2c (low), 2c+1 (high) */
        int sc0, mn0, sc1, mn1;
        k_scale_min(b->scales, 2 * c, &sc0, &mn0);
        k_scale_min(b->scales, 2 * c + 1, &sc1, &mn1);
        const float d0 = d * (float)sc0, m0 = dmin * (float)mn0;
        const float d1 = d * (float)sc1, m1 = dmin * (float)mn1;
        const uint8_t *q = b->qs + 32 * c;
        for (int l = 0; l < 32; l++) {
            y[64 * c + l] = d0 * (float)(q[l] & 0x0f) - m0;
            y[64 * c + 32 + l] = d1 * (float)(q[l] >> 4) - m1;
        }
    }
}

void pt_dequant_block_q5_K(const pt_block_q5_K *restrict b, float *restrict y) {
    const float d = pt_half_to_float(b->d);
    const float dmin = pt_half_to_float(b->dmin);
    for (int c = 0; c < 4; c++) {
        int sc0, mn0, sc1, mn1;
        k_scale_min(b->scales, 2 * c, &sc0, &mn0);
        k_scale_min(b->scales, 2 * c + 1, &sc1, &mn1);
        const float d0 = d * (float)sc0, m0 = dmin * (float)mn0;
        const float d1 = d * (float)sc1, m1 = dmin * (float)mn1;
        const uint8_t *q = b->qs + 32 * c;
        const int s0 = 2 * c, s1 = 2 * c + 1; /* sub-block s's fifth bit is bit s of qh[l] */
        for (int l = 0; l < 32; l++) {
            int q0 = (q[l] & 0x0f) | ((b->qh[l] >> s0) & 1) << 4;
            int q1 = (q[l] >> 4) | ((b->qh[l] >> s1) & 1) << 4;
            y[64 * c + l] = d0 * (float)q0 - m0;
            y[64 * c + 32 + l] = d1 * (float)q1 - m1;
        }
    }
}

void pt_dequant_block_q6_K(const pt_block_q6_K *restrict b, float *restrict y) {
    const float d = pt_half_to_float(b->d);
    for (int h = 0; h < 2; h++) { /* two halves of 128 values */
        const uint8_t *ql = b->ql + 64 * h;
        const uint8_t *qh = b->qh + 32 * h;
        float *yh = y + 128 * h;
        for (int is = 0; is < 2; is++) { /* l in [16 is, 16 is + 16): sub-blocks 2k + is */
            /* d * scale first, as ggml's d * sc[...] * q evaluates */
            const float s0 = d * (float)b->scales[8 * h + is + 0];
            const float s1 = d * (float)b->scales[8 * h + is + 2];
            const float s2 = d * (float)b->scales[8 * h + is + 4];
            const float s3 = d * (float)b->scales[8 * h + is + 6];
            for (int l = 16 * is; l < 16 * is + 16; l++) {
                int q0 = ((ql[l] & 0x0f) | ((qh[l] >> 0) & 3) << 4) - 32;
                int q1 = ((ql[l + 32] & 0x0f) | ((qh[l] >> 2) & 3) << 4) - 32;
                int q2 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
                int q3 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
                yh[l] = s0 * (float)q0;
                yh[l + 32] = s1 * (float)q1;
                yh[l + 64] = s2 * (float)q2;
                yh[l + 96] = s3 * (float)q3;
            }
        }
    }
}
