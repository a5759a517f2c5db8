/*
 * test_qmatmul.c — kernels/cpu/qmatmul: every kernel variant this CPU can
 * run, on random Q4_0 / Q4_1 / Q8_0 / Q5_0 matrices of odd shapes and 1..17
 * tokens, must equal the plain C oracle pt_qmatmul_ref bit for bit; the
 * oracle itself is checked against float math on dequantized values, and
 * against pt_matmul_ref (float activations) within the documented int8
 * activation rounding bound. Also: the activation quantizers against the
 * reference, the packed row decoder against pt_dequant_row, the packed
 * rows' GGML blocks against the original bytes, row splits,
 * thread-split products, and the PETREL_CPU override.
 *
 * PETREL_EXPECT_VARIANTS="dotprod,i8mm" (set by test_arm64_qemu.sh) makes
 * the listed variants mandatory, so a detection failure cannot pass as
 * "nothing to test".
 */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "check.h"
#include "cpu_variants.h"
#include "cpu_features.h"
#include "qmatmul.h"
#include "quant.h"
#include "quant_blocks.h"
#include "threadpool.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}
static float rndf(void) { return (float)(rnd() & 0xffffff) / (float)0x1000000 * 2.0f - 1.0f; }

static const uint32_t types[] = {PT_TYPE_Q4_0, PT_TYPE_Q4_1, PT_TYPE_Q8_0, PT_TYPE_Q5_0};

/* A random GGML matrix. Scales of both signs and mixed magnitudes; Q8
 * codes over the whole int8 range, -128 included. */
static void *random_matrix(uint32_t type, int64_t rows, int64_t cols) {
    const size_t rb = pt_type_row_bytes(type, cols);
    uint8_t *m = malloc(rb * (size_t)rows);
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t b = 0; b < cols / 32; b++) {
            uint8_t *blk = m + (size_t)r * rb + (size_t)b * pt_type_get(type)->block_bytes;
            const float mag = (rnd() % 4 == 0) ? 1e-3f : 0.05f;
            const uint16_t d = pt_f32_to_fp16(rndf() * mag);
            if (type == PT_TYPE_Q8_0) {
                pt_block_q8_0 *q = (pt_block_q8_0 *)blk;
                q->d = d;
                for (int i = 0; i < 32; i++) q->qs[i] = (int8_t)(rnd() & 0xff);
            } else if (type == PT_TYPE_Q4_0) {
                pt_block_q4_0 *q = (pt_block_q4_0 *)blk;
                q->d = d;
                for (int i = 0; i < 16; i++) q->qs[i] = (uint8_t)rnd();
            } else if (type == PT_TYPE_Q5_0) { /* codes over all of 0..31 */
                pt_block_q5_0 *q = (pt_block_q5_0 *)blk;
                q->d = d;
                for (int i = 0; i < 4; i++) q->qh[i] = (uint8_t)rnd();
                for (int i = 0; i < 16; i++) q->qs[i] = (uint8_t)rnd();
            } else {
                pt_block_q4_1 *q = (pt_block_q4_1 *)blk;
                q->d = d;
                q->m = pt_f32_to_fp16(rndf() * 0.2f);
                for (int i = 0; i < 16; i++) q->qs[i] = (uint8_t)rnd();
            }
        }
    }
    return m;
}

/* Activations with the awkward cases: zero blocks, a huge outlier block,
 * tiny values, and blocks of exact halves (x * id = k + 0.5, where round
 * half even and round half away differ). */
static void random_acts(float *x, int64_t n_tok, int64_t cols) {
    for (int64_t t = 0; t < n_tok; t++) {
        for (int64_t b = 0; b < cols / 32; b++) {
            float *xb = x + t * cols + b * 32;
            const int kind = (int)(rnd() % 8);
            for (int i = 0; i < 32; i++) {
                switch (kind) {
                case 0: xb[i] = 0.0f; break;
                case 1: xb[i] = rndf() * 300.0f; break;
                case 2: xb[i] = rndf() * 1e-6f; break;
                case 3: xb[i] = (i == 5) ? 127.0f : (float)((int)(rnd() % 254) - 127) + 0.5f; break;
                default: xb[i] = rndf() * 2.0f; break;
                }
            }
            if (kind == 3) xb[7] = -126.5f;
        }
    }
}

