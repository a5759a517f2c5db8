/*
 * qmatmul_neon.c — arm64 kernels: NEON dotprod (sdot, ARMv8.2) and i8mm
 * (smmla, ARMv8.6), 8 rows per group, and the NEON activation quantizer.
 *
 * Both multiply signed by signed bytes, so weights keep their codes: Q4
 * nibbles 0..15 (valid int8) and Q8_0 codes as stored (q8_bias 0); Q4_0
 * sums start at -8 s.
 *
 * dotprod, layout KI = 4: a 16-byte register holds one quad of 4 rows.
 * vdotq_laneq_s32(acc, w, a, l) adds, in each row's lane, the dot of the
 * row's quad with quad l of the activation register a, so 16 activation
 * bytes (4 quads) are loaded once and used by lane: no broadcasts.
 *
 * i8mm, layout KI = 8: a 16-byte register holds 8 consecutive codes of a
 * pair of rows (r, r + 1). smmla multiplies it by a register holding the
 * same 8 elements of a pair of tokens (t, t + 1) and accumulates the 2x2
 * block [r.t, r.t+1, r+1.t, r+1.t+1] of int32. Activation pairs are built
 * with zip1/zip2 on 64-bit lanes of the two tokens' rows. One token
 * (decode) uses sdot on the same layout instead: lanes [r k0-3, r k4-7,
 * r+1 k0-3, r+1 k4-7] against the 8 activation bytes repeated, then a
 * pairwise add per block.
 *
 * Float steps per block, row and token are qmatmul.h's, with fused
 * multiply-adds (vfmaq), so results equal pt_qmatmul_ref bit for bit.
 */
#if defined(__aarch64__)

#include <arm_neon.h>

#include "qmatmul_impl.h"

#include "neon_int8.h"

enum { K_Q4_0, K_Q4_1, K_Q8_0 };

/* 8 fp16 block scales as two float vectors (rows 0-3, 4-7) */
INLINE void load_scales8(const uint16_t *h, float32x4_t *lo, float32x4_t *hi) {
    const float16x8_t v = vreinterpretq_f16_u16(vld1q_u16(h));
    *lo = vcvt_f32_f16(vget_low_f16(v));
    *hi = vcvt_high_f32_f16(v);
}

/* Store lanes [lo, hi) of an 8-float row result. */
INLINE void store_rows8(float *dst, float32x4_t a, float32x4_t b, int lo, int hi) {
    if (lo == 0 && hi == 8) {
        vst1q_f32(dst, a);
        vst1q_f32(dst + 4, b);
        return;
    }
    float tmp[8];
    vst1q_f32(tmp, a);
    vst1q_f32(tmp + 4, b);
    PT_UNROLL
    for (int i = lo; i < hi; i++) dst[i] = tmp[i];
}

/* ==== dotprod ========================================================= */

#define TMAX_DOT 4

