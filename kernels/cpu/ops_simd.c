/*
 * ops_simd.c — SIMD builds of ops.c kernels (ops_simd.h): GCC/Clang
 * generic vectors, one body compiled per width with target attributes
 * (the rest of the library needs no ISA flags), and a scalar loop for the
 * tail that is ops.c's own code. No a * b + c is fused (ISO C mode,
 * -ffp-contract=off, no FMA intrinsics), so each lane performs ops.c's
 * operations exactly.
 */
#include "ops_simd.h"

#include <stdint.h>
#include <string.h>

#include "ops.h"

#define INLINE static inline __attribute__((always_inline))

/* silu(g) * up, a vector at a time: the operations of ops.c's
 * pt_silu_mul and exp_clamped, lane-wise (compare + select where ops.c
 * branches; {0} + c is a constant, folded at compile time). */
#define SILU_BODY(VF, VI, AT, NAME)                                                            \
    AT static void NAME(float *out, const float *gate, const float *up, int n) {              \
        const int W = (int)(sizeof(VF) / sizeof(float));                                      \
        int i = 0;                                                                             \
        for (; i + W <= n; i += W) {                                                           \
            VF g, u;                                                                           \
            memcpy(&g, gate + i, sizeof g);                                                    \
            memcpy(&u, up + i, sizeof u);                                                      \
            VF x = -g;                                                                         \
            VI lo = x < -87.0f, hi = x > 88.0f;                                                \
            x = (VF)((lo & (VI)((VF){0} - 87.0f)) | (~lo & (VI)x));                              \
            x = (VF)((hi & (VI)((VF){0} + 88.0f)) | (~hi & (VI)x));                              \
            const VF t = x * 1.44269504088896341f;                                             \
            const VI pos = t >= 0.0f;                                                          \
            const VF half = (VF)((pos & (VI)((VF){0} + 0.5f)) | (~pos & (VI)((VF){0} - 0.5f)));    \
            const VI nn = __builtin_convertvector(t + half, VI);                               \
            const VF fn = __builtin_convertvector(nn, VF);                                     \
            const VF r = (x - fn * 0.693359375f) - fn * -2.12194440e-4f;                       \
            const VF z = r * r;                                                                \
            VF y = ((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r +  \
                     4.1665795894e-2f) * r + 1.6666665459e-1f) * r + 5.0000001201e-1f;          \
            y = (y * z + r) + 1.0f;                                                            \
            const VF e = y * (VF)((nn + 127) << 23);                                           \
            const VF o = g / (1.0f + e) * u;                                                   \
            memcpy(out + i, &o, sizeof o);                                                     \
        }                                                                                      \
        if (i < n) pt_silu_mul(out + i, gate + i, up + i, n - i);                              \
    }

typedef float vf4 __attribute__((vector_size(16)));
typedef int32_t vi4 __attribute__((vector_size(16)));
SILU_BODY(vf4, vi4, , silu_w4)

#if defined(__x86_64__)
typedef float vf8 __attribute__((vector_size(32)));
typedef int32_t vi8 __attribute__((vector_size(32)));
typedef float vf16 __attribute__((vector_size(64)));
typedef int32_t vi16 __attribute__((vector_size(64)));
SILU_BODY(vf8, vi8, __attribute__((target("avx2"))), silu_avx2)
SILU_BODY(vf16, vi16, __attribute__((target("avx512f"))), silu_avx512)
#endif

void pt_silu_mul_simd(const pt_cpu *cpu, float *out, const float *gate, const float *up, int n) {
    switch (cpu ? cpu->variant : PT_CPU_REF) {
#if defined(__x86_64__)
    case PT_CPU_AVX2:
    case PT_CPU_AVXVNNI: silu_avx2(out, gate, up, n); return;
    case PT_CPU_AVX512VNNI:
    case PT_CPU_AMX: silu_avx512(out, gate, up, n); return;
#endif
    default: silu_w4(out, gate, up, n); return;
    }
}
