/*
 * test_opencl_ops.c — every op of the OpenCL device against the CPU
 * device's (backend.h; the CPU's is plain C on the reference kernels), on
 * random inputs of random and odd shapes, as ggml's test-backend-ops.
 *
 * Tolerance: each result's largest absolute difference from the CPU's
 * must be within TOL times the largest magnitude of the CPU's result
 * (or of 1 when that is smaller). Both run the same float32 arithmetic
 * in another summation order (and exp / tanh / sqrt of another library),
 * so the differences are rounding: about 1e-6 relative; TOL = 1e-4 is a
 * margin of 100 that a wrong index, a missed block or a lost term
 * (differences of order 1) cannot pass.
 */
#include "check.h"
#include "opencl_test.h"

#include "backend.h"
#include "ocl.h"
#include "ops.h"
#include "quant.h"

#include <math.h>
#include <stdint.h>

#define TOL 1e-4

static pt_device *cpu, *ocl;

/* A buffer pair: the same floats on both devices. */
typedef struct pair {
    pt_buf *c, *o;
    size_t n;
} pair;

static pair up(const float *v, size_t n) {
    pair p = {cpu->ops->alloc(cpu, n * 4, v), ocl->ops->alloc(ocl, n * 4, v), n};
    if (!p.c || !p.o) {
        fprintf(stderr, "buffer allocation failed\n");
        exit(1);
    }
    return p;
}

static void down(pair p) {
    cpu->ops->free(cpu, p.c);
    ocl->ops->free(ocl, p.o);
}

/* Compare the n floats of both sides; returns the relative difference. */
static double compare(pair p, const char *what) {
    float *a = malloc(p.n * 4 + 4), *b = malloc(p.n * 4 + 4);
    const pt_status sa = cpu->ops->read(cpu, p.c, 0, a, p.n * 4);
    const pt_status sb = ocl->ops->read(ocl, p.o, 0, b, p.n * 4);
    CHECK(sa == PT_OK && sb == PT_OK, "%s: read failed: %s", what, ocl->err.msg);
    double worst = 0, mag = 1;
    bool finite = true;
    for (size_t i = 0; i < p.n; i++) {
        if (!isfinite(b[i])) finite = false;
        const double d = fabs((double)a[i] - b[i]);
        if (d > worst) worst = d;
        if (fabs(a[i]) > mag) mag = fabs(a[i]);
    }
    CHECK(finite && worst <= TOL * mag, "%s: max |diff| %.3g against max |ref| %.3g", what, worst, mag);
    free(a);
    free(b);
    return worst / mag;
}

static double worst_mm;

/* rows rows of cols random values in [-1, 1), in type's blocks (malloc'd). */
static uint8_t *random_weights(uint32_t type, int rows, int cols) {
    const size_t rb = pt_type_row_bytes(type, cols);
    uint8_t *w = malloc(rb * rows);
    float *row = rand_vec((size_t)cols, 1.0f);
    for (int r = 0; r < rows; r++) {
        for (int c = 0; c < cols; c++) row[c] = frand();
        pt_quantize_row(type, row, w + rb * r, cols);
    }
    free(row);
    return w;
}

static void test_matmul(uint32_t type, int rows, int cols, int n) {
    const size_t rb = pt_type_row_bytes(type, cols);
    uint8_t *w = random_weights(type, rows, cols);
    pt_buf *wc = cpu->ops->weight(cpu, w, rb * rows), *wo = ocl->ops->weight(ocl, w, rb * rows);
    float *xv = rand_vec((size_t)n * cols, 1.0f);
    pair x = up(xv, (size_t)n * cols), y = up(NULL, (size_t)n * rows);
    char what[96];
    snprintf(what, sizeof what, "matmul %s %dx%d n=%d", pt_type_name(type), rows, cols, n);
    CHECK(cpu->ops->matmul(cpu, type, wc, rows, cols, x.c, n, y.c) == PT_OK, "%s cpu", what);
    CHECK(ocl->ops->matmul(ocl, type, wo, rows, cols, x.o, n, y.o) == PT_OK, "%s: %s", what, ocl->err.msg);
    const double e = compare(y, what);
    if (e > worst_mm) worst_mm = e;
    down(x);
    down(y);
    cpu->ops->free(cpu, wc);
    ocl->ops->free(ocl, wo);
    free(w);
    free(xv);
}