static bool same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

/* ---- the activation quantizer --------------------------------------- */

static void test_quantizer(const pt_cpu *cpu) {
    const int64_t n_tok = 9, cols = 32 * 13;
    float *x = malloc(sizeof(float) * n_tok * cols);
    random_acts(x, n_tok, cols);
    void *b1 = malloc(pt_qact_bytes(n_tok, cols)), *b2 = malloc(pt_qact_bytes(n_tok, cols));
    pt_qact ref, fast;
    pt_qact_init(&ref, b1, n_tok, cols);
    pt_qact_init(&fast, b2, n_tok, cols);
    pt_qact_quantize_ref(x, &ref, 0, n_tok);
    pt_qact_quantize(cpu, x, &fast, 0, 5); /* in two token ranges */
    pt_qact_quantize(cpu, x, &fast, 5, n_tok);
    const int64_t nb = cols / 32;
    int bad_q = 0, bad_s = 0, bad_def = 0;
    for (int64_t i = 0; i < n_tok * cols; i++) bad_q += ref.q[i] != fast.q[i];
    for (int64_t i = 0; i < n_tok * nb; i++)
        bad_s += !same_bits(ref.d[i], fast.d[i]) || ref.s[i] != fast.s[i] || !same_bits(ref.ds[i], fast.ds[i]);
    /* the reference against the definition in qmatmul.h */
    int halves_even = 0;
    for (int64_t t = 0; t < n_tok; t++)
        for (int64_t b = 0; b < nb; b++) {
            const float d = ref.d[t * nb + b];
            float amax = 0;
            int32_t s = 0;
            for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(x[t * cols + b * 32 + i]));
            bad_def += d != amax / 127.0f;
            for (int i = 0; i < 32; i++) {
                const int8_t q = ref.q[t * cols + b * 32 + i];
                const float xi = x[t * cols + b * 32 + i];
                s += q;
                bad_def += q == -128; /* codes stay in -127..127 */
                bad_def += fabsf(xi - d * q) > d * 0.5f * (1 + 1e-5f) + 1e-30f;
                if (d == 1.0f && xi - floorf(xi) == 0.5f) { /* a tie: must go to even */
                    halves_even++;
                    bad_def += (q & 1) != 0;
                }
            }
            bad_def += s != ref.s[t * nb + b];
            bad_def += !same_bits(ref.ds[t * nb + b], d * (float)s);
        }
    CHECK(bad_q == 0 && bad_s == 0, "%s quantizer: %d codes, %d scales/sums differ from ref",
          pt_cpu_variant_name(cpu->variant), bad_q, bad_s);
    CHECK(bad_def == 0, "reference quantizer breaks its definition %d times", bad_def);
    CHECK(halves_even > 0, "no tie case exercised");
    free(x); free(b1); free(b2);
}

/* ---- the oracle against float math ---------------------------------- */

