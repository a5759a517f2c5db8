/*
 * llamacpp_lora_bench.c — the peer's side of bench/lora_run.sh: what
 * bench_lora.c measures in petrel, measured the same way in llama.cpp
 * through its C API (linked by lora_run.sh against the build of
 * bench/build_llamacpp.sh; not part of petrel): the time of
 * llama_set_adapters_lora over SWITCHES switches cycling {A}, {B}, {A,B},
 * {}, and prefill / decode tokens/s with no adapter, A, and A+B (the
 * median of ROUNDS rounds, every configuration in turn each round).
 *
 *   llamacpp_lora_bench MODEL A.gguf B.gguf THREADS PROMPT GEN SWITCHES ROUNDS
 *
 * Prints bench_lora.c's lines: rss_kib base|a|b, switch_us median|worst,
 * prefill|decode none|a|ab, decode_cpu_ms none|a|ab (process CPU time per
 * decoded token on a one-thread context). The tokens are bench_lora.c's
 * fixed ids.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "llama.h"

static void quiet(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double decode_cpu_ms(struct llama_context *ctx, int n_gen) {
    llama_token first[4] = {100, 101, 102, 103};
    llama_memory_clear(llama_get_memory(ctx), true);
    if (llama_decode(ctx, llama_batch_get_one(first, 4)) != 0) exit(1);
    const double t0 = cpu_s();
    for (int i = 0; i < n_gen; i++) {
        llama_token t = 200 + i % 500;
        if (llama_decode(ctx, llama_batch_get_one(&t, 1)) != 0) exit(1);
        (void)llama_get_logits_ith(ctx, -1);
    }
    return 1e3 * (cpu_s() - t0) / n_gen;
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

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void speed(struct llama_context *ctx, int n_prompt, int n_gen, double *prefill, double *decode) {
    llama_token *toks = malloc((size_t)n_prompt * sizeof *toks);
    for (int i = 0; i < n_prompt; i++) toks[i] = 100 + (i * 37) % 1000;
    llama_memory_clear(llama_get_memory(ctx), true);
    double t0 = now_s();
    if (llama_decode(ctx, llama_batch_get_one(toks, n_prompt)) != 0) exit(1);
    (void)llama_get_logits_ith(ctx, -1);
    double t1 = now_s();
    *prefill = n_prompt / (t1 - t0);
    for (int i = 0; i < n_gen; i++) {
        llama_token t = 200 + i % 500;
        if (llama_decode(ctx, llama_batch_get_one(&t, 1)) != 0) exit(1);
        (void)llama_get_logits_ith(ctx, -1);
    }
    *decode = n_gen / (now_s() - t1);
    free(toks);
}

int main(int argc, char **argv) {
    if (argc != 9) {
        fprintf(stderr, "usage: %s MODEL A.gguf B.gguf THREADS PROMPT GEN SWITCHES ROUNDS\n", argv[0]);
        return 1;
    }
    const int threads = atoi(argv[4]), n_prompt = atoi(argv[5]), n_gen = atoi(argv[6]), n_switch = atoi(argv[7]),
              rounds = atoi(argv[8]);
    if (threads < 1 || n_prompt < 1 || n_gen < 1 || n_switch < 4 || rounds < 1) return 1;
    setvbuf(stdout, NULL, _IOLBF, 0); /* each figure out as it is measured */
    llama_log_set(quiet, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    struct llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model) return 1;
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = n_prompt + n_gen + 8;
    cp.n_batch = n_prompt;
    cp.n_ubatch = n_prompt;
    cp.n_threads = cp.n_threads_batch = threads;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    cp.n_threads = cp.n_threads_batch = 1;
    struct llama_context *ctx1 = llama_init_from_model(model, cp);
    if (!ctx || !ctx1) return 1;
    double p, d;
    speed(ctx, n_prompt, 4, &p, &d); /* every base page touched */
    printf("rss_kib base %ld\n", rss_kib());
    struct llama_adapter_lora *ab[2];
    for (int i = 0; i < 2; i++) {
        if (!(ab[i] = llama_adapter_lora_init(model, argv[2 + i]))) {
            fprintf(stderr, "llama.cpp could not load the adapter %s\n", argv[2 + i]);
            return 1;
        }
        printf("rss_kib %s %ld\n", i ? "b" : "a", rss_kib());
    }
    float ones[2] = {1.0f, 1.0f};
    if (llama_set_adapters_lora(ctx, ab, 2, ones) != 0) return 1;
    speed(ctx, 16, 2, &p, &d);

    double *dt = malloc((size_t)n_switch * sizeof *dt);
    /* SWITCHES switches, or as many as SWITCH_BUDGET_S seconds allow */
    const double t_end = now_s() + SWITCH_BUDGET_S;
    int done = 0;
    for (int i = 0; i < n_switch && (i < 4 || now_s() < t_end); i++, done++) {
        const int k = i % 4;
        struct llama_adapter_lora **set = k == 1 ? &ab[1] : ab;
        const size_t n = k == 3 ? 0 : k == 2 ? 2 : 1;
        const double t0 = now_s();
        const int32_t rc = llama_set_adapters_lora(ctx, set, n, ones);
        dt[i] = now_s() - t0;
        if (rc != 0) return 1;
    }
    qsort(dt, (size_t)done, sizeof *dt, cmp_double);
    printf("switch_us median %.3f\nswitch_us worst %.3f\nswitch_count %d\n", 1e6 * dt[done / 2], 1e6 * dt[done - 1],
           done);
    free(dt);

    static const char *names[3] = {"none", "a", "ab"};
    double *pre = malloc((size_t)3 * rounds * sizeof *pre), *dec = malloc((size_t)3 * rounds * sizeof *dec),
           *ms = malloc((size_t)3 * rounds * sizeof *ms);
    for (int round = 0; round < rounds; round++)
        for (int cfg = 0; cfg < 3; cfg++) {
            if (llama_set_adapters_lora(ctx, ab, (size_t)cfg, ones) != 0) return 1;
            if (llama_set_adapters_lora(ctx1, ab, (size_t)cfg, ones) != 0) return 1;
            speed(ctx, n_prompt, n_gen, &pre[cfg * rounds + round], &dec[cfg * rounds + round]);
            ms[cfg * rounds + round] = decode_cpu_ms(ctx1, n_gen);
        }
    for (int cfg = 0; cfg < 3; cfg++) {
        qsort(pre + cfg * rounds, (size_t)rounds, sizeof *pre, cmp_double);
        qsort(dec + cfg * rounds, (size_t)rounds, sizeof *dec, cmp_double);
        qsort(ms + cfg * rounds, (size_t)rounds, sizeof *ms, cmp_double);
        printf("prefill %s %.2f\ndecode %s %.2f\ndecode_cpu_ms %s %.3f\n", names[cfg], pre[cfg * rounds + rounds / 2],
               names[cfg], dec[cfg * rounds + rounds / 2], names[cfg], ms[cfg * rounds + rounds / 2]);
    }
    free(pre);
    free(dec);
    free(ms);
    llama_set_adapters_lora(ctx, NULL, 0, NULL);
    llama_adapter_lora_free(ab[0]);
    llama_adapter_lora_free(ab[1]);
    llama_set_adapters_lora(ctx1, NULL, 0, NULL);
    llama_free(ctx1);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
