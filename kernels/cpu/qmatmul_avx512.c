/*
 * qmatmul_avx512.c — AVX-512 VNNI kernels: vpdpbusd on zmm, 16 rows per
 * group (one int32 lane per row), and the AVX-512 activation quantizer.
 *
 * Packed layout (qmatmul_impl.h) with G = 16, KI = 4: one 64-byte vector
 * per quad of 4 elements holds that quad for the 16 rows of a group.
 * Q4 blocks are 4 vectors whose low nibbles are quads 0..3 and high
 * nibbles quads 4..7; Q8_0 blocks are 8 vectors of codes + 128.
 *
 * vpdpbusd multiplies unsigned bytes (the weights: nibbles 0..15, or Q8
 * codes + 128) by signed bytes (the activation quad, broadcast to all 16
 * lanes) and adds groups of 4 products into int32 lanes, without
 * saturation. The offsets are removed exactly by starting the sum at
 * -8 s (Q4_0) or -128 s (Q8_0), s the activation block's code sum.
 *
 * Compiled with a target attribute on every function, so the rest of the
 * build needs no -mavx512 flag; only called after run-time detection.
 */
#if defined(__x86_64__)

#include <immintrin.h>

#include "qmatmul_impl.h"
#include "qmatmul_zmm.h"

#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define INLINE static inline __attribute__((always_inline))

enum { K_Q4_0, K_Q4_1, K_Q8_0 };
#define PF_BLOCKS 8 /* GEMV prefetch distance in blocks (2 KiB of Q4 quants) */
#define TMAX 6 /* tokens per tile (of two groups: 12 sums) */

/* One tile: NG groups side by side (NG = 1 or 2, 16 or 32 rows) times T
 * tokens from t0, into y rows from row0[k] (lanes outside mask[k] not
 * stored). kind, NG, T and U are constants at every call site, so each
 * instance is fully unrolled. U: the Q4 codes come unpacked from a panel
 * (qmatmul_zmm.h; block b of group k at panel[k] + 512 b), one byte per
 * code as for Q8_0, with the block scales still from the packed groups.
 *
 * With two groups every activation broadcast feeds two vpdpbusd, which
 * halves the broadcast loads per multiply, and NG x T = 12 independent
 * sums hide vpdpbusd's latency (4-5 cycles, two issued per cycle). The
 * quads run in the outer loop (chunk c: low nibbles = quad c, high
 * nibbles = quad c + 4) and the tokens in the inner one. Integer sums are
 * exact in any order, and the float steps per block are those of the
 * reference, so the result is bitwise the same. The offset correction is
 * broadcast straight from memory (s_m8 / s_m128): no integer ALU op per
 * token. */
INLINE TGT void tile(const pt_qweights *w, const pt_qact *x, const uint8_t *const *group,
                     const uint8_t *const *panel, const int U, const int NG, int64_t t0, const int T,
                     const int kind, float *y, const int64_t *row0, const __mmask16 *mask) {
    const int64_t nb = w->nb, cols = x->cols;
    const int8_t *a0 = x->q + t0 * cols;
    const float *d0 = x->d + t0 * nb, *ds0 = x->ds + t0 * nb;
    const int32_t *c0 = (kind == K_Q4_0 ? x->s_m8 : x->s_m128) + t0 * nb;
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    __m512 acc[2][TMAX];
    PT_UNROLL
    for (int k = 0; k < NG; k++)
        PT_UNROLL
        for (int t = 0; t < T; t++) acc[k][t] = _mm512_setzero_ps();

    for (int64_t b = 0; b < nb; b++) {
        __m512i is[2][TMAX];
        PT_UNROLL
        for (int k = 0; k < NG; k++)
            PT_UNROLL
            for (int t = 0; t < T; t++)
                is[k][t] = kind == K_Q4_1 ? _mm512_setzero_si512() : _mm512_set1_epi32(c0[t * nb + b]);
        const int8_t *ab = a0 + b * PT_QACT_BLOCK;
        PT_UNROLL
        for (int c = 0; c < 4; c++)
            PT_UNROLL
            for (int h = 0; h < 2; h++) { /* quad c + 4 h */
                __m512i W[2];
                PT_UNROLL
                for (int k = 0; k < NG; k++) {
                    const uint8_t *qp = U ? panel[k] + b * PT_PANEL_BLOCK : pt_qw_quants(w, group[k], b);
                    if (kind == K_Q8_0 || U)
                        W[k] = _mm512_load_si512((const void *)(qp + 64 * (c + 4 * h)));
                    else {
                        const __m512i v = _mm512_load_si512((const void *)(qp + 64 * c));
                        W[k] = _mm512_and_si512(h ? _mm512_srli_epi16(v, 4) : v, m4);
                    }
                }
                PT_UNROLL
                for (int t = 0; t < T; t++) {
                    const __m512i av = _mm512_set1_epi32(pt_load_i32(ab + t * cols + 16 * h + 4 * c));
                    PT_UNROLL
                    for (int k = 0; k < NG; k++) is[k][t] = _mm512_dpbusd_epi32(is[k][t], W[k], av);
                }
            }
        PT_UNROLL
        for (int k = 0; k < NG; k++) {
            const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)pt_qw_d(w, group[k], b)));
            __m512 mw = _mm512_setzero_ps();
            if (kind == K_Q4_1)
                mw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)pt_qw_m(w, group[k], b)));
            PT_UNROLL
            for (int t = 0; t < T; t++) {
                const __m512 sc = _mm512_mul_ps(dw, _mm512_set1_ps(d0[t * nb + b]));
                acc[k][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is[k][t]), sc, acc[k][t]);
                if (kind == K_Q4_1) acc[k][t] = _mm512_fmadd_ps(mw, _mm512_set1_ps(ds0[t * nb + b]), acc[k][t]);
            }
        }
    }
    PT_UNROLL
    for (int k = 0; k < NG; k++)
        PT_UNROLL
        for (int t = 0; t < T; t++)
            _mm512_mask_storeu_ps(y + (t0 + t) * w->rows + row0[k], mask[k], acc[k][t]);
}

