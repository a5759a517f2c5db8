/*
 * attention.c — fused causal attention with online softmax (attention.h).
 *
 * The kernel (attention_body.h) is written once with GCC/Clang generic
 * vectors and compiled once per build: 4 lanes with no target flags (SSE2
 * on x86-64, NEON on arm64), 8 lanes with AVX2 + FMA and 16 lanes with
 * AVX-512F enabled by target attributes (so the rest of the library needs
 * no ISA flags). Only lane-wise IEEE operations, an exact max, a final sum
 * in fixed lane order and our own exp are used. The AVX2 and AVX-512
 * builds fuse every a * b + c of the scores, the weighted sum of values
 * and exp (explicit FMA intrinsics), and give bitwise-equal results; the
 * plain build rounds twice (the build never contracts on its own: ISO C
 * mode, -ffp-contract=off), so it agrees with them to rounding only.
 */
#include "attention.h"
#include "image_ops.h"

#include <math.h>

#define INLINE static inline __attribute__((always_inline))
/* Loops over vectors, queries and lanes have constant trip counts and
 * must be unrolled to keep their values in registers. */
#define A_UNROLL _Pragma("GCC unroll 16")

/* ---- exp for x <= 0 ------------------------------------------------------
 * x = n ln2 + r, |r| <= ln2 / 2 (n = trunc(x log2e - 0.5), x <= 0), ln2
 * split in two (Cody-Waite) so n ln2 is exact enough; exp(r) by Cephes'
 * expf polynomial; 2^n built in the exponent bits. Below -87 the result
 * is 0 (exp(-87) is 1.6e-38, at the bottom of the normal range), which
 * also maps -inf (masked scores, the initial running max) to exactly 0.
 * The scalar version here and the vector ones of attention_body.h perform
 * the same operations. */
#define EXP_LO (-87.0f)
#define LOG2E 1.44269504088896341f
#define LN2_HI 0.693359375f
#define LN2_LO (-2.12194440e-4f)
#define P0 1.9875691500e-4f
#define P1 1.3981999507e-3f
#define P2 8.3334519073e-3f
#define P3 4.1665795894e-2f
#define P4 1.6666665459e-1f
#define P5 5.0000001201e-1f

