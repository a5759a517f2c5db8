/*
 * qmatmul_avxvnni.c — AVX-VNNI kernels: VEX vpdpbusd on ymm (CPUs with
 * AVX-VNNI but no AVX-512, e.g. Intel's hybrid client cores), 8 rows per
 * group. Same scheme as qmatmul_avx512.c on half-width vectors:
 * layout G = 8, KI = 4, Q8 codes stored + 128; the sums start at -8 s
 * (Q4_0) or -128 s (Q8_0). Activations use the AVX2 quantizer.
 */
#if defined(__x86_64__)

#include <immintrin.h>

#include "qmatmul_impl.h"
#include "qmatmul_ymm.h"

#define TGT __attribute__((target("avxvnni,avx2,fma,f16c")))
#define INLINE static inline __attribute__((always_inline))

enum { K_Q4_0, K_Q4_1, K_Q8_0 };
#define TMAX 6 /* tokens per tile: 6 int + 6 float accumulators */

INLINE TGT void tile(const pt_qweights *w, const pt_qact *x, const uint8_t *group, int64_t t0,
                     const int T, const int kind, float *y, int64_t row0, __m256i mask) {
    const int64_t nb = w->nb, cols = x->cols;
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    const int bias = kind == K_Q4_0 ? -8 : kind == K_Q8_0 ? -128 : 0;
    __m256 acc[TMAX];
    PT_UNROLL
    for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();

    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *qp = pt_qw_quants(w, group, b);
        if (T == 1) pt_ymm_prefetch_ahead(w, qp);
        const int8_t *ap[TMAX];
        __m256i is[TMAX];
        PT_UNROLL
        for (int t = 0; t < T; t++) {
            ap[t] = x->q + (t0 + t) * cols + b * PT_QACT_BLOCK;
            is[t] = _mm256_set1_epi32(bias * x->s[(t0 + t) * nb + b]);
        }
        if (kind == K_Q8_0) {
            PT_UNROLL
            for (int j = 0; j < 8; j++) {
                const __m256i wj = _mm256_load_si256((const __m256i *)(qp + 32 * j));
                PT_UNROLL
                for (int t = 0; t < T; t++)
                    is[t] = _mm256_dpbusd_avx_epi32(is[t], wj, pt_ymm_bcast_quad(ap[t] + 4 * j));
            }
        } else {
            PT_UNROLL
            for (int c = 0; c < 4; c++) {
                const __m256i v = _mm256_load_si256((const __m256i *)(qp + 32 * c));
                const __m256i wl = _mm256_and_si256(v, m4);
                const __m256i wh = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
                PT_UNROLL
                for (int t = 0; t < T; t++) {
                    is[t] = _mm256_dpbusd_avx_epi32(is[t], wl, pt_ymm_bcast_quad(ap[t] + 4 * c));
                    is[t] = _mm256_dpbusd_avx_epi32(is[t], wh, pt_ymm_bcast_quad(ap[t] + 16 + 4 * c));
                }
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
    case 4: tile(w, x, group, t0, 4, kind, y, row0, mask); break;         \
    case 5: tile(w, x, group, t0, 5, kind, y, row0, mask); break;         \
    default: tile(w, x, group, t0, 6, kind, y, row0, mask); break;        \
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

TGT void pt_qmm_avxvnni(PT_QMM_ARGS) {
    (void)scratch; /* needs none */
    pt_qmm_walk(w, x, y, r0, r1, TMAX, L2_BLOCK, tile_any);
}

#endif
