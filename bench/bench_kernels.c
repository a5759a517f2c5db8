/*
 * bench_kernels.c — informal throughput of the int8 kernels (qmatmul.h)
 * against the float reference pt_matmul_ref, on 1 and 2 threads.
 *
 *   GEMM (prefill): n_tok tokens x a rows x cols matrix; int8 GOPS =
 *                   2 * rows * cols * n_tok / time.
 *   GEMV (decode):  one token; GB/s = packed weight bytes / time, both
 *                   "hot" (one matrix, cache resident after the first call)
 *                   and "cold" (cycling through copies larger than the
 *                   last-level cache, so every byte comes from DRAM).
 *   bound:          plain read bandwidth of the same cold buffers.
 *
 * Usage: bench_kernels [-t threads] [-v variant] [-r rows] [-c cols]
 *                      [-p n_tok] [-T type] [-m cold_MiB]
 *        bench_kernels -F f16|bf16|f32   float products (fmatmul.h), one
 *                      thread: 4096 tokens x 320 rows x 2880 cols (a 3x3
 *                      conv of 320 channels on a 64x64 latent) unless -p,
 *                      -r, -c say otherwise; GFLOP/s of pt_matmul_ref and
 *                      of each pt_fmatmul variant, and the speedup
 *        bench_kernels -A 40             non-causal attention (image_ops.h
 *                      pt_attn_full), one thread, 4096 keys, head size as
 *                      given, 512 queries timed (-p sets the keys)
 * Defaults: Q4_0, rows 8960, cols 1536 (Qwen2.5-1.5B ffn_up), n_tok 512,
 * every variant this CPU has, threads 1 and 2. No assertions: numbers only.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attention.h"
#include "cpu_features.h"
#include "fmatmul.h"
#include "image_ops.h"
#include "qmatmul.h"
#include "quant.h"
#include "threadpool.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rng = 88172645463325252ull;
static uint32_t rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

static void *random_matrix(uint32_t type, int64_t rows, int64_t cols) {
    const size_t bytes = pt_type_row_bytes(type, cols) * (size_t)rows;
    uint8_t *m = malloc(bytes);
    for (size_t i = 0; i < bytes; i++) m[i] = (uint8_t)rnd();
    /* sane fp16 scales: overwrite the d (and m) fields of every block */
    const int bb = pt_type_get(type)->block_bytes;
    for (size_t off = 0; off + (size_t)bb <= bytes; off += (size_t)bb) {
        const uint16_t d = pt_f32_to_fp16(0.01f * (float)(rnd() % 100) / 100.0f);
        memcpy(m + off, &d, 2);
        if (type == PT_TYPE_Q4_1) memcpy(m + off + 2, &d, 2);
    }
    return m;
}

/* ---- jobs for the pool ---------------------------------------------- */

typedef struct {
    const pt_qweights *w;
    const pt_qact *x;
    float *y;
    uint8_t *scratch; /* [threads][scratch_n] (pt_qmatmul_scratch_bytes) */
    size_t scratch_n;
} q_job;

static void q_task(void *ctx, int task, int n_tasks, int thread) {
    q_job *j = ctx;
    int64_t r0, r1;
    pt_qweights_split(j->w, task, n_tasks, &r0, &r1);
    pt_qmatmul(j->w, j->x, j->y, r0, r1, j->scratch + (size_t)thread * j->scratch_n);
}

typedef struct {
    uint32_t type;
    const void *w;
    int64_t rows, cols, n_tok;
    const float *x;
    float *y;
} f_job;

static void f_task(void *ctx, int task, int n_tasks, int thread) {
    (void)thread;
    f_job *j = ctx;
    const int64_t r0 = j->rows * task / n_tasks, r1 = j->rows * (task + 1) / n_tasks;
    pt_matmul_ref(j->type, j->w, j->rows, j->cols, j->x, j->n_tok, j->y, r0, r1);
}

typedef struct {
    const pt_cpu *cpu;
    const float *x;
    pt_qact *a;
} a_job;

