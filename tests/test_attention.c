/*
 * test_attention.c — the fused causal attention of kernels/cpu/attention.h
 * against the straightforward two-pass version (ops.h pt_attend_one) and
 * a double-precision formula, on random shapes: head sizes that are and
 * are not multiples of the 16-lane vectors, GQA tiles of several heads,
 * tiles starting inside a key block, strided queries, outputs and values.
 *
 * Also checked:
 *   - every variant this CPU runs is within the bound of the double
 *     formula, and the variants with FMA (AVX2, AVX-VNNI, AVX-512) give
 *     bitwise the same results (the kernel promises identical float
 *     operations; the plain build rounds a * b + c twice instead);
 *   - a query's result does not depend on its tile: the whole tile at once
 *     equals token by token and head by head, bitwise (what makes batch,
 *     pieces and one-by-one forward passes agree exactly);
 *   - the kernel's exp against libm's on [-87, 0], and its edge values;
 *   - sliding windows (pt_attn_causal_window): a third of the cases give
 *     each token only the last `window` positions, with huge garbage keys
 *     and values before the first token's window (read only as masked
 *     lanes of a partly visible block, or not at all); the references
 *     then sum over the window only.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "check.h"
#include "cpu_variants.h"
#include "cpu_features.h"
#include "ops.h"

#define EPS_F 1.1920929e-7 /* float ulp at 1 */

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;

static float frand(void) { /* uniform in [-1, 1) */
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rng_state >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}
static int irand(int n) { /* uniform in [0, n) */
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (int)((rng_state >> 33) % (uint64_t)n);
}

static void test_exp(void) {
    double max_rel = 0;
    for (int i = 0; i <= 200000; i++) {
        const float x = -87.0f * (float)i / 200000.0f;
        const double want = exp((double)x);
        const double rel = fabs(pt_attn_exp(x) - want) / want;
        if (rel > max_rel) max_rel = rel;
    }
    CHECK(max_rel <= 3 * EPS_F, "exp: max relative error %.3g over [-87, 0]", max_rel);
    printf("exp: max relative error %.3g (%.2f ulp) over [-87, 0]\n", max_rel, max_rel / EPS_F);
    CHECK(pt_attn_exp(0.0f) == 1.0f, "exp(0) = %.9g", pt_attn_exp(0.0f));
    CHECK(pt_attn_exp(-INFINITY) == 0.0f && pt_attn_exp(-100.0f) == 0.0f, "exp below the range is not 0");
}

/* One random case: keys/values for p0 + n_tok positions of one KV head. */
typedef struct attn_case {
    int D, n_head, n_tok, p0;
    int window; /* 0: none */
    int64_t q_stride, out_stride, kbs, vs;
    float scale;
    float *q, *kt, *k_rows, *v;
} attn_case;

/* First position token t sees. */
static int first_seen(const attn_case *c, int t) {
    const int lo = c->p0 + t - c->window + 1;
    return c->window > 0 && lo > 0 ? lo : 0;
}

static void make_case(attn_case *c, int D, int n_head, int n_tok, int p0, float qmag, int window) {
    c->D = D, c->n_head = n_head, c->n_tok = n_tok, c->p0 = p0, c->window = window;
    c->q_stride = (int64_t)n_head * D + irand(5);
    c->out_stride = (int64_t)n_head * D + irand(3);
    c->kbs = (int64_t)PT_ATTN_BK * D + 16 * irand(2);
    c->vs = D + irand(4);
    c->scale = 1.0f / sqrtf((float)D);
    const int n_kv = p0 + n_tok;
    const int n_blocks = (n_kv + PT_ATTN_BK - 1) / PT_ATTN_BK;
    c->q = malloc((size_t)n_tok * c->q_stride * sizeof(float));
    c->kt = calloc((size_t)n_blocks * c->kbs, sizeof(float));
    c->k_rows = malloc((size_t)n_kv * D * sizeof(float));
    c->v = malloc((size_t)n_kv * c->vs * sizeof(float));
    for (int64_t i = 0; i < n_tok * c->q_stride; i++) c->q[i] = frand() * qmag;
    for (int j = 0; j < n_kv; j++) {
        for (int d = 0; d < D; d++) c->k_rows[(size_t)j * D + d] = frand() * 2.0f;
        pt_attn_store_key(c->kt, c->kbs, j, c->k_rows + (size_t)j * D, D);
        for (int64_t d = 0; d < c->vs; d++) c->v[j * c->vs + d] = frand() * 3.0f;
    }
    /* positions no token sees: garbage (finite: a masked lane's value is
     * still multiplied by its zero weight) */
    for (int j = 0; j < first_seen(c, 0); j++) {
        for (int d = 0; d < D; d++)
            c->kt[(int64_t)(j / PT_ATTN_BK) * c->kbs + d * PT_ATTN_BK + j % PT_ATTN_BK] = 1e30f;
        for (int64_t d = 0; d < c->vs; d++) c->v[j * c->vs + d] = 1e30f;
    }
    /* the lanes of the last block past n_kv: garbage, which must be masked */
    for (int j = n_kv; j < n_blocks * PT_ATTN_BK; j++)
        for (int d = 0; d < D; d++)
            c->kt[(int64_t)(j / PT_ATTN_BK) * c->kbs + d * PT_ATTN_BK + j % PT_ATTN_BK] = 1e30f;
}

