/*
 * kv_codec.c — the KV cache's element codecs (kv_codec.h): plain C
 * references and AVX2 + F16C versions performing the same operations.
 */
#include "kv_codec.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#define F16_MAX 65504.0f
#define E5M2_MAX 0x7b /* 57344, the largest finite e5m2 magnitude */

size_t pt_kv_row_bytes(pt_kv_elem e, int n) {
    const size_t un = n > 0 ? (size_t)n : 0;
    switch (e) {
    case PT_KV_ELEM_F32: return 4 * un;
    case PT_KV_ELEM_F16: return 2 * un;
    case PT_KV_ELEM_Q8: return un + 2 * ((un + PT_KV_Q8_BLOCK - 1) / PT_KV_Q8_BLOCK);
    case PT_KV_ELEM_Q8R: return un + 2;
    case PT_KV_ELEM_E5M2: return un;
    default: return 0;
    }
}

static inline float clamp_f16(float x) { return x > F16_MAX ? F16_MAX : x < -F16_MAX ? -F16_MAX : x; }

/* float32 to binary16, round to nearest even, overflow to inf (callers
 * clamp first); F. Giesen's float_to_half_fast3_rtne, which matches the
 * hardware conversion bit for bit for every non-NaN input. */
static uint16_t f32_to_f16_rne(float f) {
    const uint32_t f32infty = 255u << 23, f16max = (127u + 16) << 23;
    const uint32_t denorm_magic = ((127u - 15) + (23 - 10) + 1) << 23;
    uint32_t u;
    memcpy(&u, &f, 4);
    const uint32_t sign = u & 0x80000000u;
    u ^= sign;
    uint16_t o;
    if (u >= f16max) {
        o = u > f32infty ? 0x7e00 : 0x7c00;
    } else if (u < (113u << 23)) { /* subnormal or zero in f16: let the FPU round */
        float fu, dm;
        memcpy(&fu, &u, 4);
        memcpy(&dm, &denorm_magic, 4);
        fu += dm;
        memcpy(&u, &fu, 4);
        o = (uint16_t)(u - denorm_magic);
    } else {
        const uint32_t mant_odd = (u >> 13) & 1;
        u += ((uint32_t)(15 - 127) << 23) + 0xfff;
        u += mant_odd;
        o = (uint16_t)(u >> 13);
    }
    return (uint16_t)(o | (sign >> 16));
}

uint16_t pt_kv_f32_to_f16(float x) { return f32_to_f16_rne(clamp_f16(x)); }