/* One token (decode). Bandwidth-bound, so the aim is to keep loads in
 * flight: each block's 8 quads go into two sums of 4 instead of one chain
 * of 8. For Q4 the high nibbles are used in place, masked with 0xF0 (no
 * shift): that sum is exactly 16 times the true one and is shifted back
 * once per block. Integer sums are exact either way, so the float steps
 * and the result are the same as tile()'s. NG (1 or 2) groups are walked
 * side by side, block by block: two weight streams in flight and a
 * software prefetch PF_BLOCKS ahead in each, which measured 10-25% more
 * DRAM throughput than one group at a time. */
INLINE TGT void gemv_groups(const pt_qweights *w, const pt_qact *x, const uint8_t *const *group,
                            const int NG, const int kind, float *y, const int64_t *row0,
                            const __mmask16 *mask) {
    const int64_t nb = w->nb;
    const int32_t *c0 = kind == K_Q4_0 ? x->s_m8 : x->s_m128;
    const __m512i m_lo = _mm512_set1_epi8(0x0f), m_hi = _mm512_set1_epi8((char)0xf0);
    __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int64_t b = 0; b < nb; b++) {
        const int8_t *ab = x->q + b * PT_QACT_BLOCK;
        PT_UNROLL
        for (int k = 0; k < NG; k++) {
            const uint8_t *qp = pt_qw_quants(w, group[k], b);
            /* streaming from DRAM: ask for the quants PF_BLOCKS blocks ahead
             * (past the group's end that is the next group, read next), into
             * L2 (T1): on an AMD EPYC (Zen 4) the cold GEMV of bench_kernels
             * went from 14.6 to 18.7 GB/s on one thread with T1 instead of
             * T0 (plain read there: 31.8 GB/s); T2 measured the same as T1 */
            for (size_t off = 0; off < w->qbytes; off += 64)
                _mm_prefetch((const char *)(qp + PF_BLOCKS * w->qbytes + off), _MM_HINT_T1);
            __m512i lo = kind == K_Q4_1 ? _mm512_setzero_si512() : _mm512_set1_epi32(c0[b]);
            __m512i hi = _mm512_setzero_si512();
            __m512i is;
            if (kind == K_Q8_0) {
                PT_UNROLL
                for (int j = 0; j < 4; j++) {
                    lo = _mm512_dpbusd_epi32(lo, _mm512_load_si512((const void *)(qp + 64 * j)),
                                             _mm512_set1_epi32(pt_load_i32(ab + 4 * j)));
                    hi = _mm512_dpbusd_epi32(hi, _mm512_load_si512((const void *)(qp + 64 * (j + 4))),
                                             _mm512_set1_epi32(pt_load_i32(ab + 16 + 4 * j)));
                }
                is = _mm512_add_epi32(lo, hi);
            } else {
                PT_UNROLL
                for (int c = 0; c < 4; c++) {
                    const __m512i v = _mm512_load_si512((const void *)(qp + 64 * c));
                    lo = _mm512_dpbusd_epi32(lo, _mm512_and_si512(v, m_lo), _mm512_set1_epi32(pt_load_i32(ab + 4 * c)));
                    hi = _mm512_dpbusd_epi32(hi, _mm512_and_si512(v, m_hi), _mm512_set1_epi32(pt_load_i32(ab + 16 + 4 * c)));
                }
                is = _mm512_add_epi32(lo, _mm512_srai_epi32(hi, 4)); /* hi is 16x, exactly */
            }
            const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)pt_qw_d(w, group[k], b)));
            const __m512 sc = _mm512_mul_ps(dw, _mm512_set1_ps(x->d[b]));
            acc[k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is), sc, acc[k]);
            if (kind == K_Q4_1) {
                const __m512 mw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)pt_qw_m(w, group[k], b)));
                acc[k] = _mm512_fmadd_ps(mw, _mm512_set1_ps(x->ds[b]), acc[k]);
            }
        }
    }
    PT_UNROLL
    for (int k = 0; k < NG; k++) _mm512_mask_storeu_ps(y + row0[k], mask[k], acc[k]);
}

