/*
 * image_ops.c — plain C references of image_ops.h (the oracles), the
 * groupnorm statistics every variant shares, im2col and up-sampling (plain
 * copies, the same on every variant), and the public entry points that
 * pick a variant (image_ops_simd.c holds the SIMD builds).
 *
 * Element-wise arithmetic comes from image_ops_impl.h, so the references
 * and the SIMD tails run the same code; see image_ops.h for the order of
 * operations each op fixes.
 */
#include "image_ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "image_ops_impl.h"
#include "image_ops_simd.h"

/* ---- groupnorm ------------------------------------------------------------ */

/* Channels whose per-channel double sums are kept at once: [GN_CHUNK] x 2
 * doubles on the stack (4 KiB). */
#define GN_CHUNK 256

/* Sum order: for each chunk of up to GN_CHUNK channels, per-channel double
 * sums over pixels p0, p0+1, ... in order (independent lanes, so the
 * compiler may vectorize over channels without reordering any sum), then
 * each channel's sums added to its group's in channel order. */
void pt_groupnorm_sums(const float *x, int64_t p0, int64_t p1, int c, int groups, double *sum,
                       double *sq) {
    if (groups <= 0 || c <= 0 || c % groups) return;
    const int cg = c / groups;
    double s[GN_CHUNK], q[GN_CHUNK];
    for (int c0 = 0; c0 < c; c0 += GN_CHUNK) {
        const int nc = c - c0 < GN_CHUNK ? c - c0 : GN_CHUNK;
        for (int i = 0; i < nc; i++) s[i] = q[i] = 0.0;
        for (int64_t p = p0; p < p1; p++) {
            const float *row = x + p * c + c0;
            for (int i = 0; i < nc; i++) {
                const double v = row[i];
                s[i] += v;
                q[i] += v * v;
            }
        }
        for (int i = 0; i < nc; i++) {
            sum[(c0 + i) / cg] += s[i];
            sq[(c0 + i) / cg] += q[i];
        }
    }
}

void pt_groupnorm_stats(const double *sum, const double *sq, int groups, int64_t n, float eps,
                        float *mean, float *rstd) {
    for (int g = 0; g < groups; g++) {
        const double m = n > 0 ? sum[g] / (double)n : 0.0;
        double var = n > 0 ? sq[g] / (double)n - m * m : 0.0;
        var = var > 0.0 ? var : 0.0; /* rounding can make it slightly negative */
        mean[g] = (float)m;
        rstd[g] = (float)(1.0 / sqrt(var + (double)eps));
    }
}

/* The apply's operations (image_ops.h) one value at a time. */
static void gn_apply_ref(float *y, const float *x, int64_t p0, int64_t p1, int c, int groups,
                         const float *mean, const float *rstd, const float *gamma,
                         const float *beta, bool silu) {
    const int cg = c / groups;
    for (int64_t p = p0; p < p1; p++)
        for (int ch = 0; ch < c; ch++) {
            const int g = ch / cg;
            const float s = gamma ? rstd[g] * gamma[ch] : rstd[g];
            const float b = beta ? beta[ch] : 0.0f;
            float v = (x[p * c + ch] - mean[g]) * s + b;
            y[p * c + ch] = silu ? pti_silu(v) : v;
        }
}

void pt_groupnorm_apply(const pt_cpu *cpu, float *y, const float *x, int64_t p0, int64_t p1, int c,
                        int groups, const float *mean, const float *rstd, const float *gamma,
                        const float *beta, bool silu) {
    if (groups <= 0 || c <= 0 || c % groups || p1 <= p0) return;
    if (pti_gn_apply_simd(cpu, y, x, p0, p1, c, groups, mean, rstd, gamma, beta, silu)) return;
    gn_apply_ref(y, x, p0, p1, c, groups, mean, rstd, gamma, beta, silu);
}

void pt_groupnorm_ref(float *y, const float *x, int64_t n_pix, int c, int groups,
                      const float *gamma, const float *beta, float eps, bool silu) {
    if (groups <= 0 || c <= 0 || c % groups || n_pix <= 0) return;
    double *sums = calloc((size_t)groups * 2, sizeof(double));
    float *stats = malloc((size_t)groups * 2 * sizeof(float));
    if (!sums || !stats) { /* an oracle out of memory: make it show */
        for (int64_t i = 0; i < n_pix * c; i++) y[i] = NAN;
    } else {
        pt_groupnorm_sums(x, 0, n_pix, c, groups, sums, sums + groups);
        pt_groupnorm_stats(sums, sums + groups, groups, n_pix * (c / groups), eps, stats,
                           stats + groups);
        gn_apply_ref(y, x, 0, n_pix, c, groups, stats, stats + groups, gamma, beta, silu);
    }
    free(sums);
    free(stats);
}

