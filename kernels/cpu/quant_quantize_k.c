/*
 * quant_quantize_k.c — float rows to the K-quants Q6_K, Q4_K and Q5_K
 * (layouts: quant_blocks.h). Q6_K is also what llama-quantize gives
 * output.weight (and a tied token_embd) under the 4- and 5-bit targets
 * when the rows hold whole 256-value blocks.
 *
 * Line-by-line ports of ggml's quantize_row_q6_K_ref / q4_K_ref /
 * q5_K_ref and of the make_qx_quants (rmse_type 1) and make_qkx2_quants
 * (use_mad false) they call without importance weights, with the
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

/* ---- Q4_K and Q5_K ------------------------------------------------------ */

/* make_qkx2_quants(n, nmax, x, weights, L, &the_min, Laux, rmin, rdelta,
 * nstep, use_mad = false): scale and min of a group with codes 0..nmax,
 * searched over nstep + 1 trial scales for the least weighted squared
 * error, each trial solving the 2x2 least-squares system for (scale, min).
 * The expressions are ggml's, operand for operand. */
static float make_qkx2_quants(int n, int nmax, const float *restrict x, const float *restrict weights,
                              uint8_t *restrict L, float *restrict the_min, uint8_t *restrict Laux, float rmin,
                              float rdelta, int nstep) {
    float min = x[0];
    float max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        float w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        *the_min = -min;
        return 0.f;
    }
    float iscale = nmax / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; ++i) {
        int l = nearest_int(iscale * (x[i] - min));
        L[i] = (uint8_t)(l < 0 ? 0 : l > nmax ? nmax : l);
        float diff = scale * L[i] + min - x[i];
        diff = diff * diff;
        float w = weights[i];
        best_error += w * diff;
    }
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * is + nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            int l = nearest_int(iscale * (x[i] - min));
            l = l < 0 ? 0 : l > nmax ? nmax : l;
            Laux[i] = (uint8_t)l;
            float w = weights[i];
            sum_l += w * l;
            sum_l2 += w * l * l;
            sum_xl += w * l * x[i];
        }
        float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0;
            for (int i = 0; i < n; ++i) {
                float diff = this_scale * Laux[i] + this_min - x[i];
                diff = diff * diff;
                float w = weights[i];
                cur_error += w * diff;
            }
            if (cur_error < best_error) {
                for (int i = 0; i < n; ++i) L[i] = Laux[i];
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

/* The shared first half of quantize_row_q4_K_ref / q5_K_ref: the 8
 * sub-block (scale, min) pairs packed into scales[12] (layout in
 * quant_blocks.h), d and dmin, and the codes L[0..256) in 0..nmax. */
static void q45_K_scales(const float *restrict x, int nmax, float rmin, int nstep, uint16_t *d_out,
                         uint16_t *dmin_out, uint8_t scales_out[12], uint8_t L[PT_QK_K]) {
    uint8_t Laux[32];
    float weights[32], mins[PT_QK_K / 32], scales[PT_QK_K / 32];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < PT_QK_K / 32; ++j) {
        float sum_x2 = 0;
        for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
        float av_x = sqrtf(sum_x2 / 32);
        for (int l = 0; l < 32; ++l) weights[l] = av_x + fabsf(x[32 * j + l]);
        scales[j] = make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin, 0.1f, nstep);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    for (int j = 0; j < PT_QK_K / 32; ++j) {
        uint8_t ls = (uint8_t)nearest_int(inv_scale * scales[j]);
        uint8_t lm = (uint8_t)nearest_int(inv_min * mins[j]);
        ls = ls < 63 ? ls : 63;
        lm = lm < 63 ? lm : 63;
        if (j < 4) {
            scales_out[j] = ls;
            scales_out[j + 4] = lm;
        } else {
            scales_out[j + 4] = (uint8_t)((ls & 0xF) | ((lm & 0xF) << 4));
            scales_out[j - 4] |= (uint8_t)((ls >> 4) << 6);
            scales_out[j - 0] |= (uint8_t)((lm >> 4) << 6);
        }
    }
    *d_out = pt_f32_to_fp16(max_scale / 63.f);
    *dmin_out = pt_f32_to_fp16(max_min / 63.f);
    for (int j = 0; j < PT_QK_K / 32; ++j) {
        uint8_t sc, m;
        if (j < 4) {
            sc = scales_out[j] & 63;
            m = scales_out[j + 4] & 63;
        } else {
            sc = (uint8_t)((scales_out[j + 4] & 0xF) | ((scales_out[j - 4] >> 6) << 4));
            m = (uint8_t)((scales_out[j + 4] >> 4) | ((scales_out[j - 0] >> 6) << 4));
        }
        const float d = pt_half_to_float(*d_out) * sc;
        if (d == 0.0f) continue;
        const float dm = pt_half_to_float(*dmin_out) * m;
        for (int ii = 0; ii < 32; ++ii) {
            int l = nearest_int((x[32 * j + ii] + dm) / d);
            L[32 * j + ii] = (uint8_t)(l < 0 ? 0 : l > nmax ? nmax : l);
        }
    }
}

void pt_quantize_q4_K(const float *restrict x, void *restrict dst, int64_t nb) {
    pt_block_q4_K *y = dst;
    uint8_t L[PT_QK_K];
    for (int64_t i = 0; i < nb; i++, x += PT_QK_K) {
        q45_K_scales(x, 15, -1.f, 20, &y[i].d, &y[i].dmin, y[i].scales, L);
        uint8_t *q = y[i].qs;
        for (int j = 0; j < PT_QK_K; j += 64, q += 32)
            for (int l = 0; l < 32; ++l) q[l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
    }
}

void pt_quantize_q5_K(const float *restrict x, void *restrict dst, int64_t nb) {
    pt_block_q5_K *y = dst;
    uint8_t L[PT_QK_K];
    for (int64_t i = 0; i < nb; i++, x += PT_QK_K) {
        q45_K_scales(x, 31, -0.5f, 15, &y[i].d, &y[i].dmin, y[i].scales, L);
        uint8_t *qh = y[i].qh, *ql = y[i].qs;
        memset(qh, 0, PT_QK_K / 8);
        uint8_t m1 = 1, m2 = 2;
        for (int n = 0; n < PT_QK_K; n += 64, ql += 32) {
            for (int j = 0; j < 32; ++j) {
                int l1 = L[n + j];
                if (l1 > 15) {
                    l1 -= 16;
                    qh[j] |= m1;
                }
                int l2 = L[n + j + 32];
                if (l2 > 15) {
                    l2 -= 16;
                    qh[j] |= m2;
                }
                ql[j] = (uint8_t)(l1 | (l2 << 4));
            }
            m1 = (uint8_t)(m1 << 2);
            m2 = (uint8_t)(m2 << 2);
        }
    }
}