static void test_oracle(uint32_t type) {
    const int64_t rows = 13, cols = 32 * 7, n_tok = 5;
    void *w = random_matrix(type, rows, cols);
    float *x = malloc(sizeof(float) * n_tok * cols);
    random_acts(x, n_tok, cols);
    void *buf = malloc(pt_qact_bytes(n_tok, cols));
    pt_qact qa;
    pt_qact_init(&qa, buf, n_tok, cols);
    pt_qact_quantize_ref(x, &qa, 0, n_tok);
    float *yq = malloc(sizeof(float) * n_tok * rows), *yf = malloc(sizeof(float) * n_tok * rows);
    pt_qmatmul_ref(type, w, rows, cols, &qa, yq, 0, rows);
    pt_matmul_ref(type, w, rows, cols, x, n_tok, yf, 0, rows);
    float *wrow = malloc(sizeof(float) * cols);
    const size_t rb = pt_type_row_bytes(type, cols);
    int bad_exact = 0, bad_bound = 0;
    double worst_ratio = 0;
    for (int64_t r = 0; r < rows; r++) {
        pt_dequant_row(type, (const uint8_t *)w + r * rb, wrow, cols);
        for (int64_t t = 0; t < n_tok; t++) {
            /* in double: dequantized weights times dequantized codes */
            double exact = 0, abs_sum = 0, bound = 0, abs_f = 0;
            for (int64_t b = 0; b < cols / 32; b++) {
                const double d = qa.d[t * (cols / 32) + b];
                double wabs = 0, amax = 0;
                for (int i = 0; i < 32; i++) {
                    const int64_t k = b * 32 + i;
                    exact += (double)wrow[k] * d * qa.q[t * cols + k];
                    abs_sum += fabs((double)wrow[k] * d * qa.q[t * cols + k]);
                    abs_f += fabs((double)wrow[k] * x[t * cols + k]);
                    wabs += fabs(wrow[k]);
                    amax = fmax(amax, fabs(x[t * cols + k]));
                }
                bound += amax / 254.0 * wabs;
            }
            const double yqv = yq[t * rows + r], yfv = yf[t * rows + r];
            /* float rounding of a sum of n terms: n * eps * sum of |terms| */
            const double round_q = (double)(cols / 32 + 2) * FLT_EPSILON * abs_sum;
            const double round_f = (double)(cols + 2) * FLT_EPSILON * abs_f;
            bad_exact += fabs(yqv - exact) > round_q + 1e-30;
            bad_bound += fabs(yqv - yfv) > bound * (1 + 1e-6) + round_q + round_f + 1e-30;
            if (bound > 0) worst_ratio = fmax(worst_ratio, fabs(yqv - yfv) / bound);
        }
    }
    CHECK(bad_exact == 0, "%s oracle: %d outputs off the exact int8 product", pt_type_name(type), bad_exact);
    CHECK(bad_bound == 0, "%s oracle: %d outputs beyond the activation rounding bound", pt_type_name(type),
          bad_bound);
    printf("  %s: int8 vs float activations: worst error = %.3f of the bound\n", pt_type_name(type),
           worst_ratio);
    free(w); free(x); free(buf); free(yq); free(yf); free(wrow);
}

/* ---- one variant on one shape --------------------------------------- */

static int shapes_run;

