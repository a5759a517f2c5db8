/*
 * attention_body.h — the fused attention kernel, written once over native
 * vectors of AW float lanes and included by attention.c once per build:
 *   AW    lanes per vector (4: SSE2 / NEON, 8: AVX2, 16: AVX-512)
 *   AN(x) the name x with the build's suffix
 *   AT    the build's target attribute (may be empty)
 *   AN_FMA(a, b, c), AN_FMAS(a, b, c)  a * b + c on vectors / scalars:
 *         fused (one rounding) in the FMA builds, two roundings otherwise
 * A key block of PT_ATTN_BK = 16 lanes is NV = 16 / AW vectors. Every
 * floating-point operation is lane-wise (a scalar tail does the same
 * operation as a lane), and the only cross-lane steps are an exact max
 * and a final sum in lane order 0..15, so builds with the same AN_FMA
 * give bitwise the same results (attention.h). No include guard:
 * included several times on purpose.
 */

#define NV (PT_ATTN_BK / AW)

typedef float AN(vf) __attribute__((vector_size(AW * 4)));
typedef int32_t AN(vi) __attribute__((vector_size(AW * 4)));

AT INLINE AN(vf) AN(load)(const float *p) {
    AN(vf) v;
    memcpy(&v, p, sizeof v);
    return v;
}
/* x in every lane (not {0} + x: adding 0 is no identity for -0, so the
 * compiler would keep a scalar add in the loops) */
AT INLINE AN(vf) AN(splat)(float x) {
#if AW == 4
    return (AN(vf)){x, x, x, x};
#elif AW == 8
    return (AN(vf)){x, x, x, x, x, x, x, x};
#else
    return (AN(vf)){x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x};
#endif
}
#define AN_STORE(p, v)                          \
    do {                                        \
        const AN(vf) st_tmp_ = (v);             \
        memcpy((p), &st_tmp_, sizeof st_tmp_);  \
    } while (0)
#define AN_SELECT(mask, a, b) ((AN(vf))(((AN(vi))(a) & (mask)) | ((AN(vi))(b) & ~(mask))))
#define AN_MAX(a, b) AN_SELECT((a) > (b), (a), (b))

/* exp(x) lane-wise for x <= 0: the operations of exp_nonpos (attention.c) */
AT INLINE AN(vf) AN(exp_nonpos)(const AN(vf) *px) {
    AN(vf) x = *px;
    const AN(vi) ok = x >= EXP_LO; /* false for -inf */
    x = AN_SELECT(ok, x, (AN(vf)){0});
    const AN(vi) n = __builtin_convertvector(x * LOG2E - 0.5f, AN(vi));
    const AN(vf) fn = __builtin_convertvector(n, AN(vf));
    const AN(vf) r = (x - fn * LN2_HI) - fn * LN2_LO;
    const AN(vf) z = r * r;
    const AN(vf) one = AN(splat)(1.0f);
    AN(vf) y = AN_FMA(AN_FMA(AN_FMA(AN_FMA(AN_FMA(AN(splat)(P0), r, AN(splat)(P1)), r, AN(splat)(P2)),
                                    r, AN(splat)(P3)), r, AN(splat)(P4)), r, AN(splat)(P5));
    y = AN_FMA(y, z, r) + one;
    const AN(vi) bits = (n + 127) << 23;
    return AN_SELECT(ok, y * (AN(vf))bits, (AN(vf)){0});
}

/* The largest lane of one vector (exact: scores are finite or -inf). */
AT INLINE float AN(hmax)(const AN(vf) *pv) {
    AN(vf) a = *pv;
#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 12)
#if AW == 16
    a = AN_MAX(a, __builtin_shufflevector(a, a, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7));
#endif
#if AW >= 8
    a = AN_MAX(a, __builtin_shufflevector(a, a, 4, 5, 6, 7, 0, 1, 2, 3 AN_PAD8));
#endif
    a = AN_MAX(a, __builtin_shufflevector(a, a, 2, 3, 0, 1 AN_PAD4));
    a = AN_MAX(a, __builtin_shufflevector(a, a, 1, 0, 1, 0 AN_PAD4));
    return a[0];
#else
    float m = a[0];
    for (int i = 1; i < AW; i++) m = a[i] > m ? a[i] : m;
    return m;
#endif
}

