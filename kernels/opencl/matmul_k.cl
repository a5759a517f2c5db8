/*
 * matmul_k.cl — the products of matmul.cl for the K-quants (Q4_K, Q5_K,
 * Q6_K: 256-value super-blocks, quant_blocks.h). The unit of work is 32
 * consecutive values of a super-block (unit s of 8): KHEAD reads the
 * unit's scale a (and offset m) and sets the pointers, KVAL(l) is value
 * 32 s + l. Kernels as matmul.cl's: _1 (decode) and _n (MM_NT tokens)
 * with MM_WG items over MM_NR rows, _r with an item per row (CPU devices).
 */

/* Q4_K / Q5_K scale and min of sub-block s (quant_blocks.h's packing) */
inline void k_scale_min(global const uchar *sc, int s, float *a, float *m) {
    int q, mn;
    if (s < 4) {
        q = sc[s] & 63;
        mn = sc[s + 4] & 63;
    } else {
        q = (sc[s + 4] & 15) | (sc[s - 4] >> 6) << 4;
        mn = (sc[s + 4] >> 4) | (sc[s] >> 6) << 4;
    }
    *a = (float)q;
    *m = (float)mn;
}

/* Q4_K: d, dmin, scales[12], qs[128]; chunk s / 2 of qs, low nibble for even s */
#define Q4K_HEAD                                                                                \
    float a, m;                                                                                 \
    k_scale_min(blk + 4, s, &a, &m);                                                            \
    a *= blk_half(blk, 0);                                                                      \
    m *= blk_half(blk, 2);                                                                      \
    global const uchar *q = blk + 16 + 32 * (s / 2);                                            \
    const int shift = 4 * (s & 1)
#define Q4K_VAL(l) (a * (float)((q[l] >> shift) & 15) - m)

/* Q5_K: d, dmin, scales[12], qh[32], qs[128]; the fifth bit of value
 * 32 s + l is bit s of qh[l] */
#define Q5K_HEAD                                                                                \
    float a, m;                                                                                 \
    k_scale_min(blk + 4, s, &a, &m);                                                            \
    a *= blk_half(blk, 0);                                                                      \
    m *= blk_half(blk, 2);                                                                      \
    global const uchar *qh = blk + 16;                                                          \
    global const uchar *q = blk + 48 + 32 * (s / 2);                                            \
    const int shift = 4 * (s & 1)
#define Q5K_VAL(l) (a * (float)(((q[l] >> shift) & 15) | ((qh[l] >> s) & 1) << 4) - m)

/* Q6_K: ql[128], qh[64], scales[16] (int8), d; unit s is k = s % 4 of
 * half h = s / 4 (quant_blocks.h's table) */
#define Q6K_HEAD                                                                                \
    const int h = s / 4, k = s % 4;                                                             \
    global const uchar *ql = blk + 64 * h + 32 * (k & 1);                                       \
    global const uchar *qh = blk + 128 + 32 * h;                                                \
    global const char *sc = (global const char *)(blk + 192) + 8 * h + 2 * k;                  \
    const int shift = 4 * (k >> 1), hshift = 2 * k;                                             \
    const float d = blk_half(blk, 208), a0 = d * (float)sc[0], a1 = d * (float)sc[1]
#define Q6K_VAL(l)                                                                              \
    (((l) < 16 ? a0 : a1) * (float)((((ql[l] >> shift) & 15) | ((qh[l] >> hshift) & 3) << 4) - 32))

#define MM_K(NAME, NT, BLOCK_BYTES, HEAD, VAL)                                                  \
    kernel void NAME(global const uchar *w, ulong row_bytes, int rows, int cols,                \
                     global const float *x, int n, global float *y) {                           \
        local float red[MM_NR * NT * MM_WG];                                                    \
        const int lid = get_local_id(0);                                                        \
        const int r0 = get_group_id(0) * MM_NR, t0 = get_group_id(1) * NT;                     \
        const int nt = min(NT, n - t0), nr = min(MM_NR, rows - r0);                             \
        const int units = cols / 32;                                                            \
        float acc[MM_NR][NT];                                                                   \
        for (int rr = 0; rr < MM_NR; rr++)                                                      \
            for (int t = 0; t < NT; t++) acc[rr][t] = 0.0f;                                     \
        for (int u = lid; u < units; u += MM_WG) {                                              \
            const int s = u % 8;                                                                \
            global const float *xu = x + (long)t0 * cols + u * 32;                              \
            for (int rr = 0; rr < MM_NR; rr++) {                                                \
                if (rr >= nr) break;                                                            \
                global const uchar *blk = w + (long)(r0 + rr) * row_bytes + (long)(u / 8) * BLOCK_BYTES; \
                HEAD;                                                                           \
                for (int l = 0; l < 32; l++) {                                                  \
                    const float v = VAL(l);                                                     \
                    for (int t = 0; t < NT; t++)                                                \
                        if (t < nt) acc[rr][t] += v * xu[(long)t * cols + l];                   \
                }                                                                               \
            }                                                                                   \
        }                                                                                       \
        MM_REDUCE(NT)                                                                           \
    }

#define MM_K_ROW(NAME, BLOCK_BYTES, HEAD, VAL)                                                  \
    kernel void NAME(global const uchar *w, ulong row_bytes, int rows, int cols,                \
                     global const float *x, int n, global float *y) {                           \
        const int r = get_global_id(0), t0 = get_global_id(1) * MM_NT;                          \
        if (r >= rows) return;                                                                  \
        const int nt = min(MM_NT, n - t0), units = cols / 32;                                   \
        float acc[MM_NT];                                                                       \
        for (int t = 0; t < MM_NT; t++) acc[t] = 0.0f;                                          \
        for (int u = 0; u < units; u++) {                                                       \
            const int s = u % 8;                                                                \
            global const uchar *blk = w + (long)r * row_bytes + (long)(u / 8) * BLOCK_BYTES;    \
            global const float *xu = x + (long)t0 * cols + u * 32;                              \
            HEAD;                                                                               \
            for (int l = 0; l < 32; l++) {                                                      \
                const float v = VAL(l);                                                         \
                for (int t = 0; t < MM_NT; t++)                                                 \
                    if (t < nt) acc[t] += v * xu[(long)t * cols + l];                           \
            }                                                                                   \
        }                                                                                       \
        for (int t = 0; t < MM_NT; t++)                                                         \
            if (t < nt) y[(long)(t0 + t) * rows + r] = acc[t];                                  \
    }

MM_K(mm_q4_k_1, 1, 144, Q4K_HEAD, Q4K_VAL)
MM_K(mm_q4_k_n, MM_NT, 144, Q4K_HEAD, Q4K_VAL)
MM_K_ROW(mm_q4_k_r, 144, Q4K_HEAD, Q4K_VAL)
MM_K(mm_q5_k_1, 1, 176, Q5K_HEAD, Q5K_VAL)
MM_K(mm_q5_k_n, MM_NT, 176, Q5K_HEAD, Q5K_VAL)
MM_K_ROW(mm_q5_k_r, 176, Q5K_HEAD, Q5K_VAL)
MM_K(mm_q6_k_1, 1, 210, Q6K_HEAD, Q6K_VAL)
MM_K(mm_q6_k_n, MM_NT, 210, Q6K_HEAD, Q6K_VAL)
MM_K_ROW(mm_q6_k_r, 210, Q6K_HEAD, Q6K_VAL)
