/*
 * image_ops_simd.c — SIMD builds of image_ops.h's element-wise ops and
 * norms (image_ops_simd.h): image_ops_body.h compiled once per width, 4
 * lanes with no target flags (SSE2 on x86-64, NEON on arm64, generic
 * code elsewhere), 8 with AVX2 and 16 with AVX-512F by target attributes
 * (the rest of the library needs no ISA flags). Every build is bitwise
 * the plain C reference (see image_ops_body.h).
 */
#include "image_ops_simd.h"

#include <string.h>

#include "image_ops_impl.h"

#define INLINE static inline __attribute__((always_inline))

#define IW 4
#define IN(x) x##_w4
#define IT
#include "image_ops_body.h"
#undef IW
#undef IN
#undef IT

#if defined(__x86_64__)
#define IW 8
#define IN(x) x##_avx2
#define IT __attribute__((target("avx2")))
#include "image_ops_body.h"
#undef IW
#undef IN
#undef IT

#define IW 16
#define IN(x) x##_avx512
#define IT __attribute__((target("avx512f")))
#include "image_ops_body.h"
#undef IW
#undef IN
#undef IT
#endif

#if defined(__x86_64__)
/* The build for cpu's variant: 0 plain 4 lanes, 1 AVX2, 2 AVX-512. */
static int width_of(const pt_cpu *cpu) {
    switch (cpu ? cpu->variant : PT_CPU_REF) {
    case PT_CPU_AVX2:
    case PT_CPU_AVXVNNI: return 1;
    case PT_CPU_AVX512VNNI:
    case PT_CPU_AMX: return 2;
    default: return 0;
    }
}

#define DISPATCH(fn, ...)                            \
    switch (width_of(cpu)) {                         \
    case 1: fn##_avx2(__VA_ARGS__); break;           \
    case 2: fn##_avx512(__VA_ARGS__); break;         \
    default: fn##_w4(__VA_ARGS__); break;            \
    }
#else
#define DISPATCH(fn, ...) \
    (void)cpu;            \
    fn##_w4(__VA_ARGS__);
#endif

bool pti_act_simd(const pt_cpu *cpu, pti_act act, float *x, int64_t n) {
    DISPATCH(act, act, x, n)
    return true;
}

bool pti_geglu_simd(const pt_cpu *cpu, float *out, const float *x, int64_t n_rows, int inner) {
    DISPATCH(geglu, out, x, n_rows, inner)
    return true;
}

/* Channels per chunk of per-channel constants: 3 x 256 floats on the stack. */
#define GN_CHUNK 256

/* The per-channel constants are formed here, in plain C, exactly as the
 * reference forms them (image_ops.c gn_apply_ref), once per chunk. */
bool pti_gn_apply_simd(const pt_cpu *cpu, float *y, const float *x, int64_t p0, int64_t p1, int c,
                       int groups, const float *mean, const float *rstd, const float *gamma,
                       const float *beta, bool silu) {
    const int cg = c / groups;
    float m[GN_CHUNK], s[GN_CHUNK], b[GN_CHUNK];
    for (int c0 = 0; c0 < c; c0 += GN_CHUNK) {
        const int nc = c - c0 < GN_CHUNK ? c - c0 : GN_CHUNK;
        for (int i = 0; i < nc; i++) {
            const int ch = c0 + i, g = ch / cg;
            m[i] = mean[g];
            s[i] = gamma ? rstd[g] * gamma[ch] : rstd[g];
            b[i] = beta ? beta[ch] : 0.0f;
        }
        DISPATCH(gn_chunk, y, x, p0, p1, c, c0, nc, m, s, b, silu)
    }
    return true;
}

bool pti_layernorm_simd(const pt_cpu *cpu, float *y, const float *x, int64_t n_rows, int n,
                        const float *gamma, const float *beta, float eps) {
    DISPATCH(layernorm, y, x, n_rows, n, gamma, beta, eps)
    return true;
}
