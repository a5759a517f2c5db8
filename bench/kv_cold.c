/*
 * kv_cold.c — decode with the KV cache spilled to disk, page cache warm
 * and cold (issue 15's "cold-cache figure"), through the public API.
 *
 *   kv_cold MODEL DEPTH N_GEN THREADS BUDGET_MB KV_TYPE SPILL_DIR
 *
 * Fills a context with DEPTH tokens under a RAM budget of BUDGET_MB (so
 * most of the cache goes to a spill file in SPILL_DIR), then decodes
 * N_GEN tokens three ways, each one call a token:
 *   warm   one after another: the spill file's pages stay in the page
 *          cache, so read-back is a copy from memory
 *   cold   before each token: sync, then drop the page cache (writes 1
 *          to /proc/sys/vm/drop_caches, which needs root), so every
 *          spilled page of that token comes from the storage device
 *   none   the same tokens on a context without a budget (nothing spilled)
 * and prints one "key value" line each: "warm_tps", "cold_tps",
 * "none_tps", "cold_first_ms" (the first cold token), and "kv" with the
 * engine's counters after the cold run. The cold tokens' time includes
 * only the decode call, not the sync and the drop. Exits 1 with a line
 * on stderr when the page cache cannot be dropped.
 */
#include "petrel.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *what, const pt_error *err) {
    fprintf(stderr, "kv_cold: %s: %s\n", what, err ? err->msg : "failed");
    exit(1);
}

static int drop_page_cache(void) {
    sync();
    FILE *f = fopen("/proc/sys/vm/drop_caches", "w");
    if (!f) return -1;
    const int ok = fputs("1\n", f) >= 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

static pt_context *filled(pt_model *m, int depth, int threads, int budget_mb, int type,
                          const char *dir) {
    pt_error err = {0};
    pt_context_params cp = pt_context_default_params();
    cp.n_ctx = depth + 1024;
    cp.n_threads = threads;
    cp.kv_type = (pt_kv_type)type;
    cp.kv_ram_mb = budget_mb;
    cp.kv_spill_dir = dir;
    pt_context *c = NULL;
    if (pt_context_new(m, &cp, &c, &err) != PT_OK) die("context", &err);
    pt_token *toks = malloc((size_t)depth * sizeof *toks);
    if (!toks) die("out of memory", NULL);
    for (int i = 0; i < depth; i++) toks[i] = (pt_token)(100 + (i * 7919) % 20000);
    if (pt_decode(c, toks, depth, NULL, &err) != PT_OK) die("prefill", &err);
    free(toks);
    return c;
}

/* n tokens one call each; cold: drop the page cache before each. Returns
 * tokens/s of the decode calls alone; *first_ms the first call's time. */
static double run(pt_context *c, int n, int cold, double *first_ms) {
    pt_error err = {0};
    double busy = 0;
    for (int i = 0; i < n; i++) {
        if (cold && drop_page_cache() != 0) {
            fprintf(stderr, "kv_cold: cannot drop the page cache (/proc/sys/vm/drop_caches needs root)\n");
            exit(1);
        }
        const pt_token t = (pt_token)(200 + i % 500);
        const double t0 = now_s();
        if (pt_decode(c, &t, 1, NULL, &err) != PT_OK) die("decode", &err);
        const double dt = now_s() - t0;
        if (i == 0 && first_ms) *first_ms = 1e3 * dt;
        busy += dt;
    }
    return n / busy;
}

int main(int argc, char **argv) {
    if (argc != 8) {
        fprintf(stderr, "usage: kv_cold MODEL DEPTH N_GEN THREADS BUDGET_MB KV_TYPE SPILL_DIR\n");
        return 2;
    }
    const int depth = atoi(argv[2]), n_gen = atoi(argv[3]), threads = atoi(argv[4]), budget = atoi(argv[5]);
    const int type = pt_kv_type_from_name(argv[6]);
    if (type < 0) {
        fprintf(stderr, "kv_cold: unknown KV type '%s'\n", argv[6]);
        return 2;
    }
    pt_error err = {0};
    pt_model_params mp = pt_model_default_params();
    pt_model *m = NULL;
    if (pt_model_load(argv[1], &mp, &m, &err) != PT_OK) die(argv[1], &err);

    pt_context *c = filled(m, depth, threads, budget, type, argv[7]);
    double first = 0;
    printf("warm_tps %.2f\n", run(c, n_gen, 0, NULL));
    printf("cold_tps %.2f\n", run(c, n_gen, 1, &first));
    printf("cold_first_ms %.1f\n", first);
    pt_kv_stats st;
    pt_context_kv_stats(c, &st);
    printf("kv ram %llu disk %llu read_ahead %llu hits %llu stalls %llu\n", (unsigned long long)st.ram_bytes,
           (unsigned long long)st.disk_bytes, (unsigned long long)st.pages_read_ahead,
           (unsigned long long)st.read_hits, (unsigned long long)st.read_stalls);
    pt_context_free(c);

    c = filled(m, depth, threads, 0, type, NULL);
    printf("none_tps %.2f\n", run(c, n_gen, 0, NULL));
    pt_context_free(c);
    pt_model_free(m);
    return 0;
}
