/*
 * matmul.cl — y[t][r] = sum_c W[r][c] x[t][c] for a weight matrix W of
 * `rows` rows (row r at w + r * row_bytes, GGML's layout: quant_blocks.h)
 * and n input rows x ([n][cols] float32) into y ([n][rows] float32).
 *
 * Three kernels per type:
 *   _1  decode (n == 1): a work-group of MM_WG items per VEC_NR rows,
 *       QPART items a block (MM_VEC); the float types' _1 kernels take
 *       MM_NR rows a group (MM_FLOAT).
 *   _n  short prompts: MM_NR rows and MM_NT tokens a group; each block of
 *       32 values is read by QPART items, each taking 32 / QPART of its
 *       codes, x staged through local memory (MM_QUANT_TILED); a
 *       dequantized weight is used for all MM_NT tokens; the partial sums
 *       meet in local memory (MM_REDUCE). Long prompts: gemm.cl.
 *   _r  CPU devices (PoCL): a work-item per row and MM_NT tokens.
 * Grid of _n and the float _1: ceil(rows / MM_NR) groups x ceil(n / tokens
 * per group); of MM_VEC: ceil(rows / VEC_NR) groups.
 */
#define QPART 4                 /* work-items per 32-value block */
#define QJ (16 / QPART)         /* code-byte pairs (j, j + 16) per work-item (MM_VEC: 4) */

/* The fp16 scale at byte offset 0 of a block (2-byte aligned: every block
 * size is even and rows start at even offsets). */
inline float blk_half(global const uchar *p, int off) {
    return vload_half(0, (global const half *)(p + off));
}

/* Sum the MM_WG partials of each (row, token) and store y. */
#define MM_REDUCE(NT)                                                                           \
    for (int rr = 0; rr < MM_NR; rr++)                                                          \
        for (int t = 0; t < NT; t++) red[(rr * NT + t) * MM_WG + lid] = acc[rr][t];             \
    barrier(CLK_LOCAL_MEM_FENCE);                                                               \
    for (int o = lid; o < MM_NR * NT; o += MM_WG) {                                             \
        const int rr = o / NT, t = o % NT;                                                      \
        if (r0 + rr >= rows || t0 + t >= n) continue;                                           \
        float s = 0.0f;                                                                         \
        for (int i = 0; i < MM_WG; i++) s += red[o * MM_WG + i];                                \
        y[(long)(t0 + t) * rows + r0 + rr] = s;                                                 \
    }

/* The decode form of the legacy quantized types (n == 1, GPUs): one
 * work-group of MM_WG items per VEC_NR rows (1, 2 or 4: ocl_tune.c times
 * them per device); QPART neighbouring items share a block, item `part`
 * taking code bytes part * QJ .. + QJ (values j and j + 16 of each) and the
 * matching x values as two float4 loads, used for all VEC_NR rows, so that
 * a warp's loads of x and of the codes are contiguous; then a tree sum in
 * local memory. (One block per item, x read as 32 scalars, made every x
 * load touch 32 cache lines: 2.3x slower on an H200.)
 * flags: 1 adds bias[r], 2 adds to y instead of storing (a residual);
 * bias is any buffer when flags has no 1.
 * Grid: ceil(rows / VEC_NR) groups of MM_WG items. */
#ifndef VEC_NR
#define VEC_NR 1
#endif
/* Block b of rows r0 .. r0 + nr of the matrix at W into ACC[rr], x's
 * values of the item's part in lo[], hi[]. */
#define VEC_ROWS(W, ACC, BLOCK_BYTES, QS_OFF, HEAD, CODES, VAL)                                 \
    for (int rr = 0; rr < VEC_NR; rr++) {                                                       \
        if (rr >= nr) break;                                                                    \
        global const uchar *blk = W + (long)(r0 + rr) * row_bytes + (long)b * BLOCK_BYTES;      \
        float d, m;                                                                             \
        uint qh = 0;                                                                            \
        HEAD;                                                                                   \
        global const uchar *qs = blk + QS_OFF;                                                  \
        for (int jj = 0; jj < QJ; jj++) {                                                       \
            const int j = part * QJ + jj;                                                       \
            int c0, c1;                                                                         \
            CODES;                                                                              \
            ACC[rr] += VAL(c0) * lo[jj] + VAL(c1) * hi[jj];                                     \
        }                                                                                       \
    }