static TGT void gemv_any(const pt_qweights *w, const pt_qact *x, const uint8_t *const *group, int NG,
                         float *y, const int64_t *row0, const __mmask16 *mask) {
#define GEMV_CASE(kind) \
    (NG == 2 ? gemv_groups(w, x, group, 2, kind, y, row0, mask) : gemv_groups(w, x, group, 1, kind, y, row0, mask))
    switch (w->type) {
    case PT_TYPE_Q4_0: GEMV_CASE(K_Q4_0); break;
    case PT_TYPE_Q4_1: GEMV_CASE(K_Q4_1); break;
    default: GEMV_CASE(K_Q8_0); break;
    }
#undef GEMV_CASE
}

#define TILE_CASES(U, NG, kind)                                                                    \
    switch (T) {                                                                                   \
    case 1: tile(w, x, group, panel, U, NG, t0, 1, kind, y, row0, mask); break;                    \
    case 2: tile(w, x, group, panel, U, NG, t0, 2, kind, y, row0, mask); break;                    \
    case 3: tile(w, x, group, panel, U, NG, t0, 3, kind, y, row0, mask); break;                    \
    case 4: tile(w, x, group, panel, U, NG, t0, 4, kind, y, row0, mask); break;                    \
    case 5: tile(w, x, group, panel, U, NG, t0, 5, kind, y, row0, mask); break;                    \
    default: tile(w, x, group, panel, U, NG, t0, 6, kind, y, row0, mask); break;                   \
    }
#define TILE_KINDS(NG)                                                                             \
    switch (w->type) {                                                                             \
    case PT_TYPE_Q4_0:                                                                             \
        if (panel) TILE_CASES(1, NG, K_Q4_0) else TILE_CASES(0, NG, K_Q4_0) break;                 \
    case PT_TYPE_Q4_1:                                                                             \
        if (panel) TILE_CASES(1, NG, K_Q4_1) else TILE_CASES(0, NG, K_Q4_1) break;                 \
    default: TILE_CASES(0, NG, K_Q8_0) break;                                                      \
    }

/* panel: NULL, or the unpacked codes of the groups (Q4 types only) */
static TGT void tile_any(const pt_qweights *w, const pt_qact *x, const uint8_t *const *group,
                         const uint8_t *const *panel, int NG, int64_t t0, int T, float *y,
                         const int64_t *row0, const __mmask16 *mask) {
    if (NG == 2) TILE_KINDS(2)
    else TILE_KINDS(1)
}

#define L2_BLOCK (384 * 1024) /* bytes of packed weights per row block */
#define PANEL_MIN_TOK 24      /* fewer tokens: unpacking a panel does not pay */

/* Prefill: pt_qmm_walk's cache blocking (see qmatmul_impl.h), on pairs of
 * groups (a single group for an odd one out at a block's end). With
 * scratch, Q4 rows are unpacked a panel at a time first (the block is then
 * the panel's groups): each tile then loads codes as for Q8_0 instead of
 * splitting nibbles. */