/* Scores of NQ queries against key block kb ([D][16]): per query and lane
 * two partial sums, over the even and the odd d in order, added at the
 * end and times scale. The queries and the two halves give the
 * independent chains that keep the FMA units busy. */
AT INLINE void AN(scores)(const float *const *q, const int NQ, const float *kb, int D, float scale,
                          AN(vf) s[QMAX][NV]) {
    AN(vf) acc[QMAX][2][NV];
    A_UNROLL
    for (int j = 0; j < NQ; j++)
        A_UNROLL
        for (int k = 0; k < NV; k++) acc[j][0][k] = acc[j][1][k] = (AN(vf)){0};
    int d = 0;
    for (; d + 2 <= D; d += 2) {
        A_UNROLL
        for (int p = 0; p < 2; p++)
            A_UNROLL
            for (int k = 0; k < NV; k++) {
                const AN(vf) kv = AN(load)(kb + (size_t)(d + p) * PT_ATTN_BK + k * AW);
                A_UNROLL
                for (int j = 0; j < NQ; j++) acc[j][p][k] = AN_FMA(AN(splat)(q[j][d + p]), kv, acc[j][p][k]);
            }
    }
    if (d < D)
        A_UNROLL
        for (int k = 0; k < NV; k++) {
            const AN(vf) kv = AN(load)(kb + (size_t)d * PT_ATTN_BK + k * AW);
            A_UNROLL
            for (int j = 0; j < NQ; j++) acc[j][0][k] = AN_FMA(AN(splat)(q[j][d]), kv, acc[j][0][k]);
        }
    A_UNROLL
    for (int j = 0; j < NQ; j++)
        A_UNROLL
        for (int k = 0; k < NV; k++) s[j][k] = (acc[j][0][k] + acc[j][1][k]) * scale;
}

AT static void AN(scores_any)(const float *const *q, int nq, const float *kb, int D, float scale,
                              AN(vf) s[QMAX][NV]) {
    switch (nq) {
    case 1: AN(scores)(q, 1, kb, D, scale, s); break;
#if QMAX >= 2
    case 2: AN(scores)(q, 2, kb, D, scale, s); break;
#endif
#if QMAX >= 3
    case 3: AN(scores)(q, 3, kb, D, scale, s); break;
#endif
    default: AN(scores)(q, QMAX, kb, D, scale, s); break;
    }
}

/* For the NQ queries j of one token: acc_j[0..D) = acc_j * c_j +
 * sum_{i < n} e_j[i] * v[i * vs + 0..D), i in order (each element sees
 * the same operations however the loops are blocked). acc_j is
 * acc + j * D, e_j is e + j * BK. KB vectors of D at a time, so NQ * KB
 * sums are in flight. */
#define KB 2
AT INLINE void AN(accumulate)(float *acc, const int NQ, const float *c, const float *e, int n, const float *v,
                              int64_t vs, int D) {
    int d = 0;
    for (; d + KB * AW <= D; d += KB * AW) {
        AN(vf) a[QMAX][KB];
        A_UNROLL
        for (int j = 0; j < NQ; j++)
            A_UNROLL
            for (int kb = 0; kb < KB; kb++) {
                a[j][kb] = AN(load)(acc + (size_t)j * D + d + kb * AW);
                if (c[j] != 1.0f) a[j][kb] *= c[j];
            }
        for (int i = 0; i < n; i++)
            A_UNROLL
            for (int kb = 0; kb < KB; kb++) {
                const AN(vf) vv = AN(load)(v + i * vs + d + kb * AW);
                A_UNROLL
                for (int j = 0; j < NQ; j++)
                    a[j][kb] = AN_FMA(AN(splat)(e[j * PT_ATTN_BK + i]), vv, a[j][kb]);
            }
        A_UNROLL
        for (int j = 0; j < NQ; j++)
            A_UNROLL
            for (int kb = 0; kb < KB; kb++) AN_STORE(acc + (size_t)j * D + d + kb * AW, a[j][kb]);
    }
    for (; d + AW <= D; d += AW) {
        A_UNROLL
        for (int j = 0; j < NQ; j++) {
            AN(vf) a = AN(load)(acc + (size_t)j * D + d);
            if (c[j] != 1.0f) a *= c[j];
            for (int i = 0; i < n; i++) a = AN_FMA(AN(splat)(e[j * PT_ATTN_BK + i]), AN(load)(v + i * vs + d), a);
            AN_STORE(acc + (size_t)j * D + d, a);
        }
    }
#ifdef AN_HALF
    /* 8 of the last dimensions with 8-lane vectors: the same lane-wise
     * operations as the scalar tail below (head sizes of 40, 72, ...) */
    for (; d + 8 <= D; d += 8) {
        A_UNROLL
        for (int j = 0; j < NQ; j++) {
            AN_HALF(hf) a;
            memcpy(&a, acc + (size_t)j * D + d, sizeof a);
            if (c[j] != 1.0f) a *= c[j];
            for (int i = 0; i < n; i++) {
                AN_HALF(hf) vv;
                memcpy(&vv, v + i * vs + d, sizeof vv);
                const float ei = e[j * PT_ATTN_BK + i];
                a = AN_HALF_FMA(((AN_HALF(hf)){ei, ei, ei, ei, ei, ei, ei, ei}), vv, a);
            }
            memcpy(acc + (size_t)j * D + d, &a, sizeof a);
        }
    }
#endif
    for (; d < D; d++)
        A_UNROLL
        for (int j = 0; j < NQ; j++) {
            float a = acc[(size_t)j * D + d];
            if (c[j] != 1.0f) a *= c[j];
            for (int i = 0; i < n; i++) a = AN_FMAS(e[j * PT_ATTN_BK + i], v[i * vs + d], a);
            acc[(size_t)j * D + d] = a;
        }
}
#undef KB

