/*
 * gemm.cl — the products of matmul.cl for long prompts on GPUs (n >= 32
 * tokens): a tiled matrix product. A work-group of 256 items (a 16 x 16
 * grid: tx = lid % 16, ty = lid / 16) computes a tile of GM rows x GN
 * tokens; for each 32 columns it dequantizes the weights' GM x 32 tile and
 * copies x's GN x 32 tile into local memory (Ws[k][row], Xs[k][token], one
 * pad column against bank conflicts), then every item accumulates its
 * TM x TN outputs (rows ty + 16 i, tokens tx + 16 j) over the 32 columns.
 * Each weight is dequantized once per GN tokens, each x value read once
 * per GM rows.
 *
 * GM and GN (64 or 128) come from the program's options (-DGEMM_M,
 * -DGEMM_N): ocl.c times the variants on the device at first use and
 * keeps the fastest (ocl_tune.c).
 *
 * FILL(row, part, kb) writes Ws[part * 8 .. part * 8 + 8)[row] for the
 * weight row `row` (a valid row) and the 32 columns of step kb; the 256
 * items fill 64 rows a pass (row lid / 4, part lid % 4).
 */
#ifndef GEMM_M
#define GEMM_M 64
#endif
#ifndef GEMM_N
#define GEMM_N 64
#endif
#define GM GEMM_M
#define GN GEMM_N
#define GK 32
#define TM (GM / 16)
#define TN (GN / 16)

#define MM_GEMM(NAME, FILL)                                                                     \
    kernel void NAME(global const uchar *w, ulong row_bytes, int rows, int cols,                \
                     global const float *x, int n, global float *y) {                           \
        local float Ws[GK][GM + 1];                                                             \
        local float Xs[GK][GN + 1];                                                             \
        const int lid = get_local_id(0), tx = lid % 16, ty = lid / 16;                         \
        const int r0 = get_group_id(0) * GM, t0 = get_group_id(1) * GN;                        \
        const int part = lid % 4; /* what this item loads */                                   \
        float acc[TM][TN];                                                                      \
        for (int i = 0; i < TM; i++)                                                            \
            for (int j = 0; j < TN; j++) acc[i][j] = 0.0f;                                      \
        const int steps = (cols + GK - 1) / GK;                                                 \
        for (int kb = 0; kb < steps; kb++) {                                                    \
            for (int rp = 0; rp < GM / 64; rp++) {                                              \
                const int row = lid / 4 + 64 * rp;                                              \
                if (r0 + row < rows) {                                                          \
                    global const uchar *wrow = w + (long)(r0 + row) * row_bytes;                \
                    FILL;                                                                       \
                } else {                                                                        \
                    for (int i = 0; i < 8; i++) Ws[part * 8 + i][row] = 0.0f;                   \
                }                                                                               \
            }                                                                                   \
            for (int tp = 0; tp < GN / 64; tp++) {                                              \
                const int tok = lid / 4 + 64 * tp;                                              \
                for (int i = 0; i < 8; i++) {                                                   \
                    const int c = kb * GK + part * 8 + i;                                       \
                    Xs[part * 8 + i][tok] =                                                     \
                        t0 + tok < n && c < cols ? x[(long)(t0 + tok) * cols + c] : 0.0f;       \
                }                                                                               \
            }                                                                                   \
            barrier(CLK_LOCAL_MEM_FENCE);                                                       \
            for (int k = 0; k < GK; k++) {                                                      \
                float wv[TM], xv[TN];                                                           \
                for (int i = 0; i < TM; i++) wv[i] = Ws[k][ty + 16 * i];                        \
                for (int j = 0; j < TN; j++) xv[j] = Xs[k][tx + 16 * j];                        \
                for (int i = 0; i < TM; i++)                                                    \
                    for (int j = 0; j < TN; j++) acc[i][j] += wv[i] * xv[j];                    \
            }                                                                                   \
            barrier(CLK_LOCAL_MEM_FENCE);                                                       \
        }                                                                                       \
        for (int i = 0; i < TM; i++)                                                            \
            for (int j = 0; j < TN; j++) {                                                      \
                const int r = r0 + ty + 16 * i, t = t0 + tx + 16 * j;                           \
                if (r < rows && t < n) y[(long)t * rows + r] = acc[i][j];                       \
            }                                                                                   \
    }

/* Legacy quantized types: the 32 columns are block kb; part p dequantizes
 * code pairs (j, j + 16) for j in 4p .. 4p + 4 (matmul.cl's macros). */
#define FILL_LEGACY(BLOCK_BYTES, QS_OFF, HEAD, CODES, VAL)                                      \
    global const uchar *blk = wrow + (long)kb * BLOCK_BYTES;                                   \
    float d, m;                                                                                 \
    uint qh = 0;                                                                                \
    HEAD;                                                                                       \
    global const uchar *qs = blk + QS_OFF;                                                      \
    for (int jj = 0; jj < 4; jj++) {                                                            \
        const int j = part * 4 + jj;                                                            \
        int c0, c1;                                                                             \
        CODES;                                                                                  \
        Ws[j][row] = VAL(c0);                                                                   \
        Ws[j + 16][row] = VAL(c1);                                                              \
    }

/* K-quants: the 32 columns are unit s = kb % 8 of super-block kb / 8 */
#define FILL_K(BLOCK_BYTES, HEAD, VAL)                                                          \
    global const uchar *blk = wrow + (long)(kb / 8) * BLOCK_BYTES;                             \
    const int s = kb % 8;                                                                       \
    HEAD;                                                                                       \
    for (int i = 0; i < 8; i++) {                                                               \
        const int l = part * 8 + i;                                                             \
        Ws[l][row] = VAL(l);                                                                    \
    }

/* Float types: columns past cols are 0 */
#define FILL_FLOAT(LOAD1)                                                                       \
    for (int i = 0; i < 8; i++) {                                                               \
        const int c = kb * GK + part * 8 + i;                                                   \
        Ws[part * 8 + i][row] = c < cols ? LOAD1(c) : 0.0f;                                     \
    }

#define F32_AT(c) ((global const float *)wrow)[c]
#define F16_AT(c) vload_half(c, (global const half *)wrow)
#define BF16_AT(c) as_float((uint)((global const ushort *)wrow)[c] << 16)

MM_GEMM(mm_q4_0_g, FILL_LEGACY(18, 2, HEAD_D, Q4_CODES, Q4_0_VAL))
MM_GEMM(mm_q4_1_g, FILL_LEGACY(20, 4, HEAD_DM, Q4_CODES, Q4_1_VAL))
MM_GEMM(mm_q5_0_g, FILL_LEGACY(22, 6, HEAD_D; QH_AT(2), Q5_CODES, Q5_0_VAL))
MM_GEMM(mm_q5_1_g, FILL_LEGACY(24, 8, HEAD_DM; QH_AT(4), Q5_CODES, Q4_1_VAL))
MM_GEMM(mm_q8_0_g, FILL_LEGACY(34, 2, HEAD_D, Q8_CODES, Q8_0_VAL))
MM_GEMM(mm_f32_g, FILL_FLOAT(F32_AT))
MM_GEMM(mm_f16_g, FILL_FLOAT(F16_AT))
MM_GEMM(mm_bf16_g, FILL_FLOAT(BF16_AT))
MM_GEMM(mm_q4_k_g, FILL_K(144, Q4K_HEAD, Q4K_VAL))
MM_GEMM(mm_q5_k_g, FILL_K(176, Q5K_HEAD, Q5K_VAL))
MM_GEMM(mm_q6_k_g, FILL_K(210, Q6K_HEAD, Q6K_VAL))
