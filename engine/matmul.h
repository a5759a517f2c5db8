/*
 * matmul.h — the engine's weight matrices and the runner of their
 * products on the CPU kernels and a thread pool. Internal to the engine;
 * shared by every graph: the LLM decoder today, the image engine's CLIP,
 * UNet and VAE next. A LoRA adapter hooks in here too: its low-rank
 * product (y += scale * B (A x)) belongs beside the base product of the
 * weight it adapts, in mm_product (matmul.c), so no graph has to know.
 *
 * Contract of a product (pt_matmul_run):
 *   shapes   W is [rows x cols] (GGUF ne = [cols, rows]); the input x is
 *            n rows of cols float32 ([n][cols], row-major); each output
 *            y is n rows of rows float32 ([n][rows]): y[t] = W x[t].
 *   layouts  W is either a view of its GGUF bytes (any type the kernels
 *            support: fmatmul.h's FMA kernels on the float x for F32 /
 *            F16 / BF16; for the other types (K-quants, Q5_1) on a fast
 *            variant, the same kernels on tiles of 16 rows dequantized
 *            into the thread's scratch (each output pt_fmatmul_ref's over
 *            the dequantized row); pt_matmul_ref on the "ref" variant, for
 *            int8_ref jobs and without scratch) or, when `packed`,
 *            the int8 kernels' interleaved copy (qmatmul.h), which reads
 *            the caller's int8 quantization of x (pt_qact) instead.
 *   grouping up to three products that read one input go in one run (Q, K,
 *            V; gate and up, with silu(gate) * up fused in).
 *   threads  rows are split into units (whole row groups of a packed
 *            matrix, PT_MATMUL_ROW_ALIGN rows otherwise): one even share
 *            of units per thread for a single token (bandwidth-bound), a
 *            weighted pool run with stealing for a batch (compute-bound,
 *            threadpool.h). Every row is computed by one thread with the
 *            same kernel whatever the split, so results are bitwise the
 *            same for any thread count.
 */
#ifndef PETREL_MATMUL_H
#define PETREL_MATMUL_H

#include "cpu_features.h"
#include "qmatmul.h"
#include "threadpool.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A weight matrix: a view into the GGUF mapping, and its repacked copy for
 * the int8 kernels (qmatmul.h) when its type has a fast path on the
 * model's CPU variant. With `packed` set, products and row lookups go
 * through it only and the source pages may have been dropped (they fault
 * back in from the file if read). */
typedef struct pt_weight {
    uint32_t type;       /* enum pt_type, supported by the kernels */
    const void *data;    /* rows x row_bytes */
    int64_t rows, cols;
    pt_qweights *packed; /* or NULL: pt_matmul_ref on data */
} pt_weight;

/* Bytes of the matrix as stored (what packing it reads). */
uint64_t pt_weight_source_bytes(const pt_weight *w);
/* Whether the int8 kernels of cpu's variant have a fast path for w. */
bool pt_weight_can_pack(const pt_weight *w, const pt_cpu *cpu);
/* Repack w into w->packed for cpu (when pt_weight_can_pack). Returns
 * false when memory runs out (w->packed stays NULL). */
bool pt_weight_pack(pt_weight *w, const pt_cpu *cpu);
/* Row r of w as float32 into dst[0..cols) (from the packed copy when there
 * is one: the source pages may be gone). */
void pt_weight_row(const pt_weight *w, int64_t r, float *dst);

/* LoRA. One adapted matrix of an adapter (lora.h loads them): the rows
 * of W x get scale * B (A x) added. Both factors are float32 heap copies
 * owned by the adapter; the base matrix is never copied or changed.
 *
 * Two paths for the low-rank product (pt_lora_run.f32 picks):
 *   float  u = A x on the float input x (fmatmul), y += B u in float;
 *   int8   (when the pair has a8 / b8: its base matrix is packed for the
 *          int8 kernels, so its job quantizes x) both factors as Q8_0
 *          through the int8 kernels (qmatmul.h):
 *          u = A x on the job's int8 x (A's rows along cols), scaled;
 *          then B u on u quantized per token like any activation. The
 *          kernels take whole blocks of 32 values, and B's rows have only
 *          rank: for rank 4, 8, 16 or 32 (g = 32 / rank rows of B per
 *          block, rows a multiple of g) B is stored as [rows / g][32],
 *          each row g consecutive rows of B, and each token's u becomes g
 *          activation rows of 32: row j holds u at [j*rank, (j+1)*rank)
 *          and zeros elsewhere (the same block scale as u alone), so row
 *          r'*g + j of B u is output r' of activation row j; any other
 *          rank is padded with zeros to rank8 (g = 1). B then reads
 *          rows * rank bytes and a scale per 32, as a Q8_0 matrix would.
 *          At rank 16 on SmolLM2-135M's seven projections the int8 path's
 *          factors are 0.27 of the float ones' bytes (read per token);
 *          its distance to the float path is measured by test_lora_int8
 *          (KL divergence, top-1 agreement). */