static void a_task(void *ctx, int task, int n_tasks, int thread) {
    (void)thread;
    a_job *j = ctx;
    const int64_t t0 = j->a->n_tok * task / n_tasks, t1 = j->a->n_tok * (task + 1) / n_tasks;
    pt_qact_quantize(j->cpu, j->x, j->a, t0, t1);
}

typedef struct {
    const uint64_t *buf;
    size_t n;
    uint64_t sums[8];
} r_job;

/* Sum 32-byte vectors (GCC vector extension: SIMD on any target) with
 * four independent accumulators: a plain streaming read. */
typedef uint64_t v4u64 __attribute__((vector_size(32)));

static void r_task(void *ctx, int task, int n_tasks, int thread) {
    (void)thread;
    r_job *j = ctx;
    const size_t nv = j->n / 4;
    const size_t i0 = nv * (size_t)task / (size_t)n_tasks & ~(size_t)3;
    const size_t i1 = nv * (size_t)(task + 1) / (size_t)n_tasks & ~(size_t)3;
    v4u64 s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
    for (size_t i = i0; i < i1; i += 4) {
        v4u64 a, b, c, d;
        memcpy(&a, j->buf + 4 * i, 32);
        memcpy(&b, j->buf + 4 * i + 4, 32);
        memcpy(&c, j->buf + 4 * i + 8, 32);
        memcpy(&d, j->buf + 4 * i + 12, 32);
        s0 += a; s1 += b; s2 += c; s3 += d;
    }
    const v4u64 s = s0 ^ s1 ^ s2 ^ s3;
    j->sums[task & 7] += s[0] ^ s[1] ^ s[2] ^ s[3];
}

/* Best-of-reps wall time of one pt_pool_run(pool, fn, ctx, n_tasks). */
static double time_run(int reps, pt_pool *pool, pt_pool_fn fn, void *ctx, int n_tasks) {
    double best = 1e30;
    for (int rep = 0; rep < reps; rep++) {
        const double t = now_s();
        pt_pool_run(pool, fn, ctx, n_tasks);
        const double dt = now_s() - t;
        if (dt < best) best = dt;
    }
    return best;
}

/* -F: float products, one thread, every variant. pt_matmul_ref and the
 * scalar oracle are timed on fewer tokens (they are slow); GFLOP/s is
 * 2 * rows * cols * tokens / time either way. */
static int bench_float(uint32_t type, int64_t rows, int64_t cols, int64_t n_tok) {
    pt_cpu native;
    pt_cpu_detect_with(&native, NULL);
    const size_t es = type == PT_TYPE_F32 ? 4 : 2;
    uint8_t *w = malloc((size_t)(rows * cols) * es);
    for (int64_t i = 0; i < rows * cols; i++) {
        const float v = (float)((int)(rnd() % 2001) - 1000) / 20000.0f;
        if (type == PT_TYPE_F32) memcpy(w + i * 4, &v, 4);
        else {
            uint16_t h = pt_f32_to_fp16(v);
            if (type == PT_TYPE_BF16) {
                uint32_t u;
                memcpy(&u, &v, 4);
                h = (uint16_t)(u >> 16);
            }
            memcpy(w + i * 2, &h, 2);
        }
    }
    float *x = malloc(sizeof(float) * (size_t)(n_tok * cols));
    float *y = malloc(sizeof(float) * (size_t)(n_tok * rows));
    for (int64_t i = 0; i < n_tok * cols; i++) x[i] = (float)((int)(rnd() % 2001) - 1000) / 500.0f;
    printf("%s weights %" PRId64 " rows x %" PRId64 " cols, %" PRId64 " tokens, 1 thread\n", pt_type_name(type), rows,
           cols, n_tok);
    const int64_t few = n_tok < 128 ? n_tok : 128;
    double t0 = now_s();
    pt_matmul_ref(type, w, rows, cols, x, few, y, 0, rows);
    const double ref_gf = 2.0 * rows * cols * few / (now_s() - t0) / 1e9;
    printf("%-24s %8.1f GFLOP/s (%" PRId64 " tokens)\n", "pt_matmul_ref", ref_gf, few);
    for (int v = 0; v < PT_CPU_VARIANT_COUNT; v++) {
        pt_cpu cpu;
        if (!pt_cpu_with_variant(&native, (pt_cpu_variant)v, &cpu)) continue;
        const int64_t nt = v == PT_CPU_REF ? few : n_tok;
        pt_fmatmul(&cpu, type, w, rows, cols, x, nt, y, 0, rows); /* warm */
        t0 = now_s();
        pt_fmatmul(&cpu, type, w, rows, cols, x, nt, y, 0, rows);
        const double gf = 2.0 * rows * cols * nt / (now_s() - t0) / 1e9;
        char name[48];
        snprintf(name, sizeof name, "pt_fmatmul [%s]", pt_cpu_variant_name(cpu.variant));
        printf("%-24s %8.1f GFLOP/s (%" PRId64 " tokens)  %.1fx pt_matmul_ref\n", name, gf, nt, gf / ref_gf);
    }
    free(w), free(x), free(y);
    return 0;
}

