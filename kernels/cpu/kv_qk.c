/*
 * kv_qk.c — int8 Q·K scores (kv_qk.h): the query quantizer, the plain C
 * reference and the choice of variant.
 */
#include "kv_qk.h"

#include <math.h>
#include <string.h>

#include "kv_codec.h"

void pt_kv_qk_quantize(const float *x, int D, int blk, int8_t *q, float *qd, int32_t *qs) {
    const int nb = (D + blk - 1) / blk;
    for (int b = 0; b < nb; b++) {
        const int d0 = b * blk, d1 = d0 + blk < D ? d0 + blk : D;
        float amax = 0.0f;
        for (int d = d0; d < d1; d++) {
            const float a = fabsf(x[d]);
            amax = a > amax ? a : amax;
        }
        float scale = amax / 127.0f;
        if (!isfinite(scale)) scale = 0.0f; /* inf or NaN in the block: codes 0 */
        const float id = scale != 0.0f ? 1.0f / scale : 0.0f;
        int32_t sum = 0;
        for (int d = d0; d < d1; d++) {
            /* to nearest even (the default mode); |x * id| <= 127 but for
             * rounding of id, so the clamp only guards the cast */
            float v = isfinite(x[d]) ? nearbyintf(x[d] * id) : 0.0f;
            v = v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v;
            const int c = (int)v;
            q[d] = (int8_t)c;
            sum += c;
        }
        qd[b] = scale;
        qs[b] = sum;
    }
    for (int d = D; d < PT_KV_QK_QSTRIDE(D); d++) q[d] = 0;
}

void pt_kv_qk_ref(const int8_t *q, const float *qd, const int32_t *qs, int nq, int D, int blk,
                  const uint8_t *k, size_t krow, int n, float scale, float *s, int64_t s_stride) {
    (void)qs;
    const int nb = (D + blk - 1) / blk;
    for (int j = 0; j < n; j++) {
        const uint8_t *row = k + (size_t)j * krow;
        const int8_t *kc = (const int8_t *)(row + 2 * (size_t)nb);
        for (int i = 0; i < nq; i++) {
            const int8_t *qi = q + (size_t)i * PT_KV_QK_QSTRIDE(D);
            float acc = 0.0f;
            for (int b = 0; b < nb; b++) {
                const int d0 = b * blk, d1 = d0 + blk < D ? d0 + blk : D;
                int32_t isum = 0;
                for (int d = d0; d < d1; d++) isum += (int32_t)qi[d] * kc[d];
                uint16_t h;
                memcpy(&h, row + 2 * b, 2);
                const float t = qd[(size_t)i * nb + b] * pt_kv_f16_to_f32(h);
                acc = acc + t * (float)isum;
            }
            s[i * s_stride + j] = acc * scale;
        }
    }
}

pt_kv_qk_fn pt_kv_qk_pick(const pt_cpu *cpu) {
    switch (cpu ? cpu->variant : PT_CPU_REF) {
#if defined(__x86_64__)
    case PT_CPU_AVX2: return pt_kv_qk_avx2;
    case PT_CPU_AVXVNNI: return pt_kv_qk_avxvnni;
    case PT_CPU_AVX512VNNI:
    case PT_CPU_AMX: return pt_kv_qk_avx512vnni;
#elif defined(__aarch64__)
    case PT_CPU_DOTPROD:
    case PT_CPU_I8MM: return pt_kv_qk_dotprod;
#endif
    default: return pt_kv_qk_ref;
    }
}
