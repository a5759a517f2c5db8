/*
 * image_ops.h — kernels of the image graphs (CLIP, UNet, VAE, TAESD) other
 * than matrix products: normalization, activations, im2col for
 * convolutions, up-sampling, and non-causal attention. Plain C on pointers
 * and sizes; no engine types cross this header. Each op has a plain C
 * reference (*_ref) that the fast variants are tested against.
 *
 * Layout. Activations are HWC: an image of h x w pixels and c channels is
 * x[(y * w + x) * c + ch]; a batch is images back to back. A pixel is a
 * "token" of c values, so a 1x1 convolution is a matrix product over
 * pixels and attention reads pixels as rows, with no transposes.
 */
#ifndef PETREL_IMAGE_OPS_H
#define PETREL_IMAGE_OPS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cpu_features.h"

/* ---- normalization --------------------------------------------------- */

/* GroupNorm statistics in two phases so pixels can be split over threads:
 * pt_groupnorm_sums adds, for pixels [p0, p1) of x (c channels per pixel),
 * sum[g] += sum of the group's values and sq[g] += sum of their squares,
 * in double, for groups g in [0, groups) (c / groups consecutive channels
 * each). Then mean = sum / n, var = sq / n - mean^2 (biased, as torch),
 * and pt_groupnorm_apply writes pixels [p0, p1):
 *   y = (x - mean[g]) * rstd[g] * gamma[ch] + beta[ch],  rstd = 1/sqrt(var + eps)
 * followed by silu(y) = y / (1 + exp(-y)) when silu. y may alias x.
 * Operation order (every variant, bitwise): per channel ch of group g,
 *   s = rstd[g] * gamma[ch],  y = (x - mean[g]) * s + beta[ch]
 * (two roundings, not fused; gamma NULL: s = rstd[g]; beta NULL: + 0),
 * then silu with petrel's exp (image_ops_impl.h). */
void pt_groupnorm_sums(const float *x, int64_t p0, int64_t p1, int c, int groups, double *sum,
                       double *sq);
void pt_groupnorm_apply(const pt_cpu *cpu, float *y, const float *x, int64_t p0, int64_t p1, int c,
                        int groups, const float *mean, const float *rstd, const float *gamma,
                        const float *beta, bool silu);
/* mean[g] and rstd[g] of groups of n values each from the sums above:
 * mean = sum / n, var = sq / n - mean^2 in double (clamped at 0),
 * mean[g] = (float)mean, rstd[g] = (float)(1 / sqrt(var + eps)). The
 * sums depend on how pixels were split into pt_groupnorm_sums calls (double
 * rounding): split at fixed boundaries, not by thread count, and add the
 * partial sums in a fixed order to get the same result on any thread count. */
void pt_groupnorm_stats(const double *sum, const double *sq, int groups, int64_t n, float eps,
                        float *mean, float *rstd);
/* The whole op in one call (the oracle): pt_groupnorm_sums over all pixels
 * in one call, pt_groupnorm_stats, then the apply's operations (below). */
void pt_groupnorm_ref(float *y, const float *x, int64_t n_pix, int c, int groups,
                      const float *gamma, const float *beta, float eps, bool silu);

/* LayerNorm of each of n_rows rows of n values (mean and variance in
 * double): y = (x - mean) / sqrt(var + eps) * gamma + beta. y may alias x.
 * Operation order (every variant, bitwise): mean and the biased variance
 * sum((x - mean)^2) / n by sequential sums in double, m = (float)mean,
 * r = (float)(1 / sqrt(var + eps)), y = ((x - m) * r) * gamma[i] + beta[i]
 * (not fused; gamma NULL: * 1, beta NULL: + 0). */
void pt_layernorm(const pt_cpu *cpu, float *y, const float *x, int64_t n_rows, int n,
                  const float *gamma, const float *beta, float eps);
void pt_layernorm_ref(float *y, const float *x, int64_t n_rows, int n, const float *gamma,
                      const float *beta, float eps);

/* ---- activations (in place, n values) --------------------------------- */
/* Every variant performs image_ops_impl.h's scalar operations lane by lane
 * (petrel's own exp; gelu's erf by Abramowitz & Stegun 7.1.26, absolute
 * error below 1.5e-7), so all are bitwise equal to the references. */

