/*
 * fmatmul.c — float products with F32 / F16 / BF16 weights (fmatmul.h):
 * the scalar oracle, the shared pieces of the SIMD builds (the padded
 * tail, the 16-lane reduction, the token tile) and the builds themselves,
 * fmatmul_body.h compiled for AVX-512 and AVX2 (target attributes, so the
 * rest of the library needs no ISA flags) and NEON.
 */
#include "fmatmul.h"

#include <math.h>
#include <string.h>

#include "quant.h"

#define INLINE static inline __attribute__((always_inline))
#define F_UNROLL _Pragma("GCC unroll 16")

bool pt_fmatmul_supported(uint32_t type) {
    return type == PT_TYPE_F32 || type == PT_TYPE_F16 || type == PT_TYPE_BF16;
}

/* Weight c of a row of `type`, as float (exact). */
static inline float fm_weight(uint32_t type, const void *row, int64_t c) {
    if (type == PT_TYPE_F16) return pt_fp16_to_f32(((const uint16_t *)row)[c]);
    if (type == PT_TYPE_BF16) return pt_bf16_to_f32(((const uint16_t *)row)[c]);
    return ((const float *)row)[c];
}

/* fmatmul.h's reduction of the 16 lane sums. */
static inline float fm_reduce16(const float *l) {
    float s8[8], s4[4];
    for (int i = 0; i < 8; i++) s8[i] = l[i] + l[i + 8];
    for (int i = 0; i < 4; i++) s4[i] = s8[i] + s8[i + 4];
    return (s4[0] + s4[2]) + (s4[1] + s4[3]);
}

/* Weights [full, cols) of a row as floats, zero up to full + 16. */
static inline void fm_tail_w(uint32_t type, const void *row, int64_t full, int64_t cols, float *dst) {
    for (int64_t c = full; c < full + 16; c++) dst[c - full] = c < cols ? fm_weight(type, row, c) : 0.0f;
}

/* Tokens per tile: a multiple of the register block whose inputs take at
 * most 128 KiB (kept in L2 while a tile's rows stream past). */
static inline int64_t fm_token_tile(int64_t cols, int block) {
    int64_t tt = (int64_t)32768 / (cols > 0 ? cols : 1) / block * block;
    return tt > block ? tt : block;
}

void pt_fmatmul_ref(uint32_t type, const void *w, int64_t rows, int64_t cols, const float *x,
                    int64_t n, float *y, int64_t r0, int64_t r1) {
    const size_t rb = (size_t)cols * (type == PT_TYPE_F32 ? 4 : 2);
    const int64_t padded = (cols + 15) / 16 * 16;
    for (int64_t r = r0; r < r1; r++) {
        const void *row = (const uint8_t *)w + (size_t)r * rb;
        for (int64_t t = 0; t < n; t++) {
            const float *xt = x + t * cols;
            float lanes[16] = {0};
            for (int64_t c = 0; c < padded; c++) {
                const float wv = c < cols ? fm_weight(type, row, c) : 0.0f;
                const float xv = c < cols ? xt[c] : 0.0f;
                lanes[c % 16] = fmaf(wv, xv, lanes[c % 16]);
            }
            y[t * rows + r] = fm_reduce16(lanes);
        }
    }
}

#if defined(__x86_64__)
#include <immintrin.h>

/* AVX-512: one vector per 16-lane sum; 4 rows x 6 tokens = 24 sums in
 * registers, 4 weight vectors and one input vector beside them. */
#define FW 16
#define FN(x) x##_avx512
#define FT __attribute__((target("avx512f,f16c,fma")))
#define FV __m512
#define F_ZERO _mm512_setzero_ps()
#define F_FMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define F_LOADX(p) _mm512_loadu_ps(p)
#define F_LOADW_F32(p) _mm512_loadu_ps(p)
#define F_LOADW_F16(p) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(p)))
#define F_LOADW_BF16(p) \
    _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(p))), 16))
#define F_STORE(p, v) _mm512_storeu_ps((p), (v))
#define FR 4
#define FT_TOK 6
#include "fmatmul_body.h"
#undef FW
#undef FN
#undef FT
#undef FV
#undef F_ZERO
#undef F_FMA
#undef F_LOADX
#undef F_LOADW_F32
#undef F_LOADW_F16
#undef F_LOADW_BF16
#undef F_STORE
#undef FR
#undef FT_TOK

