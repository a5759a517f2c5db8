/*
 * bench_lora.c — LoRA adapters through petrel's public API (petrel.h):
 * the time to switch the active set, prefill and decode speed with 0, 1
 * and 2 active adapters (and 1 on the float path, pt_context_params
 * .lora_f32), and memory per adapter. bench/lora_run.sh runs it beside
 * llama.cpp's bench/llamacpp_lora_bench.c and prints the ratios.
 *
 *   bench_lora MODEL A.gguf B.gguf [THREADS [PROMPT [GEN [SWITCHES [ROUNDS]]]]]
 *
 * Prints one "key value..." line per figure (parsed by lora_run.sh):
 *   rss_kib base|a|b|preswitch|switched KIB  resident set (/proc/self/
 *                                   statm) after the model ran, after loading
 *                                   A, B, before and after the switches
 *   lora_bytes a|b BYTES            the engine's report (pt_lora_info.bytes)
 *   ctx_lora_bytes BYTES            pt_context_memory with A and B active
 *   switch_us median|worst US       pt_context_set_loras over SWITCHES
 *                                   switches cycling {A}, {B}, {A,B}, {}
 *   decode_cpu_ms CONFIG MS         process CPU time per decoded token on a
 *                                   context of one thread (the work itself,
 *                                   far less moved by other processes than
 *                                   wall time on a loaded machine)
 *   prefill|decode CONFIG T/S       PROMPT tokens in one call; GEN tokens
 *                                   one call each; CONFIG none, a, ab, a_f32;
 *                                   the median of ROUNDS rounds, each round
 *                                   running every CONFIG in turn (so a change
 *                                   of the machine's load hits them all)
 * The tokens are fixed ids (the same on the peer's side): the work does
 * not depend on them.
 */