static TGT void gemm(const pt_qweights *w, const pt_qact *x, float *y, int64_t r0, int64_t r1,
                     uint8_t *scratch) {
    const int64_t g0 = r0 / 16, g1 = (r1 + 15) / 16;
    uint8_t *pan = w->type != PT_TYPE_Q8_0 && x->n_tok >= PANEL_MIN_TOK ? scratch : NULL;
    int64_t gb = pan ? pt_panel_groups(w->nb) : (int64_t)(L2_BLOCK / w->group_bytes) & ~(int64_t)1;
    if (gb < 2 || x->n_tok <= TMAX) gb = g1 - g0;
    for (int64_t gs = g0; gs < g1; gs += gb) {
        const int64_t ge = gs + gb < g1 ? gs + gb : g1;
        if (pan) pt_zmm_unpack_panel(w, gs, ge, 0, 0, pan);
        for (int64_t t0 = 0; t0 < x->n_tok; t0 += TMAX) {
            const int T = x->n_tok - t0 < TMAX ? (int)(x->n_tok - t0) : TMAX;
            for (int64_t g = gs; g < ge; g += 2) {
                const int NG = g + 1 < ge ? 2 : 1;
                const uint8_t *group[2] = {pt_qw_group(w, g), pt_qw_group(w, g + NG - 1)};
                const uint8_t *panel[2] = {NULL, NULL};
                if (pan) {
                    panel[0] = pan + (size_t)(g - gs) * (size_t)w->nb * PT_PANEL_BLOCK;
                    panel[1] = pan + (size_t)(g + NG - 1 - gs) * (size_t)w->nb * PT_PANEL_BLOCK;
                }
                const int64_t row0[2] = {g * 16, (g + NG - 1) * 16};
                const __mmask16 mask[2] = {pt_zmm_rows_mask(row0[0], r0, r1), pt_zmm_rows_mask(row0[1], r0, r1)};
                tile_any(w, x, group, pan ? panel : NULL, NG, t0, T, y, row0, mask);
            }
        }
    }
}

size_t pt_qmm_zmm_scratch_bytes(int64_t cols) { return 64 + pt_panel_bytes(cols / PT_QACT_BLOCK); }

TGT void pt_qmm_avx512(PT_QMM_ARGS) {
    if (x->n_tok != 1) {
        /* scratch (pt_qmm_zmm_scratch_bytes) holds a panel; without it the
         * nibbles are split in the tiles */
        gemm(w, x, y, r0, r1, pt_panel_in(scratch));
        return;
    }
    /* decode: two groups per pass, two independent weight streams */
    const int64_t g1 = (r1 + 15) / 16;
    for (int64_t g = r0 / 16; g < g1; g += 2) {
        const int NG = g + 1 < g1 ? 2 : 1;
        const uint8_t *group[2] = {pt_qw_group(w, g), pt_qw_group(w, g + NG - 1)};
        const int64_t row0[2] = {g * 16, (g + NG - 1) * 16};
        const __mmask16 mask[2] = {pt_zmm_rows_mask(row0[0], r0, r1), pt_zmm_rows_mask(row0[1], r0, r1)};
        gemv_any(w, x, group, NG, y, row0, mask);
    }
}

/* ---- activation quantizer ------------------------------------------ */

TGT void pt_qquant_avx512(const float *x, pt_qact *a, int64_t t0, int64_t t1) {
    const __m512 lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f);
    for (int64_t t = t0; t < t1; t++) {
        for (int64_t b = 0; b < a->nb; b++) {
            const float *xb = x + t * a->cols + b * PT_QACT_BLOCK;
            const __m512 v0 = _mm512_loadu_ps(xb), v1 = _mm512_loadu_ps(xb + 16);
            const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
            const float d = amax / 127.0f;
            const float id = d != 0.0f ? 1.0f / d : 0.0f;
            const __m512 vid = _mm512_set1_ps(id);
            /* same clamp and round-half-even as the reference */
            const __m512i q0 = _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(v0, vid), lo), hi));
            const __m512i q1 = _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(v1, vid), lo), hi));
            int8_t *q = a->q + t * a->cols + b * PT_QACT_BLOCK;
            _mm_storeu_si128((__m128i *)q, _mm512_cvtepi32_epi8(q0));
            _mm_storeu_si128((__m128i *)(q + 16), _mm512_cvtepi32_epi8(q1));
            const int32_t s = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
            pt_qact_set_block(a, t * a->nb + b, d, s);
        }
    }
}

#endif
