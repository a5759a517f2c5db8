/*
 * machine_probe.c — the physical bounds the bench harness compares both
 * engines against, measured on the spot (the machine's bandwidth was seen to
 * change by almost 2x from one minute to the next, so the harness runs this
 * between the engine runs, not once).
 *
 *   machine_probe bw [THREADS] [MIB] [PASSES]
 *       read bandwidth: THREADS threads (default 2) each sum their own
 *       slice of one MIB-MiB buffer (default 1024, far beyond the last-level
 *       cache) with wide loads, PASSES times (default 8) behind a barrier;
 *       prints the best and the median pass as GB/s (1e9 bytes/s), over
 *       the threads' CPU time (bw_*) and over wall time (bw_wall_best),
 *       and the share of the wall time the threads ran (bw_cpu_share).
 *   machine_probe clock [THREADS]
 *       core clock under load: every thread runs a chain of dependent
 *       integer multiplies (x86-64) or adds (arm64) of known latency;
 *       prints GHz = cycles / CPU second of the slowest thread (elsewhere
 *       prints 0).
 *   machine_probe int8 [THREADS]
 *       measured int8 multiply-add rate with the widest dot-product
 *       instruction found at run time (AVX-512 VNNI vpdpbusd zmm, else
 *       AVX-VNNI vpdpbusd ymm, else AVX2 vpmaddubsw+vpmaddwd; arm64 sdot),
 *       12 independent accumulators per thread; prints int8 GOPS (2 ops per
 *       multiply-add, over the slowest thread's CPU time) and the ISA used.
 *       A cross-check of the formula peak.
 *   machine_probe amx [THREADS]
 *       the same for Intel AMX tiles (x86-64 with AMX-INT8, after asking
 *       Linux for the tile state): 4 independent TDPBSSD of 16 x 16 sums
 *       over K = 32 per step, the tile shape petrel's AMX kernel uses (one
 *       32-element quant block per product); prints amx_gops (0 without
 *       AMX). The vpdpbusd formula stays the judged bound; this shows how
 *       far above it the tile unit goes.
 *
 * Output is one "key value" pair a line, for bench/compare.py to read.
 * Build: cc -O2 -pthread bench/machine_probe.c -o machine_probe (no -march
 * needed: the int8 loops carry their own target attributes).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU time of the calling thread: what it ran, without the slices the
 * scheduler gave to other processes. The probes divide by it, so their
 * figures are the machine's (what a core does while it runs the thread),
 * not the load of the moment; the harness reports the engines' own share
 * of the CPU separately. */
static double thread_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ---- read bandwidth ------------------------------------------------------ */

typedef struct bw_job {
    const uint64_t *p; /* this thread's slice */
    size_t n;          /* uint64 words in it */
    int passes;
    pthread_barrier_t *bar;
    double *cpu_time;  /* [passes]: this thread's CPU seconds per pass */
    double *wall_time; /* [passes]: written by thread 0 */
    int id;
    uint64_t sink;
} bw_job;

/* Eight independent sums so the loads, not an add chain, set the pace;
 * compilers turn this into wide vector loads at -O2/-O3. */