/* The fused decode product (backend.h matmul_fused, n = 1) against the
 * CPU's matmul, add_bias and add: y = W x + bias, or y += W x + bias. */
static void test_fused(uint32_t type, int rows, int cols, bool bias, bool accumulate) {
    const size_t rb = pt_type_row_bytes(type, cols);
    uint8_t *w = random_weights(type, rows, cols);
    pt_buf *wc = cpu->ops->weight(cpu, w, rb * rows), *wo = ocl->ops->weight(ocl, w, rb * rows);
    float *xv = rand_vec((size_t)cols, 1.0f), *bv = rand_vec((size_t)rows, 1.0f), *yv = rand_vec((size_t)rows, 1.0f);
    pair x = up(xv, (size_t)cols), b = up(bv, (size_t)rows), y = up(yv, (size_t)rows), t = up(NULL, (size_t)rows);
    char what[96];
    snprintf(what, sizeof what, "fused %s %dx%d%s%s", pt_type_name(type), rows, cols, bias ? " +bias" : "",
             accumulate ? " +=" : "");
    CHECK(ocl->ops->matmul_fuses(ocl, type, 1), "%s: the device fuses it", what);
    pt_buf *out = accumulate ? t.c : y.c;
    CHECK(cpu->ops->matmul(cpu, type, wc, rows, cols, x.c, 1, out) == PT_OK, "%s cpu", what);
    if (bias) CHECK(cpu->ops->add_bias(cpu, out, b.c, 1, rows) == PT_OK, "%s cpu bias", what);
    if (accumulate) CHECK(cpu->ops->add(cpu, y.c, t.c, rows) == PT_OK, "%s cpu add", what);
    CHECK(ocl->ops->matmul_fused(ocl, type, wo, rows, cols, x.o, 1, y.o, bias ? b.o : NULL, accumulate) == PT_OK,
          "%s: %s", what, ocl->err.msg);
    const double e = compare(y, what);
    if (e > worst_mm) worst_mm = e;
    down(x);
    down(b);
    down(y);
    down(t);
    cpu->ops->free(cpu, wc);
    ocl->ops->free(ocl, wo);
    free(w);
    free(xv);
    free(bv);
    free(yv);
}

/* The fused gate-up product (backend.h matmul_glu) against the CPU's
 * matmul, matmul, act_mul. */
static void test_glu(uint32_t type, int rows, int cols, pt_ffn_act act) {
    const size_t rb = pt_type_row_bytes(type, cols);
    uint8_t *w = random_weights(type, 2 * rows, cols); /* gate's rows, then up's */
    pt_buf *gc = cpu->ops->weight(cpu, w, rb * rows), *go = ocl->ops->weight(ocl, w, rb * rows);
    pt_buf *uc = cpu->ops->weight(cpu, w + rb * rows, rb * rows), *uo = ocl->ops->weight(ocl, w + rb * rows, rb * rows);
    float *xv = rand_vec((size_t)cols, 1.0f);
    pair x = up(xv, (size_t)cols), g = up(NULL, (size_t)rows), u = up(NULL, (size_t)rows);
    char what[96];
    snprintf(what, sizeof what, "glu %s %dx%d %s", pt_type_name(type), rows, cols, act == PT_FFN_SILU ? "silu" : "gelu");
    CHECK(cpu->ops->matmul(cpu, type, gc, rows, cols, x.c, 1, g.c) == PT_OK &&
          cpu->ops->matmul(cpu, type, uc, rows, cols, x.c, 1, u.c) == PT_OK &&
          cpu->ops->act_mul(cpu, g.c, u.c, rows, act) == PT_OK, "%s cpu", what);
    CHECK(ocl->ops->matmul_glu(ocl, type, go, uo, rows, cols, x.o, 1, g.o, act) == PT_OK, "%s: %s", what,
          ocl->err.msg);
    const double e = compare(g, what);
    if (e > worst_mm) worst_mm = e;
    down(x), down(g), down(u);
    cpu->ops->free(cpu, gc), cpu->ops->free(cpu, uc);
    ocl->ops->free(ocl, go), ocl->ops->free(ocl, uo);
    free(w), free(xv);
}

