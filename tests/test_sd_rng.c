/*
 * test_sd_rng.c — the seeded noise (engine/diffusion/sd_rng.c):
 * 1. Philox4x32-10 against the Random123 known-answer vectors (its
 *    tests/kat_vectors file, the three philox4x32 10 lines);
 * 2. Box-Muller against a plain restatement here for a few elements of a
 *    few (seed, stream) pairs (exact: same double math);
 * 3. elements are a function of (seed, stream, index): any sub-range
 *    equals the same slice of a whole fill; other seeds and streams give
 *    other numbers;
 * 4. the distribution: mean, variance and tail fraction of 2^18 values
 *    within bounds that a wrong transform (uniform, missing sqrt, cos
 *    only) fails by far. Bounds are 6 standard errors of the estimates.
 */
#include "check.h"
#include "sd_rng.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void test_kat(void) {
    static const uint32_t v[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d,
         0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09,
         0x94fdcceb, 0x5001e420, 0x24126ea1},
    };
    for (int i = 0; i < 3; i++) {
        uint32_t out[4];
        sd_philox4x32_10(v[i], v[i] + 4, out);
        CHECK(memcmp(out, v[i] + 6, sizeof out) == 0, "KAT %d: %08x %08x %08x %08x", i, out[0], out[1],
              out[2], out[3]);
    }
}

static void test_box_muller(void) {
    const uint64_t seeds[3] = {0, 42, 0xfedcba9876543210ull};
    for (int s = 0; s < 3; s++)
        for (uint64_t stream = 0; stream < 3; stream++) {
            float got[8];
            sd_rng_normal(seeds[s], stream, 0, got, 8);
            for (uint64_t b = 0; b < 2; b++) {
                uint32_t ctr[4] = {(uint32_t)b, 0, (uint32_t)stream, 0};
                uint32_t key[2] = {(uint32_t)seeds[s], (uint32_t)(seeds[s] >> 32)};
                uint32_t r[4];
                sd_philox4x32_10(ctr, key, r);
                for (int p = 0; p < 2; p++) {
                    double u1 = ((double)r[2 * p] + 1.0) / 4294967296.0;
                    double u2 = (double)r[2 * p + 1] / 4294967296.0;
                    double rad = sqrt(-2.0 * log(u1));
                    float z0 = (float)(rad * cos(6.283185307179586 * u2));
                    float z1 = (float)(rad * sin(6.283185307179586 * u2));
                    CHECK(got[4 * b + 2 * p] == z0 && got[4 * b + 2 * p + 1] == z1,
                          "seed %d stream %d block %d pair %d", s, (int)stream, (int)b, p);
                }
            }
        }
}

static void test_ranges(void) {
    enum { N = 1003 };
    float *all = malloc(N * sizeof *all), *part = malloc(N * sizeof *part);
    sd_rng_normal(7, 3, 0, all, N);
    const size_t starts[4] = {0, 1, 5, 998}, lens[4] = {N, 3, 17, 5};
    for (int i = 0; i < 4; i++) {
        sd_rng_normal(7, 3, starts[i], part, lens[i]);
        CHECK(memcmp(part, all + starts[i], lens[i] * sizeof *part) == 0, "range %zu+%zu", starts[i],
              lens[i]);
    }
    sd_rng_normal(8, 3, 0, part, N);
    int same = 0;
    for (int i = 0; i < N; i++) same += part[i] == all[i];
    CHECK(same < 5, "seed 8 vs 7: %d equal", same);
    sd_rng_normal(7, 4, 0, part, N);
    same = 0;
    for (int i = 0; i < N; i++) same += part[i] == all[i];
    CHECK(same < 5, "stream 4 vs 3: %d equal", same);
    /* Seeds differing only in the high word differ too. */
    sd_rng_normal(7 + (1ull << 32), 3, 0, part, N);
    same = 0;
    for (int i = 0; i < N; i++) same += part[i] == all[i];
    CHECK(same < 5, "high seed word: %d equal", same);
    free(all);
    free(part);
}

static void test_distribution(void) {
    enum { N = 1 << 18 };
    float *x = malloc(N * sizeof *x);
    sd_rng_normal(1234, SD_RNG_STREAM_LATENT, 0, x, N);
    double sum = 0, sq = 0;
    int tail = 0, finite = 1;
    for (int i = 0; i < N; i++) {
        sum += x[i];
        sq += (double)x[i] * x[i];
        tail += fabsf(x[i]) > 1.96f;
        finite &= isfinite(x[i]) != 0;
    }
    double mean = sum / N, var = sq / N - mean * mean, frac = (double)tail / N;
    /* standard errors: mean 1/sqrt(N) = 0.00195; variance sqrt(2/N) =
     * 0.00276; tail fraction sqrt(p(1-p)/N) = 0.00043 with p = 0.05 */
    CHECK(finite, "non-finite value");
    CHECK(fabs(mean) < 6 * 0.00195, "mean %g", mean);
    CHECK(fabs(var - 1) < 6 * 0.00276, "variance %g", var);
    CHECK(fabs(frac - 0.05) < 6 * 0.00043, "|x| > 1.96 fraction %g", frac);
    free(x);
}

int main(void) {
    test_kat();
    test_box_muller();
    test_ranges();
    test_distribution();
    return check_done("sd_rng");
}
