/*
 * ocl_tune.c — gemm.cl's tile chosen per device by timing, as MNN tunes its
 * work sizes at first use: every tile of `tiles` runs the same Q4_0
 * product, the fastest is kept and written to `<cache>/<key>.tune`, which
 * later opens read instead of timing again (a new driver or new kernel
 * sources make a new key, so they are timed anew).
 *
 * The file is one line, "gemm ROWS TOKENS", then the timings as a comment.
 */
#include "ocl_impl.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "quant.h"

/* the default first; then the tile tests also build (test_opencl_ops) */
static const int tiles[][2] = {{64, 64}, {128, 128}, {128, 64}, {64, 128}};
#define N_TILES (int)(sizeof tiles / sizeof *tiles)

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void tune_path(const pt_ocl *o, char *out, size_t cap) {
    char key[32];
    pt_ocl_device_key(o, key, sizeof key);
    snprintf(out, cap, "%s/%s.tune", o->cache_dir, key);
}

/* The tile the file names, or -1 (no file, or not one of `tiles`). */
static int read_tune(const char *path) {
    /* any of `tiles`, also one a shorter list did not time */
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int m = 0, n = 0, found = -1;
    if (fscanf(f, "gemm %d %d", &m, &n) == 2)
        for (int i = 0; i < N_TILES; i++)
            if (tiles[i][0] == m && tiles[i][1] == n) found = i;
    fclose(f);
    return found;
}

/* Seconds for `reps` products with the program's current tile (after one
 * untimed run), or a negative status. */
static double time_product(pt_ocl *o, pt_ocl_mem *w, int rows, int cols, pt_ocl_mem *x, int n,
                           pt_ocl_mem *y, int reps) {
    double t0 = 0;
    for (int r = 0; r <= reps; r++) {
        int st = pt_ocl_matmul(o, PT_TYPE_Q4_0, w, rows, cols, x, n, y);
        if (st != 0) return st;
        if (r == 0) {
            if ((st = pt_ocl_finish(o)) != 0) return st;
            t0 = now_s();
        }
    }
    const int st = pt_ocl_finish(o);
    return st != 0 ? st : now_s() - t0;
}

int pt_ocl_tune(pt_ocl *o, int rows, int cols, int n, int n_tiles, bool retime) {
    if (n_tiles < 1 || n_tiles > N_TILES) n_tiles = N_TILES;
    o->tuned_from_file = false;
    char path[700] = "";
    if (*o->cache_dir) tune_path(o, path, sizeof path);
    const int known = *path && !retime ? read_tune(path) : -1;
    if (known >= 0) {
        o->tuned_from_file = true;
        if (o->gemm_m == tiles[known][0] && o->gemm_n == tiles[known][1]) return 0;
        return pt_ocl_rebuild(o, tiles[known][0], tiles[known][1]);
    }
    /* zero weights and inputs: the time does not depend on the values */
    const size_t wbytes = pt_type_row_bytes(PT_TYPE_Q4_0, cols) * (size_t)rows;
    pt_ocl_mem *w = pt_ocl_alloc(o, wbytes, NULL, false);
    pt_ocl_mem *x = pt_ocl_alloc(o, (size_t)n * cols * sizeof(float), NULL, false);
    pt_ocl_mem *y = pt_ocl_alloc(o, (size_t)n * rows * sizeof(float), NULL, false);
    const bool cpu = o->cpu;
    o->cpu = false; /* the GPUs' kernels, also when a test tunes on PoCL */
    double secs[N_TILES];
    int best = -1, st = w && x && y ? 0 : CL_MEM_OBJECT_ALLOCATION_FAILURE;
    for (int i = 0; i < n_tiles && st == 0; i++) {
        if ((st = pt_ocl_rebuild(o, tiles[i][0], tiles[i][1])) != 0) break;
        secs[i] = o->gemm ? time_product(o, w, rows, cols, x, n, y, 3) : 1e30;
        if (secs[i] < 0) st = (int)secs[i];
        else if (best < 0 || secs[i] < secs[best]) best = i;
    }
    o->cpu = cpu;
    pt_ocl_free(w);
    pt_ocl_free(x);
    pt_ocl_free(y);
    if (st != 0) return st;
    if (*path) {
        FILE *f = fopen(path, "w");
        if (f) {
            fprintf(f, "gemm %d %d\n# Q4_0 %d x %d by %d tokens, 3 products:", tiles[best][0], tiles[best][1],
                    rows, cols, n);
            for (int i = 0; i < n_tiles; i++) fprintf(f, " %dx%d %.3f ms", tiles[i][0], tiles[i][1], secs[i] * 1e3);
            fprintf(f, "\n");
            fclose(f);
        }
    }
    if (best == n_tiles - 1) return 0; /* built last */
    return pt_ocl_rebuild(o, tiles[best][0], tiles[best][1]);
}
