/*
 * quant_blocks.h — the on-disk block layouts of the GGML types petrel
 * computes, and the per-block decoders. Internal to kernels/cpu.
 *
 * Every struct here is byte-for-byte the block GGML writes into GGUF files
 * (little-endian, no padding: the _Static_asserts pin each size). Scales
 * named `d`, `m`, `dmin` are IEEE half floats stored as raw uint16_t bits;
 * decode them with pt_fp16_to_f32(). Blocks hold uint16_t fields, so a
 * block pointer must be 2-byte aligned. The engine guarantees it: the
 * GGUF reader refuses a general.alignment that is not a multiple of 8,
 * and the model loader refuses a quantized tensor whose data pointer is
 * not 8-byte aligned (a buffer given to pt_gguf_open_memory may be
 * anywhere); every block size below is even, so every row is aligned.
 *
 * Notation in the layout comments: a block holds `block_elems` values
 * y[0..N); q[i] is the unsigned integer code of y[i].
 */
#ifndef PETREL_QUANT_BLOCKS_H
#define PETREL_QUANT_BLOCKS_H

#include <stdint.h>
#include <string.h>

#include "quant.h"

#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__)
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "GGML blocks are little-endian; petrel reads them in place");
#endif

/* Half -> float, exact, branch-free so that loops over halves vectorize
 * (pt_fp16_to_f32 is this, out of line). Moves exponent and mantissa into
 * float position and rebiases the exponent by 127 - 15 = 112; inf / nan
 * (half exponent 31) get another 112 to reach 255, payload kept (the
 * subtraction below may set the quiet bit of a signaling NaN); zero and
 * subnormals (half exponent 0) are made 2^-14 * (1 + man / 1024) and then
 * have 2^-14 subtracted, leaving man * 2^-24 exactly (Sterbenz). The
 * selections are masks rather than branches for the vectorizer. */