static void test_rmsnorm(int rows, int dim, bool weighted, bool in_place) {
    float *xv = rand_vec((size_t)rows * dim, 3.0f), *wv = rand_vec((size_t)dim, 2.0f);
    pair x = up(xv, (size_t)rows * dim), w = up(wv, dim), y = up(NULL, (size_t)rows * dim);
    pair *out = in_place ? &x : &y;
    CHECK(cpu->ops->rmsnorm(cpu, out->c, x.c, weighted ? w.c : NULL, rows, dim, 1e-5f) == PT_OK, "cpu");
    CHECK(ocl->ops->rmsnorm(ocl, out->o, x.o, weighted ? w.o : NULL, rows, dim, 1e-5f) == PT_OK, "%s",
          ocl->err.msg);
    char what[96];
    snprintf(what, sizeof what, "rmsnorm %dx%d w=%d in_place=%d", rows, dim, weighted, in_place);
    compare(*out, what);
    down(x), down(w), down(y);
    free(xv), free(wv);
}

static void test_add(int rows, int dim) {
    const size_t n = (size_t)rows * dim;
    float *yv = rand_vec(n, 1.0f), *xv = rand_vec(n, 1.0f), *bv = rand_vec((size_t)dim, 1.0f);
    pair y = up(yv, n), x = up(xv, n), b = up(bv, dim);
    CHECK(cpu->ops->add(cpu, y.c, x.c, (int64_t)n) == PT_OK && ocl->ops->add(ocl, y.o, x.o, (int64_t)n) == PT_OK,
          "add: %s", ocl->err.msg);
    CHECK(cpu->ops->add_bias(cpu, y.c, b.c, rows, dim) == PT_OK &&
          ocl->ops->add_bias(ocl, y.o, b.o, rows, dim) == PT_OK, "add_bias: %s", ocl->err.msg);
    char what[64];
    snprintf(what, sizeof what, "add + add_bias %dx%d", rows, dim);
    compare(y, what);
    down(y), down(x), down(b);
    free(yv), free(xv), free(bv);
}

static void test_rope(int n, int heads, int head_dim, int n_rot, bool neox, int p0) {
    const size_t sz = (size_t)n * heads * head_dim;
    float *xv = rand_vec(sz, 2.0f), *inv = malloc((size_t)n_rot / 2 * 4 + 4), *cs = malloc((size_t)n * n_rot * 4);
    pt_rope_inv_freq(inv, n_rot, 10000.0f, 1.0f, NULL);
    for (int t = 0; t < n; t++) pt_rope_table(cs + (size_t)t * n_rot, inv, n_rot, p0 + t);
    pair x = up(xv, sz), c = up(cs, (size_t)n * n_rot);
    CHECK(cpu->ops->rope(cpu, x.c, c.c, n, heads, head_dim, n_rot, neox) == PT_OK &&
          ocl->ops->rope(ocl, x.o, c.o, n, heads, head_dim, n_rot, neox) == PT_OK, "rope: %s", ocl->err.msg);
    char what[96];
    snprintf(what, sizeof what, "rope n=%d heads=%d D=%d rot=%d neox=%d", n, heads, head_dim, n_rot, neox);
    compare(x, what);
    down(x), down(c);
    free(xv), free(inv), free(cs);
}

static void test_act(int64_t count, pt_ffn_act act) {
    float *gv = rand_vec((size_t)count, 6.0f), *uv = rand_vec((size_t)count, 2.0f);
    pair g = up(gv, (size_t)count), u = up(uv, (size_t)count);
    CHECK(cpu->ops->act_mul(cpu, g.c, u.c, count, act) == PT_OK &&
          ocl->ops->act_mul(ocl, g.o, u.o, count, act) == PT_OK, "act_mul: %s", ocl->err.msg);
    char what[64];
    snprintf(what, sizeof what, "act_mul %s n=%lld", act == PT_FFN_SILU ? "silu" : "gelu", (long long)count);
    compare(g, what);
    down(g), down(u);
    free(gv), free(uv);
}

