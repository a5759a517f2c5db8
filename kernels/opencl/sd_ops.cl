/*
 * sd_ops.cl — the image graphs' normalizations, activations and
 * non-causal attention (engine/diffusion/sd_nn.h's ops on HWC float32).
 * Uses group_sum of ops.cl (the sources are one program). Statistics are
 * float sums in two passes (mean, then the centred squares): the CPU's are
 * double sums of x and x^2, so the two differ by rounding only.
 */

inline float sd_silu(float v) { return v / (1.0f + exp(-v)); }
inline float sd_gelu(float v) { return 0.5f * v * (1.0f + erf(v * 0.70710678118654752f)); }

/* GroupNorm: one work-group of OPS_WG items per (image, group); x, y
 * [n][n_pix][c], group g is channels [g * cg, (g + 1) * cg). Statistics
 * over the image's n_pix * cg values of the group (biased variance), then
 *   y = (x - mean) * (rstd * gamma[ch]) + beta[ch]   (silu of it when silu)
 * y may be x: every item writes only the values it read. */
kernel void groupnorm(global float *y, global const float *x, global const float *gamma,
                      global const float *beta, long n_pix, int c, int groups, float eps,
                      int silu) {
    local float red[OPS_WG];
    const int lid = get_local_id(0), g = get_group_id(0) % groups;
    const long img = get_group_id(0) / groups;
    const int cg = c / groups;
    const long cnt = n_pix * cg, base = img * n_pix * c + (long)g * cg;
    float s = 0.0f;
    for (long e = lid; e < cnt; e += OPS_WG) s += x[base + e / cg * c + e % cg];
    const float mean = group_sum(red, s, lid) / (float)cnt;
    float q = 0.0f;
    for (long e = lid; e < cnt; e += OPS_WG) {
        const float d = x[base + e / cg * c + e % cg] - mean;
        q += d * d;
    }
    const float rstd = 1.0f / sqrt(group_sum(red, q, lid) / (float)cnt + eps);
    for (long e = lid; e < cnt; e += OPS_WG) {
        const long at = base + e / cg * c + e % cg;
        const int ch = g * cg + (int)(e % cg);
        const float v = (x[at] - mean) * (rstd * gamma[ch]) + beta[ch];
        y[at] = silu ? sd_silu(v) : v;
    }
}

/* LayerNorm of each row of c values (one work-group per row):
 * y = (x - mean) / sqrt(var + eps) * gamma + beta; y may be x. */
kernel void layernorm(global float *y, global const float *x, global const float *gamma,
                      global const float *beta, int c, float eps) {
    local float red[OPS_WG];
    const int lid = get_local_id(0);
    const long off = (long)get_group_id(0) * c;
    float s = 0.0f;
    for (int i = lid; i < c; i += OPS_WG) s += x[off + i];
    const float mean = group_sum(red, s, lid) / (float)c;
    float q = 0.0f;
    for (int i = lid; i < c; i += OPS_WG) {
        const float d = x[off + i] - mean;
        q += d * d;
    }
    const float rstd = 1.0f / sqrt(group_sum(red, q, lid) / (float)c + eps);
    for (int i = lid; i < c; i += OPS_WG) y[off + i] = (x[off + i] - mean) * rstd * gamma[i] + beta[i];
}

/* GEGLU: out [rows][inner] = a * gelu(b) of x [rows][2 * inner] = [a | b]. */
kernel void geglu(global float *out, global const float *x, int inner, long total) {
    const long i = get_global_id(0);
    if (i >= total) return;
    const long r = i / inner;
    const int j = (int)(i % inner);
    out[i] = x[r * 2 * inner + j] * sd_gelu(x[r * 2 * inner + inner + j]);
}

/* x = act(x) in place: act 0 SiLU, 1 GELU (erf). */
kernel void act(global float *x, int which, long total) {
    const long i = get_global_id(0);
    if (i >= total) return;
    x[i] = which ? sd_gelu(x[i]) : sd_silu(x[i]);
}

/* y [n][n_pix][c] += t [n][c]: one row of t per image (a ResNet's time
 * embedding on every pixel). */
kernel void add_image(global float *y, global const float *t, long n_pix, int c, long total) {
    const long i = get_global_id(0);
    if (i >= total) return;
    y[i] += t[i / (n_pix * c) * c + i % c];
}

/* Non-causal multi-head attention, attention.cl's online softmax:
 * out, q [n_seq][n_q][H * D], k, v [n_seq][n_kv][H * D] (head h at
 * column h * D); out = softmax(q k^T * scale) v per (sequence, head).
 * One work-group of ATT_WG items per (head, query, sequence); keys are
 * taken ATT_WG at a time, item i scoring key base + i and accumulating
 * output dimensions i, i + ATT_WG, ... (D <= ATT_WG * MHA_DPI: 512, the
 * VAE's one head). */
#define MHA_DPI 8
kernel void mha(global float *out, global const float *q, global const float *k,
                global const float *v, int n_q, int n_kv, int H, int D, float scale) {
    local float qv[ATT_WG * MHA_DPI];
    local float sc[ATT_WG];
    local float red[ATT_WG];
    const int lid = get_local_id(0);
    const int h = get_group_id(0), i = get_group_id(1), s = get_group_id(2);
    const int HD = H * D;
    global const float *qh = q + ((long)s * n_q + i) * HD + (long)h * D;
    global const float *ks = k + (long)s * n_kv * HD + (long)h * D;
    global const float *vs = v + (long)s * n_kv * HD + (long)h * D;
    for (int d = lid; d < D; d += ATT_WG) qv[d] = qh[d];
    barrier(CLK_LOCAL_MEM_FENCE);
    float acc[MHA_DPI];
    for (int e = 0; e < MHA_DPI; e++) acc[e] = 0.0f;
    float m = -INFINITY, l = 0.0f;
    for (int base = 0; base < n_kv; base += ATT_WG) {
        const int p = base + lid;
        float sv = -INFINITY;
        if (p < n_kv) {
            global const float *kp = ks + (long)p * HD;
            float dot = 0.0f;
            for (int d = 0; d < D; d++) dot += qv[d] * kp[d];
            sv = dot * scale;
        }
        red[lid] = sv;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int w = ATT_WG / 2; w > 0; w >>= 1) {
            if (lid < w) red[lid] = fmax(red[lid], red[lid + w]);
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        const float nm = fmax(m, red[0]);
        sc[lid] = p < n_kv ? exp(sv - nm) : 0.0f;
        barrier(CLK_LOCAL_MEM_FENCE);
        const float corr = exp(m - nm); /* 0 on the first chunk (m = -inf) */
        l *= corr;
        for (int e = 0; e < MHA_DPI; e++) acc[e] *= corr;
        const int cnt = min(ATT_WG, n_kv - base);
        for (int j = 0; j < cnt; j++) {
            const float pj = sc[j];
            l += pj;
            global const float *vp = vs + (long)(base + j) * HD;
            for (int e = 0; e < MHA_DPI; e++) {
                const int d = lid + e * ATT_WG;
                if (d < D) acc[e] += pj * vp[d];
            }
        }
        m = nm;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    global float *o = out + ((long)s * n_q + i) * HD + (long)h * D;
    for (int e = 0; e < MHA_DPI; e++) {
        const int d = lid + e * ATT_WG;
        if (d < D) o[d] = acc[e] / l;
    }
}
