/*
 * gen_lora.c — a seeded random LoRA adapter for a base model, in the GGUF
 * form llama.cpp reads (lora.h): for the bench (bench/lora_run.sh) and
 * the tests that need an adapter of a real model (test_lora_int8).
 *
 *   gen_lora BASE.gguf OUT.gguf [RANK [SEED [ALPHA [B_STD [TARGETS]]]]]
 *
 * Every layer's seven projections (attn_q/k/v/output, ffn_gate/up/down;
 * TARGETS "all", the default) or its four attention ones (TARGETS
 * "attn": q, k, v, output, PEFT's usual choice) get a pair: A [rank x cols] uniform with standard deviation 1/sqrt(cols)
 * (unit-variance x gives unit-variance A x), B [rows x rank] uniform with
 * standard deviation B_STD (default 0.04: a strong adapter, KL 0.3 from
 * the base on SmolLM2); alpha defaults to 2 * rank
 * (scale 2). Both F32. The same arguments make the same bytes.
 */
#include "gguf.h"
#include "gguf_write.h"
#include "quant.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* splitmix64: uniform in [-1, 1) */
static double next_uniform(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static const char *const ROLES[] = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"};
#define N_ROLES 7
#define MAX_PAIRS 4096

static pt_gguf_str str_of(const char *s) { return (pt_gguf_str){s, strlen(s)}; }

int main(int argc, char **argv) {
    if (argc < 3 || argc > 8) {
        fprintf(stderr, "usage: gen_lora BASE.gguf OUT.gguf [RANK [SEED [ALPHA [B_STD [all|attn]]]]]\n");
        return 2;
    }
    const int rank = argc > 3 ? atoi(argv[3]) : 16;
    uint64_t seed = argc > 4 ? strtoull(argv[4], NULL, 10) : 1;
    const double alpha = argc > 5 ? atof(argv[5]) : 2.0 * rank;
    const double b_std = argc > 6 ? atof(argv[6]) : 0.04;
    const char *targets = argc > 7 ? argv[7] : "all";
    const int n_roles = !strcmp(targets, "attn") ? 4 : N_ROLES; /* ROLES' first four */
    if (rank < 1 || rank > 1024 || !(b_std >= 0) || (strcmp(targets, "all") && strcmp(targets, "attn"))) {
        fprintf(stderr, "gen_lora: rank must be 1..1024, B_STD not negative, TARGETS all or attn\n");
        return 2;
    }
    pt_error err = {0};
    pt_gguf *g = NULL;
    if (pt_gguf_open(argv[1], &g, &err) != PT_OK) {
        fprintf(stderr, "gen_lora: %s\n", err.msg);
        return 1;
    }
    pt_gguf_str arch_s;
    if (!pt_gguf_get_str(g, "general.architecture", &arch_s) || arch_s.len >= 32) {
        fprintf(stderr, "gen_lora: %s has no general.architecture\n", argv[1]);
        pt_gguf_close(g);
        return 1;
    }
    char arch[32];
    memcpy(arch, arch_s.ptr, arch_s.len);
    arch[arch_s.len] = 0;
    /* the pairs: the base's matrices blk.N.ROLE.weight, N from 0 while found */
    static char names[2 * MAX_PAIRS][80];
    static pt_gguf_out_tensor t[2 * MAX_PAIRS];
    int n = 0;
    int64_t max_n = 0;
    for (int layer = 0; n + N_ROLES <= MAX_PAIRS; layer++) {
        int found = 0;
        for (int r = 0; r < n_roles; r++) {
            char base[64];
            snprintf(base, sizeof base, "blk.%d.%s.weight", layer, ROLES[r]);
            const pt_gguf_tensor *bt = pt_gguf_find_tensor(g, base);
            if (!bt || bt->n_dims != 2) continue;
            found++;
            const int64_t cols = bt->ne[0], rows = bt->ne[1];
            snprintf(names[2 * n], sizeof names[0], "%s.lora_a", base);
            snprintf(names[2 * n + 1], sizeof names[0], "%s.lora_b", base);
            /* lora_a: ne [cols, rank] (A [rank x cols]); lora_b: ne [rank, rows] */
            t[2 * n] = (pt_gguf_out_tensor){str_of(names[2 * n]), 2, {cols, rank, 1, 1}, PT_TYPE_F32};
            t[2 * n + 1] = (pt_gguf_out_tensor){str_of(names[2 * n + 1]), 2, {rank, rows, 1, 1}, PT_TYPE_F32};
            if (cols * rank > max_n) max_n = cols * rank;
            if (rows * rank > max_n) max_n = rows * rank;
            n++;
        }
        if (!found) break;
    }
    if (n == 0) {
        fprintf(stderr, "gen_lora: %s has no blk.N.attn_q.weight and the like\n", argv[1]);
        pt_gguf_close(g);
        return 1;
    }
    pt_gguf_value v_arch = {.type = PT_GGUF_STRING, .v.s = str_of(arch)};
    pt_gguf_value v_type = {.type = PT_GGUF_STRING, .v.s = str_of("adapter")};
    pt_gguf_value v_lora = {.type = PT_GGUF_STRING, .v.s = str_of("lora")};
    pt_gguf_value v_alpha = {.type = PT_GGUF_FLOAT32, .v.f = alpha};
    const pt_gguf_kv kv[] = {{str_of("general.architecture"), v_arch},
                             {str_of("general.type"), v_type},
                             {str_of("adapter.type"), v_lora},
                             {str_of("adapter.lora.alpha"), v_alpha}};
    float *x = malloc((size_t)max_n * sizeof *x);
    pt_gguf_writer *w = NULL;
    pt_status st = x ? pt_gguf_writer_open(argv[2], &w, &err) : PT_ERR_NOMEM;
    if (!st) st = pt_gguf_writer_header(w, kv, 4, t, (uint64_t)(2 * n), &err);
    for (int i = 0; !st && i < 2 * n; i++) {
        const int64_t cnt = t[i].ne[0] * t[i].ne[1];
        /* uniform on [-1, 1) has standard deviation 1/sqrt(3) */
        const double amp = sqrt(3.0) * (i % 2 ? b_std : 1.0 / sqrt((double)t[i].ne[0]));
        for (int64_t e = 0; e < cnt; e++) x[e] = (float)(amp * next_uniform(&seed));
        st = pt_gguf_writer_data(w, x, (size_t)cnt * sizeof *x, &err);
        if (!st) st = pt_gguf_writer_end_tensor(w, &err);
    }
    if (w) {
        if (!st) st = pt_gguf_writer_commit(w, &err);
        else pt_gguf_writer_abort(w);
    }
    free(x);
    pt_gguf_close(g);
    if (st) {
        fprintf(stderr, "gen_lora: %s: %s\n", argv[2], err.msg[0] ? err.msg : "out of memory");
        return 1;
    }
    printf("%s: %d matrices, rank %d, alpha %g\n", argv[2], n, rank, alpha);
    return 0;
}