/* ---- layernorm ------------------------------------------------------------ */

void pti_layernorm_row_stats(const float *x, int n, float eps, float *m, float *r) {
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += x[i];
    const double mean = n > 0 ? sum / n : 0.0;
    double var = 0.0;
    for (int i = 0; i < n; i++) {
        const double d = x[i] - mean;
        var += d * d;
    }
    var = n > 0 ? var / n : 0.0;
    *m = (float)mean;
    *r = (float)(1.0 / sqrt(var + (double)eps));
}

void pt_layernorm_ref(float *y, const float *x, int64_t n_rows, int n, const float *gamma,
                      const float *beta, float eps) {
    for (int64_t row = 0; row < n_rows; row++) {
        const float *xr = x + row * n;
        float *yr = y + row * n;
        float m, r;
        pti_layernorm_row_stats(xr, n, eps, &m, &r);
        for (int i = 0; i < n; i++) {
            const float g = gamma ? gamma[i] : 1.0f;
            const float b = beta ? beta[i] : 0.0f;
            yr[i] = ((xr[i] - m) * r) * g + b;
        }
    }
}

void pt_layernorm(const pt_cpu *cpu, float *y, const float *x, int64_t n_rows, int n,
                  const float *gamma, const float *beta, float eps) {
    if (n_rows <= 0 || n <= 0) return;
    if (pti_layernorm_simd(cpu, y, x, n_rows, n, gamma, beta, eps)) return;
    pt_layernorm_ref(y, x, n_rows, n, gamma, beta, eps);
}

/* ---- activations ---------------------------------------------------------- */

void pt_silu_ref(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = pti_silu(x[i]);
}
void pt_gelu_ref(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = pti_gelu(x[i]);
}
void pt_quick_gelu_ref(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = pti_quick_gelu(x[i]);
}
void pt_geglu_ref(float *out, const float *x, int64_t n_rows, int inner) {
    for (int64_t r = 0; r < n_rows; r++) {
        const float *a = x + r * 2 * inner, *b = a + inner;
        float *o = out + r * inner;
        for (int i = 0; i < inner; i++) o[i] = a[i] * pti_gelu(b[i]);
    }
}

void pt_silu_inplace(const pt_cpu *cpu, float *x, int64_t n) {
    if (n > 0 && !pti_act_simd(cpu, PTI_ACT_SILU, x, n)) pt_silu_ref(x, n);
}
void pt_gelu_inplace(const pt_cpu *cpu, float *x, int64_t n) {
    if (n > 0 && !pti_act_simd(cpu, PTI_ACT_GELU, x, n)) pt_gelu_ref(x, n);
}
void pt_quick_gelu_inplace(const pt_cpu *cpu, float *x, int64_t n) {
    if (n > 0 && !pti_act_simd(cpu, PTI_ACT_QUICK_GELU, x, n)) pt_quick_gelu_ref(x, n);
}
void pt_geglu(const pt_cpu *cpu, float *out, const float *x, int64_t n_rows, int inner) {
    if (n_rows <= 0 || inner <= 0) return;
    if (!pti_geglu_simd(cpu, out, x, n_rows, inner)) pt_geglu_ref(out, x, n_rows, inner);
}

/* ---- convolution ---------------------------------------------------------- */

/* One output pixel per row of cols. For each kernel row ky, the taps
 * kx whose input column lies inside the image are consecutive, and so
 * are their channel runs in both x (pixels ix0..ix1 of row iy) and the
 * column row ((ky, kx0..kx1) blocks): one memcpy per kernel row. */
