/*
 * image_ops_body.h — the element-wise image ops and norms written once
 * over GCC/Clang generic vectors of IW float lanes, included by
 * image_ops_simd.c once per build:
 *   IW     lanes per vector (4: SSE2 / NEON / plain, 8: AVX2, 16: AVX-512)
 *   IN(x)  the name x with the build's suffix
 *   IT     the build's target attribute (may be empty)
 * Each vector function performs image_ops_impl.h's scalar operations lane
 * by lane in the same order (compare + select where the scalar code
 * branches), and the tails call those scalar functions, so every build is
 * bitwise the plain C reference. Nothing is fused: ISO C mode has
 * -ffp-contract=off and no FMA intrinsic is used. No include guard:
 * included several times on purpose.
 */

typedef float IN(vf) __attribute__((vector_size(IW * 4)));
typedef int32_t IN(vi) __attribute__((vector_size(IW * 4)));

#define IV_SELECT(mask, a, b) ((IN(vf))(((IN(vi))(a) & (mask)) | ((IN(vi))(b) & ~(mask))))

IT INLINE IN(vf) IN(load)(const float *p) {
    IN(vf) v;
    memcpy(&v, p, sizeof v);
    return v;
}
IT INLINE void IN(store)(float *p, IN(vf) v) { memcpy(p, &v, sizeof v); }
/* x in every lane ({0} + x would not be an identity for -0) */
IT INLINE IN(vf) IN(splat)(float x) {
    IN(vf) v;
    for (int i = 0; i < IW; i++) v[i] = x;
    return v;
}

/* pti_exp lane-wise */
IT INLINE IN(vf) IN(exp)(IN(vf) x) {
    x = IV_SELECT(x > PTI_EXP_LO, x, IN(splat)(PTI_EXP_LO));
    x = IV_SELECT(x < PTI_EXP_HI, x, IN(splat)(PTI_EXP_HI));
    const IN(vf) t = x * PTI_LOG2E;
    const IN(vf) half = IV_SELECT(t >= 0.0f, IN(splat)(0.5f), IN(splat)(-0.5f));
    const IN(vi) n = __builtin_convertvector(t + half, IN(vi));
    const IN(vf) fn = __builtin_convertvector(n, IN(vf));
    const IN(vf) r = (x - fn * PTI_LN2_HI) - fn * PTI_LN2_LO;
    const IN(vf) z = r * r;
    IN(vf) y = ((((PTI_E0 * r + PTI_E1) * r + PTI_E2) * r + PTI_E3) * r + PTI_E4) * r + PTI_E5;
    y = (y * z + r) + 1.0f;
    return y * (IN(vf))((n + 127) << 23);
}

IT INLINE IN(vf) IN(silu)(IN(vf) x) { return x / (1.0f + IN(exp)(-x)); }
IT INLINE IN(vf) IN(quick_gelu)(IN(vf) x) { return x / (1.0f + IN(exp)(x * PTI_QGELU_K)); }
IT INLINE IN(vf) IN(gelu)(IN(vf) x) {
    const IN(vf) z = x * PTI_RSQRT2;
    const IN(vf) a = (IN(vf))((IN(vi))z & 0x7fffffff); /* fabsf */
    const IN(vf) t = 1.0f / (1.0f + PTI_ERF_P * a);
    const IN(vf) poly = ((((PTI_ERF_A5 * t + PTI_ERF_A4) * t + PTI_ERF_A3) * t + PTI_ERF_A2) * t +
                         PTI_ERF_A1) * t;
    const IN(vf) e = poly * IN(exp)(-(a * a));
    const IN(vf) one_plus_erf = IV_SELECT(z < 0.0f, e, 2.0f - e);
    return (0.5f * x) * one_plus_erf;
}

IT static void IN(act)(pti_act act, float *x, int64_t n) {
    int64_t i = 0;
    switch (act) {
    case PTI_ACT_SILU:
        for (; i + IW <= n; i += IW) IN(store)(x + i, IN(silu)(IN(load)(x + i)));
        for (; i < n; i++) x[i] = pti_silu(x[i]);
        break;
    case PTI_ACT_GELU:
        for (; i + IW <= n; i += IW) IN(store)(x + i, IN(gelu)(IN(load)(x + i)));
        for (; i < n; i++) x[i] = pti_gelu(x[i]);
        break;
    case PTI_ACT_QUICK_GELU:
        for (; i + IW <= n; i += IW) IN(store)(x + i, IN(quick_gelu)(IN(load)(x + i)));
        for (; i < n; i++) x[i] = pti_quick_gelu(x[i]);
        break;
    }
}

IT static void IN(geglu)(float *out, const float *x, int64_t n_rows, int inner) {
    for (int64_t r = 0; r < n_rows; r++) {
        const float *a = x + r * 2 * inner, *b = a + inner;
        float *o = out + r * inner;
        int i = 0;
        for (; i + IW <= inner; i += IW) IN(store)(o + i, IN(load)(a + i) * IN(gelu)(IN(load)(b + i)));
        for (; i < inner; i++) o[i] = a[i] * pti_gelu(b[i]);
    }
}

/* Pixels [p0, p1) of the channels [c0, c0 + nc) whose per-channel mean m,
 * scale s and shift b are given: y = (x - m) * s + b, then silu. */
IT static void IN(gn_chunk)(float *y, const float *x, int64_t p0, int64_t p1, int c, int c0, int nc,
                            const float *m, const float *s, const float *b, bool silu) {
    for (int64_t p = p0; p < p1; p++) {
        const float *xr = x + p * c + c0;
        float *yr = y + p * c + c0;
        int i = 0;
        for (; i + IW <= nc; i += IW) {
            IN(vf) v = (IN(load)(xr + i) - IN(load)(m + i)) * IN(load)(s + i) + IN(load)(b + i);
            IN(store)(yr + i, silu ? IN(silu)(v) : v);
        }
        for (; i < nc; i++) {
            const float v = (xr[i] - m[i]) * s[i] + b[i];
            yr[i] = silu ? pti_silu(v) : v;
        }
    }
}

IT static void IN(layernorm)(float *y, const float *x, int64_t n_rows, int n, const float *gamma,
                             const float *beta, float eps) {
    for (int64_t row = 0; row < n_rows; row++) {
        const float *xr = x + row * n;
        float *yr = y + row * n;
        float m, r;
        pti_layernorm_row_stats(xr, n, eps, &m, &r);
        const IN(vf) vm = IN(splat)(m), vr = IN(splat)(r);
        int i = 0;
        for (; i + IW <= n; i += IW) {
            const IN(vf) g = gamma ? IN(load)(gamma + i) : IN(splat)(1.0f);
            const IN(vf) b = beta ? IN(load)(beta + i) : IN(splat)(0.0f);
            IN(store)(yr + i, ((IN(load)(xr + i) - vm) * vr) * g + b);
        }
        for (; i < n; i++) {
            const float g = gamma ? gamma[i] : 1.0f;
            const float b = beta ? beta[i] : 0.0f;
            yr[i] = ((xr[i] - m) * r) * g + b;
        }
    }
}

#undef IV_SELECT
