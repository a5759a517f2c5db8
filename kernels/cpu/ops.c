/*
 * ops.c — reference float32 kernels of the transformer graph (ops.h).
 */
#include "ops.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

void pt_rmsnorm(float *y, const float *x, const float *w, int n, float eps) {
    double ss = 0.0;
    for (int i = 0; i < n; i++) ss += (double)x[i] * x[i];
    const float r = (float)(1.0 / sqrt(ss / n + eps));
    if (w) {
        for (int i = 0; i < n; i++) y[i] = (x[i] * r) * w[i];
    } else {
        for (int i = 0; i < n; i++) y[i] = x[i] * r;
    }
}

void pt_rope_inv_freq(float *inv_freq, int n_rot, float base, float freq_scale,
                      const float *freq_factors) {
    for (int i = 0; i < n_rot / 2; i++) {
        double f = pow((double)base, -2.0 * i / n_rot) * freq_scale;
        if (freq_factors) f /= freq_factors[i];
        inv_freq[i] = (float)f;
    }
}

void pt_rope_table(float *cs, const float *inv_freq, int n_rot, int pos) {
    for (int i = 0; i < n_rot / 2; i++) {
        const float t = (float)pos * inv_freq[i];
        cs[2 * i] = (float)cos((double)t);
        cs[2 * i + 1] = (float)sin((double)t);
    }
}

void pt_rope(float *x, int n_heads, int head_stride, int n_rot, const float *cs, bool neox) {
    const int half = n_rot / 2;
    for (int h = 0; h < n_heads; h++) {
        float *xh = x + (int64_t)h * head_stride;
        for (int i = 0; i < half; i++) {
            const int ia = neox ? i : 2 * i;
            const int ib = neox ? i + half : 2 * i + 1;
            const float c = cs[2 * i], s = cs[2 * i + 1];
            const float a = xh[ia], b = xh[ib];
            xh[ia] = a * c - b * s;
            xh[ib] = a * s + b * c;
        }
    }
}

void pt_fwht(float *x, int n) {
    for (int h = 1; h < n; h *= 2)
        for (int i = 0; i < n; i += 2 * h)
            for (int j = i; j < i + h; j++) {
                const float a = x[j], b = x[j + h];
                x[j] = a + b;
                x[j + h] = a - b;
            }
    const float s = 1.0f / sqrtf((float)n);
    for (int i = 0; i < n; i++) x[i] *= s;
}

void pt_softmax(float *x, int n) {
    if (n <= 0) return;
    float mx = x[0];
    for (int i = 1; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        x[i] = expf(x[i] - mx);
        sum += x[i];
    }
    const float inv = (float)(1.0 / sum);
    for (int i = 0; i < n; i++) x[i] *= inv;
}

/* exp(x) within 2 ulp for x in [-87, 88] (clamped outside: silu needs no
 * more): x = n ln2 + r, |r| <= ln2 / 2 (n = x log2e rounded half away
 * from zero), ln2 split in two (Cody-Waite), exp(r) by Cephes' expf
 * polynomial, 2^n built in the exponent bits. ops_simd.c performs exactly
 * these operations on vectors, so its silu is bitwise this one. */
static inline float exp_clamped(float x) {
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    const float t = x * 1.44269504088896341f;
    const int32_t n = (int32_t)(t + (t >= 0.0f ? 0.5f : -0.5f));
    const float fn = (float)n;
    const float r = (x - fn * 0.693359375f) - fn * -2.12194440e-4f;
    const float z = r * r;
    float y = ((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r +
                4.1665795894e-2f) * r + 1.6666665459e-1f) * r + 5.0000001201e-1f;
    y = (y * z + r) + 1.0f;
    const int32_t bits = (n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return y * scale;
}

void pt_silu_mul(float *out, const float *gate, const float *up, int n) {
    for (int i = 0; i < n; i++) {
        const float g = gate[i];
        out[i] = g / (1.0f + exp_clamped(-g)) * up[i];
    }
}

void pt_gelu_tanh_mul(float *out, const float *gate, const float *up, int n) {
    const float sqrt_2_over_pi = 0.79788456080286535587989211986876f, coef_a = 0.044715f;
    for (int i = 0; i < n; i++) {
        const float g = gate[i];
        out[i] = 0.5f * g * (1.0f + tanhf(sqrt_2_over_pi * g * (1.0f + coef_a * g * g))) * up[i];
    }
}

void pt_scale(float *y, float a, int n) {
    for (int i = 0; i < n; i++) y[i] *= a;
}

void pt_softcap(float *y, float cap, int n) {
    for (int i = 0; i < n; i++) y[i] = cap * tanhf(y[i] / cap);
}

void pt_add(float *y, const float *x, int n) {
    for (int i = 0; i < n; i++) y[i] += x[i];
}

float pt_dot_f32(const float *a, const float *b, int n) {
    float acc[8] = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) acc[k] += a[i + k] * b[i + k];
    for (int k = 0; i < n; i++, k++) acc[k] += a[i] * b[i];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

void pt_attend_one(float *out, const float *q, const float *k, const float *v,
                   int64_t kv_stride, int n_kv, int head_dim, float scale, float *scores) {
    for (int j = 0; j < n_kv; j++) scores[j] = scale * pt_dot_f32(q, k + j * kv_stride, head_dim);
    pt_softmax(scores, n_kv);
    for (int d = 0; d < head_dim; d++) out[d] = 0.0f;
    for (int j = 0; j < n_kv; j++) {
        const float p = scores[j];
        const float *vj = v + j * kv_stride;
        for (int d = 0; d < head_dim; d++) out[d] += p * vj[d];
    }
}