void pt_im2col_hwc(float *cols, int64_t k_pad, const float *x, int h, int w, int c, int k,
                   int stride, int pad, int64_t p0, int64_t p1) {
    const int w_out = pt_conv_out_size(w, k, stride, pad);
    const int64_t kkc = (int64_t)k * k * c;
    for (int64_t p = p0; p < p1; p++) {
        float *dst = cols + (p - p0) * k_pad;
        const int oy = (int)(p / w_out), ox = (int)(p % w_out);
        const int iy0 = oy * stride - pad, ix0 = ox * stride - pad;
        /* taps kx in [kx0, kx1) read columns inside [0, w) */
        const int kx0 = ix0 < 0 ? -ix0 : 0;
        const int kx1 = w - ix0 < k ? (w - ix0 > 0 ? w - ix0 : 0) : k;
        for (int ky = 0; ky < k; ky++) {
            float *d = dst + (int64_t)ky * k * c;
            const int iy = iy0 + ky;
            if (iy < 0 || iy >= h || kx0 >= kx1) {
                memset(d, 0, (size_t)k * c * sizeof(float));
                continue;
            }
            if (kx0 > 0) memset(d, 0, (size_t)kx0 * c * sizeof(float));
            memcpy(d + (int64_t)kx0 * c, x + ((int64_t)iy * w + ix0 + kx0) * c,
                   (size_t)(kx1 - kx0) * c * sizeof(float));
            if (kx1 < k) memset(d + (int64_t)kx1 * c, 0, (size_t)(k - kx1) * c * sizeof(float));
        }
        if (k_pad > kkc) memset(dst + kkc, 0, (size_t)(k_pad - kkc) * sizeof(float));
    }
}

void pt_conv2d_ref(float *y, const float *x, int h, int w, int c_in, const float *wt,
                   const float *bias, int c_out, int k, int stride, int pad) {
    const int h_out = pt_conv_out_size(h, k, stride, pad), w_out = pt_conv_out_size(w, k, stride, pad);
    for (int oy = 0; oy < h_out; oy++)
        for (int ox = 0; ox < w_out; ox++)
            for (int co = 0; co < c_out; co++) {
                double acc = bias ? bias[co] : 0.0;
                for (int ky = 0; ky < k; ky++) {
                    const int iy = oy * stride - pad + ky;
                    if (iy < 0 || iy >= h) continue;
                    for (int kx = 0; kx < k; kx++) {
                        const int ix = ox * stride - pad + kx;
                        if (ix < 0 || ix >= w) continue;
                        const float *xp = x + ((int64_t)iy * w + ix) * c_in;
                        const float *wp = wt + (int64_t)co * c_in * k * k + (int64_t)ky * k + kx;
                        for (int ci = 0; ci < c_in; ci++)
                            acc += (double)xp[ci] * wp[(int64_t)ci * k * k];
                    }
                }
                y[((int64_t)oy * w_out + ox) * c_out + co] = (float)acc;
            }
}

void pt_upsample2x_hwc(float *y, const float *x, int h, int w, int c) {
    const size_t px = (size_t)c * sizeof(float);
    for (int oy = 0; oy < 2 * h; oy++) {
        const float *src = x + (int64_t)(oy / 2) * w * c;
        float *dst = y + (int64_t)oy * 2 * w * c;
        for (int ox = 0; ox < w; ox++) {
            memcpy(dst + (int64_t)(2 * ox) * c, src + (int64_t)ox * c, px);
            memcpy(dst + (int64_t)(2 * ox + 1) * c, src + (int64_t)ox * c, px);
        }
    }
}

/* ---- attention reference ------------------------------------------------- */

void pt_attn_full_ref(float *out, int64_t out_stride, const float *q, int64_t q_stride, int n_q,
                      const float *k, int64_t k_stride, const float *v, int64_t v_stride, int n_kv,
                      int head_dim, float scale) {
    if (n_kv <= 0) {
        for (int i = 0; i < n_q; i++)
            for (int d = 0; d < head_dim; d++) out[i * out_stride + d] = 0.0f;
        return;
    }
    double *s = malloc((size_t)n_kv * sizeof(double));
    double *acc = malloc((size_t)head_dim * sizeof(double));
    for (int i = 0; i < n_q; i++) {
        float *o = out + i * out_stride;
        if (!s || !acc) {
            for (int d = 0; d < head_dim; d++) o[d] = NAN;
            continue;
        }
        const float *qi = q + i * q_stride;
        double mx = -INFINITY;
        for (int j = 0; j < n_kv; j++) {
            const float *kj = k + j * k_stride;
            double dot = 0.0;
            for (int d = 0; d < head_dim; d++) dot += (double)qi[d] * kj[d];
            s[j] = dot * scale;
            mx = s[j] > mx ? s[j] : mx;
        }
        double sum = 0.0;
        for (int d = 0; d < head_dim; d++) acc[d] = 0.0;
        for (int j = 0; j < n_kv; j++) {
            const double p = exp(s[j] - mx);
            sum += p;
            const float *vj = v + j * v_stride;
            for (int d = 0; d < head_dim; d++) acc[d] += p * vj[d];
        }
        for (int d = 0; d < head_dim; d++) o[d] = (float)(acc[d] / sum);
    }
    free(s);
    free(acc);
}
