/*
 * quant.h — GGML tensor types: block layouts, dequantization and dot
 * products in plain reference C. No engine types cross this header.
 *
 * Type ids are GGML's (they are stored in GGUF files). A row of n elements
 * of a block type is n / block_elems consecutive blocks; n must be a
 * multiple of block_elems. The fast ISA variants (quant_*.c per ISA,
 * picked at run time) are tested against the functions here.
 */
#ifndef PETREL_QUANT_H
#define PETREL_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum pt_type {
    PT_TYPE_F32 = 0,
    PT_TYPE_F16 = 1,
    PT_TYPE_Q4_0 = 2,
    PT_TYPE_Q4_1 = 3,
    PT_TYPE_Q5_0 = 6,
    PT_TYPE_Q5_1 = 7,
    PT_TYPE_Q8_0 = 8,
    PT_TYPE_Q8_1 = 9,
    PT_TYPE_Q2_K = 10,
    PT_TYPE_Q3_K = 11,
    PT_TYPE_Q4_K = 12,
    PT_TYPE_Q5_K = 13,
    PT_TYPE_Q6_K = 14,
    PT_TYPE_Q8_K = 15,
    PT_TYPE_BF16 = 30,
    PT_TYPE_COUNT = 40, /* ids below this may be known by name only */
};

typedef struct pt_type_traits {
    const char *name;  /* "Q4_1" */
    int block_elems;   /* elements per block (1 for F32/F16/BF16) */
    int block_bytes;   /* bytes per block */
    bool supported;    /* petrel can dequantize and dot it */
} pt_type_traits;

/* Traits for a type id, or NULL for an id GGML never defined. Ids of types
 * petrel knows by name but cannot compute have supported == false. */
const pt_type_traits *pt_type_get(uint32_t type);
const char *pt_type_name(uint32_t type); /* "?" for unknown ids */

/* Bytes of a row of n elements; 0 if n is not a multiple of the block size
 * or the type is unknown. */
size_t pt_type_row_bytes(uint32_t type, int64_t n);

/* Half and bfloat16 conversions (round to nearest even). */
float pt_fp16_to_f32(uint16_t h);
uint16_t pt_f32_to_fp16(float f);
float pt_bf16_to_f32(uint16_t h);
uint16_t pt_f32_to_bf16(float f); /* ties to even; NaN stays a (quiet) NaN */

/* Quantization (quant_quantize*.c): the types pt_quantize_row can write,
 * F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K and Q6_K. */
bool pt_can_quantize(uint32_t type);

/* Write the n values x[0..n) as one row of `type` to dst; returns the
 * bytes written (pt_type_row_bytes), 0 when the type cannot be written or
 * n is not a multiple of its block. Byte-identical to ggml's reference
 * quantizers (quantize_row_*_ref, what llama-quantize uses without an
 * importance matrix); see quant_quantize.c for the conditions. */
size_t pt_quantize_row(uint32_t type, const float *restrict x, void *restrict dst, int64_t n);

/* dst[0..n) = the n values of a row. Supported types only. */
void pt_dequant_row(uint32_t type, const void *src, float *dst, int64_t n);

/* sum_i row[i] * x[i] over a row of n elements; accumulates in float in the
 * order kernels/cpu/quant_matmul.c documents (fixed, so results are
 * reproducible). Supported types only. */
float pt_dot_row_f32(uint32_t type, const void *row, const float *x, int64_t n);

/* Y[t][r] = sum_c W[r][c] * X[t][c] for a weight matrix of `rows` rows of
 * `cols` elements (row stride pt_type_row_bytes(type, cols)), n_tok input
 * vectors X (n_tok x cols, contiguous) and output Y (n_tok x rows).
 * Rows [r0, r1) only, so callers can split the work across threads. */
void pt_matmul_ref(uint32_t type, const void *w, int64_t rows, int64_t cols,
                   const float *x, int64_t n_tok, float *y, int64_t r0, int64_t r1);

#endif