static void check_shape(const pt_cpu *cpu, uint32_t type, int64_t rows, int64_t cols, int64_t n_tok) {
    void *w = random_matrix(type, rows, cols);
    float *x = malloc(sizeof(float) * n_tok * cols);
    random_acts(x, n_tok, cols);
    void *buf = malloc(pt_qact_bytes(n_tok, cols));
    pt_qact qa;
    pt_qact_init(&qa, buf, n_tok, cols);
    pt_qact_quantize(cpu, x, &qa, 0, n_tok);
    const size_t ny = (size_t)(n_tok * rows);
    float *yr = malloc(sizeof(float) * ny), *yk = malloc(sizeof(float) * ny);
    pt_qmatmul_ref(type, w, rows, cols, &qa, yr, 0, rows);

    pt_qweights *pw = pt_qweights_pack(type, w, rows, cols, cpu);
    CHECK(pw != NULL, "pack %s %s %lldx%lld", pt_cpu_variant_name(cpu->variant), pt_type_name(type),
          (long long)rows, (long long)cols);
    if (!pw) goto out;
    CHECK(pt_qweights_variant(pw) == cpu->variant && pt_qweights_rows(pw) == rows &&
              pt_qweights_cols(pw) == cols && pt_qweights_type(pw) == type, "packed header");

    /* whole matrix, on caller-provided scratch (panels, AMX tiles) */
    for (size_t i = 0; i < ny; i++) yk[i] = NAN;
    void *scratch = malloc(pt_qmatmul_scratch_bytes(cpu, cols) + 1);
    pt_qmatmul(pw, &qa, yk, 0, rows, scratch);
    int bad = 0;
    size_t first = 0;
    for (size_t i = 0; i < ny; i++)
        if (!same_bits(yr[i], yk[i]) && bad++ == 0) first = i;
    CHECK(bad == 0, "%s %s rows %lld cols %lld tok %lld: %d of %zu outputs differ (first: y[%zu] %.9g vs %.9g)",
          pt_cpu_variant_name(cpu->variant), pt_type_name(type), (long long)rows, (long long)cols,
          (long long)n_tok, bad, ny, first, (double)yr[first], (double)yk[first]);

    /* without scratch: no panel (AMX: its AVX-512 kernel), same bits */
    for (size_t i = 0; i < ny; i++) yk[i] = NAN;
    pt_qmatmul(pw, &qa, yk, 0, rows, NULL);
    bad = 0;
    for (size_t i = 0; i < ny; i++) bad += !same_bits(yr[i], yk[i]);
    CHECK(bad == 0, "%s %s rows %lld cols %lld tok %lld, no scratch: %d outputs differ",
          pt_cpu_variant_name(cpu->variant), pt_type_name(type), (long long)rows, (long long)cols,
          (long long)n_tok, bad);

    /* an unaligned row range writes exactly its rows */
    const int64_t r0 = rows > 3 ? 3 : 0, r1 = rows > 5 ? rows - 2 : rows;
    for (size_t i = 0; i < ny; i++) yk[i] = -7.0f;
    pt_qmatmul(pw, &qa, yk, r0, r1, scratch);
    free(scratch);
    bad = 0;
    for (int64_t t = 0; t < n_tok; t++)
        for (int64_t r = 0; r < rows; r++) {
            const float v = yk[t * rows + r];
            bad += (r >= r0 && r < r1) ? !same_bits(v, yr[t * rows + r]) : v != -7.0f;
        }
    CHECK(bad == 0, "%s %s rows [%lld,%lld) of %lld: %d outputs wrong", pt_cpu_variant_name(cpu->variant),
          pt_type_name(type), (long long)r0, (long long)r1, (long long)rows, bad);

    /* the packed row decoder against the original's */
    float *a = malloc(sizeof(float) * cols), *b = malloc(sizeof(float) * cols);
    const size_t rb = pt_type_row_bytes(type, cols);
    bad = 0;
    for (int64_t r = 0; r < rows; r++) {
        pt_dequant_row(type, (const uint8_t *)w + r * rb, a, cols);
        pt_qweights_dequant_row(pw, r, b);
        for (int64_t i = 0; i < cols; i++) bad += !same_bits(a[i], b[i]);
    }
    CHECK(bad == 0, "%s %s: packed rows decode to %d wrong values", pt_cpu_variant_name(cpu->variant),
          pt_type_name(type), bad);
    free(a); free(b);
    /* the packed rows give back the original's bytes (Q5_0 says it cannot) */
    uint8_t *blocks = malloc(rb);
    bad = 0;
    for (int64_t r = 0; r < rows; r++) {
        memset(blocks, 0xa5, rb);
        if (!pt_qweights_block_row(pw, r, blocks)) {
            bad += type != PT_TYPE_Q5_0;
            continue;
        }
        bad += type == PT_TYPE_Q5_0 || memcmp(blocks, (const uint8_t *)w + r * rb, rb) != 0;
    }
    CHECK(bad == 0, "%s %s: %d packed rows give other blocks than the original's",
          pt_cpu_variant_name(cpu->variant), pt_type_name(type), bad);
    free(blocks);
    pt_qweights_free(pw);
    shapes_run++;
out:
    free(w); free(x); free(buf); free(yr); free(yk);
}

static void test_variant(const pt_cpu *cpu) {
    printf("  variant %s\n", pt_cpu_variant_name(cpu->variant));
    test_quantizer(cpu);
    static const int64_t rows_list[] = {1, 7, 8, 16, 17, 33, 50};
    static const int64_t cols_list[] = {32, 64, 96, 160, 544};
    for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++) {
        /* every token count 1..17 on one odd shape */
        for (int64_t n = 1; n <= 17; n++) check_shape(cpu, types[ti], 23, 96, n);
        /* enough rows and tokens that the kernels' cache blocking splits
         * the rows into several blocks (a block holds a few hundred rows
         * of 2048 columns) and the tokens into several tiles */
        check_shape(cpu, types[ti], 700, 2048, 19);
        check_shape(cpu, types[ti], 700, 2048, 1);
        /* AMX: several 16-token tiles, with and without a tail, panels of
         * one or many groups (8960 columns: 2 groups per panel) */
        check_shape(cpu, types[ti], 700, 2048, 37);
        check_shape(cpu, types[ti], 45, 160, 32);
        check_shape(cpu, types[ti], 33, 8960, 18);
        /* every row and column count on a few token counts */
        for (size_t ri = 0; ri < sizeof rows_list / sizeof *rows_list; ri++)
            for (size_t ci = 0; ci < sizeof cols_list / sizeof *cols_list; ci++) {
                check_shape(cpu, types[ti], rows_list[ri], cols_list[ci], 1); /* decode */
                check_shape(cpu, types[ti], rows_list[ri], cols_list[ci], 2 + (int64_t)((ri + ci) * 5 % 13));
            }
    }
}

