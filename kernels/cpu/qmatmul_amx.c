/*
 * qmatmul_amx.c — prefill products on Intel AMX tiles (Sapphire Rapids and
 * later). TDPBSSD / TDPBSUD multiply a 16 x 32 tile of activation codes by
 * a 32 x 16 tile of weight codes into 16 x 16 exact int32 sums in one
 * instruction. Decode (one token) and short inputs stay on the AVX-512
 * kernels, whose layout this variant shares: AMX only pays when a weight
 * tile meets many tokens.
 *
 * Tiles, for one block b (32 elements) of one group (16 rows, G = 16):
 *
 *   A  16 tokens x 32 bytes: the tokens' activation codes of block b,
 *      loaded straight from pt_qact.q with stride cols
 *   B  8 rows x 64 bytes: the group's block b, row k / 4 holding elements
 *      4 (k / 4) .. + 3 of the 16 weight rows, which is the packed layout
 *      of qmatmul_impl.h (KI = 4) once Q4 nibbles are split
 *   C  16 tokens x 16 int32: the exact integer dots of block b
 *
 * Block scales differ every 32 elements, so C holds one block's sums: it is
 * zeroed, multiplied into, stored, and its 16 rows scaled in AVX-512 with
 * exactly qmatmul.h's float steps (fma((float)isum, dw * d, acc), block by
 * block), so results are bitwise those of the reference. Two tile sets
 * (C0 A0 B0 / C1 A1 B1) alternate between blocks, so the tiles work on
 * block b + 1 while the vector units scale block b; the 16 float sums stay
 * in registers for the whole row of blocks.
 *
 * Panel (qmatmul_zmm.h). The B operand must hold signed codes for TDPBSSD
 * (Q4_0: nibble - 8; Q8_0: the packed code + 128 flipped back) or plain
 * nibbles for TDPBSUD (Q4_1, whose min term is added in float). A call
 * unpacks a panel of whole groups into its scratch once and sweeps every
 * token through it.
 *
 * Token tail. The last n_tok % 16 tokens go to the AVX-512 kernel (on a
 * view of x from there), which gives the same bits; tiles are always full.
 *
 * The tile configuration is per thread: each call loads it and releases
 * the tiles on return. The OS permission to use the tile state is asked
 * for at detection (cpu_features.c).
 */
#if defined(__x86_64__)

#include <immintrin.h>

#include "qmatmul_impl.h"
#include "qmatmul_zmm.h"

#define TGT                                                                                        \
    __attribute__((target("amx-tile,amx-int8,avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define INLINE static inline __attribute__((always_inline))

enum { K_Q4_0, K_Q4_1, K_Q8_0 };
#define TT 16                    /* tokens per tile */
#define AMX_MIN_TOK 16           /* fewer tokens: the AVX-512 kernels are as fast */

/* LDTILECFG's 64-byte operand (palette 1). Tiles 0, 1: C; 2, 3: A; 4, 5:
 * B (set s = C s, A 2 + s, B 4 + s); the others unused (all zero). */
typedef struct tile_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

static void make_config(tile_config *c) {
    memset(c, 0, sizeof *c);
    c->palette = 1;
    for (int s = 0; s < 2; s++) {
        c->rows[s] = TT;
        c->colsb[s] = 64;
        c->rows[2 + s] = TT;
        c->colsb[2 + s] = PT_QACT_BLOCK;
        c->rows[4 + s] = 8;
        c->colsb[4 + s] = 64;
    }
}

/* One block on tile set (tc, ta, tb): load A (a, stride) and B (bp), sums
 * into cs. Tile numbers are literals: GCC pastes them into the mnemonic. */
#define AMX_BLOCK(tc, ta, tb, kind, a, stride, bp, cs)                                             \
    do {                                                                                           \
        _tile_loadd(ta, a, stride);                                                                \
        _tile_loadd(tb, bp, 64);                                                                   \
        _tile_zero(tc);                                                                            \
        if (kind == K_Q4_1) _tile_dpbsud(tc, ta, tb);                                              \
        else _tile_dpbssd(tc, ta, tb);                                                             \
        _tile_stored(tc, cs, 64);                                                                  \
    } while (0)

/* acc[t] += block b's sums cs[t] of token t, in the reference's float
 * steps; d / ds: the 16 tokens' block scales, nb apart. */
INLINE TGT void scale_block(const pt_qweights *w, const uint8_t *group, int64_t b, const float *d,
                            const float *ds, const int kind, const int32_t *cs, __m512 *acc) {
    const int64_t nb = w->nb;
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)pt_qw_d(w, group, b)));
    __m512 mw = _mm512_setzero_ps();
    if (kind == K_Q4_1) mw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)pt_qw_m(w, group, b)));
    PT_UNROLL
    for (int t = 0; t < TT; t++) {
        const __m512 sc = _mm512_mul_ps(dw, _mm512_set1_ps(d[t * nb + b]));
        const __m512 is = _mm512_cvtepi32_ps(_mm512_load_si512((const void *)(cs + 16 * t)));
        acc[t] = _mm512_fmadd_ps(is, sc, acc[t]);
        if (kind == K_Q4_1) acc[t] = _mm512_fmadd_ps(mw, _mm512_set1_ps(ds[t * nb + b]), acc[t]);
    }
}

