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

/* Where products run: a pool of n_threads threads (held by the caller for
 * the run) and per-thread kernel scratch of scratch_n bytes each. */
typedef struct pt_matmul_runner {
    const pt_cpu *cpu;
    pt_pool *pool;
    int n_threads;
    uint8_t *scratch;     /* [n_threads][scratch_n], or NULL when scratch_n is 0 */
    size_t scratch_n;
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
