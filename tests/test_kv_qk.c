/*
 * test_kv_qk.c — the int8 Q·K kernels of kernels/cpu/kv_qk.h and the
 * attention kernel fed their scores (attention.h
 * pt_attn_causal_span_scores), on random shapes: head sizes 1..256 that
 * are and are not multiples of 16 and 32, row counts that are and are not
 * multiples of 8, 1..5 queries, q8 blocks (32) and q8r rows (one block).
 *
 *  1. the query quantizer: codes in [-127, 127], each within half a step
 *     of x / scale, the block's largest |x| at +-127, scale amax / 127,
 *     zero blocks all zero, sums the codes' sums, zeros past head_dim;
 *  2. the reference against a double-precision sum of (code * scale)
 *     products: within a few float roundings of it;
 *  3. every variant this CPU runs against the reference: bitwise, on
 *     rows with random codes (-128 included: an imported session's bytes),
 *     random f16 scales and rows at an odd stride;
 *  4. pt_attn_causal_span_scores given the float kernel's own scores
 *     (computed here with its operations: two partial sums, fused or not
 *     as the variant) gives bitwise pt_attn_causal_window's output, with
 *     and without a window, split into two spans.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "check.h"
#include "cpu_features.h"
#include "cpu_variants.h"
#include "kv_codec.h"
#include "kv_qk.h"

static uint64_t rng = 0x853C49E6748FEA9Bull;
static uint32_t next32(void) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng >> 32);
}
static float frand(void) { return (float)((double)next32() / 4294967296.0 * 2.0 - 1.0); } /* [-1, 1) */
static int irand(int n) { return (int)(next32() % (uint32_t)n); }

static const int dims[] = {1, 7, 16, 31, 32, 33, 40, 63, 64, 65, 96, 100, 128, 200, 256};
#define NDIMS ((int)(sizeof dims / sizeof *dims))
#define MAXD 256
#define MAXQ 5
#define MAXN 83

/* ---- 1, 2. quantizer and reference -------------------------------------- */

static void test_quantize(void) {
    int8_t q[MAXD];
    float qd[PT_KV_QK_MAXB];
    int32_t qs[PT_KV_QK_MAXB];
    float x[MAXD];
    int bad = 0, cases = 0;
    for (int di = 0; di < NDIMS; di++)
        for (int bi = 0; bi < 2; bi++) {
            const int D = dims[di], blk = bi ? D : 32, nb = (D + blk - 1) / blk;
            for (int rep = 0; rep < 20; rep++) {
                const float mag = rep % 3 == 0 ? 1e-3f : rep % 3 == 1 ? 1.0f : 300.0f;
                for (int d = 0; d < D; d++) x[d] = frand() * mag;
                if (rep == 5) /* one block all zeros */
                    for (int d = 0; d < (blk < D ? blk : D); d++) x[d] = 0.0f;
                memset(q, 0x55, sizeof q);
                pt_kv_qk_quantize(x, D, blk, q, qd, qs);
                cases++;
                for (int b = 0; b < nb; b++) {
                    const int d0 = b * blk, d1 = d0 + blk < D ? d0 + blk : D;
                    float amax = 0;
                    int32_t sum = 0, cmax = 0;
                    for (int d = d0; d < d1; d++) {
                        amax = fabsf(x[d]) > amax ? fabsf(x[d]) : amax;
                        sum += q[d];
                        cmax = abs(q[d]) > cmax ? abs(q[d]) : cmax;
                        if (q[d] == -128) bad++; /* int8: only -128 is out of [-127, 127] */
                        if (qd[b] > 0 && fabs((double)x[d] / qd[b] - q[d]) > 0.5 + 1e-4) bad++;
                        if (qd[b] == 0 && q[d] != 0) bad++;
                    }
                    if (qd[b] != amax / 127.0f || sum != qs[b]) bad++;
                    if (amax > 0 && cmax != 127) bad++;
                }
                for (int d = D; d < PT_KV_QK_QSTRIDE(D); d++)
                    if (q[d] != 0) bad++;
            }
        }
    CHECK(bad == 0, "quantizer: %d violations over %d queries", bad, cases);
    /* non-finite input: codes and scale 0 for that block, never UB */
    x[0] = INFINITY;
    x[1] = NAN;
    for (int d = 2; d < 64; d++) x[d] = 1.0f;
    pt_kv_qk_quantize(x, 64, 32, q, qd, qs);
    CHECK(qd[0] == 0 && qs[0] == 0 && q[0] == 0 && q[1] == 0, "inf in a block: scale %g, sum %d", qd[0], qs[0]);
    CHECK(qd[1] == 1.0f / 127.0f && q[40] == 127, "the other block: scale %g, code %d", qd[1], q[40]);
}

/* n key rows of D codes in blocks of blk, krow bytes apart (random scales
 * in f16, codes over the full int8 range) */
