/*
 * quant_quantize_k.c — float rows to Q6_K (layout: quant_blocks.h), the
 * type llama-quantize gives output.weight (and a tied token_embd) under the
 * 4- and 5-bit targets when the rows hold whole 256-value blocks.
 *
 * A line-by-line port of ggml's quantize_row_q6_K_ref and of the
 * make_qx_quants it calls (rmse_type 1, no importance weights), with the
 * same float operations in the same order and no contraction into fused
 * multiply-adds (see quant_quantize.c), so the blocks are byte-identical
 * to llama-quantize's without an importance matrix.
 */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF /* GCC: ISO C17 mode already means -ffp-contract=off */
#endif

#include <math.h>

#include "quant_blocks.h"

#define GROUP_MAX_EPS 1e-15f

/* Round to nearest (ties to even) for |fval| <= 4194303, by adding
 * 1.5 * 2^23 so the integer lands in the low mantissa bits: ggml's
 * nearest_int, bit for bit. */
static int nearest_int(float fval) {
    const float val = fval + 12582912.f;
    int i;
    memcpy(&i, &val, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

static int clamp_l(int l, int nmax) {
    return l < -nmax ? -nmax : l > nmax - 1 ? nmax - 1 : l;
}

/* make_qx_quants(n, nmax, x, L, rmse_type = 1, qw = NULL): the scale of a
 * group of n values with codes L in 0..2*nmax-1, searched over 19 trial
 * scales for the least weighted (w = x^2) squared error. */
static float make_qx_quants_rmse1(int n, int nmax, const float *restrict x, int8_t *restrict L) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; i++) {
        const float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < GROUP_MAX_EPS) {
        for (int i = 0; i < n; i++) L[i] = 0;
        return 0.f;
    }
    float iscale = -nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        const float t = iscale * x[i];
        const int l = clamp_l(nearest_int(t), nmax);
        L[i] = (int8_t)(l + nmax);
        const float w = x[i] * x[i];
        const float wx = w * x[i], wxl = wx * (float)l;
        sumlx += wxl;
        const float wl = w * (float)l, wll = wl * (float)l;
        suml2 += wll;
    }
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; is++) {
        if (is == 0) continue;
        const float step = 0.1f * (float)is;
        const float top = (float)nmax + step;
        iscale = -top / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; i++) {
            const float t = iscale * x[i];
            const int l = clamp_l(nearest_int(t), nmax);
            const float w = x[i] * x[i];
            const float wx = w * x[i], wxl = wx * (float)l;
            sumlx += wxl;
            const float wl = w * (float)l, wll = wl * (float)l;
            suml2 += wll;
        }
        const float lhs = sumlx * sumlx, rhs = best * suml2;
        if (suml2 > 0 && lhs > rhs) {
            for (int i = 0; i < n; i++) {
                const float t = iscale * x[i];
                L[i] = (int8_t)(nmax + clamp_l(nearest_int(t), nmax));
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

void pt_quantize_q6_K(const float *restrict x, void *restrict dst, int64_t nb) {
    pt_block_q6_K *y = dst;
    int8_t L[PT_QK_K];
    float scales[PT_QK_K / 16];
    for (int64_t i = 0; i < nb; i++, x += PT_QK_K) {
        float max_scale = 0, max_abs_scale = 0;
        for (int ib = 0; ib < PT_QK_K / 16; ib++) {
            const float scale = make_qx_quants_rmse1(16, 32, x + 16 * ib, L + 16 * ib);
            scales[ib] = scale;
            const float abs_scale = fabsf(scale);
            if (abs_scale > max_abs_scale) {
                max_abs_scale = abs_scale;
                max_scale = scale;
            }
        }
        if (max_abs_scale < GROUP_MAX_EPS) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        const float iscale = -128.f / max_scale;
        y[i].d = pt_f32_to_fp16(1 / iscale);
        for (int ib = 0; ib < PT_QK_K / 16; ib++) {
            const float t = iscale * scales[ib];
            const int s = nearest_int(t);
            y[i].scales[ib] = (int8_t)(s < 127 ? s : 127);
        }
        for (int j = 0; j < PT_QK_K / 16; j++) {
            const float d = pt_half_to_float(y[i].d) * (float)y[i].scales[j];
            if (d == 0.0f) continue; /* L keeps make_qx_quants' codes, as in ggml */
            for (int ii = 0; ii < 16; ii++) {
                int l = nearest_int(x[16 * j + ii] / d);
                l = l < -32 ? -32 : l > 31 ? 31 : l;
                L[16 * j + ii] = (int8_t)(l + 32);
            }
        }
        /* pack: see pt_block_q6_K in quant_blocks.h */
        uint8_t *ql = y[i].ql, *qh = y[i].qh;
        for (int j = 0; j < PT_QK_K; j += 128, ql += 64, qh += 32)
            for (int l = 0; l < 32; l++) {
                const uint8_t q1 = L[j + l] & 0xF, q2 = L[j + l + 32] & 0xF;
                const uint8_t q3 = L[j + l + 64] & 0xF, q4 = L[j + l + 96] & 0xF;
                ql[l] = (uint8_t)(q1 | q3 << 4);
                ql[l + 32] = (uint8_t)(q2 | q4 << 4);
                qh[l] = (uint8_t)((L[j + l] >> 4) | (L[j + l + 32] >> 4) << 2 | (L[j + l + 64] >> 4) << 4 |
                                  (L[j + l + 96] >> 4) << 6);
            }
    }
}
