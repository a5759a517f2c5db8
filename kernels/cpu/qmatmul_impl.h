/*
 * qmatmul_impl.h — the repacked weight layout shared by qmatmul.c (packing,
 * dispatch) and the ISA kernel files. Internal to kernels/cpu.
 *
 * Layout. Rows are taken in groups of G (the last group padded with zero
 * rows); a group is stored contiguously, `group_bytes` apart:
 *
 *   quants  nb blocks x qbytes       qbytes = 16 G (Q4_*) or 32 G (Q8_0)
 *   d       nb blocks x G fp16       block scales, row order
 *   m       nb blocks x G fp16       block mins (Q4_1 only)
 *   pad     to a multiple of 64 bytes
 *
 * Within a block's quants, bytes run in chunks of KI bytes per row, rows
 * interleaved: byte (c * G + r) * KI + i is, for row r,
 *   Q4_*: byte c * KI + i of GGML's qs[16]: low nibble = code of element
 *         c * KI + i, high nibble = code of element 16 + c * KI + i;
 *   Q8_0: code of element c * KI + i, plus q8_bias (as uint8);
 *         a Q5_0 matrix is stored as Q8_0, its codes being q - 16 in
 *         -16..15 (src_type says which it was).
 * With KI = 4 one vector of 4 G bytes holds "quad" c (4 consecutive
 * elements) of G rows: what vpdpbusd / vpmaddubsw / sdot consume, one
 * 32-bit lane per row. With KI = 8 a 16-byte register holds 8 elements of
 * two rows: the 2x8 operand of smmla.
 *
 * q8_bias is 128 for the vpdpbusd variants (whose weight operand is
 * unsigned: the kernels subtract 128 * s, s the activation code sum) and 0
 * otherwise. Q4 codes are always the raw nibbles 0..15; Q4_0 kernels
 * subtract 8 * s.
 */
#ifndef PETREL_QMATMUL_IMPL_H
#define PETREL_QMATMUL_IMPL_H

#include <string.h>

#include "qmatmul.h"
#include "quant.h"

typedef void (*pt_qmm_fn)(const pt_qweights *w, const pt_qact *x, float *y, int64_t r0,
                          int64_t r1, void *scratch); /* see the entry points below */
typedef void (*pt_qquant_fn)(const float *x, pt_qact *a, int64_t t0, int64_t t1);

struct pt_qweights {
    uint32_t type;          /* PT_TYPE_Q4_0 / Q4_1 / Q8_0: the layout and kernel */
    uint32_t src_type;      /* the GGML type packed: type, or Q5_0 (packed as Q8_0) */
    pt_cpu_variant variant;
    int64_t rows, cols, nb; /* nb = cols / 32 */
    int G, KI, q8_bias;
    int64_t n_groups;
    size_t qbytes;          /* quant bytes of one block of one group */
    size_t d_off, m_off;    /* offsets of d / m within a group */
    size_t group_bytes;
    size_t data_bytes;
    uint8_t *data;          /* 64-byte aligned */
    pt_qmm_fn fn;
};

static inline const uint8_t *pt_qw_group(const pt_qweights *w, int64_t g) {
    return w->data + (size_t)g * w->group_bytes;
}
static inline const uint8_t *pt_qw_quants(const pt_qweights *w, const uint8_t *group, int64_t b) {
    return group + (size_t)b * w->qbytes;
}
static inline const uint16_t *pt_qw_d(const pt_qweights *w, const uint8_t *group, int64_t b) {
    return (const uint16_t *)(group + w->d_off) + (size_t)b * w->G;
}
static inline const uint16_t *pt_qw_m(const pt_qweights *w, const uint8_t *group, int64_t b) {
    return (const uint16_t *)(group + w->m_off) + (size_t)b * w->G;
}

/* Before every loop over tokens, quads, chunks or row pairs of a tile:
 * their trip counts are compile-time constants and the kernels only reach
 * speed when such loops are fully unrolled (accumulators in registers,
 * not arrays in memory), which -O2 alone does not do. */