static void make_rows(uint8_t *k, size_t krow, int n, int D, int blk) {
    const int nb = (D + blk - 1) / blk;
    for (int j = 0; j < n; j++) {
        uint8_t *row = k + (size_t)j * krow;
        for (int b = 0; b < nb; b++) {
            const uint16_t h = pt_kv_f32_to_f16((0.05f + (float)(next32() % 1000) / 1000.0f) * 0.02f);
            memcpy(row + 2 * b, &h, 2);
        }
        for (int d = 0; d < D; d++) row[2 * nb + d] = (uint8_t)(j % 7 == 3 && d % 5 == 0 ? 0x80 : next32());
    }
}

static void test_scores(const pt_cpu *cpu) {
    static uint8_t k[MAXN * (MAXD + 2 * PT_KV_QK_MAXB + 3)];
    static int8_t q[MAXQ * MAXD];
    static float x[MAXQ * MAXD], qd[MAXQ * PT_KV_QK_MAXB], s0[MAXQ * MAXN], s1[MAXQ * MAXN];
    static int32_t qs[MAXQ * PT_KV_QK_MAXB];
    bool ran[PT_CPU_VARIANT_COUNT] = {false};
    double max_rel = 0;
    int diff = 0, cases = 0;
    for (int di = 0; di < NDIMS; di++)
        for (int bi = 0; bi < 2; bi++) {
            const int D = dims[di], blk = bi ? D : 32, nb = (D + blk - 1) / blk;
            const int n = 1 + irand(MAXN), nq = 1 + irand(MAXQ);
            const size_t krow = 2 * (size_t)nb + (size_t)D + (size_t)irand(4); /* odd strides too */
            make_rows(k, krow, n, D, blk);
            for (int i = 0; i < nq; i++) {
                for (int d = 0; d < D; d++) x[i * D + d] = frand() * (d % 9 == 0 ? 4.0f : 1.0f);
                pt_kv_qk_quantize(x + i * D, D, blk, q + i * PT_KV_QK_QSTRIDE(D), qd + i * nb, qs + i * nb);
            }
            const float scale = 0.125f;
            const int64_t ss = n + 3;
            pt_kv_qk_ref(q, qd, qs, nq, D, blk, k, krow, n, scale, s0, ss);
            /* 2: the double formula over the dequantized values */
            for (int i = 0; i < nq; i++)
                for (int j = 0; j < n; j++) {
                    const uint8_t *row = k + (size_t)j * krow;
                    double want = 0, mag = 0;
                    for (int d = 0; d < D; d++) {
                        uint16_t h;
                        memcpy(&h, row + 2 * (d / blk), 2);
                        const double kv = (double)(int8_t)row[2 * nb + d] * pt_kv_f16_to_f32(h);
                        const double qv = (double)q[i * PT_KV_QK_QSTRIDE(D) + d] * qd[i * nb + d / blk];
                        want += qv * kv;
                        mag += fabs(qv * kv);
                    }
                    want *= scale;
                    mag *= scale;
                    const double rel = fabs(s0[i * ss + j] - want) / (mag > 1e-30 ? mag : 1e-30);
                    if (rel > max_rel) max_rel = rel;
                }
            /* 3: every variant against the reference */
            for (int v = 0; v < PT_CPU_VARIANT_COUNT; v++) {
                pt_cpu c;
                if (!pt_cpu_with_variant(cpu, (pt_cpu_variant)v, &c)) continue;
                ran[v] = true;
                const pt_kv_qk_fn fn = pt_kv_qk_pick(&c);
                for (int i = 0; i < nq * ss; i++) s1[i] = -7.0f; /* sentinel past each row */
                fn(q, qd, qs, nq, D, blk, k, krow, n, scale, s1, ss);
                cases++;
                for (int i = 0; i < nq; i++) {
                    if (memcmp(s0 + i * ss, s1 + i * ss, (size_t)n * sizeof(float))) {
                        diff++;
                        fprintf(stderr, "%s: D %d blk %d n %d nq %d: query %d differs\n",
                                pt_cpu_variant_name((pt_cpu_variant)v), D, blk, n, nq, i);
                        break;
                    }
                    for (int j = n; j < ss; j++)
                        if (s1[i * ss + j] != -7.0f) diff++;
                }
            }
        }
    CHECK(max_rel <= 8 * 1.2e-7, "reference: %.3g relative to the double formula", max_rel);
    printf("kv_qk: reference within %.3g (relative to sum |q k|) of the double formula\n", max_rel);
    CHECK(diff == 0, "%d of %d variant cases differ from the reference", diff, cases);
    check_variants_ran("kv_qk", ran);
}

/* ---- 4. the attention kernel on given scores ---------------------------- */