/* AVX2: two vectors per sum; 2 rows x 3 tokens = 12 vectors of sums. */
#define FW 8
#define FN(x) x##_avx2
#define FT __attribute__((target("avx2,f16c,fma")))
#define FV __m256
#define F_ZERO _mm256_setzero_ps()
#define F_FMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define F_LOADX(p) _mm256_loadu_ps(p)
#define F_LOADW_F32(p) _mm256_loadu_ps(p)
#define F_LOADW_F16(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(p)))
#define F_LOADW_BF16(p) \
    _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(p))), 16))
#define F_STORE(p, v) _mm256_storeu_ps((p), (v))
#define FR 2
#define FT_TOK 3
#include "fmatmul_body.h"
#undef FW
#undef FN
#undef FT
#undef FV
#undef F_ZERO
#undef F_FMA
#undef F_LOADX
#undef F_LOADW_F32
#undef F_LOADW_F16
#undef F_LOADW_BF16
#undef F_STORE
#undef FR
#undef FT_TOK

/* The plain variant on a CPU with FMA3 and F16C (PETREL_CPU=ref on any
 * AVX2-class machine): 4-lane SSE vectors, four per sum; 1 row x 3 tokens
 * (12 of the 16 xmm registers). Bitwise the scalar oracle, which an
 * x86-64 without those instructions runs. */
#define FW 4
#define FN(x) x##_sse
#define FT __attribute__((target("fma,f16c")))
#define FV __m128
#define F_ZERO _mm_setzero_ps()
#define F_FMA(a, b, c) _mm_fmadd_ps((a), (b), (c))
#define F_LOADX(p) _mm_loadu_ps(p)
#define F_LOADW_F32(p) _mm_loadu_ps(p)
#define F_LOADW_F16(p) _mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)(const void *)(p)))
#define F_LOADW_BF16(p) \
    _mm_castsi128_ps(_mm_slli_epi32(_mm_unpacklo_epi16(_mm_loadl_epi64((const __m128i *)(const void *)(p)), _mm_setzero_si128()), 16))
#define F_STORE(p, v) _mm_storeu_ps((p), (v))
#define FR 1
#define FT_TOK 3
#include "fmatmul_body.h"
#undef FW
#undef FN
#undef FT
#undef FV
#undef F_ZERO
#undef F_FMA
#undef F_LOADX
#undef F_LOADW_F32
#undef F_LOADW_F16
#undef F_LOADW_BF16
#undef F_STORE
#undef FR
#undef FT_TOK

#elif defined(__aarch64__)
#include <arm_neon.h>

/* NEON: four vectors per sum; 2 rows x 3 tokens = 24 vectors of sums. */
#define FW 4
#define FN(x) x##_neon
#define FT
#define FV float32x4_t
#define F_ZERO vdupq_n_f32(0.0f)
#define F_FMA(a, b, c) vfmaq_f32((c), (a), (b))
#define F_LOADX(p) vld1q_f32(p)
#define F_LOADW_F32(p) vld1q_f32(p)
#define F_LOADW_F16(p) vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)))
#define F_LOADW_BF16(p) vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16))
#define F_STORE(p, v) vst1q_f32((p), (v))
#define FR 2
#define FT_TOK 3
#include "fmatmul_body.h"
#endif

void pt_fmatmul(const pt_cpu *cpu, uint32_t type, const void *w, int64_t rows, int64_t cols,
                const float *x, int64_t n, float *y, int64_t r0, int64_t r1) {
    if (!pt_fmatmul_supported(type) || r0 >= r1 || n <= 0) return;
    switch (cpu ? cpu->variant : PT_CPU_REF) {
#if defined(__x86_64__)
    case PT_CPU_AVX2:
    case PT_CPU_AVXVNNI: run_avx2(type, w, rows, cols, x, n, y, r0, r1); return;
    case PT_CPU_AVX512VNNI:
    case PT_CPU_AMX: run_avx512(type, w, rows, cols, x, n, y, r0, r1); return;
    default:
        if (cpu && cpu->fma && cpu->f16c) {
            run_sse(type, w, rows, cols, x, n, y, r0, r1);
            return;
        }
        break;
#elif defined(__aarch64__)
    default: run_neon(type, w, rows, cols, x, n, y, r0, r1); return;
#else
    default: break;
#endif
    }
    pt_fmatmul_ref(type, w, rows, cols, x, n, y, r0, r1);
}
