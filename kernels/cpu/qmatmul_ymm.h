/*
 * qmatmul_ymm.h — pieces shared by the two 8-row x86 kernels (AVX2 in
 * qmatmul_avx2.c, AVX-VNNI in qmatmul_avxvnni.c): both use groups of
 * G = 8 rows, one int32 / float lane per row of a ymm register, and the
 * same float steps per block. Internal to kernels/cpu; include after
 * qmatmul_impl.h.
 *
 * The functions carry the AVX2 target only; always_inline puts them into
 * callers compiled for AVX2 or for a superset of it (AVX-VNNI).
 */
#ifndef PETREL_QMATMUL_YMM_H
#define PETREL_QMATMUL_YMM_H

#include <immintrin.h>

#include "qmatmul_impl.h"

#define YMM_TGT __attribute__((target("avx2,fma,f16c")))
#define YMM_INLINE static inline __attribute__((always_inline))

/* y lanes lo..hi-1 of an 8-float row */
YMM_INLINE YMM_TGT __m256i pt_ymm_lane_mask(int lo, int hi) {
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i ge = _mm256_cmpgt_epi32(idx, _mm256_set1_epi32(lo - 1));
    const __m256i lt = _mm256_cmpgt_epi32(_mm256_set1_epi32(hi), idx);
    return _mm256_and_si256(ge, lt);
}

/* 4 activation codes broadcast to every lane */
YMM_INLINE YMM_TGT __m256i pt_ymm_bcast_quad(const int8_t *p) { return _mm256_set1_epi32(pt_load_i32(p)); }

/* The float steps of block b for T tokens from t0 (qmatmul.h, Numerics):
 * acc[t] = fma((float)is[t], dw * d, acc[t]), then + mw * ds when has_min
 * (Q4_1). */
YMM_INLINE YMM_TGT void pt_ymm_scale_block(const pt_qweights *w, const pt_qact *x, const uint8_t *group,
                                           int64_t b, int64_t t0, const int T, const bool has_min,
                                           const __m256i *is, __m256 *acc) {
    const int64_t nb = w->nb;
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)pt_qw_d(w, group, b)));
    __m256 mw = _mm256_setzero_ps();
    if (has_min) mw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)pt_qw_m(w, group, b)));
    PT_UNROLL
    for (int t = 0; t < T; t++) {
        const int64_t tb = (t0 + t) * nb + b;
        const __m256 sc = _mm256_mul_ps(dw, _mm256_set1_ps(x->d[tb]));
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is[t]), sc, acc[t]);
        if (has_min) acc[t] = _mm256_fmadd_ps(mw, _mm256_set1_ps(x->ds[tb]), acc[t]);
    }
}

/* Decode streams the weights from DRAM: fetch the block 8 blocks ahead. */
YMM_INLINE YMM_TGT void pt_ymm_prefetch_ahead(const pt_qweights *w, const uint8_t *qp) {
    for (size_t off = 0; off < w->qbytes; off += 64)
        _mm_prefetch((const char *)(qp + 8 * w->qbytes + off), _MM_HINT_T0);
}

#endif
