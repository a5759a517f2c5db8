/*
 * fmatmul_body.h — the register-blocked float product of fmatmul.h,
 * written once and included by fmatmul.c once per SIMD build:
 *   FW         float lanes per vector (16 AVX-512, 8 AVX2, 4 NEON)
 *   FN(x)      the name x with the build's suffix;  FT  its target attribute
 *   FV         the vector type
 *   F_ZERO     a zero vector;  F_FMA(a, b, c)  a * b + c, one rounding
 *   F_LOADX(p) FW floats;  F_LOADW_F16 / _BF16 / _F32 (p)  FW weights as floats
 *   F_STORE(p, v)
 *   FR, FT_TOK rows and tokens of a full register block
 * One 16-lane sum of fmatmul.h is FNV = 16 / FW vectors; every lane
 * performs the header's fused chain over its columns, and the final
 * reduction is fm_reduce16 (fmatmul.c), so the build is bitwise the
 * oracle whatever the blocking. No include guard: included several times.
 */

#define FNV (16 / FW)

/* Columns [c, c + 16) of rows wr[0..R) and tokens xr[0..T) into acc.
 * TY: the weights' type (a constant after inlining; F32 for the padded
 * tail, whose weights are already floats). */
FT INLINE void FN(step)(const int TY, const int R, const int T, const void *const *wr,
                        const float *const *xr, int64_t c, FV acc[FR][FT_TOK][FNV]) {
    F_UNROLL
    for (int k = 0; k < FNV; k++) {
        FV wv[FR];
        F_UNROLL
        for (int i = 0; i < R; i++) {
            const int64_t o = c + (int64_t)k * FW;
            if (TY == PT_TYPE_F16) wv[i] = F_LOADW_F16((const uint16_t *)wr[i] + o);
            else if (TY == PT_TYPE_BF16) wv[i] = F_LOADW_BF16((const uint16_t *)wr[i] + o);
            else wv[i] = F_LOADW_F32((const float *)wr[i] + o);
        }
        F_UNROLL
        for (int j = 0; j < T; j++) {
            const FV xv = F_LOADX(xr[j] + c + (int64_t)k * FW);
            F_UNROLL
            for (int i = 0; i < R; i++) acc[i][j][k] = F_FMA(wv[i], xv, acc[i][j][k]);
        }
    }
}

/* Outputs of rows r .. r+R-1 and tokens t .. t+T-1 over all columns. */
FT INLINE void FN(tile)(const int TY, const int R, const int T, const uint8_t *w, size_t rb,
                        const float *x, int64_t cols, float *y, int64_t rows, int64_t r, int64_t t) {
    FV acc[FR][FT_TOK][FNV];
    const void *wr[FR];
    const float *xr[FT_TOK];
    F_UNROLL
    for (int i = 0; i < R; i++) wr[i] = w + (size_t)(r + i) * rb;
    F_UNROLL
    for (int j = 0; j < T; j++) xr[j] = x + (t + j) * cols;
    F_UNROLL
    for (int i = 0; i < R; i++)
        F_UNROLL
        for (int j = 0; j < T; j++)
            F_UNROLL
            for (int k = 0; k < FNV; k++) acc[i][j][k] = F_ZERO;
    const int64_t full = cols / 16 * 16;
    for (int64_t c = 0; c < full; c += 16) FN(step)(TY, R, T, wr, xr, c, acc);
    if (full < cols) {
        /* the last columns, zero-padded to 16 (fmatmul.h's order) */
        float wp[FR][16], xp[FT_TOK][16];
        const void *wpr[FR];
        const float *xpr[FT_TOK];
        for (int i = 0; i < R; i++) {
            fm_tail_w(TY, wr[i], full, cols, wp[i]);
            wpr[i] = wp[i];
        }
        for (int j = 0; j < T; j++) {
            for (int64_t c = full; c < full + 16; c++) xp[j][c - full] = c < cols ? xr[j][c] : 0.0f;
            xpr[j] = xp[j];
        }
        FN(step)(PT_TYPE_F32, R, T, wpr, xpr, 0, acc);
    }
    for (int i = 0; i < R; i++)
        for (int j = 0; j < T; j++) {
            float lanes[16];
            for (int k = 0; k < FNV; k++) F_STORE(lanes + k * FW, acc[i][j][k]);
            y[(t + j) * rows + r + i] = fm_reduce16(lanes);
        }
}

/* Rows [r0, r1), all n tokens, in token tiles whose inputs stay in L2
 * (fm_token_tile) while the rows' weights stream past. */
FT INLINE void FN(run_t)(const int TY, const void *w, int64_t rows, int64_t cols, const float *x,
                         int64_t n, float *y, int64_t r0, int64_t r1) {
    const size_t rb = (size_t)cols * (TY == PT_TYPE_F32 ? 4 : 2);
    const uint8_t *wb = w;
    const int64_t tt = fm_token_tile(cols, FT_TOK);
    for (int64_t t0 = 0; t0 < n; t0 += tt) {
        const int64_t t1 = n - t0 < tt ? n : t0 + tt;
        int64_t r = r0;
        for (; r + FR <= r1; r += FR) {
            int64_t t = t0;
            for (; t + FT_TOK <= t1; t += FT_TOK) FN(tile)(TY, FR, FT_TOK, wb, rb, x, cols, y, rows, r, t);
            for (; t < t1; t++) FN(tile)(TY, FR, 1, wb, rb, x, cols, y, rows, r, t);
        }
        for (; r < r1; r++) {
            int64_t t = t0;
            for (; t + FT_TOK <= t1; t += FT_TOK) FN(tile)(TY, 1, FT_TOK, wb, rb, x, cols, y, rows, r, t);
            for (; t < t1; t++) FN(tile)(TY, 1, 1, wb, rb, x, cols, y, rows, r, t);
        }
    }
}

FT static void FN(run)(uint32_t type, const void *w, int64_t rows, int64_t cols, const float *x,
                       int64_t n, float *y, int64_t r0, int64_t r1) {
    switch (type) {
    case PT_TYPE_F16: FN(run_t)(PT_TYPE_F16, w, rows, cols, x, n, y, r0, r1); break;
    case PT_TYPE_BF16: FN(run_t)(PT_TYPE_BF16, w, rows, cols, x, n, y, r0, r1); break;
    default: FN(run_t)(PT_TYPE_F32, w, rows, cols, x, n, y, r0, r1); break;
    }
}

#undef FNV
