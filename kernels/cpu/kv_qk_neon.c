/*
 * kv_qk_neon.c — the arm64 int8 Q·K kernel (kv_qk.h): sdot (ARMv8.2
 * dotprod) on 16 codes at a time, signed by signed, so key codes go in
 * as stored (-128 included); per row, query and block the int32 lanes are
 * added (vaddvq) and the float steps are kv_qk.h's in scalar code, so the
 * scores are bitwise the reference's. The intrinsic / inline-assembly
 * choice is neon_int8.h's, shared with qmatmul_neon.c (older clang
 * declares vdotq_s32 only for a whole file built for dotprod).
 */
#if defined(__aarch64__)

#include <arm_neon.h>
#include <string.h>

#include "kv_codec.h"
#include "kv_qk.h"

#include "neon_int8.h"

TGT_DOT void pt_kv_qk_dotprod(const int8_t *q, const float *qd, const int32_t *qs, int nq, int D, int blk,
                              const uint8_t *k, size_t krow, int n, float scale, float *s, int64_t s_stride) {
    (void)qs;
    const int nb = (D + blk - 1) / blk, nfull = D / 16;
    int8_t tail[16];
    memset(tail, 0, sizeof tail);
    for (int j = 0; j < n; j++) {
        const uint8_t *row = k + (size_t)j * krow;
        const int8_t *kc = (const int8_t *)(row + 2 * (size_t)nb);
        if (D % 16) memcpy(tail, kc + 16 * (size_t)nfull, (size_t)(D % 16)); /* zero-padded */
        for (int i = 0; i < nq; i++) {
            const int8_t *qi = q + (size_t)i * PT_KV_QK_QSTRIDE(D);
            float acc = 0.0f;
            for (int b = 0; b < nb; b++) {
                /* blocks start at multiples of 32, so on 16-code chunks */
                const int c0 = b * blk / 16, c1 = ((b + 1) * blk < D ? (b + 1) * blk : D + 15) / 16;
                int32x4_t v = vdupq_n_s32(0);
                for (int c = c0; c < c1; c++) {
                    const int8x16_t kv = c < nfull ? vld1q_s8(kc + 16 * c) : vld1q_s8(tail);
                    v = SDOT(v, kv, vld1q_s8(qi + 16 * c));
                }
                uint16_t h;
                memcpy(&h, row + 2 * b, 2);
                const float t = qd[(size_t)i * nb + b] * pt_kv_f16_to_f32(h);
                acc = acc + t * (float)vaddvq_s32(v);
            }
            s[i * s_stride + j] = acc * scale;
        }
    }
}

#else
typedef int pt_kv_qk_neon_unused; /* ISO C: no empty translation unit */
#endif