AT static void AN(accumulate_any)(float *acc, int nq, const float *c, const float *e, int n, const float *v,
                                  int64_t vs, int D) {
    switch (nq) {
    case 1: AN(accumulate)(acc, 1, c, e, n, v, vs, D); break;
#if QMAX >= 2
    case 2: AN(accumulate)(acc, 2, c, e, n, v, vs, D); break;
#endif
#if QMAX >= 3
    case 3: AN(accumulate)(acc, 3, c, e, n, v, vs, D); break;
#endif
    default: AN(accumulate)(acc, QMAX, c, e, n, v, vs, D); break;
    }
}

#ifndef A_FULL_ONLY
/* Positions [span_lo, span_hi) of the causal attention (span_lo a
 * multiple of BK; kt and v point at position span_lo's block and row);
 * with ps the scores come from ps + iq * pss + (j - span_lo) (query iq =
 * t * n_head + h, position j, scale applied) instead of q and kt:
 * the running state (m, l, acc) lives in scratch from one span to the
 * next, made at PT_ATTN_BEGIN and turned into the output at PT_ATTN_END.
 * Spans taken in order go through the blocks in the order one span over
 * every position does, with the same operations: bitwise its result. */
AT static void AN(attn)(float *out, int64_t out_stride, const float *q, int64_t q_stride, int n_tok,
                        int n_head, const float *kt, int64_t kbs, const float *v, int64_t vs, int p0,
                        int window, int D, float scale, float *scratch, int span_lo, int span_hi,
                        int flags, const float *ps, int64_t pss) {
    const int nq = n_tok * n_head;
    float *m = scratch;                       /* [nq] running max */
    float *l = m + nq;                        /* [nq][BK] per-lane sums */
    float *acc = l + (size_t)nq * PT_ATTN_BK; /* [nq][D] */
    float *e = acc + (size_t)nq * D;          /* [QMAX][BK] */
    if (flags & PT_ATTN_BEGIN) {
        for (int i = 0; i < nq; i++) m[i] = -INFINITY;
        memset(l, 0, (size_t)nq * PT_ATTN_BK * sizeof(float));
        memset(acc, 0, (size_t)nq * D * sizeof(float));
    }

    AN(vi) lanes[NV]; /* lane numbers 0..15 */
    A_UNROLL
    for (int k = 0; k < NV; k++)
        for (int i = 0; i < AW; i++) lanes[k][i] = k * AW + i;

    const int n_kv = p0 + n_tok; /* positions the last token sees */
    /* Token t sees positions lo(t) = max(0, p0 + t - window + 1) .. p0 + t.
     * Blocks wholly before the first token's window are skipped, and so,
     * per token, are blocks wholly before its own: every block a query
     * goes through holds at least one position it sees, so its running
     * max is finite from its first block on. */
    int first = p0 - window + 1 > 0 ? (p0 - window + 1) / PT_ATTN_BK * PT_ATTN_BK : 0;
    if (first < span_lo) first = span_lo;
    const int j_end = n_kv < span_hi ? n_kv : span_hi;
    for (int j0 = first; j0 < j_end; j0 += PT_ATTN_BK) {
        const float *kb = kt + (int64_t)((j0 - span_lo) / PT_ATTN_BK) * kbs;
        const float *vb = v + (int64_t)(j0 - span_lo) * vs;
        const int t0 = j0 - p0 > 0 ? j0 - p0 : 0; /* earlier tokens see none of the block */
        /* later tokens whose window starts past the block see none of it:
         * t sees the block while p0 + t - window + 1 <= j0 + BK - 1 */
        const int64_t t_end = (int64_t)j0 + PT_ATTN_BK - 1 + window - p0;
        const int t1 = t_end < n_tok ? (int)t_end : n_tok;
        for (int t = t0; t < t1; t++) {
            const int lim = p0 + t + 1 - j0; /* valid lanes, >= 1 */
            const int nv = lim < PT_ATTN_BK ? lim : PT_ATTN_BK;
            const int lo = p0 + t - window + 1 - j0; /* first lane seen, < BK */
            for (int h0 = 0; h0 < n_head; h0 += QMAX) {
                const int nh = n_head - h0 < QMAX ? n_head - h0 : QMAX;
                AN(vf) s[QMAX][NV];
                if (ps) {
                    for (int j = 0; j < nh; j++)
                        A_UNROLL
                        for (int k = 0; k < NV; k++)
                            s[j][k] = AN(load)(ps + (int64_t)(t * n_head + h0 + j) * pss + (j0 - span_lo) + k * AW);
                } else {
                    const float *qs[QMAX];
                    for (int j = 0; j < nh; j++) qs[j] = q + t * q_stride + (int64_t)(h0 + j) * D;
                    AN(scores_any)(qs, nh, kb, D, scale, s);
                }
                float c[QMAX];
                for (int j = 0; j < nh; j++) {
                    const int iq = t * n_head + h0 + j;
                    float bm = -INFINITY;
                    A_UNROLL
                    for (int k = 0; k < NV; k++) {
                        if (nv < PT_ATTN_BK) s[j][k] = AN_SELECT(lanes[k] < nv, s[j][k], AN(splat)(-INFINITY));
                        if (lo > 0) s[j][k] = AN_SELECT(lanes[k] >= lo, s[j][k], AN(splat)(-INFINITY));
                        const float mk = AN(hmax)(&s[j][k]);
                        bm = mk > bm ? mk : bm;
                    }
                    const float mn = bm > m[iq] ? bm : m[iq];
                    /* 0 on the first block; exp(0) is exactly 1, so an
                     * unchanged max skips the call */
                    c[j] = mn == m[iq] ? 1.0f : exp_nonpos(m[iq] - mn);
                    float *li = l + (size_t)iq * PT_ATTN_BK;
                    A_UNROLL
                    for (int k = 0; k < NV; k++) {
                        const AN(vf) sm = s[j][k] - mn;
                        const AN(vf) ev = AN(exp_nonpos)(&sm);
                        AN_STORE(li + k * AW, AN_FMA(AN(load)(li + k * AW), AN(splat)(c[j]), ev));
                        AN_STORE(e + j * PT_ATTN_BK + k * AW, ev);
                    }
                    m[iq] = mn;
                }
                AN(accumulate_any)(acc + (size_t)(t * n_head + h0) * D, nh, c, e, nv, vb, vs, D);
            }
        }
    }
    if (!(flags & PT_ATTN_END)) return;
    for (int t = 0; t < n_tok; t++)
        for (int h = 0; h < n_head; h++) {
            const int iq = t * n_head + h;
            const float *li = l + (size_t)iq * PT_ATTN_BK;
            float sum = 0.0f;
            for (int i = 0; i < PT_ATTN_BK; i++) sum += li[i];
            const float inv = 1.0f / sum;
            float *o = out + t * out_stride + (int64_t)h * D;
            const float *a = acc + (size_t)iq * D;
            for (int d = 0; d < D; d++) o[d] = a[d] * inv;
        }
}