/* ---- split across threads ------------------------------------------- */

typedef struct {
    const pt_qweights *w;
    const pt_qact *x;
    float *y;
    uint8_t *scratch; /* [3 threads][scratch_n], or NULL */
    size_t scratch_n;
} mm_job;

static void mm_task(void *ctx, int task, int n_tasks, int thread) {
    mm_job *j = ctx;
    int64_t r0, r1;
    pt_qweights_split(j->w, task, n_tasks, &r0, &r1);
    pt_qmatmul(j->w, j->x, j->y, r0, r1, j->scratch ? j->scratch + (size_t)thread * j->scratch_n : NULL);
}

/* n_tok tokens on 3 threads, each with its own scratch or (NULL) none */
static void threads_case(const pt_cpu *cpu, int64_t n_tok, bool with_scratch) {
    const int64_t rows = 200, cols = 320;
    const size_t scratch_n = with_scratch ? pt_qmatmul_scratch_bytes(cpu, cols) : 0;
    uint8_t *scratch = with_scratch ? malloc(3 * scratch_n + 1) : NULL;
    pt_pool *pool;
    pt_error err;
    CHECK(pt_pool_new(3, &pool, &err) == PT_OK, "%s", err.msg);
    for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++) {
        void *w = random_matrix(types[ti], rows, cols);
        float *x = malloc(sizeof(float) * n_tok * cols);
        random_acts(x, n_tok, cols);
        void *buf = malloc(pt_qact_bytes(n_tok, cols));
        pt_qact qa;
        pt_qact_init(&qa, buf, n_tok, cols);
        pt_qact_quantize(cpu, x, &qa, 0, n_tok);
        float *yr = malloc(sizeof(float) * n_tok * rows), *yk = malloc(sizeof(float) * n_tok * rows);
        pt_qmatmul_ref(types[ti], w, rows, cols, &qa, yr, 0, rows);
        pt_qweights *pw = pt_qweights_pack(types[ti], w, rows, cols, cpu);
        mm_job job = {pw, &qa, yk, scratch, scratch_n};
        for (int n_tasks = 1; n_tasks <= 20; n_tasks += 3) {
            /* splits: whole tiles, disjoint, covering every row */
            int64_t next = 0;
            int bad_split = 0;
            for (int i = 0; i < n_tasks; i++) {
                int64_t a, b;
                pt_qweights_split(pw, i, n_tasks, &a, &b);
                bad_split += a != next || b < a || (a % pt_qweights_row_align(pw) != 0 && a != rows);
                next = b;
            }
            CHECK(bad_split == 0 && next == rows, "split into %d tasks", n_tasks);
            for (int64_t i = 0; i < n_tok * rows; i++) yk[i] = NAN;
            pt_pool_run(pool, mm_task, &job, n_tasks);
            int bad = 0;
            for (int64_t i = 0; i < n_tok * rows; i++) bad += !same_bits(yr[i], yk[i]);
            CHECK(bad == 0, "%s threaded, %d tokens, %d tasks: %d outputs differ", pt_type_name(types[ti]),
                  (int)n_tok, n_tasks, bad);
        }
        pt_qweights_free(pw);
        free(w); free(x); free(buf); free(yr); free(yk);
    }
    pt_pool_free(pool);
    free(scratch);
}

/* short (no panels, no AMX), then long enough for panels, AMX tiles and a
 * tail */
static void test_threads(const pt_cpu *cpu) {
    threads_case(cpu, 11, false);
    threads_case(cpu, 37, true);
}

/* ---- detection and the override ------------------------------------- */