static void test_softmax(int rows, int n) {
    float *xv = rand_vec((size_t)rows * n, 8.0f);
    pair x = up(xv, (size_t)rows * n);
    CHECK(cpu->ops->softmax(cpu, x.c, rows, n) == PT_OK && ocl->ops->softmax(ocl, x.o, rows, n) == PT_OK,
          "softmax: %s", ocl->err.msg);
    char what[64];
    snprintf(what, sizeof what, "softmax %dx%d", rows, n);
    compare(x, what);
    down(x);
    free(xv);
}

/* Attention of n queries at p0.. over a cache of p0 + n positions (filled
 * at random, as earlier tokens would have), window 0 or a sliding one. */
static void test_attention(int n, int H, int Hkv, int D, int p0, int window) {
    const int KD = Hkv * D, n_ctx = p0 + n + 3;
    float *qv = rand_vec((size_t)n * H * D, 1.5f), *kv = rand_vec((size_t)n_ctx * KD, 1.5f),
          *vv = rand_vec((size_t)n_ctx * KD, 1.0f);
    pair q = up(qv, (size_t)n * H * D), k = up(kv, (size_t)n_ctx * KD), v = up(vv, (size_t)n_ctx * KD),
         o = up(NULL, (size_t)n * H * D);
    const pt_attn_shape a = {n, H, Hkv, D, p0, window, 1.0f / sqrtf((float)D)};
    CHECK(cpu->ops->attention(cpu, o.c, q.c, k.c, v.c, &a) == PT_OK, "cpu attention");
    CHECK(ocl->ops->attention(ocl, o.o, q.o, k.o, v.o, &a) == PT_OK, "attention: %s", ocl->err.msg);
    char what[96];
    snprintf(what, sizeof what, "attention n=%d H=%d Hkv=%d D=%d p0=%d window=%d", n, H, Hkv, D, p0, window);
    compare(o, what);
    down(q), down(k), down(v), down(o);
    free(qv), free(kv), free(vv);
}

/* write / read / copy at offsets (the KV cache store). */
/* The fused step (backend.h rope_store) against the CPU's rope, rope,
 * copy, copy: q rotated in place, k rotated and v copied into rows
 * p0 .. p0 + n of a cache of n_ctx rows that holds other rows already. */
static void test_rope_store(int n, int H, int Hkv, int D, int n_rot, bool neox, int p0) {
    const int n_ctx = p0 + n + 3;
    const size_t qn = (size_t)n * H * D, kn = (size_t)n * Hkv * D, cn = (size_t)n_ctx * Hkv * D;
    float *qv = rand_vec(qn, 2.0f), *kv = rand_vec(kn, 2.0f), *vv = rand_vec(kn, 2.0f), *cache = rand_vec(cn, 1.0f);
    float *inv = malloc((size_t)n_rot / 2 * 4 + 4), *cs = malloc((size_t)n * n_rot * 4 + 4);
    pt_rope_inv_freq(inv, n_rot, 10000.0f, 1.0f, NULL);
    for (int t = 0; t < n; t++) pt_rope_table(cs + (size_t)t * n_rot, inv, n_rot, p0 + t);
    pair q = up(qv, qn), k = up(kv, kn), v = up(vv, kn), c = up(cs, (size_t)n * n_rot + 1), kc = up(cache, cn),
         vc = up(cache, cn);
    char what[96];
    snprintf(what, sizeof what, "rope_store n=%d H=%d/%d D=%d rot=%d neox=%d p0=%d", n, H, Hkv, D, n_rot, neox, p0);
    const size_t at = (size_t)p0 * Hkv * D * 4, bytes = kn * 4;
    CHECK(cpu->ops->rope(cpu, q.c, c.c, n, H, D, n_rot, neox) == PT_OK &&
          cpu->ops->rope(cpu, k.c, c.c, n, Hkv, D, n_rot, neox) == PT_OK &&
          cpu->ops->copy(cpu, kc.c, at, k.c, 0, bytes) == PT_OK && cpu->ops->copy(cpu, vc.c, at, v.c, 0, bytes) == PT_OK,
          "%s cpu", what);
    CHECK(ocl->ops->rope_stores(ocl, D, n_rot), "%s: the device fuses it", what);
    const pt_attn_shape a = {n, H, Hkv, D, p0, 0, 1.0f};
    CHECK(ocl->ops->rope_store(ocl, q.o, k.o, v.o, c.o, kc.o, vc.o, &a, n_rot, neox) == PT_OK, "%s: %s", what,
          ocl->err.msg);
    compare(q, what);
    compare(kc, what);
    compare(vc, what);
    down(q), down(k), down(v), down(c), down(kc), down(vc);
    free(qv), free(kv), free(vv), free(cache), free(inv), free(cs);
}