float pt_kv_f16_to_f32(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff, u;
    if (e == 0x1f) {
        u = sign | 0x7f800000u | (m << 13);
    } else if (e == 0) {
        if (m == 0) {
            u = sign;
        } else { /* subnormal: normalize */
            int sh = 0;
            while (!(m & 0x400)) {
                m <<= 1;
                sh++;
            }
            m &= 0x3ff;
            u = sign | ((uint32_t)(127 - 15 + 1 - sh) << 23) | (m << 13);
        }
    } else {
        u = sign | ((e + 127 - 15) << 23) | (m << 13);
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* e5m2 byte of a clamped f16: its top byte rounded to nearest even,
 * saturated to the largest finite magnitude. */
static inline uint8_t f16_to_e5m2(uint16_t h) {
    const uint16_t a = h & 0x7fff;
    uint16_t r = (uint16_t)((a + 0x7f + ((a >> 8) & 1)) >> 8);
    if (r > E5M2_MAX) r = E5M2_MAX;
    return (uint8_t)((h >> 8 & 0x80) | r);
}

/* ---- references ---------------------------------------------------------- */

static void f16_encode_ref(const float *x, int n, uint8_t *dst) {
    for (int i = 0; i < n; i++) {
        const uint16_t h = pt_kv_f32_to_f16(x[i]);
        memcpy(dst + 2 * i, &h, 2);
    }
}

static void f16_decode_ref(const uint8_t *src, int n, float *y) {
    for (int i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, src + 2 * i, 2);
        y[i] = pt_kv_f16_to_f32(h);
    }
}

/* One int8 block of n values: its f16 scale at *scale, the int8s at q. */
static void q8_block_ref(const float *x, int n, uint8_t *scale, int8_t *q) {
    float amax = 0.0f;
    for (int i = 0; i < n; i++) {
        const float a = fabsf(x[i]);
        amax = a > amax ? a : amax;
    }
    const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t h = pt_kv_f32_to_f16(d);
    memcpy(scale, &h, 2);
    for (int i = 0; i < n; i++) q[i] = (int8_t)(int)nearbyintf(x[i] * id);
}

static void q8_block_decode_ref(const uint8_t *scale, const int8_t *q, int n, float *y) {
    uint16_t h;
    memcpy(&h, scale, 2);
    const float d = pt_kv_f16_to_f32(h);
    for (int i = 0; i < n; i++) y[i] = (float)q[i] * d;
}

static int n_blocks(int n) { return (n + PT_KV_Q8_BLOCK - 1) / PT_KV_Q8_BLOCK; }

static void q8_encode_ref(const float *x, int n, uint8_t *dst) {
    const int nb = n_blocks(n);
    int8_t *q = (int8_t *)(dst + 2 * nb);
    for (int b = 0; b < nb; b++) {
        const int i0 = b * PT_KV_Q8_BLOCK, m = n - i0 < PT_KV_Q8_BLOCK ? n - i0 : PT_KV_Q8_BLOCK;
        q8_block_ref(x + i0, m, dst + 2 * b, q + i0);
    }
}

static void q8_decode_ref(const uint8_t *src, int n, float *y) {
    const int nb = n_blocks(n);
    const int8_t *q = (const int8_t *)(src + 2 * nb);
    for (int b = 0; b < nb; b++) {
        const int i0 = b * PT_KV_Q8_BLOCK, m = n - i0 < PT_KV_Q8_BLOCK ? n - i0 : PT_KV_Q8_BLOCK;
        q8_block_decode_ref(src + 2 * b, q + i0, m, y + i0);
    }
}

static void q8r_encode_ref(const float *x, int n, uint8_t *dst) { q8_block_ref(x, n, dst, (int8_t *)(dst + 2)); }
static void q8r_decode_ref(const uint8_t *src, int n, float *y) {
    q8_block_decode_ref(src, (const int8_t *)(src + 2), n, y);
}

static void e5m2_encode_ref(const float *x, int n, uint8_t *dst) {
    for (int i = 0; i < n; i++) dst[i] = f16_to_e5m2(pt_kv_f32_to_f16(x[i]));
}

static void e5m2_decode_ref(const uint8_t *src, int n, float *y) {
    for (int i = 0; i < n; i++) y[i] = pt_kv_f16_to_f32((uint16_t)(src[i] << 8));
}

static void f32_encode(const float *x, int n, uint8_t *dst) { memcpy(dst, x, (size_t)n * 4); }
static void f32_decode(const uint8_t *src, int n, float *y) { memcpy(y, src, (size_t)n * 4); }

/* decode_kt of any codec: each row decoded whole into tmp, then spread
 * down its lane of the block. */
static void kt_by_rows(pt_kv_decode_fn dec, const uint8_t *src, size_t stride, int n, int n_d, float *blk,
                       float *tmp) {
    for (int i = 0; i < n; i++) {
        dec(src + (size_t)i * stride, n_d, tmp);
        for (int d = 0; d < n_d; d++) blk[(size_t)d * PT_KV_KT_LANES + i] = tmp[d];
    }
    for (int d = 0; d < n_d; d++)
        for (int i = n; i < PT_KV_KT_LANES; i++) blk[(size_t)d * PT_KV_KT_LANES + i] = 0.0f;
}

#define KT_BY_ROWS(name, dec)                                                                          \
    static void name(const uint8_t *src, size_t stride, int n, int n_d, float *blk, float *tmp) {      \
        kt_by_rows(dec, src, stride, n, n_d, blk, tmp);                                                \
    }
KT_BY_ROWS(f16_decode_kt_ref, f16_decode_ref)
KT_BY_ROWS(q8_decode_kt_ref, q8_decode_ref)
KT_BY_ROWS(q8r_decode_kt_ref, q8r_decode_ref)
KT_BY_ROWS(e5m2_decode_kt_ref, e5m2_decode_ref)
KT_BY_ROWS(f32_decode_kt, f32_decode)

pt_kv_codec pt_kv_codec_ref(pt_kv_elem e) {
    switch (e) {
    case PT_KV_ELEM_F16: return (pt_kv_codec){f16_encode_ref, f16_decode_ref, f16_decode_kt_ref};
    case PT_KV_ELEM_Q8: return (pt_kv_codec){q8_encode_ref, q8_decode_ref, q8_decode_kt_ref};
    case PT_KV_ELEM_Q8R: return (pt_kv_codec){q8r_encode_ref, q8r_decode_ref, q8r_decode_kt_ref};
    case PT_KV_ELEM_E5M2: return (pt_kv_codec){e5m2_encode_ref, e5m2_decode_ref, e5m2_decode_kt_ref};
    default: return (pt_kv_codec){f32_encode, f32_decode, f32_decode_kt};
    }
}

/* ---- AVX2 + F16C ---------------------------------------------------------- */
#if defined(__x86_64__)
#include <immintrin.h>

#define AVX_T __attribute__((target("avx2,f16c")))

AVX_T static inline __m128i f16x8(const float *x) {
    __m256 v = _mm256_loadu_ps(x);
    v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(-F16_MAX)), _mm256_set1_ps(F16_MAX));
    return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