/* The loop over the row's blocks: x's values for this item, then BODY. */
#define VEC_BLOCKS(BODY)                                                                        \
    for (int b = lid / QPART; b < nb; b += MM_WG / QPART) {                                     \
        const float4 xa = vload4(0, x + b * 32 + part * QJ);                                    \
        const float4 xc = vload4(0, x + b * 32 + 16 + part * QJ);                               \
        const float lo[4] = {xa.s0, xa.s1, xa.s2, xa.s3}, hi[4] = {xc.s0, xc.s1, xc.s2, xc.s3}; \
        BODY;                                                                                   \
    }

/* Tree sums of the K arrays RED[k][rr][*] (k < K, rr < VEC_NR) over the group. */
#define VEC_REDUCE(RED, K)                                                                      \
    barrier(CLK_LOCAL_MEM_FENCE);                                                               \
    for (int h = MM_WG / 2; h > 0; h >>= 1) {                                                   \
        if (lid < h)                                                                            \
            for (int k = 0; k < K; k++)                                                         \
                for (int rr = 0; rr < VEC_NR; rr++) RED[k][rr][lid] += RED[k][rr][lid + h];     \
        barrier(CLK_LOCAL_MEM_FENCE);                                                           \
    }

#define MM_VEC(NAME, BLOCK_BYTES, QS_OFF, HEAD, CODES, VAL)                                     \
    kernel void NAME(global const uchar *w, ulong row_bytes, int rows, int cols,                \
                     global const float *x, int n, global float *y, global const float *bias,    \
                     int flags) {                                                               \
        local float red[1][VEC_NR][MM_WG];                                                      \
        const int lid = get_local_id(0), r0 = get_group_id(0) * VEC_NR, nb = cols / 32;        \
        const int part = lid % QPART, nr = min(VEC_NR, rows - r0);                              \
        float acc[VEC_NR];                                                                      \
        for (int rr = 0; rr < VEC_NR; rr++) acc[rr] = 0.0f;                                     \
        VEC_BLOCKS(VEC_ROWS(w, acc, BLOCK_BYTES, QS_OFF, HEAD, CODES, VAL))                     \
        for (int rr = 0; rr < VEC_NR; rr++) red[0][rr][lid] = acc[rr];                          \
        VEC_REDUCE(red, 1)                                                                      \
        if (lid < nr) {                                                                         \
            const int r = r0 + lid;                                                             \
            y[r] = red[0][lid][0] + (flags & 1 ? bias[r] : 0.0f) + (flags & 2 ? y[r] : 0.0f);    \
        }                                                                                       \
    }

/* A gated feed-forward's two decode products in one: out[r] = act(Wg[r] .
 * x) * (Wu[r] . x), act silu (gelu 0) or GELU's tanh form; the grid of
 * MM_VEC. */
#define MM_GLU(NAME, BLOCK_BYTES, QS_OFF, HEAD, CODES, VAL)                                     \
    kernel void NAME(global const uchar *wg, global const uchar *wu, ulong row_bytes, int rows, \
                     int cols, global const float *x, global float *out, int gelu) {           \
        local float red[2][VEC_NR][MM_WG];                                                      \
        const int lid = get_local_id(0), r0 = get_group_id(0) * VEC_NR, nb = cols / 32;        \
        const int part = lid % QPART, nr = min(VEC_NR, rows - r0);                              \
        float ag[VEC_NR], au[VEC_NR];                                                           \
        for (int rr = 0; rr < VEC_NR; rr++) ag[rr] = au[rr] = 0.0f;                             \
        VEC_BLOCKS(VEC_ROWS(wg, ag, BLOCK_BYTES, QS_OFF, HEAD, CODES, VAL);                     \
                   VEC_ROWS(wu, au, BLOCK_BYTES, QS_OFF, HEAD, CODES, VAL))                     \
        for (int rr = 0; rr < VEC_NR; rr++) red[0][rr][lid] = ag[rr], red[1][rr][lid] = au[rr]; \
        VEC_REDUCE(red, 2)                                                                      \
        if (lid < nr) {                                                                         \
            const float g = red[0][lid][0];                                                     \
            const float a = gelu ? 0.5f * g * (1.0f + tanh(0.7978845608028654f * g * (1.0f + 0.044715f * g * g))) \
                                 : g / (1.0f + exp(-g));                                        \
            out[r0 + lid] = a * red[1][lid][0];                                                 \
        }                                                                                       \
    }