#endif /* A_FULL_ONLY */

#ifndef A_CAUSAL_ONLY
/* Non-causal attention (image_ops.h pt_attn_full): n_q queries of one
 * head, each attending to all n_kv keys, in tiles of ATTN_QT queries (so
 * a tile's accumulators stay in L1 while the key and value blocks stream
 * past) and groups of QMAX queries sharing each key and value load. Per
 * query the operations are the causal kernel's with every lane of block
 * b valid while b * BK + lane < n_kv, so neither the tile nor the group
 * changes a result. scratch: the causal layout for a tile. */
AT static void AN(attn_full)(float *out, int64_t out_stride, const float *q, int64_t q_stride,
                             int n_q, const float *kt, int64_t kbs, const float *v, int64_t vs,
                             int n_kv, int D, float scale, float *scratch) {
    AN(vi) lanes[NV]; /* lane numbers 0..15 */
    A_UNROLL
    for (int k = 0; k < NV; k++)
        for (int i = 0; i < AW; i++) lanes[k][i] = k * AW + i;

    for (int t0 = 0; t0 < n_q; t0 += ATTN_QT) {
        const int nq = n_q - t0 < ATTN_QT ? n_q - t0 : ATTN_QT;
        float *m = scratch;                       /* [nq] running max */
        float *l = m + nq;                        /* [nq][BK] per-lane sums */
        float *acc = l + (size_t)nq * PT_ATTN_BK; /* [nq][D] */
        float *e = acc + (size_t)nq * D;          /* [QMAX][BK] */
        for (int i = 0; i < nq; i++) m[i] = -INFINITY;
        memset(l, 0, (size_t)nq * PT_ATTN_BK * sizeof(float));
        memset(acc, 0, (size_t)nq * D * sizeof(float));
        for (int j0 = 0; j0 < n_kv; j0 += PT_ATTN_BK) {
            const float *kb = kt + (int64_t)(j0 / PT_ATTN_BK) * kbs;
            const float *vb = v + (int64_t)j0 * vs;
            const int nv = n_kv - j0 < PT_ATTN_BK ? n_kv - j0 : PT_ATTN_BK;
            for (int g0 = 0; g0 < nq; g0 += QMAX) {
                const int nh = nq - g0 < QMAX ? nq - g0 : QMAX;
                const float *qs[QMAX];
                for (int j = 0; j < nh; j++) qs[j] = q + (int64_t)(t0 + g0 + j) * q_stride;
                AN(vf) s[QMAX][NV];
                AN(scores_any)(qs, nh, kb, D, scale, s);
                float c[QMAX];
                for (int j = 0; j < nh; j++) {
                    const int iq = g0 + j;
                    float bm = -INFINITY;
                    A_UNROLL
                    for (int k = 0; k < NV; k++) {
                        if (nv < PT_ATTN_BK) s[j][k] = AN_SELECT(lanes[k] < nv, s[j][k], AN(splat)(-INFINITY));
                        const float mk = AN(hmax)(&s[j][k]);
                        bm = mk > bm ? mk : bm;
                    }
                    const float mn = bm > m[iq] ? bm : m[iq];
                    c[j] = mn == m[iq] ? 1.0f : exp_nonpos(m[iq] - mn);
                    float *li = l + (size_t)iq * PT_ATTN_BK;
                    A_UNROLL
                    for (int k = 0; k < NV; k++) {
                        const AN(vf) sm = s[j][k] - mn;
                        const AN(vf) ev = AN(exp_nonpos)(&sm);
                        AN_STORE(li + k * AW, AN_FMA(AN(load)(li + k * AW), AN(splat)(c[j]), ev));
                        AN_STORE(e + j * PT_ATTN_BK + k * AW, ev);
                    }
                    m[iq] = mn;
                }
                AN(accumulate_any)(acc + (size_t)g0 * D, nh, c, e, nv, vb, vs, D);
            }
        }
        for (int i = 0; i < nq; i++) {
            const float *li = l + (size_t)i * PT_ATTN_BK;
            float sum = 0.0f;
            for (int k = 0; k < PT_ATTN_BK; k++) sum += li[k];
            const float inv = 1.0f / sum;
            float *o = out + (int64_t)(t0 + i) * out_stride;
            const float *a = acc + (size_t)i * D;
            for (int d = 0; d < D; d++) o[d] = a[d] * inv;
        }
    }
}
#endif /* A_CAUSAL_ONLY */

#undef NV
#undef AN_STORE
#undef AN_SELECT
#undef AN_MAX