/* -A: pt_attn_full, one head, one thread, every variant. */
static int bench_attn(int head_dim, int n_kv) {
    pt_cpu native;
    pt_cpu_detect_with(&native, NULL);
    const int n_q = 512;
    const int64_t kbs = (int64_t)PT_ATTN_BK * head_dim;
    const int n_blocks = (n_kv + PT_ATTN_BK - 1) / PT_ATTN_BK;
    float *q = malloc(sizeof(float) * (size_t)n_q * head_dim), *k = malloc(sizeof(float) * (size_t)head_dim);
    float *kt = calloc((size_t)n_blocks * kbs, sizeof(float)), *v = malloc(sizeof(float) * (size_t)n_kv * head_dim);
    float *out = malloc(sizeof(float) * (size_t)n_q * head_dim);
    float *scratch = malloc(sizeof(float) * pt_attn_scratch_floats(n_q, head_dim));
    for (int64_t i = 0; i < (int64_t)n_q * head_dim; i++) q[i] = (float)((int)(rnd() % 2001) - 1000) / 1000.0f;
    for (int64_t i = 0; i < (int64_t)n_kv * head_dim; i++) v[i] = (float)((int)(rnd() % 2001) - 1000) / 1000.0f;
    for (int j = 0; j < n_kv; j++) {
        for (int d = 0; d < head_dim; d++) k[d] = (float)((int)(rnd() % 2001) - 1000) / 1000.0f;
        pt_attn_store_key(kt, kbs, j, k, head_dim);
    }
    printf("attention: %d queries x %d keys, head size %d, 1 thread\n", n_q, n_kv, head_dim);
    for (int vi = 0; vi < PT_CPU_VARIANT_COUNT; vi++) {
        pt_cpu cpu;
        if (!pt_cpu_with_variant(&native, (pt_cpu_variant)vi, &cpu)) continue;
        const double t0 = now_s();
        pt_attn_full(&cpu, out, head_dim, q, head_dim, n_q, kt, kbs, v, head_dim, n_kv, head_dim,
                     1.0f / sqrtf((float)head_dim), scratch);
        const double dt = now_s() - t0;
        /* q.k and p.v: 2 * 2 * n_q * n_kv * head_dim flops */
        printf("pt_attn_full [%-10s] %8.1f GFLOP/s  %.3f s (for 4096 queries: %.2f s)\n",
               pt_cpu_variant_name(cpu.variant), 4.0 * n_q * n_kv * head_dim / dt / 1e9, dt, dt * 4096 / n_q);
    }
    free(q), free(k), free(kt), free(v), free(out), free(scratch);
    return 0;
}