#define PT_UNROLL _Pragma("GCC unroll 16")

/* 4 activation bytes as one int32 (for broadcasts), alignment-free */
static inline int32_t pt_load_i32(const void *p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Record block i (= t * nb + b) of a quantized activation: scale d, code
 * sum s, and the values derived from them. */
static inline void pt_qact_set_block(pt_qact *a, int64_t i, float d, int32_t s) {
    a->d[i] = d;
    a->s[i] = s;
    a->ds[i] = d * (float)s;
    a->s_m8[i] = -8 * s;
    a->s_m128[i] = -128 * s;
}

/* A kernel's tile: the G rows of `group` (the group whose first row is
 * row0) times T <= its tmax tokens from t0, storing rows row0 + lo ..
 * row0 + hi - 1 only (the part of the group inside the caller's range). */
typedef void (*pt_qtile_fn)(const pt_qweights *w, const pt_qact *x, const uint8_t *group, int64_t t0,
                            int T, float *y, int64_t row0, int lo, int hi);

/* Walk rows [r0, r1) tile by tile, with cache blocking: the groups are
 * taken in blocks whose packed weights fill about l2_block bytes, and for
 * each block every tile of tmax tokens (tmax * cols activation bytes, L1
 * resident for usual widths) meets each group of the block in turn. So
 * weights stream from L2 and activations from L1; with a single token
 * tile there is nothing to reuse and the whole range is one block. */
static inline void pt_qmm_walk(const pt_qweights *w, const pt_qact *x, float *y, int64_t r0,
                               int64_t r1, int tmax, size_t l2_block, pt_qtile_fn fn) {
    const int G = w->G;
    const int64_t g0 = r0 / G, g1 = (r1 + G - 1) / G;
    int64_t gb = (int64_t)(l2_block / w->group_bytes);
    if (gb < 1 || x->n_tok <= tmax) gb = g1 - g0;
    for (int64_t gs = g0; gs < g1; gs += gb) {
        const int64_t ge = gs + gb < g1 ? gs + gb : g1;
        for (int64_t t0 = 0; t0 < x->n_tok; t0 += tmax) {
            const int T = x->n_tok - t0 < tmax ? (int)(x->n_tok - t0) : tmax;
            for (int64_t g = gs; g < ge; g++) {
                const int64_t row0 = g * G;
                const int lo = row0 < r0 ? (int)(r0 - row0) : 0;
                const int hi = row0 + G > r1 ? (int)(r1 - row0) : G;
                fn(w, x, w->data + (size_t)g * w->group_bytes, t0, T, y, row0, lo, hi);
            }
        }
    }
}

/* Kernel entry points, one per variant (defined only on their arch). Each
 * computes rows [r0, r1) for every token of x, walking whole groups and
 * storing only rows inside the range. scratch: pt_qmatmul_scratch_bytes()
 * of the thread's own, or NULL; the AVX-512 and AMX kernels unpack a panel
 * of weights there (qmatmul_zmm.h), and without it run without a panel
 * (AMX: on its AVX-512 kernel). */
#define PT_QMM_ARGS const pt_qweights *w, const pt_qact *x, float *y, int64_t r0, int64_t r1, void *scratch
#if defined(__x86_64__)
void pt_qmm_avx2(PT_QMM_ARGS);
void pt_qmm_avxvnni(PT_QMM_ARGS);
void pt_qmm_avx512(PT_QMM_ARGS);
void pt_qmm_amx(PT_QMM_ARGS);
size_t pt_qmm_zmm_scratch_bytes(int64_t cols); /* avx512 and amx: a panel */
void pt_qquant_avx2(const float *x, pt_qact *a, int64_t t0, int64_t t1);
void pt_qquant_avx512(const float *x, pt_qact *a, int64_t t0, int64_t t1);
#endif
#if defined(__aarch64__)
void pt_qmm_dotprod(PT_QMM_ARGS);
void pt_qmm_i8mm(PT_QMM_ARGS);
void pt_qquant_neon(const float *x, pt_qact *a, int64_t t0, int64_t t1);
#endif

#endif
