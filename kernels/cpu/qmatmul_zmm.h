/*
 * qmatmul_zmm.h — the weight panel shared by the two 16-row x86 kernels
 * (AVX-512 VNNI in qmatmul_avx512.c, AMX in qmatmul_amx.c). Internal to
 * kernels/cpu; include after qmatmul_impl.h.
 *
 * A prefill call sweeps every token through a few hundred KiB of weights
 * at a time. Unpacking those weights once into a panel of one code per
 * byte takes the nibble splitting out of the inner loops, which then run
 * as for Q8_0: it is paid once per weight and call instead of once per
 * weight and token tile.
 *
 * Panel layout: groups one after another, nb blocks each, a block being 8
 * vectors of 64 bytes, vector c holding quad c (elements 4c..4c+3) of the
 * group's 16 rows, row r at bytes 4r..4r+3. That is the packed Q8_0 block
 * of qmatmul_impl.h, and also AMX's B operand for 32 elements.
 */
#ifndef PETREL_QMATMUL_ZMM_H
#define PETREL_QMATMUL_ZMM_H

#include <immintrin.h>

#include "qmatmul_impl.h"

#define ZMM_TGT __attribute__((target("avx512f,avx512bw")))
#define ZMM_INLINE static inline __attribute__((always_inline))

#define PT_PANEL_BLOCK 512           /* bytes of one block of one group */
#define PT_PANEL_BYTES (256 * 1024)  /* a panel: L2 resident */

/* Bytes of a panel for rows of nb blocks: PT_PANEL_BYTES, or two groups
 * when those are larger. */
static inline size_t pt_panel_bytes(int64_t nb) {
    const size_t two = 2 * (size_t)nb * PT_PANEL_BLOCK;
    return two > PT_PANEL_BYTES ? two : PT_PANEL_BYTES;
}

/* Groups that fit one panel (at least 2). */
static inline int64_t pt_panel_groups(int64_t nb) {
    return (int64_t)(pt_panel_bytes(nb) / ((size_t)nb * PT_PANEL_BLOCK));
}

/* The panel inside a scratch buffer of pt_qmm_zmm_scratch_bytes (64-byte
 * aligned), or NULL without scratch. */
static inline uint8_t *pt_panel_in(void *scratch) {
    return scratch ? (uint8_t *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63) : NULL;
}

/* Lanes of the 16-row group starting at row0 that lie in [r0, r1). */
static inline __mmask16 pt_zmm_rows_mask(int64_t row0, int64_t r0, int64_t r1) {
    const int lo = row0 < r0 ? (int)(r0 - row0) : 0;
    const int hi = row0 + 16 > r1 ? (int)(r1 - row0) : 16;
    return (__mmask16)(((1u << hi) - 1) & ~((1u << lo) - 1));
}

/* Groups [gs, ge) of w into panel. Q4 codes become nibble - q4_off (0:
 * unsigned 0..15 for vpdpbusd; 8: Q4_0's signed codes for AMX); packed
 * Q8_0 codes (stored + 128) are xor-ed with q8_flip (0x80: signed again). */
ZMM_INLINE ZMM_TGT void pt_zmm_unpack_panel(const pt_qweights *w, int64_t gs, int64_t ge, int q4_off,
                                            int q8_flip, uint8_t *panel) {
    const __m512i m4 = _mm512_set1_epi8(0x0f), off = _mm512_set1_epi8((char)q4_off);
    const __m512i flip = _mm512_set1_epi8((char)q8_flip);
    const bool q8 = w->type == PT_TYPE_Q8_0;
    for (int64_t g = gs; g < ge; g++) {
        const uint8_t *group = pt_qw_group(w, g);
        uint8_t *out = panel + (size_t)(g - gs) * (size_t)w->nb * PT_PANEL_BLOCK;
        for (int64_t b = 0; b < w->nb; b++, out += PT_PANEL_BLOCK) {
            const uint8_t *qp = pt_qw_quants(w, group, b);
            if (q8) {
                for (int c = 0; c < 8; c++) {
                    const __m512i v = _mm512_load_si512((const void *)(qp + 64 * c));
                    _mm512_store_si512((void *)(out + 64 * c), _mm512_xor_si512(v, flip));
                }
                continue;
            }
            /* packed Q4: vector c's low nibbles are quad c, high nibbles quad c + 4 */
            for (int c = 0; c < 4; c++) {
                const __m512i v = _mm512_load_si512((const void *)(qp + 64 * c));
                const __m512i lo = _mm512_sub_epi8(_mm512_and_si512(v, m4), off);
                const __m512i hi = _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(v, 4), m4), off);
                _mm512_store_si512((void *)(out + 64 * c), lo);
                _mm512_store_si512((void *)(out + 64 * (c + 4)), hi);
            }
        }
    }
}

#endif
