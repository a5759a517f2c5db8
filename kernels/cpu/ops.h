/*
 * ops.h — reference float32 kernels of the transformer graph other than
 * matrix products (those are in quant.h): normalization, rotary position
 * embedding, softmax, activations, single-query attention. Plain C on
 * pointers and sizes; no engine types cross this header. Fast ISA
 * variants are tested against these.
 *
 * Unless stated otherwise an output may alias an input of the same shape.
 */
#ifndef PETREL_OPS_H
#define PETREL_OPS_H

#include <stdbool.h>
#include <stdint.h>

/* y[i] = x[i] / sqrt(mean(x[0..n)^2) + eps) * w[i]; w may be NULL (no
 * scale). The sum of squares is accumulated in double. */
void pt_rmsnorm(float *y, const float *x, const float *w, int n, float eps);

/* Inverse rotary frequencies for n_rot rotated dimensions (n_rot even):
 * inv_freq[i] = freq_scale * base^(-2i / n_rot) / (freq_factors ? freq_factors[i] : 1)
 * for i in [0, n_rot/2). freq_scale is 1 / (linear scaling factor);
 * freq_factors are Llama 3.1-style per-frequency divisors (may be NULL). */
void pt_rope_inv_freq(float *inv_freq, int n_rot, float base, float freq_scale,
                      const float *freq_factors);

/* cs[2i] = cos(pos * inv_freq[i]), cs[2i + 1] = sin(pos * inv_freq[i]) for
 * i in [0, n_rot/2): the rotation table of one position. The angle is
 * formed in float, then cos/sin are taken in double (as torch does in
 * float32 within an ulp). */
void pt_rope_table(float *cs, const float *inv_freq, int n_rot, int pos);

/* Rotate n_heads vectors x[h * head_stride + 0 .. n_rot) by the table cs of
 * pt_rope_table; dimensions n_rot..head_dim are left alone.
 *   neox = false ("normal", GGML's llama): pairs (2i, 2i + 1)
 *   neox = true  (GPT-NeoX, HF rotate_half): pairs (i, i + n_rot/2)
 * Pair (a, b) with angle t becomes (a cos t - b sin t, a sin t + b cos t). */
void pt_rope(float *x, int n_heads, int head_stride, int n_rot, const float *cs, bool neox);

/* x[0..n) = H x / sqrt(n) in place, H the n x n Sylvester-Hadamard matrix
 * (H[i][j] = (-1)^popcount(i & j)), n a power of two: an orthogonal
 * transform that is its own inverse (the fast Walsh-Hadamard transform,
 * n log2 n additions; one fixed order of operations). */
void pt_fwht(float *x, int n);

/* x[0..n) = exp(x - max) / sum exp(x - max), in place; sum in double. */
void pt_softmax(float *x, int n);

/* out[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g)), with an
 * exp of 2 ulp (|g| beyond 87 is clamped inside exp, where silu is g or 0
 * to float precision anyway). ops_simd.h has the same in SIMD. */
void pt_silu_mul(float *out, const float *gate, const float *up, int n);

/* out[i] = gelu(gate[i]) * up[i] with GELU's tanh approximation,
 * gelu(g) = 0.5 g (1 + tanh(sqrt(2/pi) g (1 + 0.044715 g^2)))  (ggml's
 * ggml_gelu_f32 formula; HF's gelu_pytorch_tanh), tanh from libm. */
void pt_gelu_tanh_mul(float *out, const float *gate, const float *up, int n);

/* y[i] *= a. */
void pt_scale(float *y, float a, int n);

/* y[i] = cap * tanh(y[i] / cap) (Gemma 2's final logit soft-capping). */
void pt_softcap(float *y, float cap, int n);

/* y[i] += x[i]. */
void pt_add(float *y, const float *x, int n);

/* sum a[i] * b[i] (float, 8 lanes, fixed order). */
float pt_dot_f32(const float *a, const float *b, int n);

/* Causal attention of one query vector over n_kv cached positions:
 *   s[j]  = scale * dot(q, k + j * kv_stride)             j in [0, n_kv)
 *   p     = softmax(s)
 *   out   = sum_j p[j] * (v + j * kv_stride)[0 .. head_dim)
 * q and out have head_dim floats (out must not alias q, k or v); scores is
 * scratch of n_kv floats. */
void pt_attend_one(float *out, const float *q, const float *k, const float *v,
                   int64_t kv_stride, int n_kv, int head_dim, float scale, float *scores);

#endif