AVX_T static void f16_encode_avx2(const float *x, int n, uint8_t *dst) {
    int i = 0;
    for (; i + 8 <= n; i += 8) _mm_storeu_si128((__m128i *)(dst + 2 * i), f16x8(x + i));
    f16_encode_ref(x + i, n - i, dst + 2 * i);
}

AVX_T static void f16_decode_avx2(const uint8_t *src, int n, float *y) {
    int i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + 2 * i))));
    f16_decode_ref(src + 2 * i, n - i, y + i);
}

AVX_T static void q8_block_avx2(const float *x, int n, uint8_t *scale, int8_t *q) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 mv = _mm256_setzero_ps();
    int i = 0;
    for (; i + 8 <= n; i += 8) mv = _mm256_max_ps(mv, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)));
    float lanes[8];
    _mm256_storeu_ps(lanes, mv);
    float amax = 0.0f;
    for (int k = 0; k < 8; k++) amax = lanes[k] > amax ? lanes[k] : amax;
    for (; i < n; i++) {
        const float a = fabsf(x[i]);
        amax = a > amax ? a : amax;
    }
    const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t h = pt_kv_f32_to_f16(d);
    memcpy(scale, &h, 2);
    const __m256 vid = _mm256_set1_ps(id);
    i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i qi = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i), vid));
        const __m128i p16 = _mm_packs_epi32(_mm256_castsi256_si128(qi), _mm256_extracti128_si256(qi, 1));
        _mm_storel_epi64((__m128i *)(q + i), _mm_packs_epi16(p16, p16));
    }
    for (; i < n; i++) q[i] = (int8_t)(int)nearbyintf(x[i] * id);
}

AVX_T static void q8_block_decode_avx2(const uint8_t *scale, const int8_t *q, int n, float *y) {
    uint16_t h;
    memcpy(&h, scale, 2);
    const float d = pt_kv_f16_to_f32(h);
    const __m256 vd = _mm256_set1_ps(d);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i qi = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(q + i)));
        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_cvtepi32_ps(qi), vd));
    }
    for (; i < n; i++) y[i] = (float)q[i] * d;
}

AVX_T static void q8_encode_avx2(const float *x, int n, uint8_t *dst) {
    const int nb = n_blocks(n);
    int8_t *q = (int8_t *)(dst + 2 * nb);
    for (int b = 0; b < nb; b++) {
        const int i0 = b * PT_KV_Q8_BLOCK, m = n - i0 < PT_KV_Q8_BLOCK ? n - i0 : PT_KV_Q8_BLOCK;
        q8_block_avx2(x + i0, m, dst + 2 * b, q + i0);
    }
}

AVX_T static void q8_decode_avx2(const uint8_t *src, int n, float *y) {
    const int nb = n_blocks(n);
    const int8_t *q = (const int8_t *)(src + 2 * nb);
    for (int b = 0; b < nb; b++) {
        const int i0 = b * PT_KV_Q8_BLOCK, m = n - i0 < PT_KV_Q8_BLOCK ? n - i0 : PT_KV_Q8_BLOCK;
        q8_block_decode_avx2(src + 2 * b, q + i0, m, y + i0);
    }
}