static void test_override(const pt_cpu *native) {
    pt_cpu c;
    CHECK(pt_cpu_detect_with(&c, "ref") == 0 && c.variant == PT_CPU_REF, "force ref");
    CHECK(pt_cpu_detect_with(&c, "no-such-isa") == -1 && c.variant == pt_cpu_best_variant(&c),
          "unknown name refused, best kept");
    CHECK(pt_cpu_detect_with(&c, "native") == 0 && c.variant == native->variant, "native");
    for (int v = 0; v < PT_CPU_VARIANT_COUNT; v++) {
        const char *name = pt_cpu_variant_name((pt_cpu_variant)v);
        setenv("PETREL_CPU", name, 1);
        const int rc = pt_cpu_detect(&c);
        if (pt_cpu_has_variant(native, (pt_cpu_variant)v))
            CHECK(rc == 0 && c.variant == (pt_cpu_variant)v, "PETREL_CPU=%s gave %s", name,
                  pt_cpu_variant_name(c.variant));
        else
            CHECK(rc == -1 && c.variant == native->variant, "PETREL_CPU=%s accepted without the ISA", name);
    }
    unsetenv("PETREL_CPU");

    /* no fast path: ref variant, other types, bad shapes */
    pt_cpu ref;
    pt_cpu_detect_with(&ref, "ref");
    void *w = random_matrix(PT_TYPE_Q4_0, 4, 64);
    CHECK(pt_qweights_pack(PT_TYPE_Q4_0, w, 4, 64, &ref) == NULL, "ref variant packs");
    CHECK(!pt_qweights_supported(PT_TYPE_Q4_K, 4, 256, native), "Q4_K supported");
    CHECK(!pt_qweights_supported(PT_TYPE_F32, 4, 64, native), "F32 supported");
    CHECK(!pt_qweights_supported(PT_TYPE_Q4_0, 4, 48, native), "cols 48 supported");
    CHECK(!pt_qweights_supported(PT_TYPE_Q4_0, 0, 64, native), "0 rows supported");
    free(w);
}

int main(void) {
    pt_cpu native;
    CHECK(pt_cpu_detect_with(&native, NULL) == 0, "detect");
    printf("cpu: avx2 %d fma %d f16c %d avx512f %d bw %d vl %d vnni %d avxvnni %d amx %d neon %d dotprod %d "
           "i8mm %d; best %s\n",
           native.avx2, native.fma, native.f16c, native.avx512f, native.avx512bw, native.avx512vl,
           native.avx512vnni, native.avxvnni, native.amx, native.neon, native.dotprod, native.i8mm,
           pt_cpu_variant_name(native.variant));

    for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++) test_oracle(types[ti]);
    test_override(&native);

    /* every variant the CPU has, selected the way users force one */
    char tested[256] = "";
    bool ran[PT_CPU_VARIANT_COUNT] = {[PT_CPU_REF] = true}; /* test_oracle ran the reference */
    for (int v = PT_CPU_REF + 1; v < PT_CPU_VARIANT_COUNT; v++) {
        if (!pt_cpu_has_variant(&native, (pt_cpu_variant)v)) continue;
        pt_cpu c;
        setenv("PETREL_CPU", pt_cpu_variant_name((pt_cpu_variant)v), 1);
        const int rc = pt_cpu_detect(&c);
        unsetenv("PETREL_CPU");
        CHECK(rc == 0 && c.variant == (pt_cpu_variant)v, "PETREL_CPU=%s not honoured",
              pt_cpu_variant_name((pt_cpu_variant)v));
        if (rc != 0) continue;
        CHECK(pt_qweights_supported(PT_TYPE_Q4_0, 8, 64, &c), "%s has no kernels in this build",
              pt_cpu_variant_name(c.variant));
        test_variant(&c);
        test_threads(&c);
        strncat(tested, pt_cpu_variant_name(c.variant), sizeof tested - strlen(tested) - 2);
        strcat(tested, ",");
        ran[c.variant] = true;
    }
    printf("variants tested: %s (%d shapes)\n", tested, shapes_run);

    /* variants the caller insists on (the qemu script: dotprod, i8mm) */
    const char *expect = getenv("PETREL_EXPECT_VARIANTS");
    if (expect && *expect) {
        char list[256];
        snprintf(list, sizeof list, "%s", expect);
        for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
            char needle[64];
            snprintf(needle, sizeof needle, "%s,", tok);
            CHECK(strstr(tested, needle) != NULL, "expected variant %s was not tested", tok);
        }
    }
    check_variants_ran("qmatmul", ran);
    return check_done("qmatmul");
}
