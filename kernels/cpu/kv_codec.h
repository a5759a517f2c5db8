/*
 * kv_codec.h — element codecs of the quantized KV cache: rows of head_dim
 * float32 values to and from f16, q8 (int8 in blocks of 32 with an f16
 * scale each), q8r (int8 with one f16 scale for the whole row: the keys of
 * q8f8) and e5m2 (fp8 with 5 exponent and 2 mantissa bits: the values of
 * q8f8). No engine types cross this header.
 *
 * Every codec has a plain C reference (the _ref functions) and an
 * AVX2 + F16C version; pt_kv_codec_pick chooses one from the CPU. The two
 * give bitwise the same bytes and floats for finite input (test_kv_cache
 * holds them to each other on odd sizes), because they perform the same
 * operations:
 *   f16:  x clamped to +-65504 (so no key or value becomes inf), then
 *         rounded to nearest even (F16C's vcvtps2ph);
 *   q8:   per block of 32 (the last block may be shorter): amax = max |x|,
 *         d = amax / 127, id = d ? 1 / d : 0, q = round-to-nearest-even(x * id)
 *         (vcvtps2dq), the scale stored as f16(d); decode q * float(f16(d));
 *   q8r:  the same with one block of the whole row;
 *   e5m2: the f16 of x (as above), then its top byte rounded to nearest
 *         even (h + 0x7f + ((h >> 8) & 1)) >> 8, saturated to +-57344 (0x7b):
 *         two roundings, stated as the format's definition here.
 * Row sizes in bytes: pt_kv_row_bytes.
 */
#ifndef PETREL_KV_CODEC_H
#define PETREL_KV_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "cpu_features.h"

#define PT_KV_Q8_BLOCK 32

/* Row codecs. */
typedef enum pt_kv_elem {
    PT_KV_ELEM_F32 = 0,
    PT_KV_ELEM_F16,
    PT_KV_ELEM_Q8,   /* int8, an f16 scale per 32 */
    PT_KV_ELEM_Q8R,  /* int8, one f16 scale per row */
    PT_KV_ELEM_E5M2,
    PT_KV_ELEM_COUNT
} pt_kv_elem;

/* Bytes of one encoded row of n values: f32 4n; f16 2n; q8 n + 2 per
 * block of 32 (scales first, then the int8s); q8r n + 2 (scale first);
 * e5m2 n. */
size_t pt_kv_row_bytes(pt_kv_elem e, int n);

typedef void (*pt_kv_encode_fn)(const float *x, int n, uint8_t *dst);
typedef void (*pt_kv_decode_fn)(const uint8_t *src, int n, float *y);

/* Keys for the attention kernel: n <= PT_KV_KT_LANES encoded rows of n_d
 * values each (row i at src + i * stride) decoded into one block of the
 * kernel's transposed layout, blk[d * PT_KV_KT_LANES + i] = value d of
 * row i (n_d * PT_KV_KT_LANES floats), lanes i >= n zero. Every value is
 * bitwise what decode gives. tmp: n_d floats of scratch. */
#define PT_KV_KT_LANES 16 /* attention.h's PT_ATTN_BK */
typedef void (*pt_kv_decode_kt_fn)(const uint8_t *src, size_t stride, int n, int n_d, float *blk, float *tmp);

typedef struct pt_kv_codec {
    pt_kv_encode_fn encode;
    pt_kv_decode_fn decode;
    pt_kv_decode_kt_fn decode_kt;
} pt_kv_codec;

/* The codec of element e for this CPU: the AVX2 + F16C version when cpu
 * has both (and its variant is not "ref"), else the reference. */
pt_kv_codec pt_kv_codec_pick(const pt_cpu *cpu, pt_kv_elem e);
/* The reference codec of element e (for the tests). */
pt_kv_codec pt_kv_codec_ref(pt_kv_elem e);

/* Scalar conversions (reference rounding as above). */
uint16_t pt_kv_f32_to_f16(float x);
float pt_kv_f16_to_f32(uint16_t h);

#endif