static void free_case(attn_case *c) { free(c->q), free(c->kt), free(c->k_rows), free(c->v); }

static float *run_case(const attn_case *c, const pt_cpu *cpu) {
    float *out = calloc((size_t)c->n_tok * c->out_stride, sizeof(float));
    float *scratch = malloc(pt_attn_scratch_floats(c->n_tok * c->n_head, c->D) * sizeof(float));
    if (c->window > 0)
        pt_attn_causal_window(cpu, out, c->out_stride, c->q, c->q_stride, c->n_tok, c->n_head, c->kt, c->kbs,
                              c->v, c->vs, c->p0, c->window, c->D, c->scale, scratch);
    else
        pt_attn_causal(cpu, out, c->out_stride, c->q, c->q_stride, c->n_tok, c->n_head, c->kt, c->kbs, c->v,
                       c->vs, c->p0, c->D, c->scale, scratch);
    free(scratch);
    return out;
}

/* Every output of a tile against the double-precision formula (and the
 * two-pass pt_attend_one); returns false when one is off. */
static bool check_against_double(const attn_case *c, const float *res, const char *what) {
    const int D = c->D;
    float *one = malloc((size_t)D * sizeof(float)), *scores = malloc((size_t)(c->p0 + c->n_tok) * sizeof(float));
    double *p = malloc((size_t)(c->p0 + c->n_tok) * sizeof(double));
    float *kr = malloc((size_t)(c->p0 + c->n_tok) * c->vs * sizeof(float));
    double max_d = 0, max_two = 0, tol_max = 0;
    bool within = true;
    for (int t = 0; t < c->n_tok; t++)
        for (int h = 0; h < c->n_head; h++) {
            const float *q = c->q + t * c->q_stride + h * D;
            const float *o = res + t * c->out_stride + h * D;
            const int n_kv = c->p0 + t + 1, lo = first_seen(c, t);
            /* double reference, and the size of the scores' terms */
            double mx = -INFINITY, sum = 0, smag = 0;
            for (int j = lo; j < n_kv; j++) {
                double s = 0, a = 0;
                for (int d = 0; d < D; d++) {
                    s += (double)q[d] * c->k_rows[(size_t)j * D + d];
                    a += fabs((double)q[d] * c->k_rows[(size_t)j * D + d]);
                }
                p[j] = s * c->scale;
                smag = fmax(smag, a * c->scale);
                mx = fmax(mx, p[j]);
            }
            for (int j = lo; j < n_kv; j++) sum += p[j] = exp(p[j] - mx);
            /* Bound: a score is off by up to ~D ulps of its terms' size
             * (smag), which scales its weight by up to that relative
             * error; weights and sums add a few ulps more. |v| <= 3. */
            const double tol = 3.0 * (2 * (D + 4) * EPS_F * (1.0 + smag) + 16 * EPS_F);
            tol_max = fmax(tol_max, tol);
            /* the two-pass version wants keys as rows with the values'
             * stride */
            for (int j = lo; j < n_kv; j++)
                memcpy(kr + j * c->vs, c->k_rows + (size_t)j * D, (size_t)D * sizeof(float));
            pt_attend_one(one, q, kr + (int64_t)lo * c->vs, c->v + (int64_t)lo * c->vs, c->vs, n_kv - lo, D,
                          c->scale, scores);
            for (int d = 0; d < D; d++) {
                double want = 0;
                for (int j = lo; j < n_kv; j++) want += p[j] / sum * c->v[j * c->vs + d];
                const double e = fabs(o[d] - want);
                max_d = fmax(max_d, e);
                max_two = fmax(max_two, fabs((double)o[d] - one[d]));
                if (!(e <= tol)) within = false;
            }
        }
    CHECK(within, "%s: max |err| %.3g vs double exceeds the bound (up to %.3g)", what, max_d, tol_max);
    CHECK(max_two <= 2 * tol_max, "%s: max |fused - two-pass| %.3g", what, max_two);
    free(one), free(scores), free(p), free(kr);
    return within;
}

static bool uses_fma(pt_cpu_variant v) {
    return v == PT_CPU_AVX2 || v == PT_CPU_AVXVNNI || v == PT_CPU_AVX512VNNI || v == PT_CPU_AMX;
}