int main(int argc, char **argv) {
    int threads_list[2] = {1, 2}, n_threads_list = 2;
    const char *only_variant = NULL;
    int64_t rows = 8960, cols = 1536, n_tok = 512, cold_mib = 1024;
    uint32_t type = PT_TYPE_Q4_0;
    uint32_t float_type = UINT32_MAX; /* -F */
    int attn_dim = 0;                 /* -A */
    bool rows_set = false, cols_set = false, tok_set = false;
    for (int i = 1; i + 1 < argc; i += 2) {
        rows_set |= !strcmp(argv[i], "-r");
        cols_set |= !strcmp(argv[i], "-c");
        tok_set |= !strcmp(argv[i], "-p");
    }
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-t")) { threads_list[0] = atoi(argv[i + 1]); n_threads_list = 1; }
        else if (!strcmp(argv[i], "-v")) only_variant = argv[i + 1];
        else if (!strcmp(argv[i], "-r")) rows = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "-c")) cols = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "-p")) n_tok = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "-m")) cold_mib = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "-F")) float_type = !strcmp(argv[i + 1], "f32") ? PT_TYPE_F32 : !strcmp(argv[i + 1], "bf16") ? PT_TYPE_BF16 : PT_TYPE_F16;
        else if (!strcmp(argv[i], "-A")) attn_dim = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-T")) {
            type = !strcmp(argv[i + 1], "q8_0") ? PT_TYPE_Q8_0 : !strcmp(argv[i + 1], "q4_1") ? PT_TYPE_Q4_1 : PT_TYPE_Q4_0;
        } else {
            fprintf(stderr, "usage: %s [-t threads] [-v variant] [-r rows] [-c cols] [-p n_tok] "
                            "[-T q4_0|q4_1|q8_0] [-m cold_MiB] | -F f16|bf16|f32 | -A head_dim\n", argv[0]);
            return 2;
        }
    }
    if (float_type != UINT32_MAX)
        return bench_float(float_type, rows_set ? rows : 320, cols_set ? cols : 2880, tok_set ? n_tok : 4096);
    if (attn_dim > 0) return bench_attn(attn_dim, tok_set ? (int)n_tok : 4096);
    pt_cpu native;
    pt_cpu_detect_with(&native, NULL);
    const size_t wbytes = pt_type_row_bytes(type, cols) * (size_t)rows;
    printf("%s matrix %" PRId64 " rows x %" PRId64 " cols (%.1f MiB), prefill %" PRId64 " tokens\n",
           pt_type_name(type), rows, cols, (double)wbytes / 1048576.0, n_tok);

    void *w = random_matrix(type, rows, cols);
    float *x = malloc(sizeof(float) * (size_t)(n_tok * cols));
    for (int64_t i = 0; i < n_tok * cols; i++) x[i] = (float)((int)(rnd() % 2001) - 1000) / 500.0f;
    float *y = malloc(sizeof(float) * (size_t)(n_tok * rows));
    void *abuf = malloc(pt_qact_bytes(n_tok, cols));
    pt_qact qa, qa1;
    pt_qact_init(&qa, abuf, n_tok, cols);
    pt_qact_init(&qa1, abuf, 1, cols); /* first token only: decode */

    /* cold set: copies of the matrix totalling cold_mib, cycled through */
    const int n_cold = (int)((size_t)cold_mib * 1048576 / wbytes) + 1;

    for (int ti = 0; ti < n_threads_list; ti++) {
        const int nt = threads_list[ti];
        pt_pool *pool;
        pt_error err;
        if (pt_pool_new(nt, &pool, &err) != PT_OK) { fprintf(stderr, "%s\n", err.msg); return 1; }
        printf("\n== %d thread%s ==\n", nt, nt > 1 ? "s" : "");

        /* float reference: GEMV, and GEMM on few tokens (it is slow) */
        {
            const int64_t ref_tok = n_tok < 16 ? n_tok : 16;
            f_job fj = {type, w, rows, cols, 1, x, y};
            pt_pool_run(pool, f_task, &fj, nt * 4);
            const double tv = time_run(5, pool, f_task, &fj, nt * 4);
            fj.n_tok = ref_tok;
            const double tm = time_run(2, pool, f_task, &fj, nt * 4);
            printf("%-11s GEMV hot %7.2f GB/s (%6.3f ms)   GEMM %7.1f GFLOPS (%" PRId64 " tok)\n", "ref(float)",
                   (double)wbytes / tv / 1e9, tv * 1e3, 2.0 * rows * cols * ref_tok / tm / 1e9, ref_tok);
        }

        for (int v = PT_CPU_REF + 1; v < PT_CPU_VARIANT_COUNT; v++) {
            pt_cpu cpu;
            if (!pt_cpu_with_variant(&native, (pt_cpu_variant)v, &cpu)) continue;
            if (only_variant && strcmp(only_variant, pt_cpu_variant_name(cpu.variant))) continue;
            if (!pt_qweights_supported(type, rows, cols, &cpu)) continue;
            double t = now_s();
            pt_qweights *pw = pt_qweights_pack(type, w, rows, cols, &cpu);
            const double t_pack = now_s() - t;
            if (!pw) { fprintf(stderr, "pack failed\n"); return 1; }
            const size_t pbytes = pt_qweights_bytes(pw);

            const double c_start = cpu_s(), w_start = now_s();
            a_job aj = {&cpu, x, &qa};
            const double tq = time_run(5, pool, a_task, &aj, nt);
            const size_t scratch_n = pt_qmatmul_scratch_bytes(&cpu, cols);
            uint8_t *scratch = malloc((size_t)nt * scratch_n + 1);
            q_job gj = {pw, &qa, y, scratch, scratch_n};
            const int gemm_tasks = nt * 8;
            pt_pool_run(pool, q_task, &gj, gemm_tasks);
            const double tm = time_run(3, pool, q_task, &gj, gemm_tasks);
            q_job vj = {pw, &qa1, y, scratch, scratch_n};
            const int gemv_tasks = nt;
            pt_pool_run(pool, q_task, &vj, gemv_tasks);
            const double tv = time_run(20, pool, q_task, &vj, gemv_tasks);

            /* cold GEMV: n_cold packed copies */
            pt_qweights **cold = malloc(sizeof *cold * (size_t)n_cold);
            for (int i = 0; i < n_cold; i++) cold[i] = pt_qweights_pack(type, w, rows, cols, &cpu);
            double tc = 1e30;
            for (int rep = 0; rep < 3; rep++) {
                t = now_s();
                for (int i = 0; i < n_cold; i++) {
                    q_job cj = {cold[i], &qa1, y, scratch, scratch_n};
                    pt_pool_run(pool, q_task, &cj, gemv_tasks);
                }
                const double dt = (now_s() - t) / n_cold;
                if (dt < tc) tc = dt;
            }
            for (int i = 0; i < n_cold; i++) pt_qweights_free(cold[i]);
            free(cold);

            /* share of the threads' wall time we actually got a core: low
             * values mean other processes competed and the numbers are low */
            const double util = (cpu_s() - c_start) / ((now_s() - w_start) * nt);
            printf("%-11s GEMM %7.1f GOPS (%7.2f ms)  GEMV hot %6.2f GB/s (%6.3f ms) cold %6.2f GB/s  "
                   "quantize %5.2f GB/s  pack %.1f ms  [cpu %3.0f%%]\n",
                   pt_cpu_variant_name(cpu.variant), 2.0 * rows * cols * n_tok / tm / 1e9, tm * 1e3,
                   (double)pbytes / tv / 1e9, tv * 1e3, (double)pbytes / tc / 1e9,
                   4.0 * n_tok * cols / tq / 1e9, t_pack * 1e3, util * 100);
            pt_qweights_free(pw);
            free(scratch);
        }

        /* read bandwidth of a buffer as big as the cold set */
        {
            const size_t n = (size_t)n_cold * wbytes / 8;
            uint64_t *buf = malloc(n * 8);
            for (size_t i = 0; i < n; i++) buf[i] = i;
            r_job rj = {buf, n, {0}};
            const double tr = time_run(3, pool, r_task, &rj, nt);
            printf("%-11s read %6.2f GB/s over %.0f MiB (sum %llx)\n", "bound", (double)n * 8 / tr / 1e9,
                   (double)n * 8 / 1048576.0, (unsigned long long)rj.sums[0]);
            free(buf);
        }
        pt_pool_free(pool);
    }
    free(w); free(x); free(y); free(abuf);
    return 0;
}
