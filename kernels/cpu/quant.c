/*
 * quant.c — the GGML type table, row sizes, and half / bfloat16 scalar
 * conversions. Block decoding lives in quant_legacy.c and quant_k.c, the
 * row-level dequantize / dot / matmul in quant_matmul.c.
 */
#include <string.h>

#include "quant_blocks.h"

/* Indexed by GGML type id. Sizes are those of ggml-common.h's block
 * structs. An entry with name == NULL is an id GGML never defined or has
 * since removed with no layout left behind (4, 5: Q4_2 / Q4_3; 31..33 and
 * 36..38: the Q4_0_4_4 / IQ4_NL_4_4 style repacked types, which ggml now
 * rejects in files); pt_type_get returns NULL for those. */
static const pt_type_traits type_table[PT_TYPE_COUNT] = {
    [0] = {"F32", 1, 4, true},
    [1] = {"F16", 1, 2, true},
    [2] = {"Q4_0", 32, 18, true},
    [3] = {"Q4_1", 32, 20, true},
    [6] = {"Q5_0", 32, 22, true},
    [7] = {"Q5_1", 32, 24, true},
    [8] = {"Q8_0", 32, 34, true},
    /* Q8_1 is {fp16 d, fp16 s, int8 qs[32]} = 36 bytes in ggml; gguf-py's
     * table still says 40 (the old float d, float s layout). Q8_1 and Q8_K
     * are only ggml's intermediates for dot products, never weights. */
    [9] = {"Q8_1", 32, 36, false},
    [10] = {"Q2_K", 256, 84, false},
    [11] = {"Q3_K", 256, 110, false},
    [12] = {"Q4_K", 256, 144, true},
    [13] = {"Q5_K", 256, 176, true},
    [14] = {"Q6_K", 256, 210, true},
    [15] = {"Q8_K", 256, 292, false},
    [16] = {"IQ2_XXS", 256, 66, false},
    [17] = {"IQ2_XS", 256, 74, false},
    [18] = {"IQ3_XXS", 256, 98, false},
    [19] = {"IQ1_S", 256, 50, false},
    [20] = {"IQ4_NL", 32, 18, false},
    [21] = {"IQ3_S", 256, 110, false},
    [22] = {"IQ2_S", 256, 82, false},
    [23] = {"IQ4_XS", 256, 136, false},
    [24] = {"I8", 1, 1, false},
    [25] = {"I16", 1, 2, false},
    [26] = {"I32", 1, 4, false},
    [27] = {"I64", 1, 8, false},
    [28] = {"F64", 1, 8, false},
    [29] = {"IQ1_M", 256, 56, false},
    [30] = {"BF16", 1, 2, true},
    [34] = {"TQ1_0", 256, 54, false},
    [35] = {"TQ2_0", 256, 66, false},
    [39] = {"MXFP4", 32, 17, false},
};

const pt_type_traits *pt_type_get(uint32_t type) {
    if (type >= PT_TYPE_COUNT || !type_table[type].name) return NULL;
    return &type_table[type];
}

const char *pt_type_name(uint32_t type) {
    const pt_type_traits *t = pt_type_get(type);
    return t ? t->name : "?";
}

size_t pt_type_row_bytes(uint32_t type, int64_t n) {
    const pt_type_traits *t = pt_type_get(type);
    if (!t || n < 0 || n % t->block_elems) return 0;
    return (size_t)(n / t->block_elems) * (size_t)t->block_bytes;
}

/* ---- half / bfloat16 -------------------------------------------------- */

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* IEEE binary16: sign 1, exponent 5 (bias 15), mantissa 10. Every half is
 * exactly representable as a float, so this conversion is exact; see
 * pt_half_to_float in quant_blocks.h. */
float pt_fp16_to_f32(uint16_t h) {
    return pt_half_to_float(h);
}

/* Round a float to the nearest half, ties to even; too large -> inf. NaN
 * stays NaN with the top of its payload (a payload living only in the low
 * 13 bits becomes the quiet bit, so the result is still a NaN). */
uint16_t pt_f32_to_fp16(float f) {
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t ax = x & 0x7fffffffu;

    if (ax > 0x7f800000u) { /* nan */
        uint32_t man = (ax >> 13) & 0x3ff;
        return (uint16_t)(sign | 0x7c00 | (man ? man : 0x200));
    }
    /* 65520 = 0x477ff000 is half way between the largest half, 65504
     * (odd mantissa 0x3ff), and 65536: ties to even round it up, so it and
     * everything above (inf included) become inf. */
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00);

    if (ax < 0x38800000u) { /* below 2^-14: half subnormal or zero */
        /* 2^-25 (0x33000000) is half the smallest subnormal; it ties to 0. */
        if (ax <= 0x33000000u) return sign;
        /* value = m * 2^(e - 150) with the implicit bit; in units of the
         * half subnormal step 2^-24 that is m >> (126 - e), shift 14..24. */
        uint32_t e = ax >> 23;
        uint32_t m = (ax & 0x7fffff) | 0x800000;
        uint32_t shift = 126 - e;
        uint32_t q = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1))) q++; /* may carry to 0x400: smallest normal */
        return (uint16_t)(sign | q);
    }

    /* normal: rebias the exponent, keep the top 10 mantissa bits, round on
     * the 13 dropped ones. A carry out of the mantissa bumps the exponent,
     * which is still the right encoding (never reaches inf: see above). */
    uint32_t q = ((ax >> 23) - 127 + 15) << 10 | ((ax >> 13) & 0x3ff);
    uint32_t rem = ax & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (q & 1))) q++;
    return (uint16_t)(sign | q);
}

/* bfloat16 is the top half of a float: exact. */
float pt_bf16_to_f32(uint16_t h) {
    return bits_f32((uint32_t)h << 16);
}