AVX_T static void q8r_encode_avx2(const float *x, int n, uint8_t *dst) { q8_block_avx2(x, n, dst, (int8_t *)(dst + 2)); }
AVX_T static void q8r_decode_avx2(const uint8_t *src, int n, float *y) {
    q8_block_decode_avx2(src, (const int8_t *)(src + 2), n, y);
}

AVX_T static void e5m2_encode_avx2(const float *x, int n, uint8_t *dst) {
    const __m128i mag = _mm_set1_epi16(0x7fff), one = _mm_set1_epi16(1), bias = _mm_set1_epi16(0x7f);
    const __m128i top = _mm_set1_epi16(E5M2_MAX), sgn = _mm_set1_epi16((short)0x8000);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i h = f16x8(x + i);
        const __m128i a = _mm_and_si128(h, mag);
        __m128i r = _mm_add_epi16(_mm_add_epi16(a, bias), _mm_and_si128(_mm_srli_epi16(a, 8), one));
        r = _mm_min_epu16(_mm_srli_epi16(r, 8), top);
        r = _mm_or_si128(r, _mm_srli_epi16(_mm_and_si128(h, sgn), 8));
        _mm_storel_epi64((__m128i *)(dst + i), _mm_packus_epi16(r, r));
    }
    e5m2_encode_ref(x + i, n - i, dst + i);
}

AVX_T static void e5m2_decode_avx2(const uint8_t *src, int n, float *y) {
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i b = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(src + i)));
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_slli_epi16(b, 8)));
    }
    e5m2_decode_ref(src + i, n - i, y + i);
}

/* decode_kt of int8 rows (q8, q8r) for a full block of 16 rows: gathers
 * of 4 bytes (columns d .. d+3) of 8 rows at a time are the transpose;
 * each byte is sign-extended in its lane, converted and multiplied by its
 * row's scale: (float)q * d, as the row decoder does. The int8s of a row
 * start at qoff; per32: a scale per 32 columns (q8, scales first), else
 * one at the row's start (q8r). */
/* The f16 scale at byte so of each of the block's rows, as floats. */
static void row_scales(const uint8_t *src, size_t stride, size_t so, float sc[PT_KV_KT_LANES]) {
    for (int i = 0; i < PT_KV_KT_LANES; i++) {
        uint16_t h;
        memcpy(&h, src + (size_t)i * stride + so, 2);
        sc[i] = pt_kv_f16_to_f32(h);
    }
}

AVX_T static void int8_kt_avx2(const uint8_t *src, size_t stride, int n_d, float *blk, size_t qoff, bool per32) {
    const __m256i idx = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32((int)stride));
    const uint8_t *hi = src + 8 * stride;
    float sc[PT_KV_KT_LANES];
    __m256 s0 = _mm256_setzero_ps(), s1 = s0;
    int d = 0;
    for (; d + 4 <= n_d; d += 4) {
        if (d == 0 || (per32 && d % PT_KV_Q8_BLOCK == 0)) {
            row_scales(src, stride, per32 ? 2 * (size_t)(d / PT_KV_Q8_BLOCK) : 0, sc);
            s0 = _mm256_loadu_ps(sc);
            s1 = _mm256_loadu_ps(sc + 8);
        }
        const __m256i v0 = _mm256_i32gather_epi32((const int *)(const void *)(src + qoff + d), idx, 1);
        const __m256i v1 = _mm256_i32gather_epi32((const int *)(const void *)(hi + qoff + d), idx, 1);
        float *o = blk + (size_t)d * PT_KV_KT_LANES;
#define KT_BYTE(k)                                                                                      \
        _mm256_storeu_ps(o + (k) * PT_KV_KT_LANES,                                                      \
                         _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srai_epi32(_mm256_slli_epi32(v0, 24 - 8 * (k)), 24)), s0)); \
        _mm256_storeu_ps(o + (k) * PT_KV_KT_LANES + 8,                                                  \
                         _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srai_epi32(_mm256_slli_epi32(v1, 24 - 8 * (k)), 24)), s1));
        KT_BYTE(0)
        KT_BYTE(1)
        KT_BYTE(2)
        KT_BYTE(3)