static void test_copy(void) {
    float *src = rand_vec(100, 1.0f);
    pair a = up(src, 100), b = up(NULL, 300);
    CHECK(cpu->ops->copy(cpu, b.c, 37 * 4, a.c, 11 * 4, 80 * 4) == PT_OK &&
          ocl->ops->copy(ocl, b.o, 37 * 4, a.o, 11 * 4, 80 * 4) == PT_OK, "copy: %s", ocl->err.msg);
    CHECK(cpu->ops->write(cpu, b.c, 250 * 4, src, 50 * 4) == PT_OK &&
          ocl->ops->write(ocl, b.o, 250 * 4, src, 50 * 4) == PT_OK, "write: %s", ocl->err.msg);
    float got[7];
    CHECK(ocl->ops->read(ocl, b.o, 40 * 4, got, sizeof got) == PT_OK && memcmp(got, src + 14, sizeof got) == 0,
          "read at an offset");
    compare(b, "copy + write at offsets");
    down(a), down(b);
    free(src);
}

/* Every type on fixed edge shapes (one row, one block, a partial row
 * group, a partial token tile, many blocks) and random ones. */
static void test_matmuls(void) {
    const uint32_t types[] = {PT_TYPE_F32,  PT_TYPE_F16,  PT_TYPE_BF16, PT_TYPE_Q4_0, PT_TYPE_Q4_1,
                              PT_TYPE_Q5_0, PT_TYPE_Q5_1, PT_TYPE_Q8_0, PT_TYPE_Q4_K, PT_TYPE_Q5_K,
                              PT_TYPE_Q6_K};
    int n_mm = 0;
    worst_mm = 0;
    for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++) {
        const uint32_t t = types[ti];
        const bool fl = t == PT_TYPE_F32 || t == PT_TYPE_F16 || t == PT_TYPE_BF16;
        CHECK(ocl->ops->has_type(t), "OpenCL has %s", pt_type_name(t));
        const int blk = t == PT_TYPE_Q4_K || t == PT_TYPE_Q5_K || t == PT_TYPE_Q6_K ? 256 : 32;
        /* n >= 32: gemm.cl's tiles on GPUs (partial tiles of rows and tokens);
         * 2304 columns: 72 blocks of 32, more than a decode group's items */
        const int shapes[][3] = {{1, blk, 1},   {3, blk, 2},       {5, 2 * blk, 8},    {7, 3 * blk, 9},
                                 {130, 256, 1}, {66, 17 * blk, 17}, {70, 3 * blk, 40}, {129, blk, 65},
                                 {3, 2304, 1}};
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++, n_mm++)
            test_matmul(t, shapes[s][0], shapes[s][1], shapes[s][2]);
        for (int r = 0; r < 4; r++, n_mm++) {
            const int cols = fl ? irand(1, 300) : blk * irand(1, blk == 32 ? 20 : 4);
            test_matmul(t, irand(1, 70), cols, irand(1, 70));
        }
    }
    CHECK(!ocl->ops->has_type(PT_TYPE_Q8_1), "no Q8_1 kernel: a layer with one falls back to the CPU");
    printf("matmul: %d shapes, worst relative difference %.2g\n", n_mm, worst_mm);
}

/* gemm.cl's other tiles (128 x 128: two fill passes of rows and of
 * tokens, 8 x 8 outputs an item) and the per-device tuning that picks one
 * (ocl_tune.c): timed, written, then read back. Group kernels on. */