static void check_case(const attn_case *c, const pt_cpu *cpus, int n_cpus, const char *what) {
    const int D = c->D;
    const size_t bytes = (size_t)c->n_tok * c->out_stride * sizeof(float);
    /* every variant against double precision; those with FMA bitwise
     * against each other (the plain build rounds a * b + c twice) */
    float *fma_first = NULL, *plain = NULL;
    for (int i = 0; i < n_cpus; i++) {
        char vwhat[160];
        snprintf(vwhat, sizeof vwhat, "%s [%s]", what, pt_cpu_variant_name(cpus[i].variant));
        float *got = run_case(c, &cpus[i]);
        check_against_double(c, got, vwhat);
        if (!uses_fma(cpus[i].variant)) {
            free(plain);
            plain = got;
        } else if (!fma_first) {
            fma_first = got;
        } else {
            CHECK(memcmp(got, fma_first, bytes) == 0, "%s: differs from the first FMA variant", vwhat);
            free(got);
        }
    }
    /* the fastest variant (the last) against its own whole tile */
    const float *ref = uses_fma(cpus[n_cpus - 1].variant) ? fma_first : plain;

    /* token by token, head by head: bitwise the same */
    float *split = calloc((size_t)c->n_tok * c->out_stride, sizeof(float));
    float *scratch = malloc(pt_attn_scratch_floats(1, D) * sizeof(float));
    const pt_cpu *fast = &cpus[n_cpus - 1];
    for (int t = 0; t < c->n_tok; t++)
        for (int h = 0; h < c->n_head; h++)
            pt_attn_causal_window(fast, split + t * c->out_stride + h * D, c->out_stride,
                                  c->q + t * c->q_stride + h * D, c->q_stride, 1, 1, c->kt, c->kbs, c->v,
                                  c->vs, c->p0 + t, c->window, D, c->scale, scratch);
    bool same = true;
    for (int t = 0; t < c->n_tok; t++)
        same &= memcmp(split + t * c->out_stride, ref + t * c->out_stride, (size_t)c->n_head * D * sizeof(float)) == 0;
    CHECK(same, "%s: one query at a time differs from the whole tile", what);
    free(split), free(scratch), free(plain), free(fma_first);
}

int main(void) {
    test_exp();

    /* plain C first, then every other variant this CPU can run */
    pt_cpu base, cpus[PT_CPU_VARIANT_COUNT];
    pt_cpu_detect_with(&base, NULL);
    int n_cpus = 0;
    for (int v = 0; v < PT_CPU_VARIANT_COUNT; v++)
        if (pt_cpu_with_variant(&base, (pt_cpu_variant)v, &cpus[n_cpus])) n_cpus++;
    bool ran[PT_CPU_VARIANT_COUNT] = {false};
    for (int i = 0; i < n_cpus; i++) ran[cpus[i].variant] = true;
    check_variants_ran("attention", ran);

    static const int dims[] = {2, 6, 16, 18, 32, 64, 80, 128};
    int n_cases = 0;
    for (int rep = 0; rep < 90; rep++) {
        const int D = dims[irand(8)];
        const int n_head = 1 + irand(6);
        const int n_tok = 1 + irand(rep % 3 == 0 ? 40 : 6);
        const int p0 = rep % 5 == 0 ? 0 : irand(rep % 2 ? 20 : 150);
        /* large queries give scores of tens: the running max moves a lot */
        const float qmag = rep % 4 == 0 ? 4.0f : 1.0f;
        /* a window of 1 .. all positions (small ones cut inside blocks) */
        const int window = rep % 3 == 1 ? 1 + irand(rep % 2 ? 20 : p0 + n_tok) : 0;
        attn_case c;
        make_case(&c, D, n_head, n_tok, p0, qmag, window);
        char what[160];
        snprintf(what, sizeof what, "D %d, %d heads, %d tokens from %d, |q| %.0f, window %d", D, n_head,
                 n_tok, p0, qmag, window);
        check_case(&c, cpus, n_cpus, what);
        free_case(&c);
        n_cases++;
    }
    /* scores rising along the keys: every block raises the running max */
    {
        attn_case c;
        make_case(&c, 32, 2, 3, 61, 0.0f, 0);
        for (int j = 0; j < c.p0 + c.n_tok; j++) {
            for (int d = 0; d < 32; d++) c.k_rows[(size_t)j * 32 + d] = d == 0 ? 0.5f * (float)j : 0.0f;
            pt_attn_store_key(c.kt, c.kbs, j, c.k_rows + (size_t)j * 32, 32);
        }
        for (int t = 0; t < c.n_tok; t++)
            for (int d = 0; d < 2 * 32; d++) c.q[t * c.q_stride + d] = d % 32 == 0 ? 1.0f : 0.0f;
        check_case(&c, cpus, n_cpus, "rising scores");
        free_case(&c);
        n_cases++;
    }
    printf("%d random tiles checked\n", n_cases);
    return check_done("attention");
}