static uint64_t sum_words(const uint64_t *p, size_t n) {
    uint64_t s[8] = {0};
    for (size_t i = 0; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) s[k] += p[i + k];
    return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

static void *bw_thread(void *arg) {
    bw_job *j = arg;
    for (int pass = 0; pass < j->passes; pass++) {
        pthread_barrier_wait(j->bar);
        double t0 = now_s(), c0 = thread_cpu_s();
        j->sink += sum_words(j->p, j->n);
        j->cpu_time[pass] = thread_cpu_s() - c0;
        pthread_barrier_wait(j->bar); /* the pass ends when the slowest thread does */
        if (j->id == 0) j->wall_time[pass] = now_s() - t0;
    }
    return NULL;
}

static int run_bw(int threads, size_t mib, int passes) {
    size_t bytes = mib << 20, words = bytes / 8;
    uint64_t *buf = aligned_alloc(4096, bytes);
    if (!buf) {
        fprintf(stderr, "machine_probe: cannot allocate %zu MiB\n", mib);
        return 1;
    }
    for (size_t i = 0; i < words; i++) buf[i] = i; /* fault every page in first */
    pthread_t th[64];
    bw_job jobs[64];
    if (passes > 256) passes = 256;
    double *wall_time = calloc((size_t)passes, sizeof *wall_time);
    double *cpu_time = calloc((size_t)passes * (size_t)threads, sizeof *cpu_time);
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)threads);
    size_t per = words / (size_t)threads / 8 * 8;
    for (int t = 0; t < threads; t++) {
        jobs[t] = (bw_job){.p = buf + (size_t)t * per, .n = per, .passes = passes, .bar = &bar,
                           .cpu_time = cpu_time + (size_t)t * (size_t)passes, .wall_time = wall_time, .id = t};
        pthread_create(&th[t], NULL, bw_thread, &jobs[t]);
    }
    uint64_t sink = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(th[t], NULL);
        sink += jobs[t].sink;
    }
    /* A pass's bandwidth: all bytes over the CPU time of the thread that
     * ran longest (time sliced away to other processes is not counted);
     * bw_wall_* uses the wall time instead. */
    double gbs[256], wgbs[256], share = 0;
    const double bytes_all = (double)(per * 8 * (size_t)threads);
    for (int i = 0; i < passes; i++) {
        double c = 0, csum = 0;
        for (int t = 0; t < threads; t++) {
            double x = cpu_time[(size_t)t * (size_t)passes + (size_t)i];
            if (x > c) c = x;
            csum += x;
        }
        gbs[i] = bytes_all / c / 1e9;
        wgbs[i] = bytes_all / wall_time[i] / 1e9;
        share += csum / (wall_time[i] * threads) / passes;
    }
    qsort(gbs, (size_t)passes, sizeof gbs[0], cmp_double);
    qsort(wgbs, (size_t)passes, sizeof wgbs[0], cmp_double);
    printf("bw_threads %d\nbw_mib %zu\nbw_passes %d\n", threads, mib, passes);
    printf("bw_best_gbs %.2f\nbw_median_gbs %.2f\nbw_worst_gbs %.2f\n", gbs[passes - 1], gbs[passes / 2], gbs[0]);
    printf("bw_wall_best_gbs %.2f\nbw_cpu_share %.2f\n", wgbs[passes - 1], share);
    printf("bw_sink %llu\n", (unsigned long long)(sink & 1)); /* keeps the sums alive */
    free(wall_time);
    free(cpu_time);
    free(buf);
    pthread_barrier_destroy(&bar);
    return 0;
}

/* ---- clock --------------------------------------------------------------- */

#define CLOCK_ITERS 60000000ull /* ~0.36 s at 4 GHz on x86-64 */

typedef struct clk_job {
    double seconds;
} clk_job;

/* Cycles per iteration of the chain below: eight dependent multiplies of
 * three cycles on x86-64 (imul r64: 3 cycles on every Intel core since
 * Sandy Bridge and every AMD Zen), eight dependent one-cycle register adds
 * on arm64. Not add-immediate on x86: Golden Cove and later fold chains of
 * small immediate adds in the renamer and run them faster than one a
 * cycle (measured here: 3.8 "GHz" under load, 6 when idle). The loop's own
 * counter runs beside the chain on other ports. */
#if defined(__x86_64__)
#define CLOCK_CYCLES_PER_ITER 24.0
#else
#define CLOCK_CYCLES_PER_ITER 8.0
#endif

