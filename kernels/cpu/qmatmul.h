/*
 * qmatmul.h — fast quantized matrix products: float activations are
 * quantized to int8 on the fly (per block of 32 values, like GGML's Q8_0 /
 * Q8_1 activations), weights are repacked once at load into row-interleaved
 * tiles for the CPU's int8 dot-product instruction, and the products run
 * as exact integer dots per block, scaled in float.
 *
 * Types with a fast path: Q4_0, Q4_1, Q8_0 and Q5_0 (cols a multiple of
 * 32; Q5_0 is repacked as Q8_0, its 5-bit codes widened to int8, so it
 * takes 8.5 instead of 5.5 bits per weight in memory), on
 * the variants AVX2, AVX-VNNI, AVX-512 VNNI, AMX (x86-64) and NEON dotprod /
 * i8mm (arm64); see cpu_features.h. Everything else stays on pt_matmul_ref.
 *
 * Typical use (one matrix, n_tok tokens; threads split rows):
 *
 *   at load:   pw = pt_qweights_pack(type, data, rows, cols, &cpu);
 *              (NULL: no fast path for this type / CPU, keep pt_matmul_ref;
 *               pt_qweights_supported() tells that apart from out-of-memory)
 *   per step:  pt_qact_init(&qa, buf, n_tok, cols);     buf: pt_qact_bytes()
 *              pt_qact_quantize(&cpu, x, &qa, t0, t1);  all tokens, once per
 *                                                        input (may be split
 *                                                        over threads by tokens)
 *              pt_qmatmul(pw, &qa, y, r0, r1, scratch); each thread its rows
 *                                                        (pt_qweights_split) and
 *                                                        its own scratch
 *
 * Splitting: decode (n_tok 1) is bandwidth-bound, so give each thread one
 * even share (n_tasks = threads); prefill is compute-bound, so give fast
 * cores more: the engine gives each thread one range of whole row groups
 * (pt_qweights_row_align rows each) sized by its measured speed (weighted
 * runs of threadpool.h); several tasks per thread on a dynamic pool also
 * balance.
 *
 * One quantized input serves every matrix that reads it (Q, K, V; gate and
 * up). The output layout is pt_matmul_ref's: y[t * rows + r].
 *
 * Numerics. Activation block k of token t (32 values x[i]) becomes
 *   amax = max |x[i]|,  d = amax / 127,  id = d ? 1 / d : 0,
 *   q[i] = round-half-even(clamp(x[i] * id, -127, 127)),
 *   s = sum q[i],  ds = d * s                          (all float32)
 * and the product of row r with token t is, over blocks k in order,
 *   acc = fma((float)isum_k, dw_k * d_k, acc)                 Q4_0, Q5_0, Q8_0
 *   acc = fma(mw_k, ds_k, fma((float)isum_k, dw_k * d_k, acc)) Q4_1
 * starting from acc = +0, where isum_k = sum q[i] * c[i] is the exact
 * integer dot of the activation codes with the weight codes c (Q4_0:
 * nibble - 8, Q4_1: nibble, Q5_0: 5-bit value - 16, Q8_0: the int8), dw /
 * mw the block's scale /
 * min. pt_qmatmul_ref computes exactly this in plain C; every fast variant
 * produces the same float operations in the same order, so results are
 * bitwise equal to it (the tests demand that).
 *
 * Against pt_matmul_ref (float activations) the only difference is the
 * rounding of x to d * q: |x[i] - d q[i]| <= d / 2 = amax / 254 per value,
 * so |y_int8 - y_float| <= sum_k (amax_k / 254) * sum_i |w_ki| plus float
 * rounding of both sums (tests check this bound per output).
 */
#ifndef PETREL_QMATMUL_H
#define PETREL_QMATMUL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu_features.h"

#define PT_QACT_BLOCK 32 /* activation values per scale */

/* ---- activations ---------------------------------------------------- */

/* n_tok rows of cols values, cols a multiple of 32, nb = cols / 32.
 * All arrays live in one caller-provided buffer (see pt_qact_init). */
typedef struct pt_qact {
    int64_t n_tok, cols, nb;
    int8_t *q;   /* [n_tok][cols]  int8 codes, each in -127..127 */
    float *d;    /* [n_tok][nb]    block scale: x ~ d * q */
    float *ds;   /* [n_tok][nb]    d * s (used by types with a min) */
    int32_t *s;  /* [n_tok][nb]    sum of the block's 32 codes */
    /* s times the code offsets the kernels remove (see qmatmul_impl.h), so
     * they can start a sum from memory without integer math */
    int32_t *s_m8;   /* [n_tok][nb]  -8 * s */
    int32_t *s_m128; /* [n_tok][nb]  -128 * s */
} pt_qact;