static void test_span_scores(const pt_cpu *cpu) {
    enum { N = 150, MAXH = 3 };
    static float kt[(N + 16) * 72], v[N * 72], q[4 * MAXH * 72], o0[4 * MAXH * 72], o1[4 * MAXH * 72];
    static float sc[4 * MAXH * 160];
    static const int ds[] = {8, 33, 64, 72};
    int diff = 0, cases = 0;
    for (int vi = 0; vi < PT_CPU_VARIANT_COUNT; vi++) {
        pt_cpu c;
        if (!pt_cpu_with_variant(cpu, (pt_cpu_variant)vi, &c)) continue;
        /* the kernel's build: FMA in the AVX2 and AVX-512 ones (attention.c) */
        const bool fma = vi == PT_CPU_AVX2 || vi == PT_CPU_AVXVNNI || vi == PT_CPU_AVX512VNNI || vi == PT_CPU_AMX;
#if !defined(__x86_64__)
        (void)fma;
#endif
        for (size_t di = 0; di < sizeof ds / sizeof *ds; di++) {
            const int D = ds[di], n_head = 1 + irand(MAXH), n_tok = 1 + irand(4);
            const int p0 = irand(N - n_tok), n_kv = p0 + n_tok;
            const int window = irand(3) == 0 ? 1 + irand(40) : 0;
            const int64_t kbs = 16 * D;
            memset(kt, 0, sizeof kt);
            for (int j = 0; j < n_kv; j++)
                for (int d = 0; d < D; d++) kt[(j / 16) * kbs + d * 16 + j % 16] = frand();
            for (int i = 0; i < n_kv * D; i++) v[i] = frand();
            for (int i = 0; i < n_tok * n_head * D; i++) q[i] = frand() * 2.0f;
            const float scale = 0.3f;
            /* the scores as the kernel forms them: per lane two partial
             * sums over the even and the odd d, then (a0 + a1) * scale;
             * every block up to the last, lanes past n_kv from zero keys */
            const int nblk = (n_kv + 15) / 16;
            const int64_t ss = 160;
            for (int iq = 0; iq < n_tok * n_head; iq++)
                for (int j = 0; j < nblk * 16; j++) {
                    const float *qi = q + (size_t)iq * D;
                    const float *kb = kt + (j / 16) * kbs + j % 16;
                    float a0 = 0, a1 = 0;
                    int d = 0;
                    for (; d + 2 <= D; d += 2) {
                        a0 = fma ? fmaf(qi[d], kb[d * 16], a0) : qi[d] * kb[d * 16] + a0;
                        a1 = fma ? fmaf(qi[d + 1], kb[(d + 1) * 16], a1) : qi[d + 1] * kb[(d + 1) * 16] + a1;
                    }
                    if (d < D) a0 = fma ? fmaf(qi[d], kb[d * 16], a0) : qi[d] * kb[d * 16] + a0;
                    sc[iq * ss + j] = (a0 + a1) * scale;
                }
            const size_t scr_n = pt_attn_scratch_floats(n_tok * n_head, D);
            float *scr = malloc(scr_n * sizeof(float));
            pt_attn_causal_window(&c, o0, n_head * D, q, n_head * D, n_tok, n_head, kt, kbs, v, D, p0, window, D,
                                  scale, scr);
            /* two spans: [0, 16 m) and [16 m, n_kv) */
            const int cut = 16 * irand(nblk);
            if (cut > 0) {
                pt_attn_causal_span_scores(&c, o1, n_head * D, sc, ss, n_tok, n_head, v, D, p0, window, D, scr, 0,
                                           cut, PT_ATTN_BEGIN);
                pt_attn_causal_span_scores(&c, o1, n_head * D, sc + cut, ss, n_tok, n_head, v + (size_t)cut * D, D,
                                           p0, window, D, scr, cut, 1 << 30, PT_ATTN_END);
            } else {
                pt_attn_causal_span_scores(&c, o1, n_head * D, sc, ss, n_tok, n_head, v, D, p0, window, D, scr, 0,
                                           1 << 30, PT_ATTN_BEGIN | PT_ATTN_END);
            }
            free(scr);
            cases++;
            if (memcmp(o0, o1, sizeof(float) * n_tok * n_head * D)) {
                diff++;
                fprintf(stderr, "%s: D %d, %d tokens x %d heads at %d, window %d, cut %d: differs\n",
                        pt_cpu_variant_name((pt_cpu_variant)vi), D, n_tok, n_head, p0, window, cut);
            }
        }
    }
    CHECK(diff == 0, "attention on given scores: %d of %d cases differ from the kernel's own", diff, cases);
}

int main(void) {
    pt_cpu cpu;
    pt_cpu_detect_with(&cpu, NULL);
    test_quantize();
    for (int rep = 0; rep < 6; rep++) test_scores(&cpu);
    for (int rep = 0; rep < 4; rep++) test_span_scores(&cpu);
    return check_done("test_kv_qk");
}