static void *clk_thread(void *arg) {
    clk_job *j = arg;
    uint64_t x = 1, one = 1;
    double c0 = thread_cpu_s();
    for (uint64_t i = 0; i < CLOCK_ITERS; i++) {
#if defined(__x86_64__)
        __asm__ volatile("imul %1, %0\n\timul %1, %0\n\timul %1, %0\n\timul %1, %0\n\t"
                         "imul %1, %0\n\timul %1, %0\n\timul %1, %0\n\timul %1, %0"
                         : "+r"(x) : "r"(one));
#elif defined(__aarch64__)
        __asm__ volatile("add %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1\n\t"
                         "add %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1"
                         : "+r"(x) : "r"(one));
#else
        x += 8 * one;
#endif
    }
    j->seconds = thread_cpu_s() - c0;
    return (void *)(uintptr_t)(x & 1);
}

static int run_clock(int threads) {
#if !defined(__x86_64__) && !defined(__aarch64__)
    (void)threads;
    printf("clock_ghz 0\n");
    return 0;
#else
    pthread_t th[64];
    clk_job jobs[64];
    for (int t = 0; t < threads; t++) pthread_create(&th[t], NULL, clk_thread, &jobs[t]);
    double worst = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(th[t], NULL);
        if (jobs[t].seconds > worst) worst = jobs[t].seconds;
    }
    printf("clock_threads %d\nclock_ghz %.3f\n", threads, (double)CLOCK_ITERS * CLOCK_CYCLES_PER_ITER / worst / 1e9);
    return 0;
#endif
}

/* ---- int8 multiply-add rate ---------------------------------------------- */

#define INT8_ITERS 100000000ull /* x 12 instructions: ~0.6 s at 2 per cycle, 4 GHz */
#define NACC 12

typedef struct i8_job {
    int isa;
    double seconds;
    int32_t sink;
} i8_job;

enum { ISA_NONE, ISA_AVX512VNNI, ISA_AVXVNNI, ISA_AVX2, ISA_SDOT, ISA_AMX /* amx mode only */ };
static const char *ISA_NAME[] = {"none", "avx512_vnni", "avx_vnni", "avx2", "neon_dotprod"};
/* int8 multiply-adds per instruction group of each loop body below */
static const double MACS_PER_STEP[] = {0, 64.0 * NACC, 32.0 * NACC, 32.0 * NACC, 16.0 * NACC};

#if defined(__x86_64__)
/* The two VNNI loops are written in assembly so that the compiler cannot
 * shuffle the accumulators between registers (it did, with intrinsics):
 * 12 independent vpdpbusd per iteration into zmm/ymm 2..13, sources in 0
 * and 1. Latency 5, two per cycle: 10 in flight keep both ports busy. */
#define DP12(op, r) \
    op " %%" r "1, %%" r "0, %%" r "2\n\t" op " %%" r "1, %%" r "0, %%" r "3\n\t" \
    op " %%" r "1, %%" r "0, %%" r "4\n\t" op " %%" r "1, %%" r "0, %%" r "5\n\t" \
    op " %%" r "1, %%" r "0, %%" r "6\n\t" op " %%" r "1, %%" r "0, %%" r "7\n\t" \
    op " %%" r "1, %%" r "0, %%" r "8\n\t" op " %%" r "1, %%" r "0, %%" r "9\n\t" \
    op " %%" r "1, %%" r "0, %%" r "10\n\t" op " %%" r "1, %%" r "0, %%" r "11\n\t" \
    op " %%" r "1, %%" r "0, %%" r "12\n\t" op " %%" r "1, %%" r "0, %%" r "13\n\t"

__attribute__((target("avx512f,avx512vnni"))) static int32_t loop_avx512vnni(void) {
    uint64_t n = INT8_ITERS;
    __asm__ volatile("vpternlogd $0xff, %%zmm0, %%zmm0, %%zmm0\n\t"
                     "vpternlogd $0xff, %%zmm1, %%zmm1, %%zmm1\n\t"
                     "1:\n\t" DP12("vpdpbusd", "zmm") "dec %0\n\tjnz 1b\n\t"
                     : "+r"(n)
                     :
                     : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
                       "xmm10", "xmm11", "xmm12", "xmm13", "cc");
    return (int32_t)n;
}

