/*
 * qmatmul_avx2.c — AVX2 kernels (vpmaddubsw), 8 rows per group (one
 * int32 lane per row), and the AVX2 activation quantizer (also used by the
 * AVX-VNNI variant).
 *
 * Packed layout (qmatmul_impl.h) with G = 8, KI = 4, no Q8 bias: one
 * 32-byte vector per quad holds that quad for the 8 rows of a group.
 *
 * vpmaddubsw multiplies unsigned by signed bytes and adds pairs into int16
 * with saturation, so the kernels keep every int16 sum provably in range:
 *   Q4_*: weights are nibbles 0..15 and activation codes lie in -127..127,
 *         so a pair is at most 2 * 15 * 127 = 3810 and the 8 quads of a
 *         block (16 pairs per int16 lane, summed with wrapping adds) at most
 *         30480 < 32767; one vpmaddwd by 1 then gives each row's int32 sum.
 *   Q8_0: signed weights use the sign trick, |w| * (a * sign(w)); a pair
 *         is at most 2 * 128 * 127 = 32512, so each quad goes to int32
 *         at once.
 */
#if defined(__x86_64__)

#include <immintrin.h>

#include "qmatmul_impl.h"
#include "qmatmul_ymm.h"

#define TGT __attribute__((target("avx2,fma,f16c")))
#define INLINE static inline __attribute__((always_inline))

enum { K_Q4_0, K_Q4_1, K_Q8_0 };
#define TMAX 4 /* tokens per tile: 16 ymm registers */

INLINE TGT void tile(const pt_qweights *w, const pt_qact *x, const uint8_t *group, int64_t t0,
                     const int T, const int kind, float *y, int64_t row0, __m256i mask) {
    const int64_t nb = w->nb, cols = x->cols;
    const __m256i ones = _mm256_set1_epi16(1);
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m256 acc[TMAX];
    PT_UNROLL
    for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();

    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *qp = pt_qw_quants(w, group, b);
        if (T == 1) pt_ymm_prefetch_ahead(w, qp);
        const int8_t *ap[TMAX];
        PT_UNROLL
        for (int t = 0; t < T; t++) ap[t] = x->q + (t0 + t) * cols + b * PT_QACT_BLOCK;
        __m256i is[TMAX];
        if (kind == K_Q8_0) {
            PT_UNROLL
            for (int t = 0; t < T; t++) is[t] = _mm256_setzero_si256();
            PT_UNROLL
            for (int j = 0; j < 8; j++) {
                const __m256i wj = _mm256_load_si256((const __m256i *)(qp + 32 * j));
                const __m256i aw = _mm256_sign_epi8(wj, wj); /* |w|, as unsigned */
                PT_UNROLL
                for (int t = 0; t < T; t++) {
                    const __m256i sa = _mm256_sign_epi8(pt_ymm_bcast_quad(ap[t] + 4 * j), wj);
                    const __m256i p = _mm256_maddubs_epi16(aw, sa);
                    is[t] = _mm256_add_epi32(is[t], _mm256_madd_epi16(p, ones));
                }
            }
        } else {
            __m256i p16[TMAX];
            PT_UNROLL
            for (int t = 0; t < T; t++) p16[t] = _mm256_setzero_si256();
            PT_UNROLL
            for (int c = 0; c < 4; c++) {
                const __m256i v = _mm256_load_si256((const __m256i *)(qp + 32 * c));
                const __m256i wl = _mm256_and_si256(v, m4);                    /* quad c */
                const __m256i wh = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4); /* quad c+4 */
                PT_UNROLL
                for (int t = 0; t < T; t++) {
                    p16[t] = _mm256_add_epi16(p16[t], _mm256_maddubs_epi16(wl, pt_ymm_bcast_quad(ap[t] + 4 * c)));
                    p16[t] = _mm256_add_epi16(p16[t], _mm256_maddubs_epi16(wh, pt_ymm_bcast_quad(ap[t] + 16 + 4 * c)));
                }
            }
            PT_UNROLL
            for (int t = 0; t < T; t++) {
                is[t] = _mm256_madd_epi16(p16[t], ones);
                if (kind == K_Q4_0)
                    is[t] = _mm256_add_epi32(is[t], _mm256_set1_epi32(-8 * x->s[(t0 + t) * nb + b]));
            }
        }
        pt_ymm_scale_block(w, x, group, b, t0, T, kind == K_Q4_1, is, acc);
    }
    PT_UNROLL
    for (int t = 0; t < T; t++) _mm256_maskstore_ps(y + (t0 + t) * w->rows + row0, mask, acc[t]);
}

#define TILE_CASES(kind)                                                  \
    switch (T) {                                                          \
    case 1: tile(w, x, group, t0, 1, kind, y, row0, mask); break;         \
    case 2: tile(w, x, group, t0, 2, kind, y, row0, mask); break;         \
    case 3: tile(w, x, group, t0, 3, kind, y, row0, mask); break;         \
    default: tile(w, x, group, t0, 4, kind, y, row0, mask); break;        \
    }

static TGT void tile_any(const pt_qweights *w, const pt_qact *x, const uint8_t *group, int64_t t0,
                         int T, float *y, int64_t row0, int lo, int hi) {
    const __m256i mask = pt_ymm_lane_mask(lo, hi);
    switch (w->type) {
    case PT_TYPE_Q4_0: TILE_CASES(K_Q4_0) break;
    case PT_TYPE_Q4_1: TILE_CASES(K_Q4_1) break;
    default: TILE_CASES(K_Q8_0) break;
    }
}

#define L2_BLOCK (384 * 1024) /* bytes of packed weights per row block */

TGT void pt_qmm_avx2(PT_QMM_ARGS) {
    (void)scratch; /* needs none */
    pt_qmm_walk(w, x, y, r0, r1, TMAX, L2_BLOCK, tile_any);
}

/* ---- activation quantizer ------------------------------------------ */

INLINE TGT float hmax8(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

INLINE TGT int32_t hsum8_epi32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

TGT void pt_qquant_avx2(const float *x, pt_qact *a, int64_t t0, int64_t t1) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256 lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
    /* packs interleave the 128-bit lanes; this puts the dwords back */
    const __m256i unshuffle = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int64_t t = t0; t < t1; t++) {
        for (int64_t b = 0; b < a->nb; b++) {
            const float *xb = x + t * a->cols + b * PT_QACT_BLOCK;
            __m256 v[4];
            PT_UNROLL
            for (int k = 0; k < 4; k++) v[k] = _mm256_loadu_ps(xb + 8 * k);
            __m256 m = _mm256_andnot_ps(sign, v[0]);
            PT_UNROLL
            for (int k = 1; k < 4; k++) m = _mm256_max_ps(m, _mm256_andnot_ps(sign, v[k]));
            const float amax = hmax8(m);
            const float d = amax / 127.0f;
            const float id = d != 0.0f ? 1.0f / d : 0.0f;
            const __m256 vid = _mm256_set1_ps(id);
            __m256i q[4];
            PT_UNROLL
            for (int k = 0; k < 4; k++)
                q[k] = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(v[k], vid), lo), hi));
            const __m256i s32 = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
            const __m256i p01 = _mm256_packs_epi32(q[0], q[1]);
            const __m256i p23 = _mm256_packs_epi32(q[2], q[3]);
            const __m256i p = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(p01, p23), unshuffle);
            _mm256_storeu_si256((__m256i *)(a->q + t * a->cols + b * PT_QACT_BLOCK), p);
            const int32_t s = hsum8_epi32(s32);
            pt_qact_set_block(a, t * a->nb + b, d, s);
        }
    }
}

#endif