/* The prefill form (MM_NT tokens): the work-group first copies the x
 * values of the MM_BPI blocks it is about to read, for its MM_NT tokens,
 * into local memory (xs: [MM_NT][MM_BPI * 32], coalesced loads), so each
 * x value is read from global memory once per group instead of once per
 * row. The block loop runs the same number of times on every item (the
 * barriers need it); items past the last block only help load. */
#define MM_BPI (MM_WG / QPART) /* blocks per iteration of the group */
#define MM_QUANT_TILED(NAME, BLOCK_BYTES, QS_OFF, HEAD, CODES, VAL)                            \
    kernel void NAME(global const uchar *w, ulong row_bytes, int rows, int cols,                \
                     global const float *x, int n, global float *y) {                           \
        local float red[MM_NR * MM_NT * MM_WG];                                                 \
        local float xs[MM_NT * MM_BPI * 32];                                                    \
        const int lid = get_local_id(0);                                                        \
        const int r0 = get_group_id(0) * MM_NR, t0 = get_group_id(1) * MM_NT;                  \
        const int nt = min(MM_NT, n - t0), nr = min(MM_NR, rows - r0);                          \
        const int nb = cols / 32, part = lid % QPART;                                           \
        float acc[MM_NR][MM_NT];                                                                \
        for (int rr = 0; rr < MM_NR; rr++)                                                      \
            for (int t = 0; t < MM_NT; t++) acc[rr][t] = 0.0f;                                  \
        for (int b0 = 0; b0 < nb; b0 += MM_BPI) {                                               \
            barrier(CLK_LOCAL_MEM_FENCE);                                                       \
            for (int i = lid; i < MM_NT * MM_BPI * 32; i += MM_WG) {                            \
                const int t = i / (MM_BPI * 32), col = b0 * 32 + i % (MM_BPI * 32);             \
                xs[i] = t < nt && col < cols ? x[(long)(t0 + t) * cols + col] : 0.0f;           \
            }                                                                                   \
            barrier(CLK_LOCAL_MEM_FENCE);                                                       \
            const int b = b0 + lid / QPART;                                                     \
            if (b >= nb) continue;                                                              \
            local const float *xb = xs + (lid / QPART) * 32 + part * QJ;                        \
            for (int rr = 0; rr < MM_NR; rr++) {                                                \
                if (rr >= nr) break;                                                            \
                global const uchar *blk = w + (long)(r0 + rr) * row_bytes + (long)b * BLOCK_BYTES; \
                float d, m;                                                                     \
                uint qh = 0;                                                                    \
                HEAD;                                                                           \
                global const uchar *qs = blk + QS_OFF;                                          \
                for (int jj = 0; jj < QJ; jj++) {                                               \
                    const int j = part * QJ + jj;                                               \
                    int c0, c1;                                                                 \
                    CODES;                                                                      \
                    const float v0 = VAL(c0), v1 = VAL(c1);                                     \
                    for (int t = 0; t < MM_NT; t++) {                                           \
                        local const float *xt = xb + t * (MM_BPI * 32) + jj;                    \
                        acc[rr][t] += v0 * xt[0] + v1 * xt[16];                                 \
                    }                                                                           \
                }                                                                               \
            }                                                                                   \
        }                                                                                       \
        MM_REDUCE(MM_NT)                                                                        \
    }

/* The same products for CPU devices (PoCL): one work-item per row and
 * MM_NT tokens, no local memory or barriers (a CPU runs a work-group's
 * items as a loop, and vectorizes it across items; the group kernels'
 * private arrays kept across barriers cost it dearly). */