/* 8 rows x T tokens. is[t][h]: int sums of rows 4h..4h+3. */
INLINE TGT_DOT void tile_dot(const pt_qweights *w, const pt_qact *x, const uint8_t *group,
                             int64_t t0, const int T, const int kind, float *y, int64_t row0,
                             int lo, int hi) {
    const int64_t nb = w->nb, cols = x->cols;
    const int8_t *a0 = x->q + t0 * cols;
    const float *d0 = x->d + t0 * nb, *ds0 = x->ds + t0 * nb;
    const int32_t *c0 = x->s_m8 + t0 * nb;
    float32x4_t acc[TMAX_DOT][2];
    PT_UNROLL
    for (int t = 0; t < T; t++) acc[t][0] = acc[t][1] = vdupq_n_f32(0.0f);

    for (int64_t b = 0; b < nb; b++) {
        const int8_t *qp = (const int8_t *)pt_qw_quants(w, group, b);
        if (T == 1) /* decode streams weights from DRAM: fetch 8 blocks ahead */
            for (size_t off = 0; off < w->qbytes; off += 64) __builtin_prefetch(qp + 8 * w->qbytes + off);
        int32x4_t is[TMAX_DOT][2];
        PT_UNROLL
        for (int t = 0; t < T; t++) {
            is[t][0] = is[t][1] = kind == K_Q4_0 ? vld1q_dup_s32(c0 + t * nb + b) : vdupq_n_s32(0);
        }
        /* the block's activations of every token stay in registers (2 T),
         * the weights stream through a few: chunk by chunk, all tokens */
        const int8_t *ab = a0 + b * PT_QACT_BLOCK;
        int8x16_t A[TMAX_DOT][2];
        PT_UNROLL
        for (int t = 0; t < T; t++) {
            A[t][0] = vld1q_s8(ab + t * cols);
            A[t][1] = vld1q_s8(ab + t * cols + 16);
        }
        if (kind == K_Q8_0) {
            /* chunk j: rows 0-3 at qp + 32 j, rows 4-7 at qp + 32 j + 16;
             * elements 4j.. = quad j % 4 of activation half j / 4 */
#define Q8STEP(j)                                                                  \
    {                                                                              \
        const int8x16_t w0 = vld1q_s8(qp + 32 * (j)), w1 = vld1q_s8(qp + 32 * (j) + 16); \
        PT_UNROLL                                                                  \
        for (int t = 0; t < T; t++) {                                              \
            is[t][0] = SDOT_LANE(is[t][0], w0, A[t][(j) / 4], Q8LANE_##j);          \
            is[t][1] = SDOT_LANE(is[t][1], w1, A[t][(j) / 4], Q8LANE_##j);          \
        }                                                                          \
    }
#define Q8LANE_0 0
#define Q8LANE_1 1
#define Q8LANE_2 2
#define Q8LANE_3 3
#define Q8LANE_4 0
#define Q8LANE_5 1
#define Q8LANE_6 2
#define Q8LANE_7 3
            Q8STEP(0) Q8STEP(1) Q8STEP(2) Q8STEP(3) Q8STEP(4) Q8STEP(5) Q8STEP(6) Q8STEP(7)
        } else {
            /* chunk c: low nibbles are quad c (activation half 0), high
             * nibbles quad c + 4 (half 1, lane c) */
            const uint8x16_t m4 = vdupq_n_u8(0x0f);
#define Q4STEP(c)                                                                  \
    {                                                                              \
        const uint8x16_t v0 = vld1q_u8((const uint8_t *)qp + 32 * (c));           \
        const uint8x16_t v1 = vld1q_u8((const uint8_t *)qp + 32 * (c) + 16);      \
        const int8x16_t l0 = vreinterpretq_s8_u8(vandq_u8(v0, m4));               \
        const int8x16_t h0 = vreinterpretq_s8_u8(vshrq_n_u8(v0, 4));              \
        const int8x16_t l1 = vreinterpretq_s8_u8(vandq_u8(v1, m4));               \
        const int8x16_t h1 = vreinterpretq_s8_u8(vshrq_n_u8(v1, 4));              \
        PT_UNROLL                                                                  \
        for (int t = 0; t < T; t++) {                                              \
            is[t][0] = SDOT_LANE(is[t][0], l0, A[t][0], c);                        \
            is[t][0] = SDOT_LANE(is[t][0], h0, A[t][1], c);                        \
            is[t][1] = SDOT_LANE(is[t][1], l1, A[t][0], c);                        \
            is[t][1] = SDOT_LANE(is[t][1], h1, A[t][1], c);                        \
        }                                                                          \
    }
            Q4STEP(0) Q4STEP(1) Q4STEP(2) Q4STEP(3)
        }
#undef Q4STEP
#undef Q8STEP
        float32x4_t dw[2], mw[2] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
        load_scales8(pt_qw_d(w, group, b), &dw[0], &dw[1]);
        if (kind == K_Q4_1) load_scales8(pt_qw_m(w, group, b), &mw[0], &mw[1]);
        PT_UNROLL
        for (int t = 0; t < T; t++) {
            const float da = d0[t * nb + b];
            PT_UNROLL
            for (int h = 0; h < 2; h++) {
                const float32x4_t sc = vmulq_n_f32(dw[h], da);
                acc[t][h] = vfmaq_f32(acc[t][h], vcvtq_f32_s32(is[t][h]), sc);
                if (kind == K_Q4_1) acc[t][h] = vfmaq_f32(acc[t][h], mw[h], vdupq_n_f32(ds0[t * nb + b]));
            }
        }
    }
    PT_UNROLL
    for (int t = 0; t < T; t++) store_rows8(y + (t0 + t) * w->rows + row0, acc[t][0], acc[t][1], lo, hi);
}

#define DOT_CASES(kind)                                                            \
    switch (T) {                                                                   \
    case 1: tile_dot(w, x, group, t0, 1, kind, y, row0, lo, hi); break;            \
    case 2: tile_dot(w, x, group, t0, 2, kind, y, row0, lo, hi); break;            \
    case 3: tile_dot(w, x, group, t0, 3, kind, y, row0, lo, hi); break;            \
    default: tile_dot(w, x, group, t0, 4, kind, y, row0, lo, hi); break;           \
    }

static TGT_DOT void tile_dot_any(const pt_qweights *w, const pt_qact *x, const uint8_t *group,
                                 int64_t t0, int T, float *y, int64_t row0, int lo, int hi) {
    switch (w->type) {
    case PT_TYPE_Q4_0: DOT_CASES(K_Q4_0) break;
    case PT_TYPE_Q4_1: DOT_CASES(K_Q4_1) break;
    default: DOT_CASES(K_Q8_0) break;
    }
}

#define L2_BLOCK (256 * 1024) /* bytes of packed weights per row block */

TGT_DOT void pt_qmm_dotprod(PT_QMM_ARGS) {
    (void)scratch; /* needs none */
    pt_qmm_walk(w, x, y, r0, r1, TMAX_DOT, L2_BLOCK, tile_dot_any);
}

/* ==== i8mm ============================================================ */

#define TMAX_MM 4 /* two token pairs */

/* One token on the KI = 8 layout with sdot (see the header comment).
 * Register (c, p) = rows 2p, 2p+1, elements 8c..8c+7 of the chunk. */
INLINE TGT_MM void gemv_mm(const pt_qweights *w, const pt_qact *x, const uint8_t *group,
                           int64_t t0, const int kind, float *y, int64_t row0, int lo, int hi) {
    const int64_t nb = w->nb;
    const int8_t *a0 = x->q + t0 * x->cols;
    float32x4_t acc[2] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
    const uint8x16_t m4 = vdupq_n_u8(0x0f);
    for (int64_t b = 0; b < nb; b++) {
        const int8_t *qp = (const int8_t *)pt_qw_quants(w, group, b);
        const int8_t *ab = a0 + b * PT_QACT_BLOCK;
        for (size_t off = 0; off < w->qbytes; off += 64) __builtin_prefetch(qp + 8 * w->qbytes + off);
        /* E[k] = elements 8k..8k+7, twice */
        int8x16_t E[4];
        PT_UNROLL
        for (int k = 0; k < 4; k++) {
            const int8x8_t h = vld1_s8(ab + 8 * k);
            E[k] = vcombine_s8(h, h);
        }
        int32x4_t part[4]; /* per row pair: [r k0-3, r k4-7, r+1 k0-3, r+1 k4-7] partials */
        PT_UNROLL
        for (int p = 0; p < 4; p++) part[p] = vdupq_n_s32(0);
        if (kind == K_Q8_0) {
            PT_UNROLL
            for (int c = 0; c < 4; c++)
                PT_UNROLL
                for (int p = 0; p < 4; p++) part[p] = SDOT(part[p], vld1q_s8(qp + 64 * c + 16 * p), E[c]);
        } else {
            PT_UNROLL
            for (int c = 0; c < 2; c++)
                PT_UNROLL
                for (int p = 0; p < 4; p++) {
                    const uint8x16_t v = vld1q_u8((const uint8_t *)qp + 64 * c + 16 * p);
                    part[p] = SDOT(part[p], vreinterpretq_s8_u8(vandq_u8(v, m4)), E[c]);
                    part[p] = SDOT(part[p], vreinterpretq_s8_u8(vshrq_n_u8(v, 4)), E[2 + c]);
                }
        }
        /* pairwise: [r0, r1, r2, r3] and [r4, r5, r6, r7] */
        int32x4_t is[2] = {vpaddq_s32(part[0], part[1]), vpaddq_s32(part[2], part[3])};
        if (kind == K_Q4_0) {
            const int32x4_t c = vld1q_dup_s32(x->s_m8 + t0 * nb + b);
            is[0] = vaddq_s32(is[0], c);
            is[1] = vaddq_s32(is[1], c);
        }
        float32x4_t dw[2], mw[2] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
        load_scales8(pt_qw_d(w, group, b), &dw[0], &dw[1]);
        if (kind == K_Q4_1) load_scales8(pt_qw_m(w, group, b), &mw[0], &mw[1]);
        const float da = x->d[t0 * nb + b];
        PT_UNROLL
        for (int h = 0; h < 2; h++) {
            acc[h] = vfmaq_f32(acc[h], vcvtq_f32_s32(is[h]), vmulq_n_f32(dw[h], da));
            if (kind == K_Q4_1) acc[h] = vfmaq_f32(acc[h], mw[h], vdupq_n_f32(x->ds[t0 * nb + b]));
        }
    }
    store_rows8(y + t0 * w->rows + row0, acc[0], acc[1], lo, hi);
}

/* 8 rows x T tokens (T even after padding: an odd last token is paired
 * with itself and the duplicate results dropped). is[q][p]: token pair q,
 * row pair p, lanes [r.t, r.t', r'.t, r'.t']. */
INLINE TGT_MM void tile_mm(const pt_qweights *w, const pt_qact *x, const uint8_t *group, int64_t t0,
                           const int T, const int kind, float *y, int64_t row0, int lo, int hi) {
    enum { NQ = TMAX_MM / 2 };
    const int nq = (T + 1) / 2;
    const int64_t nb = w->nb, cols = x->cols;
    int64_t tok[TMAX_MM]; /* token of each slot; the pad slot repeats the last */
    PT_UNROLL
    for (int i = 0; i < 2 * nq; i++) tok[i] = t0 + (i < T ? i : T - 1);
    float32x4_t acc[NQ][4];
    PT_UNROLL
    for (int q = 0; q < nq; q++)
        PT_UNROLL
        for (int p = 0; p < 4; p++) acc[q][p] = vdupq_n_f32(0.0f);
    const uint8x16_t m4 = vdupq_n_u8(0x0f);

    for (int64_t b = 0; b < nb; b++) {
        const int8_t *qp = (const int8_t *)pt_qw_quants(w, group, b);
        int32x4_t is[NQ][4];
        int8x16_t E[NQ][4]; /* token pair q, elements 8k..8k+7 of both tokens */
        PT_UNROLL
        for (int q = 0; q < nq; q++) {
            const int8_t *pa = x->q + tok[2 * q] * cols + b * PT_QACT_BLOCK;
            const int8_t *pb = x->q + tok[2 * q + 1] * cols + b * PT_QACT_BLOCK;
            PT_UNROLL
            for (int half = 0; half < 2; half++) {
                const int64x2_t va = vreinterpretq_s64_s8(vld1q_s8(pa + 16 * half));
                const int64x2_t vb = vreinterpretq_s64_s8(vld1q_s8(pb + 16 * half));
                E[q][2 * half] = vreinterpretq_s8_s64(vzip1q_s64(va, vb));
                E[q][2 * half + 1] = vreinterpretq_s8_s64(vzip2q_s64(va, vb));
            }
            if (kind == K_Q4_0) {
                /* lanes [r.t, r.t', r'.t, r'.t'] start at -8 s of their token */
                const int32_t sa = x->s_m8[tok[2 * q] * nb + b], sb = x->s_m8[tok[2 * q + 1] * nb + b];
                const int32x4_t c = {sa, sb, sa, sb};
                PT_UNROLL
                for (int p = 0; p < 4; p++) is[q][p] = c;
            } else {
                PT_UNROLL
                for (int p = 0; p < 4; p++) is[q][p] = vdupq_n_s32(0);
            }
        }
        if (kind == K_Q8_0) {
            PT_UNROLL
            for (int c = 0; c < 4; c++)
                PT_UNROLL
                for (int p = 0; p < 4; p++) {
                    const int8x16_t wv = vld1q_s8(qp + 64 * c + 16 * p);
                    PT_UNROLL
                    for (int q = 0; q < nq; q++) is[q][p] = SMMLA(is[q][p], wv, E[q][c]);
                }
        } else {
            PT_UNROLL
            for (int c = 0; c < 2; c++)
                PT_UNROLL
                for (int p = 0; p < 4; p++) {
                    const uint8x16_t v = vld1q_u8((const uint8_t *)qp + 64 * c + 16 * p);
                    const int8x16_t wl = vreinterpretq_s8_u8(vandq_u8(v, m4));
                    const int8x16_t wh = vreinterpretq_s8_u8(vshrq_n_u8(v, 4));
                    PT_UNROLL
                    for (int q = 0; q < nq; q++) {
                        is[q][p] = SMMLA(is[q][p], wl, E[q][c]);
                        is[q][p] = SMMLA(is[q][p], wh, E[q][2 + c]);
                    }
                }
        }
        /* scales in the lane order [r.t, r.t', r'.t, r'.t'] */
        float32x4_t dv[2], mv[2] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
        load_scales8(pt_qw_d(w, group, b), &dv[0], &dv[1]);
        if (kind == K_Q4_1) load_scales8(pt_qw_m(w, group, b), &mv[0], &mv[1]);
        float32x4_t dwp[4], mwp[4];
        PT_UNROLL
        for (int h = 0; h < 2; h++) {
            dwp[2 * h] = vzip1q_f32(dv[h], dv[h]); /* [d0 d0 d1 d1] */
            dwp[2 * h + 1] = vzip2q_f32(dv[h], dv[h]);
            mwp[2 * h] = vzip1q_f32(mv[h], mv[h]);
            mwp[2 * h + 1] = vzip2q_f32(mv[h], mv[h]);
        }
        PT_UNROLL
        for (int q = 0; q < nq; q++) {
            const int64_t ia = tok[2 * q] * nb + b, ib = tok[2 * q + 1] * nb + b;
            const float32x4_t da = {x->d[ia], x->d[ib], x->d[ia], x->d[ib]};
            const float32x4_t dsv = {x->ds[ia], x->ds[ib], x->ds[ia], x->ds[ib]};
            PT_UNROLL
            for (int p = 0; p < 4; p++) {
                acc[q][p] = vfmaq_f32(acc[q][p], vcvtq_f32_s32(is[q][p]), vmulq_f32(dwp[p], da));
                if (kind == K_Q4_1) acc[q][p] = vfmaq_f32(acc[q][p], mwp[p], dsv);
            }
        }
    }
    PT_UNROLL
    for (int q = 0; q < nq; q++)
        PT_UNROLL
        for (int p = 0; p < 4; p++) {
            float v[4];
            vst1q_f32(v, acc[q][p]);
            PT_UNROLL
            for (int k = 0; k < 4; k++) {
                const int r = 2 * p + k / 2, ts = 2 * q + k % 2;
                if (ts < T && r >= lo && r < hi) y[tok[ts] * w->rows + row0 + r] = v[k];
            }
        }
}

#define MM_CASES(kind)                                                                   \
    switch (T) {                                                                         \
    case 1: gemv_mm(w, x, group, t0, kind, y, row0, lo, hi); break;                      \
    case 2: tile_mm(w, x, group, t0, 2, kind, y, row0, lo, hi); break;                   \
    case 3: tile_mm(w, x, group, t0, 3, kind, y, row0, lo, hi); break;                   \
    default: tile_mm(w, x, group, t0, 4, kind, y, row0, lo, hi); break;                  \
    }

static TGT_MM void tile_mm_any(const pt_qweights *w, const pt_qact *x, const uint8_t *group,
                               int64_t t0, int T, float *y, int64_t row0, int lo, int hi) {
    switch (w->type) {
    case PT_TYPE_Q4_0: MM_CASES(K_Q4_0) break;
    case PT_TYPE_Q4_1: MM_CASES(K_Q4_1) break;
    default: MM_CASES(K_Q8_0) break;
    }
}

TGT_MM void pt_qmm_i8mm(PT_QMM_ARGS) {
    (void)scratch; /* needs none */
    pt_qmm_walk(w, x, y, r0, r1, TMAX_MM, L2_BLOCK, tile_mm_any);
}

/* ==== activation quantizer ========================================== */

void pt_qquant_neon(const float *x, pt_qact *a, int64_t t0, int64_t t1) {
    const float32x4_t lo = vdupq_n_f32(-127.0f), hi = vdupq_n_f32(127.0f);
    for (int64_t t = t0; t < t1; t++) {
        for (int64_t b = 0; b < a->nb; b++) {
            const float *xb = x + t * a->cols + b * PT_QACT_BLOCK;
            float32x4_t v[8];
            PT_UNROLL
            for (int k = 0; k < 8; k++) v[k] = vld1q_f32(xb + 4 * k);
            float32x4_t m = vabsq_f32(v[0]);
            PT_UNROLL
            for (int k = 1; k < 8; k++) m = vmaxq_f32(m, vabsq_f32(v[k]));
            const float amax = vmaxvq_f32(m);
            const float d = amax / 127.0f;
            const float id = d != 0.0f ? 1.0f / d : 0.0f;
            int32x4_t q[8];
            int32x4_t s4 = vdupq_n_s32(0);
            PT_UNROLL
            for (int k = 0; k < 8; k++) {
                /* clamp, then round half to even: as the reference */
                q[k] = vcvtnq_s32_f32(vminq_f32(vmaxq_f32(vmulq_n_f32(v[k], id), lo), hi));
                s4 = vaddq_s32(s4, q[k]);
            }
            int8_t *out = a->q + t * a->cols + b * PT_QACT_BLOCK;
            PT_UNROLL
            for (int k = 0; k < 8; k += 4) {
                const int16x8_t h0 = vcombine_s16(vqmovn_s32(q[k]), vqmovn_s32(q[k + 1]));
                const int16x8_t h1 = vcombine_s16(vqmovn_s32(q[k + 2]), vqmovn_s32(q[k + 3]));
                vst1q_s8(out + 4 * k, vcombine_s8(vqmovn_s16(h0), vqmovn_s16(h1)));
            }
            pt_qact_set_block(a, t * a->nb + b, d, vaddvq_s32(s4));
        }
    }
}

#endif