__attribute__((target("avx2,avxvnni"))) static int32_t loop_avxvnni(void) {
    uint64_t n = INT8_ITERS;
    __asm__ volatile("vpcmpeqd %%ymm0, %%ymm0, %%ymm0\n\t"
                     "vpcmpeqd %%ymm1, %%ymm1, %%ymm1\n\t"
                     "1:\n\t" DP12("%{vex%} vpdpbusd", "ymm") "dec %0\n\tjnz 1b\n\t"
                     : "+r"(n)
                     :
                     : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
                       "xmm10", "xmm11", "xmm12", "xmm13", "cc");
    return (int32_t)n;
}

/* AVX2 has no int8 dot product: vpmaddubsw (u8 x s8 pairs to s16) then
 * vpmaddwd against ones (s16 pairs to s32) then vpaddd, per 32 MACs. */
__attribute__((target("avx2"))) static int32_t loop_avx2(void) {
    __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(5), one = _mm256_set1_epi16(1), acc[NACC];
    for (int k = 0; k < NACC; k++) acc[k] = _mm256_set1_epi32(k);
    for (uint64_t i = 0; i < INT8_ITERS; i++) {
        for (int k = 0; k < NACC; k++)
            acc[k] = _mm256_add_epi32(acc[k], _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), one));
        __asm__ volatile("" : "+v"(a));
    }
    __m256i s = acc[0];
    for (int k = 1; k < NACC; k++) s = _mm256_add_epi32(s, acc[k]);
    return _mm256_extract_epi32(s, 0);
}
#endif

#if defined(__aarch64__)
__attribute__((target("+dotprod"))) static int32_t loop_sdot(void) {
    int8x16_t a = vdupq_n_s8(3), b = vdupq_n_s8(5);
    int32x4_t acc[NACC];
    for (int k = 0; k < NACC; k++) acc[k] = vdupq_n_s32(k);
    for (uint64_t i = 0; i < INT8_ITERS; i++) {
        for (int k = 0; k < NACC; k++) acc[k] = vdotq_s32(acc[k], a, b);
        __asm__ volatile("" : "+w"(a));
    }
    int32x4_t s = acc[0];
    for (int k = 1; k < NACC; k++) s = vaddq_s32(s, acc[k]);
    return vaddvq_s32(s);
}
#endif

#if defined(__x86_64__) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#define AMX_ITERS 20000000ull /* x 4 products of 16 x 16 x 32 */

/* LDTILECFG operand, palette 1: tiles 0-3 sums (16 x 64 bytes), 4 the
 * 16 x 32-byte A operand, 5 the 8 x 64-byte B operand. */
typedef struct amx_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_config;

static int amx_usable(void) {
    unsigned a = 0, b = 0, c = 0, d = 0;
    __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(0));
    if (!((d >> 24) & 1) || !((d >> 25) & 1)) return 0; /* AMX-TILE, AMX-INT8 */
    /* ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA */
    return syscall(SYS_arch_prctl, 0x1023, 18) == 0;
}

__attribute__((target("amx-tile,amx-int8"))) static int32_t loop_amx(void) {
    amx_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int i = 0; i < 4; i++) {
        cfg.rows[i] = 16;
        cfg.colsb[i] = 64;
    }
    cfg.rows[4] = 16;
    cfg.colsb[4] = 32;
    cfg.rows[5] = 8;
    cfg.colsb[5] = 64;
    static const int8_t ones[16 * 64] = {1};
    int32_t out[16 * 16];
    _tile_loadconfig(&cfg);
    _tile_loadd(4, ones, 32);
    _tile_loadd(5, ones, 64);
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (uint64_t i = 0; i < AMX_ITERS; i++) {
        _tile_dpbssd(0, 4, 5);
        _tile_dpbssd(1, 4, 5);
        _tile_dpbssd(2, 4, 5);
        _tile_dpbssd(3, 4, 5);
    }
    _tile_stored(0, out, 64);
    _tile_release();
    return out[0];
}
#endif