#undef KT_BYTE
    }
    for (; d < n_d; d++) { /* the last n_d % 4 columns */
        if (per32 && d % PT_KV_Q8_BLOCK == 0) row_scales(src, stride, 2 * (size_t)(d / PT_KV_Q8_BLOCK), sc);
        for (int i = 0; i < PT_KV_KT_LANES; i++)
            blk[(size_t)d * PT_KV_KT_LANES + i] = (float)(int8_t)src[(size_t)i * stride + qoff + d] * sc[i];
    }
}

AVX_T static void q8r_decode_kt_avx2(const uint8_t *src, size_t stride, int n, int n_d, float *blk, float *tmp) {
    if (n < PT_KV_KT_LANES || n_d < 4) kt_by_rows(q8r_decode_avx2, src, stride, n, n_d, blk, tmp);
    else int8_kt_avx2(src, stride, n_d, blk, 2, false);
}

AVX_T static void q8_decode_kt_avx2(const uint8_t *src, size_t stride, int n, int n_d, float *blk, float *tmp) {
    if (n < PT_KV_KT_LANES || n_d < 4) kt_by_rows(q8_decode_avx2, src, stride, n, n_d, blk, tmp);
    else int8_kt_avx2(src, stride, n_d, blk, 2 * (size_t)n_blocks(n_d), true);
}

/* f16 rows, a full block: gathers of 2 halves (columns d, d+1) of 8 rows,
 * packed to 8 halves a column and converted (vcvtph2ps, as the row
 * decoder). */
AVX_T static void f16_decode_kt_avx2(const uint8_t *src, size_t stride, int n, int n_d, float *blk, float *tmp) {
    if (n < PT_KV_KT_LANES || n_d < 2) {
        kt_by_rows(f16_decode_avx2, src, stride, n, n_d, blk, tmp);
        return;
    }
    const __m256i idx = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32((int)stride));
    const __m256i lo16 = _mm256_set1_epi32(0xffff);
    int d = 0;
    for (; d + 2 <= n_d; d += 2) {
        for (int h = 0; h < 2; h++) { /* rows 0-7, then 8-15 */
            const __m256i v = _mm256_i32gather_epi32((const int *)(const void *)(src + 8 * (size_t)h * stride + 2 * (size_t)d), idx, 1);
            /* [c0 r0-3, c1 r0-3 | c0 r4-7, c1 r4-7] -> [c0 r0-7 | c1 r0-7] */
            const __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(_mm256_and_si256(v, lo16), _mm256_srli_epi32(v, 16)), 0xD8);
            float *o = blk + (size_t)d * PT_KV_KT_LANES + 8 * h;
            _mm256_storeu_ps(o, _mm256_cvtph_ps(_mm256_castsi256_si128(p)));
            _mm256_storeu_ps(o + PT_KV_KT_LANES, _mm256_cvtph_ps(_mm256_extracti128_si256(p, 1)));
        }
    }
    for (; d < n_d; d++)
        for (int i = 0; i < PT_KV_KT_LANES; i++) {
            uint16_t h;
            memcpy(&h, src + (size_t)i * stride + 2 * (size_t)d, 2);
            blk[(size_t)d * PT_KV_KT_LANES + i] = pt_kv_f16_to_f32(h);
        }
}

AVX_T static void e5m2_decode_kt_avx2(const uint8_t *src, size_t stride, int n, int n_d, float *blk, float *tmp) {
    kt_by_rows(e5m2_decode_avx2, src, stride, n, n_d, blk, tmp);
}
#endif

pt_kv_codec pt_kv_codec_pick(const pt_cpu *cpu, pt_kv_elem e) {
#if defined(__x86_64__)
    if (cpu && cpu->avx2 && cpu->f16c && cpu->variant != PT_CPU_REF) {
        switch (e) {
        case PT_KV_ELEM_F16: return (pt_kv_codec){f16_encode_avx2, f16_decode_avx2, f16_decode_kt_avx2};
        case PT_KV_ELEM_Q8: return (pt_kv_codec){q8_encode_avx2, q8_decode_avx2, q8_decode_kt_avx2};
        case PT_KV_ELEM_Q8R: return (pt_kv_codec){q8r_encode_avx2, q8r_decode_avx2, q8r_decode_kt_avx2};
        case PT_KV_ELEM_E5M2: return (pt_kv_codec){e5m2_encode_avx2, e5m2_decode_avx2, e5m2_decode_kt_avx2};
        default: break;
        }
    }
#else
    (void)cpu;
#endif
    return pt_kv_codec_ref(e);
}