#define MM_ROW(NAME, BLOCK_BYTES, QS_OFF, HEAD, CODES, VAL)                                     \
    kernel void NAME(global const uchar *w, ulong row_bytes, int rows, int cols,                \
                     global const float *x, int n, global float *y) {                           \
        const int r = get_global_id(0), t0 = get_global_id(1) * MM_NT;                          \
        if (r >= rows) return;                                                                  \
        const int nt = min(MM_NT, n - t0), nb = cols / 32;                                      \
        float acc[MM_NT];                                                                       \
        for (int t = 0; t < MM_NT; t++) acc[t] = 0.0f;                                          \
        global const uchar *wr = w + (long)r * row_bytes;                                       \
        for (int b = 0; b < nb; b++) {                                                          \
            global const uchar *blk = wr + (long)b * BLOCK_BYTES;                               \
            float d, m;                                                                         \
            uint qh = 0;                                                                        \
            HEAD;                                                                               \
            global const uchar *qs = blk + QS_OFF;                                              \
            global const float *xb = x + (long)t0 * cols + b * 32;                              \
            for (int j = 0; j < 16; j++) {                                                      \
                int c0, c1;                                                                     \
                CODES;                                                                          \
                const float v0 = VAL(c0), v1 = VAL(c1);                                         \
                for (int t = 0; t < MM_NT; t++)                                                 \
                    if (t < nt) acc[t] += v0 * xb[(long)t * cols + j] + v1 * xb[(long)t * cols + j + 16]; \
            }                                                                                   \
        }                                                                                       \
        for (int t = 0; t < MM_NT; t++)                                                         \
            if (t < nt) y[(long)(t0 + t) * rows + r] = acc[t];                                  \
    }

#define MM_ROW_FLOAT(NAME, LOAD)                                                                \
    kernel void NAME(global const uchar *w, ulong row_bytes, int rows, int cols,                \
                     global const float *x, int n, global float *y) {                           \
        const int r = get_global_id(0), t0 = get_global_id(1) * MM_NT;                          \
        if (r >= rows) return;                                                                  \
        const int nt = min(MM_NT, n - t0);                                                      \
        float acc[MM_NT];                                                                       \
        for (int t = 0; t < MM_NT; t++) acc[t] = 0.0f;                                          \
        global const uchar *row = w + (long)r * row_bytes;                                      \
        for (int c = 0; c < cols; c++) {                                                        \
            const float v = LOAD;                                                               \
            for (int t = 0; t < MM_NT; t++)                                                     \
                if (t < nt) acc[t] += v * x[(long)(t0 + t) * cols + c];                         \
        }                                                                                       \
        for (int t = 0; t < MM_NT; t++)                                                         \
            if (t < nt) y[(long)(t0 + t) * rows + r] = acc[t];                                  \
    }

#define Q4_CODES c0 = qs[j] & 15; c1 = qs[j] >> 4
#define Q4_0_VAL(c) ((float)((c) - 8) * d)
#define Q4_1_VAL(c) ((float)(c) * d + m)
#define Q8_0_VAL(c) ((float)(c) * d)
#define Q8_CODES c0 = (int)(char)qs[j]; c1 = (int)(char)qs[j + 16]
#define HEAD_D d = blk_half(blk, 0); m = 0.0f
#define HEAD_DM d = blk_half(blk, 0); m = blk_half(blk, 2)
/* Q4_0: d fp16, 16 bytes of nibbles: value j low nibble of qs[j], value j + 16 high */
MM_VEC(mm_q4_0_1, 18, 2, HEAD_D, Q4_CODES, Q4_0_VAL)
MM_GLU(mm_q4_0_glu, 18, 2, HEAD_D, Q4_CODES, Q4_0_VAL)
MM_QUANT_TILED(mm_q4_0_n, 18, 2, HEAD_D, Q4_CODES, Q4_0_VAL)
MM_ROW(mm_q4_0_r, 18, 2, HEAD_D, Q4_CODES, Q4_0_VAL)
/* Q4_1: d, m fp16, then the nibbles as Q4_0; value = d * q + m */
MM_VEC(mm_q4_1_1, 20, 4, HEAD_DM, Q4_CODES, Q4_1_VAL)
MM_GLU(mm_q4_1_glu, 20, 4, HEAD_DM, Q4_CODES, Q4_1_VAL)
MM_QUANT_TILED(mm_q4_1_n, 20, 4, HEAD_DM, Q4_CODES, Q4_1_VAL)
MM_ROW(mm_q4_1_r, 20, 4, HEAD_DM, Q4_CODES, Q4_1_VAL)
/* Q5_0: d fp16, qh (bit i: the fifth bit of value i, little-endian), then
 * the low nibbles as Q4_0; value = d * (q - 16). Q5_1: d, m, qh, nibbles;
 * value = d * q + m. qh is read byte by byte (it is not 4-byte aligned). */
