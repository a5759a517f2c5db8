/*
 * sd_rng.c — Philox4x32-10 and Box-Muller (see sd_rng.h).
 *
 * Philox4x32 round (Random123 philox.h): with the multipliers
 * M0 = 0xD2511F53, M1 = 0xCD9E8D57 and 64-bit products
 *   hi0:lo0 = M0 * c0,  hi1:lo1 = M1 * c2
 *   c' = {hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0}
 * and the key bumped by the Weyl constants W0 = 0x9E3779B9,
 * W1 = 0xBB67AE85 between rounds (10 rounds, 9 bumps).
 */
#include "sd_rng.h"

#include <math.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF /* GCC in ISO mode never contracts */
#endif

void sd_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        if (r > 0) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        uint64_t p0 = (uint64_t)0xD2511F53u * c0;
        uint64_t p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n1 = (uint32_t)p1;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        uint32_t n3 = (uint32_t)p0;
        c0 = n0, c1 = n1, c2 = n2, c3 = n3;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

/* One Box-Muller pair from two 32-bit words. */
static void box_muller(uint32_t a, uint32_t b, float *z0, float *z1) {
    const double two32 = 4294967296.0;
    const double two_pi = 6.283185307179586476925286766559;
    double u1 = ((double)a + 1.0) / two32;
    double u2 = (double)b / two32;
    double r = sqrt(-2.0 * log(u1));
    double th = two_pi * u2;
    *z0 = (float)(r * cos(th));
    *z1 = (float)(r * sin(th));
}

void sd_rng_normal(uint64_t seed, uint64_t stream, uint64_t first, float *out, size_t n) {
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    uint64_t j = first;
    size_t done = 0;
    while (done < n) {
        uint64_t b = j / 4;
        uint32_t ctr[4] = {(uint32_t)b, (uint32_t)(b >> 32), (uint32_t)stream, (uint32_t)(stream >> 32)};
        uint32_t r[4];
        float z[4];
        sd_philox4x32_10(ctr, key, r);
        box_muller(r[0], r[1], &z[0], &z[1]);
        box_muller(r[2], r[3], &z[2], &z[3]);
        for (unsigned k = (unsigned)(j % 4); k < 4 && done < n; k++, j++, done++) out[done] = z[k];
    }
}
