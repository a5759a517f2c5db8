/*
 * sd_rng.h — the image pipeline's seeded Gaussian noise: a counter-based
 * generator (Philox4x32-10, Salmon et al., "Parallel random numbers: as
 * easy as 1, 2, 3", SC'11; the Random123 library's reference algorithm)
 * keyed by the 64-bit seed, turned into N(0,1) floats by Box-Muller in
 * double. Internal to the engine.
 *
 * Streams: one seed drives several independent sequences (the initial
 * latent, then each step's ancestral noise), told apart by a 64-bit
 * stream number in the counter. Element j of stream s is a pure function
 * of (seed, s, j): any range can be filled on any thread, in any order.
 *
 * Layout of the counter of block b: {b low 32, b high 32, s low 32,
 * s high 32}; key {seed low 32, seed high 32}. Block b's four outputs
 * r0..r3 give elements 4b .. 4b+3: pair (r0, r1) -> elements 4b, 4b+1,
 * pair (r2, r3) -> 4b+2, 4b+3, each pair by Box-Muller:
 *   u1 = (r_even + 1) / 2^32  in (0, 1]   (never 0: log is finite)
 *   u2 =  r_odd       / 2^32  in [0, 1)
 *   z0 = sqrt(-2 ln u1) cos(2 pi u2),  z1 = sqrt(-2 ln u1) sin(2 pi u2)
 * computed in double and rounded to float once. A latent is filled in
 * its NCHW element order (torch.randn's), whatever layout the engine then
 * uses.
 *
 * Determinism: Philox is integer math, identical everywhere. The doubles
 * go through log, sqrt, cos and sin of the C library; sqrt is exact
 * (IEEE), and the code is scalar C without SIMD variants or FMA
 * contraction, so every CPU variant of one build gives the same bits.
 * Across C libraries (glibc, bionic, musl) log/cos/sin may differ in the
 * last bit of a double, which changes the float only when that double is
 * within an ulp of a float rounding boundary (about 2^-29 per value).
 */
#ifndef PETREL_SD_RNG_H
#define PETREL_SD_RNG_H

#include <stddef.h>
#include <stdint.h>

/* The Philox4x32-10 bijection: out = philox(ctr, key). */
void sd_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* Elements first .. first+n-1 of stream `stream` of `seed`, as N(0,1)
 * floats, into out[0..n). */
void sd_rng_normal(uint64_t seed, uint64_t stream, uint64_t first, float *out, size_t n);

/* The streams the pipeline uses: the initial latent, then the noise of
 * step i (ancestral samplers). */
#define SD_RNG_STREAM_LATENT 0u
#define SD_RNG_STREAM_STEP(i) (1u + (uint64_t)(i))

#endif
