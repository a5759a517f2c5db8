/*
 * ocl_tune.c — work sizes chosen per device by timing, as MNN tunes its
 * work sizes at first use: gemm.cl's tile (every tile of `tiles` on the
 * same Q4_0 prompt product) and MM_VEC's rows a work-group (every count of
 * `vec_rows` on a decode step's feed-forward products). The fastest are
 * kept and written to `<cache>/<key>.tune`, which later opens read instead
 * of timing again (a new driver or new kernel sources make a new key, so
 * they are timed anew).
 *
 * The file: "gemm ROWS TOKENS" and "vec ROWS" lines, then the timings as a
 * comment.
 */
#include "ocl_impl.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "quant.h"

/* the defaults first, then what test_opencl_ops also builds */
static const int tiles[][2] = {{64, 64}, {128, 128}, {128, 64}, {64, 128}};
#define N_TILES (int)(sizeof tiles / sizeof *tiles)
static const int vec_rows[] = {1, 4, 2};
#define N_VEC (int)(sizeof vec_rows / sizeof *vec_rows)
/* the decode products timed: a 1.5B model's up and down projections */
#define VEC_E 1536
#define VEC_F 8960

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The tile and rows-a-group the file names: false when there is no file
 * or it names sizes not in the lists. */
static bool read_tune(const char *path, int *tile, int *vec) {
    FILE *f = fopen(path, "r");
    if (!f) return false;
    int m = 0, n = 0, v = 0;
    *tile = *vec = -1;
    if (fscanf(f, "gemm %d %d vec %d", &m, &n, &v) == 3) {
        for (int i = 0; i < N_TILES; i++)
            if (tiles[i][0] == m && tiles[i][1] == n) *tile = i;
        for (int i = 0; i < N_VEC; i++)
            if (vec_rows[i] == v) *vec = i;
    }
    fclose(f);
    return *tile >= 0 && *vec >= 0;
}

typedef struct product {
    pt_ocl_mem *w, *x, *y;
    int rows, cols, n;
} product;

static int product_new(pt_ocl *o, product *p, int rows, int cols, int n) {
    /* zero weights and inputs: the time does not depend on the values */
    *p = (product){pt_ocl_alloc(o, pt_type_row_bytes(PT_TYPE_Q4_0, cols) * (size_t)rows, NULL, false),
                   pt_ocl_alloc(o, (size_t)n * cols * sizeof(float), NULL, false),
                   pt_ocl_alloc(o, (size_t)n * rows * sizeof(float), NULL, false), rows, cols, n};
    return p->w && p->x && p->y ? 0 : CL_MEM_OBJECT_ALLOCATION_FAILURE;
}

static void product_free(product *p) {
    pt_ocl_free(p->w);
    pt_ocl_free(p->x);
    pt_ocl_free(p->y);
}

/* Seconds for `reps` rounds of the products (after one untimed round), or
 * a negative status. */
static double time_products(pt_ocl *o, const product *ps, int np, int reps) {
    double t0 = 0;
    for (int r = 0; r <= reps; r++) {
        for (int i = 0; i < np; i++) {
            const product *p = &ps[i];
            const int st = pt_ocl_matmul(o, PT_TYPE_Q4_0, p->w, p->rows, p->cols, p->x, p->n, p->y);
            if (st != 0) return st;
        }
        if (r == 0) {
            const int st = pt_ocl_finish(o);
            if (st != 0) return st;
            t0 = now_s();
        }
    }
    const int st = pt_ocl_finish(o);
    return st != 0 ? st : now_s() - t0;
}

/* Time each variant (build it, then time_products); the fastest's index,
 * or a negative status. build(o, i) builds variant i. */
static int fastest(pt_ocl *o, int count, int (*build)(pt_ocl *, int), const product *ps, int np, int reps,
                   double *secs) {
    int best = -1;
    for (int i = 0; i < count; i++) {
        int st = build(o, i);
        if (st != 0) return st < 0 ? st : -st;
        secs[i] = o->gemm ? time_products(o, ps, np, reps) : 1e30;
        if (secs[i] < 0) return (int)secs[i];
        if (best < 0 || secs[i] < secs[best]) best = i;
    }
    return best;
}

static int build_tile(pt_ocl *o, int i) { return pt_ocl_rebuild(o, tiles[i][0], tiles[i][1], o->vec_nr); }
static int build_vec(pt_ocl *o, int i) { return pt_ocl_rebuild(o, o->gemm_m, o->gemm_n, vec_rows[i]); }

int pt_ocl_tune(pt_ocl *o, int rows, int cols, int n, int n_variants, bool retime) {
    const int n_tiles = n_variants < 1 || n_variants > N_TILES ? N_TILES : n_variants;
    const int n_vec = n_variants < 1 || n_variants > N_VEC ? N_VEC : n_variants;
    o->tuned_from_file = false;
    char path[700] = "";
    if (*o->cache_dir) {
        char key[32];
        pt_ocl_device_key(o, key, sizeof key);
        snprintf(path, sizeof path, "%s/%s.tune", o->cache_dir, key);
    }
    int tile = -1, vec = -1;
    if (*path && !retime && read_tune(path, &tile, &vec)) {
        o->tuned_from_file = true;
        if (o->program && o->gemm_m == tiles[tile][0] && o->gemm_n == tiles[tile][1] && o->vec_nr == vec_rows[vec])
            return 0;
        return pt_ocl_rebuild(o, tiles[tile][0], tiles[tile][1], vec_rows[vec]);
    }
    product gemm, dec[2];
    int st = product_new(o, &gemm, rows, cols, n);
    if (st == 0) st = product_new(o, &dec[0], VEC_F, VEC_E, 1);
    if (st == 0) st = product_new(o, &dec[1], VEC_E, VEC_F, 1);
    const bool cpu = o->cpu;
    o->cpu = false; /* the GPUs' kernels, also when a test tunes on PoCL */
    double tile_s[N_TILES], vec_s[N_VEC];
    if (st == 0) tile = st = fastest(o, n_tiles, build_tile, &gemm, 1, 3, tile_s);
    if (st >= 0 && (st = pt_ocl_rebuild(o, tiles[tile][0], tiles[tile][1], vec_rows[0])) == 0)
        vec = st = fastest(o, n_vec, build_vec, dec, 2, 20, vec_s);
    o->cpu = cpu;
    product_free(&gemm);
    product_free(&dec[0]);
    product_free(&dec[1]);
    if (st < 0) return st;
    FILE *f = *path ? fopen(path, "w") : NULL;
    if (f) {
        fprintf(f, "gemm %d %d\nvec %d\n# Q4_0 %d x %d by %d tokens, 3 products:", tiles[tile][0], tiles[tile][1],
                vec_rows[vec], rows, cols, n);
        for (int i = 0; i < n_tiles; i++) fprintf(f, " %dx%d %.3f ms", tiles[i][0], tiles[i][1], tile_s[i] * 1e3);
        fprintf(f, "\n# Q4_0 %dx%d and %dx%d by 1 token, 20 rounds:", VEC_F, VEC_E, VEC_E, VEC_F);
        for (int i = 0; i < n_vec; i++) fprintf(f, " %d rows %.3f ms", vec_rows[i], vec_s[i] * 1e3);
        fprintf(f, "\n");
        fclose(f);
    }
    if (vec == n_vec - 1) return 0; /* built last */
    return pt_ocl_rebuild(o, tiles[tile][0], tiles[tile][1], vec_rows[vec]);
}