static int detect_isa(void) {
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512vnni")) return ISA_AVX512VNNI;
    /* AVX-VNNI: CPUID.(EAX=7,ECX=1):EAX bit 4 */
    unsigned a = 0, b = 0, c = 0, d = 0;
    __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(1));
    if ((a >> 4) & 1) return ISA_AVXVNNI;
    if (__builtin_cpu_supports("avx2")) return ISA_AVX2;
    return ISA_NONE;
#elif defined(__aarch64__)
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[1024];
    int found = 0;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "Features", 8) && strstr(line, " asimddp")) found = 1;
    if (f) fclose(f);
    return found ? ISA_SDOT : ISA_NONE;
#else
    return ISA_NONE;
#endif
}

static void *i8_thread(void *arg) {
    i8_job *j = arg;
    double t0 = thread_cpu_s();
    switch (j->isa) {
#if defined(__x86_64__)
    case ISA_AVX512VNNI: j->sink = loop_avx512vnni(); break;
    case ISA_AVXVNNI: j->sink = loop_avxvnni(); break;
    case ISA_AVX2: j->sink = loop_avx2(); break;
#endif
#if defined(__x86_64__) && defined(__linux__)
    case ISA_AMX: j->sink = loop_amx(); break;
#endif
#if defined(__aarch64__)
    case ISA_SDOT: j->sink = loop_sdot(); break;
#endif
    default: break;
    }
    j->seconds = thread_cpu_s() - t0;
    return NULL;
}

/* The loop of `isa` on `threads` threads at once; returns the slowest
 * thread's CPU seconds, *sink the xor of the loops' results. */
static double run_loops(int isa, int threads, int32_t *sink) {
    pthread_t th[64];
    i8_job jobs[64];
    for (int t = 0; t < threads; t++) {
        jobs[t] = (i8_job){.isa = isa};
        pthread_create(&th[t], NULL, i8_thread, &jobs[t]);
    }
    double worst = 0;
    *sink = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(th[t], NULL);
        if (jobs[t].seconds > worst) worst = jobs[t].seconds;
        *sink ^= jobs[t].sink;
    }
    return worst;
}

static int run_amx(int threads) {
#if defined(__x86_64__) && defined(__linux__)
    if (amx_usable()) {
        int32_t sink;
        const double worst = run_loops(ISA_AMX, threads, &sink);
        const double macs = 4.0 * 16 * 16 * 32 * (double)AMX_ITERS * threads;
        printf("amx_threads %d\namx_gops %.1f\namx_sink %d\n", threads, 2.0 * macs / worst / 1e9, sink & 1);
        return 0;
    }
#endif
    (void)threads;
    printf("amx_gops 0\n");
    return 0;
}

static int run_int8(int threads) {
    int isa = detect_isa();
    printf("int8_isa %s\n", ISA_NAME[isa]);
    if (isa == ISA_NONE) {
        printf("int8_gops 0\n");
        return 0;
    }
    int32_t sink;
    const double worst = run_loops(isa, threads, &sink);
    double macs = MACS_PER_STEP[isa] * (double)INT8_ITERS * threads;
    printf("int8_threads %d\nint8_gops %.1f\nint8_sink %d\n", threads, 2.0 * macs / worst / 1e9, sink & 1);
    return 0;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    int threads = argc > 2 ? atoi(argv[2]) : 2;
    if (threads < 1 || threads > 64) threads = 2;
    if (!strcmp(mode, "bw")) {
        long mib = argc > 3 ? atol(argv[3]) : 1024;
        int passes = argc > 4 ? atoi(argv[4]) : 8;
        if (mib < 1) mib = 1024;
        if (passes < 1) passes = 8;
        return run_bw(threads, (size_t)mib, passes);
    }
    if (!strcmp(mode, "clock")) return run_clock(threads);
    if (!strcmp(mode, "int8")) return run_int8(threads);
    if (!strcmp(mode, "amx")) return run_amx(threads);
    fprintf(stderr, "usage: machine_probe bw|clock|int8|amx [THREADS] [MIB] [PASSES]\n");
    return 2;
}
