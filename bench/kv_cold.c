/*
 * kv_cold.c — decode with the KV cache spilled to disk, page cache warm
 * and cold (issue 15's "cold-cache figure"), through the public API.
 *
 *   kv_cold MODEL DEPTH N_GEN THREADS BUDGET_MB KV_TYPE SPILL_DIR [ROUNDS]
 *
 * Fills two contexts with the same DEPTH tokens, one under a RAM budget
 * of BUDGET_MB (so most of the cache goes to a spill file in SPILL_DIR),
 * one without a budget, then decodes N_GEN tokens per round, each one
 * call a token:
 *   warm   on the spilled context: the spill file's pages stay in the
 *          page cache, so they are read in place from memory
 *   none   the same tokens on the context without a budget
 * alternately for ROUNDS rounds (default 1), so that a shared machine's
 * changing load falls on both alike; then
 *   cold   on the spilled context, before each token: sync, then drop the
 *          page cache (writes 1 to /proc/sys/vm/drop_caches, which needs
 *          root), so every spilled page of that token comes from the
 *          storage device
 * and prints one "key value" line each: "round R warm_tps none_tps",
 * "warm_tps" and "none_tps" (over all rounds), "ratio_median" (of the
 * rounds' warm / none), "warm_io_per_token" (bytes the process moved
 * through read and write calls, rchar and wchar of /proc/self/io, over
 * the warm decode calls, per token: the spill file's read-backs and
 * write-outs, since pages read in place through the mapping are not read
 * calls; -1 -1 where /proc/self/io is missing), "cold_tps",
 * "cold_first_ms" (the first cold token), and "kv" with the engine's
 * counters after the cold run. The
 * cold tokens' time includes only the decode call, not the sync and the
 * drop. Exits 1 with a line on stderr when the page cache cannot be
 * dropped.
 */
#include "petrel.h"
#include "bench_context.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *what, const pt_error *err) { bench_die("kv_cold", what, err); }

/* rchar and wchar of /proc/self/io: bytes through read and write calls
 * (page cache hits included). -1 when unreadable. */
static void io_chars(long long *rchar, long long *wchar) {
    *rchar = *wchar = -1;
    FILE *f = fopen("/proc/self/io", "r");
    if (!f) return;
    char key[64];
    long long v;
    while (fscanf(f, "%63[^:]: %lld\n", key, &v) == 2) {
        if (!strcmp(key, "rchar")) *rchar = v;
        if (!strcmp(key, "wchar")) *wchar = v;
    }
    fclose(f);
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
    pt_context_params cp = pt_context_default_params();
    cp.n_threads = threads;
    cp.kv_type = (pt_kv_type)type;
    cp.kv_ram_mb = budget_mb;
    cp.kv_spill_dir = dir;
    return bench_filled("kv_cold", m, cp, depth);
}

/* n tokens one call each (token ids from `from` on); cold: drop the page
 * cache before each. Returns tokens/s of the decode calls alone;
 * *first_ms the first call's time; adds to io (when not NULL) the rchar
 * and wchar the calls moved. */
static double run(pt_context *c, int n, int from, int cold, double *first_ms, long long io[2]) {
    pt_error err = {0};
    double busy = 0;
    for (int i = 0; i < n; i++) {
        if (cold && drop_page_cache() != 0) {
            fprintf(stderr, "kv_cold: cannot drop the page cache (/proc/sys/vm/drop_caches needs root)\n");
            exit(1);
        }
        const pt_token t = (pt_token)(200 + (from + i) % 500);
        long long r0, w0, r1, w1;
        io_chars(&r0, &w0);
        const double t0 = now_s();
        if (pt_decode(c, &t, 1, NULL, &err) != PT_OK) die("decode", &err);
        const double dt = now_s() - t0;
        io_chars(&r1, &w1);
        if (io && r0 >= 0 && r1 >= 0) {
            io[0] += r1 - r0;
            io[1] += w1 - w0;
        }
        if (i == 0 && first_ms) *first_ms = 1e3 * dt;
        busy += dt;
    }
    return n / busy;
}

int main(int argc, char **argv) {
    if (argc != 8 && argc != 9) {
        fprintf(stderr, "usage: kv_cold MODEL DEPTH N_GEN THREADS BUDGET_MB KV_TYPE SPILL_DIR [ROUNDS]\n");
        return 2;
    }
    const int depth = atoi(argv[2]), n_gen = atoi(argv[3]), threads = atoi(argv[4]), budget = atoi(argv[5]);
    const int type = pt_kv_type_from_name(argv[6]);
    const int rounds = argc == 9 ? atoi(argv[8]) : 1;
    if (rounds < 1 || rounds > 64 || n_gen < 1) {
        fprintf(stderr, "kv_cold: ROUNDS must be 1..64 and N_GEN at least 1\n");
        return 2;
    }
    if (type < 0) {
        fprintf(stderr, "kv_cold: unknown KV type '%s'\n", argv[6]);
        return 2;
    }
    pt_error err = {0};
    pt_model_params mp = pt_model_default_params();
    pt_model *m = NULL;
    if (pt_model_load(argv[1], &mp, &m, &err) != PT_OK) die(argv[1], &err);

    pt_context *c = filled(m, depth, threads, budget, type, argv[7]);
    pt_context *c0 = filled(m, depth, threads, 0, type, NULL);
    double warm_s = 0, none_s = 0, ratio[64];
    long long io[2] = {0, 0}, probe_r, probe_w;
    io_chars(&probe_r, &probe_w);
    for (int r = 0; r < rounds; r++) {
        const double w = run(c, n_gen, r * n_gen, 0, NULL, io), z = run(c0, n_gen, r * n_gen, 0, NULL, NULL);
        printf("round %d warm_tps %.2f none_tps %.2f\n", r, w, z);
        fflush(stdout);
        warm_s += n_gen / w;
        none_s += n_gen / z;
        ratio[r] = w / z;
        for (int i = r; i > 0 && ratio[i] < ratio[i - 1]; i--) { /* insertion sort */
            const double t = ratio[i];
            ratio[i] = ratio[i - 1];
            ratio[i - 1] = t;
        }
    }
    pt_context_free(c0);
    printf("warm_tps %.2f\n", rounds * n_gen / warm_s);
    printf("none_tps %.2f\n", rounds * n_gen / none_s);
    printf("ratio_median %.3f\n", rounds % 2 ? ratio[rounds / 2] : (ratio[rounds / 2 - 1] + ratio[rounds / 2]) / 2);
    if (probe_r >= 0)
        printf("warm_io_per_token %lld %lld\n", io[0] / (rounds * n_gen), io[1] / (rounds * n_gen));
    else
        printf("warm_io_per_token -1 -1\n");
    double first = 0;
    printf("cold_tps %.2f\n", run(c, n_gen, rounds * n_gen, 1, &first, NULL));
    printf("cold_first_ms %.1f\n", first);
    pt_kv_stats st;
    pt_context_kv_stats(c, &st);
    printf("kv ram %llu disk %llu mapped %llu read_ahead %llu hits %llu stalls %llu\n", (unsigned long long)st.ram_bytes,
           (unsigned long long)st.disk_bytes, (unsigned long long)st.mapped_bytes, (unsigned long long)st.pages_read_ahead,
           (unsigned long long)st.read_hits, (unsigned long long)st.read_stalls);
    pt_context_free(c);
    pt_model_free(m);
    return 0;
}