static inline float pt_half_to_float(uint16_t h) {
    const uint32_t shifted = (uint32_t)(h & 0x7fff) << 13;
    const uint32_t exp = shifted & 0x0f800000u;          /* the half's exponent field */
    const uint32_t is_special = 0u - (exp == 0x0f800000u); /* all ones for inf / nan */
    const uint32_t is_small = 0u - (exp == 0);            /* all ones for zero / subnormal */
    uint32_t bits = shifted + (112u << 23) + (is_special & (112u << 23)) + (is_small & (1u << 23));
    const uint32_t bias_bits = is_small & 0x38800000u;    /* 2^-14, or +0 */
    float mag, bias;
    memcpy(&mag, &bits, sizeof mag);
    memcpy(&bias, &bias_bits, sizeof bias);
    mag -= bias;
    memcpy(&bits, &mag, sizeof bits);
    bits |= (uint32_t)(h & 0x8000) << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

#define PT_QK_LEGACY 32 /* values per block of Q4_0 .. Q8_1 */
#define PT_QK_K 256     /* values per super-block of the K-quants */

/* ---- legacy types: 32 values per block, one scale per block ---------- */

/* Q4_0: y[i] = d * (q[i] - 8), q in 0..15.
 * qs[j] holds q[j] in its low nibble and q[j + 16] in its high nibble,
 * j = 0..15 (first half of the block in low nibbles, second half high). */
typedef struct {
    uint16_t d;      /* fp16 scale */
    uint8_t qs[16];  /* 32 x 4-bit codes, see above */
} pt_block_q4_0;
_Static_assert(sizeof(pt_block_q4_0) == 2 + 16, "Q4_0 block is 18 bytes");

/* Q4_1: y[i] = d * q[i] + m, q in 0..15; qs packed as in Q4_0. */
typedef struct {
    uint16_t d;      /* fp16 scale */
    uint16_t m;      /* fp16 offset (the block minimum) */
    uint8_t qs[16];
} pt_block_q4_1;
_Static_assert(sizeof(pt_block_q4_1) == 2 + 2 + 16, "Q4_1 block is 20 bytes");

/* Q5_0: y[i] = d * (q[i] - 16), q in 0..31.
 * The low 4 bits of q are packed in qs as in Q4_0; bit 4 of q[i] is bit i
 * of qh read as a little-endian uint32 (qh[0] bit 0 is q[0], qh[3] bit 7
 * is q[31]). */
typedef struct {
    uint16_t d;      /* fp16 scale */
    uint8_t qh[4];   /* 32 x high bit, little-endian bit i = value i */
    uint8_t qs[16];  /* 32 x low nibble, as Q4_0 */
} pt_block_q5_0;
_Static_assert(sizeof(pt_block_q5_0) == 2 + 4 + 16, "Q5_0 block is 22 bytes");

/* Q5_1: y[i] = d * q[i] + m, q in 0..31; qh / qs as in Q5_0. */
typedef struct {
    uint16_t d;      /* fp16 scale */
    uint16_t m;      /* fp16 offset */
    uint8_t qh[4];
    uint8_t qs[16];
} pt_block_q5_1;
_Static_assert(sizeof(pt_block_q5_1) == 2 + 2 + 4 + 16, "Q5_1 block is 24 bytes");

/* Q8_0: y[i] = d * qs[i], qs signed. */
typedef struct {
    uint16_t d;      /* fp16 scale */
    int8_t qs[32];
} pt_block_q8_0;
_Static_assert(sizeof(pt_block_q8_0) == 2 + 32, "Q8_0 block is 34 bytes");

/* ---- K-quants: 256-value super-blocks of sub-blocks ------------------ */

/* Q4_K: 8 sub-blocks of 32 values. Sub-block s has a 6-bit scale sc[s] and
 * a 6-bit min mn[s]; y = (d * sc[s]) * q - (dmin * mn[s]), q in 0..15.
 *
 * scales[12] packs the 8 (sc, mn) pairs, 6 bits each:
 *
 *   byte b, b = 0..3 : bits 0-5 sc[b],       bits 6-7 bits 4-5 of sc[b + 4]
 *   byte b, b = 4..7 : bits 0-5 mn[b - 4],   bits 6-7 bits 4-5 of mn[b]
 *   byte b, b = 8..11: bits 0-3 = bits 0-3 of sc[b - 4],
 *                      bits 4-7 = bits 0-3 of mn[b - 4]
 *
 * i.e. for s < 4:  sc = scales[s] & 63,  mn = scales[s + 4] & 63;
 *      for s >= 4: sc = (scales[s + 4] & 15) | (scales[s - 4] >> 6) << 4,
 *                  mn = (scales[s + 4] >> 4) | (scales[s] >> 6) << 4.
 *
 * qs: 4 chunks of 32 bytes; chunk c holds sub-block 2c in the low nibbles
 * and sub-block 2c + 1 in the high nibbles (y[64c + l] = low nibble of
 * qs[32c + l], y[64c + 32 + l] = its high nibble). */
typedef struct {
    uint16_t d;          /* fp16 scale of the 6-bit scales */
    uint16_t dmin;       /* fp16 scale of the 6-bit mins */
    uint8_t scales[12];  /* 8 x (6-bit scale, 6-bit min), see above */
    uint8_t qs[128];     /* 256 x 4-bit codes, see above */
} pt_block_q4_K;
_Static_assert(sizeof(pt_block_q4_K) == 2 + 2 + 12 + 128, "Q4_K block is 144 bytes");

/* Q5_K: as Q4_K, plus a fifth bit: q = low nibble (as Q4_K) | 16 * bit,
 * q in 0..31, where the bit of y[32s + l] (sub-block s, l = 0..31) is bit s
 * of qh[l]. */
typedef struct {
    uint16_t d;          /* fp16 scale of the 6-bit scales */
    uint16_t dmin;       /* fp16 scale of the 6-bit mins */
    uint8_t scales[12];  /* packed exactly as in Q4_K */
    uint8_t qh[32];      /* bit s of qh[l]: high bit of y[32s + l] */
    uint8_t qs[128];     /* low nibbles, packed exactly as Q4_K's qs */
} pt_block_q5_K;
_Static_assert(sizeof(pt_block_q5_K) == 2 + 2 + 12 + 32 + 128, "Q5_K block is 176 bytes");

/* Q6_K: 16 sub-blocks of 16 values; y[i] = d * scales[i / 16] * (q[i] - 32),
 * q in 0..63, scales signed 8-bit. The block is two halves of 128 values;
 * half h uses ql[64h .. 64h+64) and qh[32h .. 32h+32). Within a half, for
 * l = 0..31, the four values y[128h + 32k + l], k = 0..3, take:
 *
 *   k = 0: low nibble  of ql[64h + l]       | ((qh[32h + l] >> 0) & 3) << 4
 *   k = 1: low nibble  of ql[64h + 32 + l]  | ((qh[32h + l] >> 2) & 3) << 4
 *   k = 2: high nibble of ql[64h + l]       | ((qh[32h + l] >> 4) & 3) << 4
 *   k = 3: high nibble of ql[64h + 32 + l]  | ((qh[32h + l] >> 6) & 3) << 4
 *
 * Note d comes last in this block, unlike the others. */
typedef struct {
    uint8_t ql[128];     /* low 4 bits of the codes, see above */
    uint8_t qh[64];      /* high 2 bits of the codes, 4 per byte */
    int8_t scales[16];   /* signed 8-bit scale per 16 values */
    uint16_t d;          /* fp16 super-block scale */
} pt_block_q6_K;
_Static_assert(sizeof(pt_block_q6_K) == 128 + 64 + 16 + 2, "Q6_K block is 210 bytes");

/* Per-block decoders: write the block's block_elems values to y.
 * Each computes exactly the float expression GGML's dequantize_row_* does
 * (and gguf-py's numpy code), in the same order, so results are bitwise
 * equal; see quant_legacy.c and quant_k.c. */
void pt_dequant_block_q4_0(const pt_block_q4_0 *restrict b, float *restrict y);
void pt_dequant_block_q4_1(const pt_block_q4_1 *restrict b, float *restrict y);
void pt_dequant_block_q5_0(const pt_block_q5_0 *restrict b, float *restrict y);
void pt_dequant_block_q5_1(const pt_block_q5_1 *restrict b, float *restrict y);
void pt_dequant_block_q8_0(const pt_block_q8_0 *restrict b, float *restrict y);
void pt_dequant_block_q4_K(const pt_block_q4_K *restrict b, float *restrict y);
void pt_dequant_block_q5_K(const pt_block_q5_K *restrict b, float *restrict y);
void pt_dequant_block_q6_K(const pt_block_q6_K *restrict b, float *restrict y);

/* nb Q6_K blocks (pt_block_q6_K) from nb * 256 floats: ggml's
 * quantize_row_q6_K_ref, byte for byte (quant_quantize_k.c). */
void pt_quantize_q6_K(const float *restrict x, void *restrict dst, int64_t nb);
/* Likewise Q4_K and Q5_K: quantize_row_q4_K_ref / q5_K_ref. */
void pt_quantize_q4_K(const float *restrict x, void *restrict dst, int64_t nb);
void pt_quantize_q5_K(const float *restrict x, void *restrict dst, int64_t nb);

#endif
