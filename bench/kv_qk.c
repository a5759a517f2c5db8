/*
 * kv_qk.c — decode speed of the int8 Q·K path against float keys (issue
 * 15), side by side in one process, through the public API.
 *
 *   kv_qk MODEL DEPTH N_GEN THREADS KV_TYPE ROUNDS
 *
 * Fills two contexts of KV_TYPE (q8 or q8f8) with the same DEPTH tokens,
 * one with pt_context_params.kv_qk = PT_KV_QK_FLOAT (keys decoded to
 * float for the float kernel), one with PT_KV_QK_INT8 (queries quantized,
 * integer dot products), then decodes N_GEN tokens on each, one call a
 * token, alternately for ROUNDS rounds, so a shared machine's changing
 * load falls on both alike. Prints "round R float_tps F int8_tps I",
 * then "float_tps" and "int8_tps" over all rounds, "ratio_median" (the
 * median round's int8 / float) and "best_ratio" (the fastest int8 round
 * over the fastest float round: on a loaded machine the rounds least
 * disturbed).
 */
#include "petrel.h"
#include "bench_context.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *what, const pt_error *err) { bench_die("kv_qk", what, err); }

static pt_context *filled(pt_model *m, int depth, int threads, int type, pt_kv_qk qk) {
    pt_context_params cp = pt_context_default_params();
    cp.n_threads = threads;
    cp.kv_type = (pt_kv_type)type;
    cp.kv_qk = qk;
    return bench_filled("kv_qk", m, cp, depth);
}

/* n tokens one call each (token ids from `from` on): tokens/s of the calls */
static double run(pt_context *c, int n, int from) {
    pt_error err = {0};
    double busy = 0;
    for (int i = 0; i < n; i++) {
        const pt_token t = (pt_token)(200 + (from + i) % 500);
        const double t0 = now_s();
        if (pt_decode(c, &t, 1, NULL, &err) != PT_OK) die("decode", &err);
        busy += now_s() - t0;
    }
    return n / busy;
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: kv_qk MODEL DEPTH N_GEN THREADS KV_TYPE ROUNDS\n");
        return 2;
    }
    const int depth = atoi(argv[2]), n_gen = atoi(argv[3]), threads = atoi(argv[4]), rounds = atoi(argv[6]);
    const int type = pt_kv_type_from_name(argv[5]);
    if (rounds < 1 || rounds > 64 || n_gen < 1 || depth < 1) {
        fprintf(stderr, "kv_qk: DEPTH and N_GEN must be at least 1 and ROUNDS 1..64\n");
        return 2;
    }
    if (type != PT_KV_Q8 && type != PT_KV_Q8F8) {
        fprintf(stderr, "kv_qk: KV_TYPE must be q8 or q8f8, not '%s'\n", argv[5]);
        return 2;
    }
    pt_error err = {0};
    pt_model_params mp = pt_model_default_params();
    pt_model *m = NULL;
    if (pt_model_load(argv[1], &mp, &m, &err) != PT_OK) die(argv[1], &err);
    pt_context *cf = filled(m, depth, threads, type, PT_KV_QK_FLOAT);
    pt_context *ci = filled(m, depth, threads, type, PT_KV_QK_INT8);
    double f_s = 0, i_s = 0, ratio[64], f_best = 0, i_best = 0;
    for (int r = 0; r < rounds; r++) {
        /* the order alternates too, so neither always runs first */
        double f, i;
        if (r % 2) {
            i = run(ci, n_gen, r * n_gen);
            f = run(cf, n_gen, r * n_gen);
        } else {
            f = run(cf, n_gen, r * n_gen);
            i = run(ci, n_gen, r * n_gen);
        }
        printf("round %d float_tps %.2f int8_tps %.2f\n", r, f, i);
        fflush(stdout);
        f_best = f > f_best ? f : f_best;
        i_best = i > i_best ? i : i_best;
        f_s += n_gen / f;
        i_s += n_gen / i;
        ratio[r] = i / f;
        for (int k = r; k > 0 && ratio[k] < ratio[k - 1]; k--) { /* insertion sort */
            const double t = ratio[k];
            ratio[k] = ratio[k - 1];
            ratio[k - 1] = t;
        }
    }
    printf("float_tps %.2f\n", rounds * n_gen / f_s);
    printf("int8_tps %.2f\n", rounds * n_gen / i_s);
    printf("ratio_median %.3f\n", rounds % 2 ? ratio[rounds / 2] : (ratio[rounds / 2 - 1] + ratio[rounds / 2]) / 2);
    printf("best_ratio %.3f\n", i_best / f_best);
    pt_context_free(cf);
    pt_context_free(ci);
    pt_model_free(m);
    return 0;
}