/* 16 tokens of x from t0 times group g (unpacked at pb): y rows of the
 * group inside [r0, r1). */
INLINE TGT void tile_row(const pt_qweights *w, const pt_qact *x, int64_t t0, const uint8_t *pb,
                         int64_t g, const int kind, float *y, int64_t r0, int64_t r1) {
    const int64_t nb = w->nb, cols = x->cols;
    _Alignas(64) int32_t cs[2][TT * 16];
    __m512 acc[TT];
    PT_UNROLL
    for (int t = 0; t < TT; t++) acc[t] = _mm512_setzero_ps();
    const uint8_t *group = pt_qw_group(w, g);
    const int8_t *a = x->q + t0 * cols;
    const float *d = x->d + t0 * nb, *ds = x->ds + t0 * nb;
    /* blocks alternate between tile sets 0 and 1; the sums of one are
     * scaled after the next is issued */
    AMX_BLOCK(0, 2, 4, kind, a, cols, pb, cs[0]);
    int64_t b = 1;
    for (; b + 1 < nb; b += 2) {
        AMX_BLOCK(1, 3, 5, kind, a + b * PT_QACT_BLOCK, cols, pb + b * PT_PANEL_BLOCK, cs[1]);
        scale_block(w, group, b - 1, d, ds, kind, cs[0], acc);
        AMX_BLOCK(0, 2, 4, kind, a + (b + 1) * PT_QACT_BLOCK, cols, pb + (b + 1) * PT_PANEL_BLOCK, cs[0]);
        scale_block(w, group, b, d, ds, kind, cs[1], acc);
    }
    if (b < nb) { /* even nb: the last block goes on set 1 */
        AMX_BLOCK(1, 3, 5, kind, a + b * PT_QACT_BLOCK, cols, pb + b * PT_PANEL_BLOCK, cs[1]);
        scale_block(w, group, b - 1, d, ds, kind, cs[0], acc);
        scale_block(w, group, b, d, ds, kind, cs[1], acc);
    } else {
        scale_block(w, group, b - 1, d, ds, kind, cs[0], acc);
    }
    const int64_t row0 = g * 16;
    const __mmask16 mask = pt_zmm_rows_mask(row0, r0, r1);
    PT_UNROLL
    for (int t = 0; t < TT; t++) _mm512_mask_storeu_ps(y + (t0 + t) * w->rows + row0, mask, acc[t]);
}

/* Tokens [t0, n_tok) of x as an activation of their own. */
static pt_qact token_tail(const pt_qact *x, int64_t t0) {
    pt_qact p = *x;
    const int64_t i = t0 * x->nb;
    p.n_tok = x->n_tok - t0;
    p.q += t0 * x->cols;
    p.d += i;
    p.ds += i;
    p.s += i;
    p.s_m8 += i;
    p.s_m128 += i;
    return p;
}

/* Tokens [0, n_full) of x, n_full a multiple of 16. */
INLINE TGT void gemm(const pt_qweights *w, const pt_qact *x, int64_t n_full, float *y, int64_t r0,
                     int64_t r1, uint8_t *panel, const int kind) {
    const int64_t g0 = r0 / 16, g1 = (r1 + 15) / 16;
    const int64_t P = pt_panel_groups(w->nb);
    tile_config cfg;
    make_config(&cfg);
    _tile_loadconfig(&cfg);
    for (int64_t gs = g0; gs < g1; gs += P) {
        const int64_t ge = gs + P < g1 ? gs + P : g1;
        /* signed codes for TDPBSSD; Q4_1 keeps its nibbles (TDPBSUD) */
        pt_zmm_unpack_panel(w, gs, ge, kind == K_Q4_0 ? 8 : 0, 0x80, panel);
        for (int64_t t0 = 0; t0 < n_full; t0 += TT)
            for (int64_t g = gs; g < ge; g++)
                tile_row(w, x, t0, panel + (size_t)(g - gs) * (size_t)w->nb * PT_PANEL_BLOCK, g, kind, y,
                         r0, r1);
    }
    _tile_release();
}

TGT void pt_qmm_amx(PT_QMM_ARGS) {
    /* short inputs, and callers without scratch for a panel: AVX-512 */
    uint8_t *panel = pt_panel_in(scratch);
    if (x->n_tok < AMX_MIN_TOK || !panel) {
        pt_qmm_avx512(w, x, y, r0, r1, scratch);
        return;
    }
    const int64_t n_full = x->n_tok / TT * TT;
    switch (w->type) {
    case PT_TYPE_Q4_0: gemm(w, x, n_full, y, r0, r1, panel, K_Q4_0); break;
    case PT_TYPE_Q4_1: gemm(w, x, n_full, y, r0, r1, panel, K_Q4_1); break;
    default: gemm(w, x, n_full, y, r0, r1, panel, K_Q8_0); break;
    }
    if (n_full < x->n_tok) { /* the last n_tok % 16 tokens */
        const pt_qact tail = token_tail(x, n_full);
        pt_qmm_avx512(w, &tail, y + n_full * w->rows, r0, r1, NULL);
    }
}

#endif
