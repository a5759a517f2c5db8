/*
 * quant_matmul.c — row-level dequantization, dot products and the
 * reference matrix multiply for every supported type.
 *
 * All three walk a row in groups of PT_GROUP (256) values: 8 legacy
 * blocks, one K super-block, or 256 plain F32 / F16 / BF16 values (the last
 * group of a plain row may be shorter). A group is dequantized into a
 * small stack buffer and used at once, so nothing is allocated and the
 * working set stays in L1.
 *
 * Summation order (the contract pt_dot_row_f32 documents and that
 * pt_matmul_ref reproduces bit for bit):
 *   - within a group of k values, product p_i = w_i * x_i (float) goes into
 *     lane i % 8 of 8 float accumulators that start at +0, in increasing i;
 *     the group sum is ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7));
 *   - the row sum starts at +0 and adds the group sums in increasing order.
 * The 8 lanes let the compiler vectorize without reassociating (no
 * -ffast-math needed), and the fixed order makes results reproducible.
 */
#include <math.h>
#include <string.h>

#include "quant_blocks.h"

#define PT_GROUP 256 /* values per group; a multiple of every block size */
#define PT_LANES 8   /* float accumulators per group dot */
#define PT_ROW_TILE 4 /* rows dequantized together in pt_matmul_ref */

_Static_assert(PT_GROUP % PT_QK_K == 0 && PT_GROUP % PT_QK_LEGACY == 0,
               "a group holds whole blocks");

/* dst[0..count) = values [i0, i0 + count) of a row of `type`. i0 is a
 * multiple of PT_GROUP and count <= PT_GROUP is a whole number of blocks.
 * Returns false for a type petrel cannot decode. */
static bool dequant_group(uint32_t type, const void *row, int64_t i0, int count, float *dst) {
    const uint8_t *base = row;
    switch (type) {
    case PT_TYPE_F32:
        memcpy(dst, (const float *)row + i0, (size_t)count * sizeof(float));
        return true;
    case PT_TYPE_F16: {
        const uint16_t *h = (const uint16_t *)row + i0;
        for (int i = 0; i < count; i++) dst[i] = pt_half_to_float(h[i]);
        return true;
    }
    case PT_TYPE_BF16: {
        const uint16_t *h = (const uint16_t *)row + i0;
        for (int i = 0; i < count; i++) dst[i] = pt_bf16_to_f32(h[i]);
        return true;
    }
#define LEGACY(T, fn)                                                        \
    case T: {                                                                \
        const pt_block_##fn *b = (const pt_block_##fn *)base + i0 / PT_QK_LEGACY; \
        for (int k = 0; k < count / PT_QK_LEGACY; k++)                       \
            pt_dequant_block_##fn(b + k, dst + k * PT_QK_LEGACY);            \
        return true;                                                         \
    }
    LEGACY(PT_TYPE_Q4_0, q4_0)
    LEGACY(PT_TYPE_Q4_1, q4_1)
    LEGACY(PT_TYPE_Q5_0, q5_0)
    LEGACY(PT_TYPE_Q5_1, q5_1)
    LEGACY(PT_TYPE_Q8_0, q8_0)
#undef LEGACY
    case PT_TYPE_Q4_K:
        pt_dequant_block_q4_K((const pt_block_q4_K *)base + i0 / PT_QK_K, dst);
        return true;
    case PT_TYPE_Q5_K:
        pt_dequant_block_q5_K((const pt_block_q5_K *)base + i0 / PT_QK_K, dst);
        return true;
    case PT_TYPE_Q6_K:
        pt_dequant_block_q6_K((const pt_block_q6_K *)base + i0 / PT_QK_K, dst);
        return true;
    default:
        return false;
    }
}

/* Group dot product in the lane order documented above. Kept out of line
 * so pt_dot_row_f32 and pt_matmul_ref run the very same code (and so get
 * the very same rounding, whatever the compiler does about FMA). */
__attribute__((noinline)) static float dot_group(const float *restrict w,
                                                 const float *restrict x, int count) {
    float acc[PT_LANES] = {0};
    int i = 0;
    for (; i + PT_LANES <= count; i += PT_LANES)
        for (int k = 0; k < PT_LANES; k++) acc[k] += w[i + k] * x[i + k];
    for (int k = 0; i < count; i++, k++) acc[k] += w[i] * x[i]; /* i % 8 == k */
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

static int group_len(int64_t n, int64_t i0) {
    return n - i0 < PT_GROUP ? (int)(n - i0) : PT_GROUP;
}

/* A contract violation (unsupported type, bad n) must not crash: it yields
 * NaN so the mistake shows in the output instead. */
void pt_dequant_row(uint32_t type, const void *src, float *dst, int64_t n) {
    const pt_type_traits *t = pt_type_get(type);
    if (!t || !t->supported || n % t->block_elems) {
        for (int64_t i = 0; i < n; i++) dst[i] = NAN;
        return;
    }
    for (int64_t i0 = 0; i0 < n; i0 += PT_GROUP) dequant_group(type, src, i0, group_len(n, i0), dst + i0);
}

float pt_dot_row_f32(uint32_t type, const void *row, const float *x, int64_t n) {
    const pt_type_traits *t = pt_type_get(type);
    if (!t || !t->supported || n % t->block_elems) return NAN;
    float buf[PT_GROUP];
    float sum = 0.0f;
    for (int64_t i0 = 0; i0 < n; i0 += PT_GROUP) {
        int count = group_len(n, i0);
        dequant_group(type, row, i0, count, buf);
        sum += dot_group(buf, x + i0, count);
    }
    return sum;
}

/* For each tile of up to PT_ROW_TILE rows, each group of the tile's rows
 * is dequantized once and dotted with every token's matching slice of X,
 * adding into Y. Y[t][r] thus receives exactly the sequence of group sums
 * pt_dot_row_f32 adds, starting from +0: the results are bitwise equal. */
void pt_matmul_ref(uint32_t type, const void *w, int64_t rows, int64_t cols,
                   const float *x, int64_t n_tok, float *y, int64_t r0, int64_t r1) {
    const pt_type_traits *t = pt_type_get(type);
    const bool ok = t && t->supported && cols % t->block_elems == 0;
    const size_t row_bytes = ok ? pt_type_row_bytes(type, cols) : 0;
    float buf[PT_ROW_TILE][PT_GROUP]; /* 4 KiB: one group of each tile row */

    for (int64_t r = r0; r < r1; r += PT_ROW_TILE) {
        const int nr = r1 - r < PT_ROW_TILE ? (int)(r1 - r) : PT_ROW_TILE;
        for (int64_t tk = 0; tk < n_tok; tk++)
            for (int k = 0; k < nr; k++) y[tk * rows + r + k] = ok ? 0.0f : NAN;
        if (!ok) continue;
        for (int64_t i0 = 0; i0 < cols; i0 += PT_GROUP) {
            const int count = group_len(cols, i0);
            for (int k = 0; k < nr; k++)
                dequant_group(type, (const uint8_t *)w + (size_t)(r + k) * row_bytes, i0, count, buf[k]);
            for (int64_t tk = 0; tk < n_tok; tk++) {
                const float *xt = x + tk * cols + i0;
                float *yt = y + tk * rows + r;
                for (int k = 0; k < nr; k++) yt[k] += dot_group(buf[k], xt, count);
            }
        }
    }
}