void pt_silu_inplace(const pt_cpu *cpu, float *x, int64_t n);       /* x / (1 + exp(-x)) */
void pt_gelu_inplace(const pt_cpu *cpu, float *x, int64_t n);       /* 0.5 x (1 + erf(x / sqrt 2)) */
void pt_quick_gelu_inplace(const pt_cpu *cpu, float *x, int64_t n); /* x / (1 + exp(-1.702 x)) */
/* GEGLU of diffusers' FeedForward: each of n_rows rows of x holds 2*inner
 * values [a | b]; out row = a * gelu(b) (inner values). out may not alias x. */
void pt_geglu(const pt_cpu *cpu, float *out, const float *x, int64_t n_rows, int inner);
/* The plain C versions of the four above (the oracles). */
void pt_silu_ref(float *x, int64_t n);
void pt_gelu_ref(float *x, int64_t n);
void pt_quick_gelu_ref(float *x, int64_t n);
void pt_geglu_ref(float *out, const float *x, int64_t n_rows, int inner);

/* ---- convolution ------------------------------------------------------ */

/* Output size of a k x k convolution with the given stride and padding. */
static inline int pt_conv_out_size(int in, int k, int stride, int pad) {
    return (in + 2 * pad - k) / stride + 1;
}

/* im2col of output pixels [p0, p1) (row-major over the h_out x w_out
 * output) of a k x k convolution of the HWC image x (h x w x c):
 *   cols[(p - p0) * k_pad + (ky * k + kx) * c + ch] = x[iy][ix][ch]
 * with iy = oy * stride - pad + ky, ix = ox * stride - pad + kx, and 0
 * where (iy, ix) is outside the image; columns k*k*c .. k_pad-1 are 0.
 * With weights reordered to rows of (ky, kx, ch) (sd_weights.h,
 * SD_LAYOUT_CONV_OHWI_PAD), the convolution of those pixels is the matrix
 * product cols x W^T, whose output rows are HWC pixels. */
void pt_im2col_hwc(float *cols, int64_t k_pad, const float *x, int h, int w, int c, int k,
                   int stride, int pad, int64_t p0, int64_t p1);

/* The oracle: direct convolution in double of HWC x with a torch-layout
 * weight wt [c_out][c_in][k][k] and bias (NULL: none) into HWC y
 * (h_out x w_out x c_out). */
void pt_conv2d_ref(float *y, const float *x, int h, int w, int c_in, const float *wt,
                   const float *bias, int c_out, int k, int stride, int pad);

/* Nearest-neighbour 2x up-sampling of HWC x (h x w x c) into y
 * (2h x 2w x c). */
void pt_upsample2x_hwc(float *y, const float *x, int h, int w, int c);

/* ---- non-causal attention ---------------------------------------------- */

/* Attention of n_q queries of one head to all n_kv keys and values (no
 * mask), with the running softmax of attention.h over key blocks, so no
 * n_q x n_kv score matrix exists:
 *   query i:  q + i * q_stride          (head_dim floats)
 *   key j:    the blocked transposed layout of attention.h
 *             (pt_attn_store_key), n_kv positions; unused lanes of the
 *             last block must hold finite values
 *   value j:  v + j * v_stride
 *   output i: out + i * out_stride
 * scratch: pt_attn_scratch_floats(n_q, head_dim) floats. The variant comes
 * from cpu->variant (NULL: plain C). The computation is attention.h's with
 * every key lane j < n_kv valid and EVERY a * b + c fused, in all
 * variants (AVX-512, AVX2, the plain 4-lane SSE+FMA3 / NEON build and
 * scalar fmaf code where neither exists), so results are bitwise equal
 * across variants (unlike the causal kernel's plain build), and a query's
 * result does not depend on which tile of queries it is computed in.
 * n_kv == 0 gives zeros. */
void pt_attn_full(const pt_cpu *cpu, float *out, int64_t out_stride, const float *q,
                  int64_t q_stride, int n_q, const float *kt, int64_t kt_block_stride,
                  const float *v, int64_t v_stride, int n_kv, int head_dim, float scale,
                  float *scratch);
/* The oracle: two-pass softmax in double, same arguments but keys as plain
 * rows (key j at k + j * k_stride). */
void pt_attn_full_ref(float *out, int64_t out_stride, const float *q, int64_t q_stride, int n_q,
                      const float *k, int64_t k_stride, const float *v, int64_t v_stride, int n_kv,
                      int head_dim, float scale);

#endif