/* Bytes of the buffer pt_qact_init needs (includes 64 bytes of slack for
 * alignment, so any malloc'd buffer works). */
size_t pt_qact_bytes(int64_t n_tok, int64_t cols);

/* Point a's arrays into buf (pt_qact_bytes(n_tok, cols) bytes). A buffer
 * sized for (N, C) also fits any n_tok <= N, cols <= C. */
void pt_qact_init(pt_qact *a, void *buf, int64_t n_tok, int64_t cols);

/* Quantize tokens [t0, t1) of x (n_tok x cols floats, row-major) into a,
 * with the SIMD variant cpu->variant selects (bitwise equal to the ref). */
void pt_qact_quantize(const pt_cpu *cpu, const float *x, pt_qact *a, int64_t t0, int64_t t1);
void pt_qact_quantize_ref(const float *x, pt_qact *a, int64_t t0, int64_t t1);

/* ---- repacked weights ----------------------------------------------- */

typedef struct pt_qweights pt_qweights;

/* Whether pt_qweights_pack has a fast path for this type, shape and
 * cpu->variant. */
bool pt_qweights_supported(uint32_t type, int64_t rows, int64_t cols, const pt_cpu *cpu);

/* Repack a GGML matrix (rows x cols, rows of pt_type_row_bytes(type, cols)
 * bytes, 2-byte aligned) for cpu->variant. The result owns a copy (same
 * size as the source plus < 64 bytes per row group of padding; Q5_0: the
 * size of the same matrix in Q8_0); w is not
 * referenced afterwards, so the caller may drop its pages. NULL when not
 * supported or out of memory. */
pt_qweights *pt_qweights_pack(uint32_t type, const void *w, int64_t rows, int64_t cols,
                              const pt_cpu *cpu);
void pt_qweights_free(pt_qweights *w);

uint32_t pt_qweights_type(const pt_qweights *w); /* the GGML type packed (Q5_0 included) */
int64_t pt_qweights_rows(const pt_qweights *w);
int64_t pt_qweights_cols(const pt_qweights *w);
pt_cpu_variant pt_qweights_variant(const pt_qweights *w);
size_t pt_qweights_bytes(const pt_qweights *w); /* packed data size */

/* Rows per interleaved tile: row ranges starting at multiples of this are
 * the cheapest to split across threads. */
int pt_qweights_row_align(const pt_qweights *w);

/* Row range of task `task` of n_tasks: whole tiles, as even as possible
 * (possibly empty when there are more tasks than tiles). */
void pt_qweights_split(const pt_qweights *w, int task, int n_tasks, int64_t *r0, int64_t *r1);

/* dst[0..cols) = row r, dequantized exactly as pt_dequant_row does from the
 * original (so a tied token embedding can be looked up from the packed
 * copy and the original need not stay resident). */
void pt_qweights_dequant_row(const pt_qweights *w, int64_t r, float *dst);
/* dst = row r as the original GGML matrix stored it
 * (pt_type_row_bytes(type, cols) bytes of blocks: the same bytes the matrix
 * was packed from), so a copy in GGML's layout (an OpenCL upload) can be
 * made after the original was dropped. false for a Q5_0 matrix (packed as
 * Q8_0: its layout is not kept). */
bool pt_qweights_block_row(const pt_qweights *w, int64_t r, void *dst);

/* ---- products ------------------------------------------------------- */

/* y[t * rows + r] for t in [0, x->n_tok), r in [r0, r1): the product of
 * row r with token t as specified above. x->cols must equal the matrix's
 * cols. Rows outside [r0, r1) of y are not touched. scratch: the calling
 * thread's own pt_qmatmul_scratch_bytes(cpu, cols) bytes, or NULL (same
 * result, slower: no weight panel, and AMX runs its AVX-512 kernel). */
void pt_qmatmul(const pt_qweights *w, const pt_qact *x, float *y, int64_t r0, int64_t r1,
                void *scratch);

/* Bytes of per-thread scratch pt_qmatmul wants for matrices of at most
 * cols columns packed for cpu->variant (0: none; AVX-512 and AMX unpack a
 * panel of weights there, a few hundred KiB). */
size_t pt_qmatmul_scratch_bytes(const pt_cpu *cpu, int64_t cols);

/* The same result in plain C from the original GGML matrix (the oracle of
 * the tests; slow). Types Q4_0, Q4_1, Q5_0, Q8_0. */
void pt_qmatmul_ref(uint32_t type, const void *w, int64_t rows, int64_t cols, const pt_qact *x,
                    float *y, int64_t r0, int64_t r1);
/* Whether pt_qmatmul_ref takes this type and column count (Q4_0, Q4_1,
 * Q5_0, Q8_0 with cols a multiple of 32). */
bool pt_qmatmul_ref_type(uint32_t type, int64_t cols);

#endif