#define QH_AT(o) qh = (uint)blk[o] | (uint)blk[o + 1] << 8 | (uint)blk[o + 2] << 16 | (uint)blk[o + 3] << 24
#define Q5_CODES c0 = (qs[j] & 15) | (int)((qh >> j) & 1) << 4; c1 = (qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4
#define Q5_0_VAL(c) ((float)((c) - 16) * d)
MM_VEC(mm_q5_0_1, 22, 6, HEAD_D; QH_AT(2), Q5_CODES, Q5_0_VAL)
MM_GLU(mm_q5_0_glu, 22, 6, HEAD_D; QH_AT(2), Q5_CODES, Q5_0_VAL)
MM_QUANT_TILED(mm_q5_0_n, 22, 6, HEAD_D; QH_AT(2), Q5_CODES, Q5_0_VAL)
MM_ROW(mm_q5_0_r, 22, 6, HEAD_D; QH_AT(2), Q5_CODES, Q5_0_VAL)
MM_VEC(mm_q5_1_1, 24, 8, HEAD_DM; QH_AT(4), Q5_CODES, Q4_1_VAL)
MM_GLU(mm_q5_1_glu, 24, 8, HEAD_DM; QH_AT(4), Q5_CODES, Q4_1_VAL)
MM_QUANT_TILED(mm_q5_1_n, 24, 8, HEAD_DM; QH_AT(4), Q5_CODES, Q4_1_VAL)
MM_ROW(mm_q5_1_r, 24, 8, HEAD_DM; QH_AT(4), Q5_CODES, Q4_1_VAL)
/* Q8_0: d fp16, 32 signed bytes */
MM_VEC(mm_q8_0_1, 34, 2, HEAD_D, Q8_CODES, Q8_0_VAL)
MM_GLU(mm_q8_0_glu, 34, 2, HEAD_D, Q8_CODES, Q8_0_VAL)
MM_QUANT_TILED(mm_q8_0_n, 34, 2, HEAD_D, Q8_CODES, Q8_0_VAL)
MM_ROW(mm_q8_0_r, 34, 2, HEAD_D, Q8_CODES, Q8_0_VAL)

/* Float matrices (any cols): the work-items stride over the columns. */
#define MM_FLOAT(NAME, NT, LOAD)                                                                \
    kernel void NAME(global const uchar *w, ulong row_bytes, int rows, int cols,                \
                     global const float *x, int n, global float *y) {                           \
        local float red[MM_NR * NT * MM_WG];                                                    \
        const int lid = get_local_id(0);                                                        \
        const int r0 = get_group_id(0) * MM_NR, t0 = get_group_id(1) * NT;                     \
        const int nt = min(NT, n - t0), nr = min(MM_NR, rows - r0);                             \
        float acc[MM_NR][NT];                                                                   \
        for (int rr = 0; rr < MM_NR; rr++)                                                      \
            for (int t = 0; t < NT; t++) acc[rr][t] = 0.0f;                                     \
        for (int c = lid; c < cols; c += MM_WG) {                                               \
            for (int rr = 0; rr < MM_NR; rr++) {                                                \
                if (rr >= nr) break;                                                            \
                global const uchar *row = w + (long)(r0 + rr) * row_bytes;                      \
                const float v = LOAD;                                                           \
                for (int t = 0; t < NT; t++)                                                    \
                    if (t < nt) acc[rr][t] += v * x[(long)(t0 + t) * cols + c];                 \
            }                                                                                   \
        }                                                                                       \
        MM_REDUCE(NT)                                                                           \
    }

#define F32_LOAD ((global const float *)row)[c]
#define F16_LOAD vload_half(c, (global const half *)row)
MM_FLOAT(mm_f32_1, 1, F32_LOAD)
MM_FLOAT(mm_f32_n, MM_NT, F32_LOAD)
MM_ROW_FLOAT(mm_f32_r, F32_LOAD)
MM_FLOAT(mm_f16_1, 1, F16_LOAD)
MM_FLOAT(mm_f16_n, MM_NT, F16_LOAD)
MM_ROW_FLOAT(mm_f16_r, F16_LOAD)
/* BF16: the upper half of a float32 */
#define BF16_LOAD as_float((uint)((global const ushort *)row)[c] << 16)
MM_FLOAT(mm_bf16_1, 1, BF16_LOAD)
MM_FLOAT(mm_bf16_n, MM_NT, BF16_LOAD)
MM_ROW_FLOAT(mm_bf16_r, BF16_LOAD)