INLINE float exp_nonpos(float x) {
    if (!(x >= EXP_LO)) return 0.0f;
    const int32_t n = (int32_t)(x * LOG2E - 0.5f);
    const float fn = (float)n;
    const float r = (x - fn * LN2_HI) - fn * LN2_LO;
    const float z = r * r;
    float y = ((((P0 * r + P1) * r + P2) * r + P3) * r + P4) * r + P5;
    y = (y * z + r) + 1.0f;
    const int32_t bits = (n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return y * scale;
}

float pt_attn_exp(float x) { return exp_nonpos(x); }

/* exp_nonpos with its polynomial's a * b + c fused (fmaf), as the FMA
 * vector builds compute every e[i] (attention_body.h AN(exp_nonpos)); the
 * reduction steps stay unfused there and here. */
static inline float exp_nonpos_fma(float x) {
    if (!(x >= EXP_LO)) return 0.0f;
    const int32_t n = (int32_t)(x * LOG2E - 0.5f);
    const float fn = (float)n;
    const float r = (x - fn * LN2_HI) - fn * LN2_LO;
    const float z = r * r;
    float y = fmaf(fmaf(fmaf(fmaf(fmaf(P0, r, P1), r, P2), r, P3), r, P4), r, P5);
    y = fmaf(y, z, r) + 1.0f;
    const int32_t bits = (n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return y * scale;
}

/* pt_attn_full one query at a time in scalar C with every a * b + c of
 * attention.h's computation fused (fmaf): the operations the FMA vector
 * builds perform lane by lane, so its results are bitwise theirs. The
 * plain variant where no FMA vector build exists (an x86-64 without FMA:
 * test_image_ops reaches it with cpu->fma cleared, and holds every build
 * bitwise to it).
 * scratch: l[BK], e[BK], acc[D]. */
__attribute__((unused)) /* arm64 always has the NEON build */
static void attn_full_scalar(float *out, int64_t out_stride, const float *q, int64_t q_stride,
                             int n_q, const float *kt, int64_t kbs, const float *v, int64_t vs,
                             int n_kv, int D, float scale, float *scratch) {
    float *l = scratch, *e = l + PT_ATTN_BK, *acc = e + PT_ATTN_BK;
    for (int iq = 0; iq < n_q; iq++) {
        const float *qi = q + iq * q_stride;
        float m = -INFINITY;
        memset(l, 0, PT_ATTN_BK * sizeof(float));
        memset(acc, 0, (size_t)D * sizeof(float));
        for (int j0 = 0; j0 < n_kv; j0 += PT_ATTN_BK) {
            const float *kb = kt + (int64_t)(j0 / PT_ATTN_BK) * kbs;
            const float *vb = v + (int64_t)j0 * vs;
            const int nv = n_kv - j0 < PT_ATTN_BK ? n_kv - j0 : PT_ATTN_BK;
            float s[PT_ATTN_BK];
            float bm = -INFINITY;
            for (int i = 0; i < PT_ATTN_BK; i++) {
                float a0 = 0.0f, a1 = 0.0f;
                int d = 0;
                for (; d + 2 <= D; d += 2) {
                    a0 = fmaf(qi[d], kb[d * PT_ATTN_BK + i], a0);
                    a1 = fmaf(qi[d + 1], kb[(d + 1) * PT_ATTN_BK + i], a1);
                }
                if (d < D) a0 = fmaf(qi[d], kb[d * PT_ATTN_BK + i], a0);
                s[i] = i < nv ? (a0 + a1) * scale : -INFINITY;
                bm = s[i] > bm ? s[i] : bm;
            }
            const float mn = bm > m ? bm : m;
            const float c = mn == m ? 1.0f : exp_nonpos(m - mn);
            for (int i = 0; i < PT_ATTN_BK; i++) {
                e[i] = exp_nonpos_fma(s[i] - mn);
                l[i] = fmaf(l[i], c, e[i]);
            }
            m = mn;
            for (int d = 0; d < D; d++) {
                float a = acc[d];
                if (c != 1.0f) a *= c;
                for (int i = 0; i < nv; i++) a = fmaf(e[i], vb[i * vs + d], a);
                acc[d] = a;
            }
        }
        float sum = 0.0f;
        for (int i = 0; i < PT_ATTN_BK; i++) sum += l[i];
        const float inv = 1.0f / sum;
        float *o = out + iq * out_stride;
        for (int d = 0; d < D; d++) o[d] = acc[d] * inv;
    }
}

/* Queries of one token done together (their scores and weighted sums
 * share each key and value load); any build may use any number up to
 * this without changing a result. */
#define QMAX_ALL 4

size_t pt_attn_scratch_floats(int n_query, int head_dim) {
    /* m[nq], l[nq][BK], acc[nq][D], e[QMAX][BK] */
    return (size_t)n_query * (1 + PT_ATTN_BK + (size_t)head_dim) + QMAX_ALL * PT_ATTN_BK;
}

/* ---- the builds ---------------------------------------------------------- */

/* Queries per tile of the non-causal kernel (its accumulators stay in L1). */
#define ATTN_QT 32

/* 4 lanes, no target flags, no fused multiply-add: the causal kernel's
 * plain build (pt_attn_full's plain builds fuse, below) */
#define AW 4
#define QMAX 2
#define AN(x) x##_w4
#define AT
#define AN_PAD4
#define AN_FMA(a, b, c) ((a) * (b) + (c))
#define AN_FMAS(a, b, c) ((a) * (b) + (c))
#define A_CAUSAL_ONLY
#include "attention_body.h"
#undef A_CAUSAL_ONLY
#undef AW
#undef QMAX
#undef AN
#undef AT
#undef AN_PAD4
#undef AN_FMA
#undef AN_FMAS

/* 4 lanes with fused multiply-add: pt_attn_full's plain variant, bitwise
 * the AVX2 / AVX-512 builds (and attn_full_scalar). x86-64: SSE with the
 * FMA3 instructions, for the plain variant on a CPU that has them; arm64:
 * NEON's vfmaq (always present). */
#if defined(__x86_64__) || defined(__aarch64__)
#define HAVE_FULL_W4F 1
#if defined(__x86_64__)
#include <immintrin.h>
#define AT __attribute__((target("fma")))
#define AN_FMA(a, b, c) ((AN(vf))_mm_fmadd_ps((__m128)(a), (__m128)(b), (__m128)(c)))
#else
#include <arm_neon.h>
#define AT
#define AN_FMA(a, b, c) ((AN(vf))vfmaq_f32((float32x4_t)(c), (float32x4_t)(a), (float32x4_t)(b)))
#endif
#define AW 4
#define QMAX 2
#define AN(x) x##_w4f
#define AN_PAD4
#define AN_FMAS(a, b, c) fmaf((a), (b), (c))
#define A_FULL_ONLY
#include "attention_body.h"
#undef A_FULL_ONLY
#undef AW
#undef QMAX
#undef AN
#undef AT
#undef AN_PAD4
#undef AN_FMA
#undef AN_FMAS
#endif

#if defined(__x86_64__)
#define AN_FMAS(a, b, c) fmaf((a), (b), (c)) /* one rounding, as the vector FMA */

#define AW 8
#define QMAX 2
#define AN(x) x##_avx2
#define AT __attribute__((target("avx2,fma")))
#define AN_PAD4 , 0, 0, 0, 0
#define AN_PAD8
#define AN_FMA(a, b, c) ((AN(vf))_mm256_fmadd_ps((__m256)(a), (__m256)(b), (__m256)(c)))
#include "attention_body.h"
#undef AW
#undef QMAX
#undef AN
#undef AT
#undef AN_PAD4
#undef AN_PAD8
#undef AN_FMA

#define AW 16
#define QMAX 4
#define AN(x) x##_avx512
#define AT __attribute__((target("avx512f,fma")))
#define AN_PAD4 , 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
#define AN_PAD8 , 0, 0, 0, 0, 0, 0, 0, 0
#define AN_FMA(a, b, c) ((AN(vf))_mm512_fmadd_ps((__m512)(a), (__m512)(b), (__m512)(c)))
/* 8-lane steps for the last dimensions (accumulate) */
typedef float hf_avx512 __attribute__((vector_size(32)));
#define AN_HALF(x) x##_avx512
#define AN_HALF_FMA(a, b, c) ((hf_avx512)_mm256_fmadd_ps((__m256)(a), (__m256)(b), (__m256)(c)))
#include "attention_body.h"
#undef AN_HALF
#undef AN_HALF_FMA
#undef AW
#undef QMAX
#undef AN
#undef AT
#undef AN_PAD4
#undef AN_PAD8
#undef AN_FMA
#endif
#undef AN_FMAS

/* pt_attn_causal_span, its scores from q and kt or (scores non-NULL)
 * read from scores (pt_attn_causal_span_scores) */
static void attn_span(const pt_cpu *cpu, float *out, int64_t out_stride, const float *q, int64_t q_stride,
                      int n_tok, int n_head, const float *kt, int64_t kt_block_stride, const float *v,
                      int64_t v_stride, int p0, int window, int head_dim, float scale, float *scratch,
                      int span_lo, int span_hi, int flags, const float *scores, int64_t scores_stride);

void pt_attn_causal(const pt_cpu *cpu, float *out, int64_t out_stride, const float *q,
                    int64_t q_stride, int n_tok, int n_head, const float *kt,
                    int64_t kt_block_stride, const float *v, int64_t v_stride, int p0,
                    int head_dim, float scale, float *scratch) {
    pt_attn_causal_window(cpu, out, out_stride, q, q_stride, n_tok, n_head, kt, kt_block_stride, v,
                          v_stride, p0, 0, head_dim, scale, scratch);
}

void pt_attn_causal_window(const pt_cpu *cpu, float *out, int64_t out_stride, const float *q,
                           int64_t q_stride, int n_tok, int n_head, const float *kt,
                           int64_t kt_block_stride, const float *v, int64_t v_stride, int p0,
                           int window, int head_dim, float scale, float *scratch) {
    pt_attn_causal_span(cpu, out, out_stride, q, q_stride, n_tok, n_head, kt, kt_block_stride, v,
                        v_stride, p0, window, head_dim, scale, scratch, 0, INT32_MAX,
                        PT_ATTN_BEGIN | PT_ATTN_END);
}

void pt_attn_causal_span(const pt_cpu *cpu, float *out, int64_t out_stride, const float *q,
                         int64_t q_stride, int n_tok, int n_head, const float *kt,
                         int64_t kt_block_stride, const float *v, int64_t v_stride, int p0,
                         int window, int head_dim, float scale, float *scratch, int span_lo,
                         int span_hi, int flags) {
    attn_span(cpu, out, out_stride, q, q_stride, n_tok, n_head, kt, kt_block_stride, v, v_stride, p0, window,
              head_dim, scale, scratch, span_lo, span_hi, flags, NULL, 0);
}

void pt_attn_causal_span_scores(const pt_cpu *cpu, float *out, int64_t out_stride, const float *scores,
                                int64_t scores_stride, int n_tok, int n_head, const float *v,
                                int64_t v_stride, int p0, int window, int head_dim, float *scratch,
                                int span_lo, int span_hi, int flags) {
    attn_span(cpu, out, out_stride, NULL, 0, n_tok, n_head, NULL, 0, v, v_stride, p0, window, head_dim, 1.0f,
              scratch, span_lo, span_hi, flags, scores, scores_stride);
}

static void attn_span(const pt_cpu *cpu, float *out, int64_t out_stride, const float *q, int64_t q_stride,
                      int n_tok, int n_head, const float *kt, int64_t kt_block_stride, const float *v,
                      int64_t v_stride, int p0, int window, int head_dim, float scale, float *scratch,
                      int span_lo, int span_hi, int flags, const float *scores, int64_t scores_stride) {
    if (n_tok <= 0 || n_head <= 0) return;
    /* no window: every earlier position is in reach */
    if (window <= 0 || window > p0 + n_tok) window = p0 + n_tok;
#define ATTN_PASS out, out_stride, q, q_stride, n_tok, n_head, kt, kt_block_stride, v, v_stride, p0, \
                  window, head_dim, scale, scratch, span_lo, span_hi, flags, scores, scores_stride
    switch (cpu ? cpu->variant : PT_CPU_REF) {
#if defined(__x86_64__)
    case PT_CPU_AVX2:
    case PT_CPU_AVXVNNI: attn_avx2(ATTN_PASS); return;
    case PT_CPU_AVX512VNNI:
    case PT_CPU_AMX: attn_avx512(ATTN_PASS); return;
#endif
    default: attn_w4(ATTN_PASS); return;
    }
#undef ATTN_PASS
}

void pt_attn_full(const pt_cpu *cpu, float *out, int64_t out_stride, const float *q,
                  int64_t q_stride, int n_q, const float *kt, int64_t kt_block_stride,
                  const float *v, int64_t v_stride, int n_kv, int head_dim, float scale,
                  float *scratch) {
    if (n_q <= 0 || head_dim <= 0) return;
    if (n_kv <= 0) { /* nothing to attend to: a zero output, not 0 / 0 */
        for (int i = 0; i < n_q; i++) memset(out + i * out_stride, 0, (size_t)head_dim * sizeof(float));
        return;
    }
#define FULL_PASS out, out_stride, q, q_stride, n_q, kt, kt_block_stride, v, v_stride, n_kv, head_dim, \
                  scale, scratch
    switch (cpu ? cpu->variant : PT_CPU_REF) {
#if defined(__x86_64__)
    case PT_CPU_AVX2:
    case PT_CPU_AVXVNNI: attn_full_avx2(FULL_PASS); return;
    case PT_CPU_AVX512VNNI:
    case PT_CPU_AMX: attn_full_avx512(FULL_PASS); return;
    default:
        if (cpu && cpu->fma) attn_full_w4f(FULL_PASS);
        else attn_full_scalar(FULL_PASS);
        return;
#elif defined(__aarch64__)
    default: attn_full_w4f(FULL_PASS); return;
#else
    default: attn_full_scalar(FULL_PASS); return;
#endif
    }
#undef FULL_PASS
}