static void test_gemm_tiles(pt_ocl *o) {
    const uint32_t types[] = {PT_TYPE_Q4_0, PT_TYPE_Q8_0, PT_TYPE_F16, PT_TYPE_Q4_K};
    const int shapes[][3] = {{129, 256, 65}, {300, 512, 40}, {70, 256, 200}};
    CHECK(pt_ocl_set_gemm_tile(o, 128, 128) == 0, "128 x 128 tile: %s", pt_ocl_error(o));
    CHECK(pt_ocl_set_gemm_tile(o, 96, 64) != 0, "a tile of 96 rows is refused");
    int m = 0, n = 0;
    bool from_file = true;
    pt_ocl_gemm_tile(o, &m, &n, &from_file);
    CHECK(m == 128 && n == 128, "the tile in use is %d x %d", m, n);
    for (size_t t = 0; t < sizeof types / sizeof *types; t++)
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) test_matmul(types[t], shapes[s][0], shapes[s][1], shapes[s][2]);
    /* the two tiles and two decode row counts built so far, timed */
    CHECK(pt_ocl_tune(o, 128, 256, 64, 2, true) == 0, "tuning: %s", pt_ocl_error(o));
    pt_ocl_gemm_tile(o, &m, &n, &from_file);
    CHECK(!from_file && m == n && (m == 64 || m == 128), "timed: %d x %d", m, n);
    const bool cached = getenv("PETREL_OPENCL_CACHE") && *getenv("PETREL_OPENCL_CACHE");
    int m2 = 0, n2 = 0;
    CHECK(pt_ocl_tune(o, 128, 256, 64, 2, false) == 0, "tuning again: %s", pt_ocl_error(o));
    pt_ocl_gemm_tile(o, &m2, &n2, &from_file);
    CHECK(from_file == cached && m2 == m && n2 == n, "the second tuning %s: %d x %d",
          from_file ? "read the file" : "timed", m2, n2);
    test_matmul(PT_TYPE_Q4_0, 129, 256, 65);
    const int vec = pt_ocl_vec_rows(o);
    CHECK(vec == 1 || vec == 2 || vec == 4, "decode products: %d rows a group", vec);
    CHECK(pt_ocl_set_gemm_tile(o, 64, 64) == 0, "back to 64 x 64: %s", pt_ocl_error(o));
    printf("gemm tiles: 128 x 128 checked; tuning chose %d x %d, %d decode rows a group\n", m, n, vec);
}