#include "petrel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The switch timer stops after this long even short of SWITCHES
 * (llama.cpp's switch costs milliseconds). */
#define SWITCH_BUDGET_S 10.0

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static long rss_kib(void) {
    long size = 0, res = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return -1;
    if (fscanf(f, "%ld %ld", &size, &res) != 2) res = -1;
    fclose(f);
    return res < 0 ? -1 : res * (sysconf(_SC_PAGESIZE) / 1024);
}

static void die(const char *what, const pt_error *err) {
    fprintf(stderr, "bench_lora: %s: %s\n", what, err->msg);
    exit(1);
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Process CPU ms per token of decoding n_gen tokens after a short prompt. */
static double decode_cpu_ms(pt_context *c, int n_gen) {
    pt_error err = {0};
    const pt_token first[4] = {100, 101, 102, 103};
    pt_context_reset(c);
    if (pt_decode(c, first, 4, NULL, &err) != PT_OK) die("prefill", &err);
    const double t0 = cpu_s();
    for (int i = 0; i < n_gen; i++) {
        const pt_token t = 200 + i % 500;
        if (pt_decode(c, &t, 1, NULL, &err) != PT_OK) die("decode", &err);
    }
    return 1e3 * (cpu_s() - t0) / n_gen;
}

/* Prefill n_prompt tokens, then decode n_gen one by one; tokens/s of each. */
static void speed(pt_context *c, int n_prompt, int n_gen, double *prefill, double *decode) {
    pt_error err = {0};
    pt_token *toks = malloc((size_t)n_prompt * sizeof *toks);
    for (int i = 0; i < n_prompt; i++) toks[i] = 100 + (i * 37) % 1000;
    pt_context_reset(c);
    double t0 = now_s();
    if (pt_decode(c, toks, n_prompt, NULL, &err) != PT_OK) die("prefill", &err);
    double t1 = now_s();
    *prefill = n_prompt / (t1 - t0);
    for (int i = 0; i < n_gen; i++) {
        const pt_token t = 200 + i % 500;
        if (pt_decode(c, &t, 1, NULL, &err) != PT_OK) die("decode", &err);
    }
    *decode = n_gen / (now_s() - t1);
    free(toks);
}

int main(int argc, char **argv) {
    if (argc < 4 || argc > 9) {
        fprintf(stderr, "usage: bench_lora MODEL A.gguf B.gguf [THREADS [PROMPT [GEN [SWITCHES [ROUNDS]]]]]\n");
        return 2;
    }
    const int threads = argc > 4 ? atoi(argv[4]) : 2, n_prompt = argc > 5 ? atoi(argv[5]) : 128,
              n_gen = argc > 6 ? atoi(argv[6]) : 64, n_switch = argc > 7 ? atoi(argv[7]) : 100000,
              rounds = argc > 8 ? atoi(argv[8]) : 5;
    if (threads < 1 || n_prompt < 1 || n_gen < 1 || n_switch < 4 || rounds < 1 || rounds > 1000) {
        fprintf(stderr, "bench_lora: THREADS, PROMPT, GEN must be positive, SWITCHES at least 4, ROUNDS 1..1000\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0); /* each figure out as it is measured */
    pt_error err = {0};
    pt_model_params mp = pt_model_default_params();
    pt_model *m = NULL;
    if (pt_model_load(argv[1], &mp, &m, &err) != PT_OK) die(argv[1], &err);
    pt_context_params cp = pt_context_default_params();
    cp.n_ctx = n_prompt + n_gen + 8;
    cp.n_threads = threads;
    pt_context *c = NULL, *cf = NULL, *c1 = NULL, *cf1 = NULL;
    if (pt_context_new(m, &cp, &c, &err) != PT_OK) die("context", &err);
    cp.lora_f32 = true;
    if (pt_context_new(m, &cp, &cf, &err) != PT_OK) die("context", &err);
    cp.n_threads = 1;
    if (pt_context_new(m, &cp, &cf1, &err) != PT_OK) die("context", &err);
    cp.lora_f32 = false;
    if (pt_context_new(m, &cp, &c1, &err) != PT_OK) die("context", &err);
    double p, d;
    speed(c, n_prompt, 4, &p, &d); /* every base page touched */
    speed(cf, n_prompt, 4, &p, &d);
    printf("rss_kib base %ld\n", rss_kib());

    pt_lora *ab[2] = {NULL, NULL};
    const char *tag[2] = {"a", "b"};
    for (int i = 0; i < 2; i++) {
        if (pt_lora_load(m, argv[2 + i], &ab[i], &err) != PT_OK) die(argv[2 + i], &err);
        pt_lora_info info;
        pt_lora_get_info(ab[i], &info);
        printf("rss_kib %s %ld\nlora_bytes %s %llu\n", tag[i], rss_kib(), tag[i], (unsigned long long)info.bytes);
    }
    if (pt_context_set_loras(c, ab, NULL, 2, &err) != PT_OK) die("set", &err);
    pt_memory_stats mem;
    pt_context_memory(c, &mem);
    printf("ctx_lora_bytes %llu\n", (unsigned long long)mem.lora_bytes);
    speed(c, 16, 2, &p, &d); /* the scratch of two adapters touched */

    /* switching: {A}, {B}, {A,B}, {} in turn */
    double *dt = malloc((size_t)n_switch * sizeof *dt);
    /* the timer's own pages resident before the "before" (a loop: malloc
     * and memset 0 may become calloc, whose fresh pages stay untouched) */
    for (int i = 0; i < n_switch; i++) dt[i] = -1.0;
    printf("rss_kib preswitch %ld\n", rss_kib());
    /* SWITCHES switches, or as many as SWITCH_BUDGET_S seconds allow */
    const double t_end = now_s() + SWITCH_BUDGET_S;
    int done = 0;
    for (int i = 0; i < n_switch && (i < 4 || now_s() < t_end); i++, done++) {
        const int k = i % 4;
        pt_lora *const *set = k == 1 ? &ab[1] : ab;
        const int n = k == 3 ? 0 : k == 2 ? 2 : 1;
        const double t0 = now_s();
        const pt_status st = pt_context_set_loras(c, set, NULL, n, &err);
        dt[i] = now_s() - t0;
        if (st != PT_OK) die("switch", &err);
    }
    qsort(dt, (size_t)done, sizeof *dt, cmp_double);
    printf("switch_us median %.3f\nswitch_us worst %.3f\nswitch_count %d\n", 1e6 * dt[done / 2], 1e6 * dt[done - 1],
           done);
    printf("rss_kib switched %ld\n", rss_kib());
    free(dt);

    /* speed: the configurations in turn, round after round */
    static const char *names[4] = {"none", "a", "ab", "a_f32"};
    double *pre = malloc((size_t)4 * rounds * sizeof *pre), *dec = malloc((size_t)4 * rounds * sizeof *dec),
           *ms = malloc((size_t)4 * rounds * sizeof *ms);
    for (int round = 0; round < rounds; round++)
        for (int cfg = 0; cfg < 4; cfg++) {
            pt_context *cc = cfg == 3 ? cf : c, *cc1 = cfg == 3 ? cf1 : c1;
            const int n = cfg == 0 ? 0 : cfg == 2 ? 2 : 1;
            if (pt_context_set_loras(cc, ab, NULL, n, &err) != PT_OK) die("set", &err);
            if (pt_context_set_loras(cc1, ab, NULL, n, &err) != PT_OK) die("set", &err);
            speed(cc, n_prompt, n_gen, &pre[cfg * rounds + round], &dec[cfg * rounds + round]);
            ms[cfg * rounds + round] = decode_cpu_ms(cc1, n_gen);
            if (pt_context_set_loras(cc, NULL, NULL, 0, &err) != PT_OK) die("set", &err);
        }
    for (int cfg = 0; cfg < 4; cfg++) {
        qsort(pre + cfg * rounds, (size_t)rounds, sizeof *pre, cmp_double);
        qsort(dec + cfg * rounds, (size_t)rounds, sizeof *dec, cmp_double);
        qsort(ms + cfg * rounds, (size_t)rounds, sizeof *ms, cmp_double);
        printf("prefill %s %.2f\ndecode %s %.2f\ndecode_cpu_ms %s %.3f\n", names[cfg], pre[cfg * rounds + rounds / 2],
               names[cfg], dec[cfg * rounds + rounds / 2], names[cfg], ms[cfg * rounds + rounds / 2]);
    }
    free(pre);
    free(dec);
    free(ms);
    fflush(stdout);
    pt_context_free(c);
    pt_context_free(cf);
    pt_context_free(c1);
    pt_context_free(cf1);
    pt_lora_free(ab[0]);
    pt_lora_free(ab[1]);
    pt_model_free(m);
    return 0;
}