typedef struct pt_lora_pair {
    const pt_weight *target; /* the base model's matrix it adapts [rows x cols] */
    int rank;
    const float *a;          /* [rank][cols] */
    const float *b;          /* [rows][rank] */
    float scale;             /* the adapter's own: alpha / rank (rsLoRA: alpha / sqrt(rank)) */
    int g;                   /* int8 path: rows of B per row of b8 (1, 2, 4 or 8) */
    int ucols;               /* columns of an activation row of B: 32 (g > 1) or rank8 */
    pt_qweights *a8;         /* A as Q8_0 [rank x cols] packed for the model's CPU, or NULL */
    pt_qweights *b8;         /* B as Q8_0 [rows / g x ucols], or NULL */
} pt_lora_pair;

#define PT_LORA_MAX_ACTIVE 8 /* adapters stacked on one run */
#define PT_LORA_TMP_TOKENS 8 /* tokens per int8 B product (pt_lora_run.tmp) */

/* The adapters active on a run: each one's pairs (sorted by target
 * address, for a binary search per product) and the caller's scale for
 * it, and scratch for the low-rank products A x of one job. Switching
 * the set rewrites these few pointers and scales only. */
typedef struct pt_lora_run {
    int n;
    const pt_lora_pair *pairs[PT_LORA_MAX_ACTIVE];
    int n_pairs[PT_LORA_MAX_ACTIVE];
    float scale[PT_LORA_MAX_ACTIVE];   /* the caller's, times each pair's own */
    int max_rank;                      /* floats of u per token: the most of rank
                                          (float path) and g * ucols (int8 path) */
    float *u;            /* [3][PT_LORA_MAX_ACTIVE][max_tokens][max_rank] */
    int max_tokens;      /* most tokens of one product */
    bool f32;            /* the float path even where int8 factors exist */
    /* int8 path: u quantized, one pt_qact per (matrix, adapter) of a job,
     * qu_bytes each ([3][PT_LORA_MAX_ACTIVE]); and per thread, B u of up
     * to PT_LORA_TMP_TOKENS tokens before it is added to y,
     * [tmp_threads][PT_LORA_TMP_TOKENS][max_rows] (per thread: where B u
     * lands depends on the pair's g, so threads on the rows of different
     * adapters would overlap in one buffer) */
    uint8_t *qu;
    size_t qu_bytes;
    float *tmp;
    int64_t max_rows;    /* most rows of an adapted matrix */
    int tmp_threads;     /* threads tmp has room for */
} pt_lora_run;

/* Floats of pt_lora_run.u for max_tokens tokens and max_rank. */
size_t pt_lora_run_u_floats(int max_tokens, int max_rank);

/* Where products run: a pool of n_threads threads (held by the caller for
 * the run) and per-thread kernel scratch of scratch_n bytes each; the
 * active LoRA adapters (NULL or n 0: none): every product of a matrix one
 * of them adapts gets its low-rank term, so no graph has to know. The
 * adapted matrices of a job need its float input j->x. */
typedef struct pt_matmul_runner {
    const pt_cpu *cpu;
    pt_pool *pool;
    int n_threads;
    uint8_t *scratch;     /* [n_threads][scratch_n], or NULL when scratch_n is 0 */
    size_t scratch_n;
    const pt_lora_run *lora;
} pt_matmul_runner;

/* Per-thread scratch bytes of products with up to max_cols columns on
 * cpu's kernels (a multiple of 64; 0: none needed): the int8 kernels'
 * panels or the tiled float path's rows, whichever is larger. */
size_t pt_matmul_scratch_bytes(const pt_cpu *cpu, int64_t max_cols);

/* Up to three products reading one input. */
typedef struct pt_matmul {
    int n_w;
    const pt_weight *w[3];
    float *y[3];            /* [n][w->rows] each */
    const float *x;         /* [n][cols]: read by the unpacked matrices */
    const pt_qact *qa;      /* x quantized: read by the packed ones */
    int n;
    bool silu;              /* w[0], w[1] = gate, up (equal rows): y[0] = silu(y[0]) * y[1] */
    /* Unpacked Q4_0 / Q4_1 / Q5_0 / Q8_0 matrices (a CPU variant that packs
     * nothing: "ref") read qa too, through pt_qmatmul_ref: bitwise what the
     * packed kernels of the other variants give (the image graphs, whose
     * pixels must not depend on the variant). false: they read x. */
    bool int8_ref;
} pt_matmul;

/* y_i = W_i x for the n_w matrices of j; when any is packed, the caller
 * has quantized x into j->qa. */
void pt_matmul_run(const pt_matmul_runner *r, const pt_matmul *j);

#endif