int main(void) {
    ocl_test_rng = 0x9e3779b97f4a7c15ull;
    ocl = ocl_test_open("opencl_ops");
    pt_error err = {0};
    CHECK(pt_device_cpu_open(&cpu, &err) == PT_OK, "cpu device: %s", err.msg);
    printf("device: %s\n", ocl->name);

    /* the products twice: the kernels this device picks (on PoCL the row
     * kernels), then the work-group kernels GPUs run */
    pt_ocl *o = ocl->impl;
    for (int group = 0; group < 2; group++) {
        pt_ocl_use_group_kernels(o, group == 1);
        printf("matmul kernels: %s\n", group || !pt_ocl_info(o)->cpu ? "work-group (tiled gemm from 32 tokens)" : "row");
        test_matmuls();
    }
    /* the fused decode products GPUs take (group kernels on) */
    const uint32_t fused[] = {PT_TYPE_Q4_0, PT_TYPE_Q4_1, PT_TYPE_Q5_0, PT_TYPE_Q5_1, PT_TYPE_Q8_0};
    for (size_t i = 0; i < sizeof fused / sizeof *fused; i++)
        for (int f = 0; f < 4; f++)
            test_fused(fused[i], irand(1, 200), 32 * irand(1, 90), f & 1, f & 2);
    CHECK(!ocl->ops->matmul_fuses(ocl, PT_TYPE_Q4_0, 2), "no fused product for 2 tokens");
    CHECK(!ocl->ops->matmul_fuses(ocl, PT_TYPE_F32, 1), "no fused product for F32");
    /* the decode products with 4 rows a group (partial groups too), then 1 */
    for (int nr = 4; nr >= 1; nr -= 3) {
        CHECK(pt_ocl_set_vec_rows(o, nr) == 0, "%d rows a group: %s", nr, pt_ocl_error(o));
        for (size_t i = 0; i < sizeof fused / sizeof *fused; i++) {
            test_fused(fused[i], irand(1, 200), 32 * irand(1, 90), i & 1, i & 2);
            test_glu(fused[i], irand(1, 150), 32 * irand(1, 60), i & 1 ? PT_FFN_GELU_TANH : PT_FFN_SILU);
            test_matmul(fused[i], 4 * irand(1, 30) + 3, 32 * irand(1, 90), 1);
        }
    }
    CHECK(pt_ocl_set_vec_rows(o, 3) != 0, "3 rows a group is refused");
    test_gemm_tiles(o);
    pt_ocl_use_group_kernels(o, false);
    CHECK(pt_ocl_info(o)->cpu == !ocl->ops->matmul_fuses(ocl, PT_TYPE_Q4_0, 1),
          "CPU devices run the row kernels, unfused");

    test_rmsnorm(1, 1, true, false);
    test_rmsnorm(5, 37, true, false);
    test_rmsnorm(3, 576, false, true);
    test_rmsnorm(9, 64, true, true);
    test_rmsnorm(2, 1000, true, false);
    test_add(1, 1);
    test_add(7, 65);
    test_add(3, 576);
    test_rope(1, 1, 64, 64, false, 0);
    test_rope(5, 9, 64, 64, true, 17);
    test_rope(3, 3, 48, 32, false, 1000); /* partial rotation: 16 dims untouched */
    test_rope(2, 4, 128, 128, true, 4095);
    test_act(1, PT_FFN_SILU);
    test_act(1537, PT_FFN_SILU);
    test_act(999, PT_FFN_GELU_TANH);
    test_softmax(1, 1);
    test_softmax(3, 65);
    test_softmax(2, 1000);
    /* the row kernel, then the GPUs' (prompts: attention_tq, ATT_TQ tokens a group) */
    for (int group = 0; group < 2; group++) {
        pt_ocl_use_group_kernels(o, group == 1);
        test_attention(1, 1, 1, 64, 0, 0);       /* the first token */
        test_attention(5, 4, 2, 64, 3, 0);       /* GQA, a prompt after 3 tokens */
        test_attention(1, 9, 3, 64, 130, 0);     /* decode over three chunks of 64 */
        test_attention(9, 6, 6, 48, 70, 0);      /* MHA, odd head size */
        test_attention(7, 4, 1, 256, 40, 16);    /* sliding window, gemma3's head size */
        test_attention(3, 2, 2, 32, 200, 100);   /* window smaller than the history */
        test_attention(70, 4, 2, 128, 0, 0);     /* a prompt from 0 over two chunks, partial tile */
        test_attention(37, 2, 1, 80, 100, 20);   /* a prompt with a window inside a chunk */
        test_attention(130, 2, 2, 64, 5, 0);     /* three chunks, the tiles straddling them */
    }
    pt_ocl_use_group_kernels(o, false);
    test_copy();
    test_rope_store(1, 12, 2, 128, 128, true, 40);  /* a Qwen2 decode step */
    test_rope_store(5, 4, 2, 64, 64, false, 0);     /* a llama prompt */
    test_rope_store(3, 6, 3, 48, 32, true, 7);      /* partial rotation, neox */
    test_rope_store(2, 4, 4, 40, 16, false, 100);   /* partial rotation */
    test_rope_store(2, 2, 1, 32, 0, false, 3);      /* no rotation: copies */
    CHECK(!ocl->ops->rope_stores(ocl, 33, 32), "an odd head size is not fused");

    CHECK(ocl->ops->matmul(ocl, PT_TYPE_Q8_1, NULL, 1, 256, NULL, 1, NULL) != PT_OK,
          "a type without a kernel is an error, not a crash");
    const pt_attn_shape big = {1, 1, 1, 512, 0, 0, 1.0f};
    CHECK(ocl->ops->attention(ocl, NULL, NULL, NULL, NULL, &big) != PT_OK && strstr(ocl->err.msg, "head size"),
          "a head size beyond the kernel's is an error: %s", ocl->err.msg);
    pt_device_close(ocl);
    pt_device_close(cpu);
    return check_done("opencl_ops");
}
