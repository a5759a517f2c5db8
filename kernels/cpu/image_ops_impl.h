/*
 * image_ops_impl.h — the scalar arithmetic of image_ops.h's element-wise
 * ops, shared by the plain C references (image_ops.c) and the scalar
 * tails of the SIMD builds (image_ops_simd.c), so both run the very same
 * code. The SIMD bodies repeat these operations lane by lane, in this
 * order, with no a * b + c fused (ISO C mode, -ffp-contract=off, no FMA
 * intrinsics): every variant is bitwise the plain C one. Nothing here
 * calls libm except fabsf (exact).
 *
 * Internal to the kernels library; no include guard needed twice, but
 * kept for the usual single inclusion.
 */
#ifndef PETREL_IMAGE_OPS_IMPL_H
#define PETREL_IMAGE_OPS_IMPL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* ---- exp ------------------------------------------------------------------
 * exp(x) within 2 ulp for x in [-87, 88], clamped outside (and NaN taken as
 * -87, so no NaN reaches the float-to-int conversion): x = n ln2 + r with
 * n = x log2e rounded half away from zero, |r| <= ln2 / 2, ln2 split in two
 * (Cody-Waite), exp(r) by Cephes' expf polynomial, 2^n built in the
 * exponent bits. The constants and operations of ops.c's exp_clamped. */
#define PTI_EXP_LO (-87.0f)
#define PTI_EXP_HI 88.0f
#define PTI_LOG2E 1.44269504088896341f
#define PTI_LN2_HI 0.693359375f
#define PTI_LN2_LO (-2.12194440e-4f)
#define PTI_E0 1.9875691500e-4f
#define PTI_E1 1.3981999507e-3f
#define PTI_E2 8.3334519073e-3f
#define PTI_E3 4.1665795894e-2f
#define PTI_E4 1.6666665459e-1f
#define PTI_E5 5.0000001201e-1f

static inline float pti_exp(float x) {
    x = x > PTI_EXP_LO ? x : PTI_EXP_LO; /* NaN -> lo */
    x = x < PTI_EXP_HI ? x : PTI_EXP_HI;
    const float t = x * PTI_LOG2E;
    const int32_t n = (int32_t)(t + (t >= 0.0f ? 0.5f : -0.5f));
    const float fn = (float)n;
    const float r = (x - fn * PTI_LN2_HI) - fn * PTI_LN2_LO;
    const float z = r * r;
    float y = ((((PTI_E0 * r + PTI_E1) * r + PTI_E2) * r + PTI_E3) * r + PTI_E4) * r + PTI_E5;
    y = (y * z + r) + 1.0f;
    const int32_t bits = (n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return y * scale;
}

/* ---- activations ---------------------------------------------------------- */

/* silu(x) = x / (1 + exp(-x)) */
static inline float pti_silu(float x) { return x / (1.0f + pti_exp(-x)); }

/* quick_gelu(x) = x / (1 + exp(-1.702 x)) (x * sigmoid(1.702 x)) */
#define PTI_QGELU_K (-1.702f)
static inline float pti_quick_gelu(float x) { return x / (1.0f + pti_exp(x * PTI_QGELU_K)); }

/* gelu(x) = 0.5 x (1 + erf(z)), z = x / sqrt 2. 1 + erf(z) is formed from
 * E = erfc(|z|) by Abramowitz & Stegun 7.1.26 (absolute error of erf below
 * 1.5e-7):  t = 1 / (1 + p |z|),  E = t (a1 + t (a2 + ... a5)) exp(-z^2),
 * and 1 + erf(z) = E for z < 0, 2 - E otherwise, so the negative side
 * (where 1 + erf is small) has no cancellation. */
#define PTI_RSQRT2 0.70710678118654752f
#define PTI_ERF_P 0.3275911f
#define PTI_ERF_A1 0.254829592f
#define PTI_ERF_A2 (-0.284496736f)
#define PTI_ERF_A3 1.421413741f
#define PTI_ERF_A4 (-1.453152027f)
#define PTI_ERF_A5 1.061405429f

static inline float pti_gelu(float x) {
    const float z = x * PTI_RSQRT2;
    const float a = fabsf(z);
    const float t = 1.0f / (1.0f + PTI_ERF_P * a);
    const float poly = ((((PTI_ERF_A5 * t + PTI_ERF_A4) * t + PTI_ERF_A3) * t + PTI_ERF_A2) * t +
                        PTI_ERF_A1) * t;
    const float e = poly * pti_exp(-(a * a));
    const float one_plus_erf = z < 0.0f ? e : 2.0f - e;
    return (0.5f * x) * one_plus_erf;
}

#endif
