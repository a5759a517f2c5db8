/*
 * ops.cl — the decoder's per-token steps on float32 rows. Element-wise
 * kernels take a count and a global size rounded up to the work-group
 * (OpenCL 1.2 has no partial groups); row kernels run one work-group of
 * OPS_WG items per row.
 */

/* Tree sum of v over a group of `size` items (a power of two); every
 * item gets it. */
inline float tree_sum(local float *red, float v, int lid, int size) {
    red[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = size / 2; s > 0; s >>= 1) {
        if (lid < s) red[lid] += red[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float r = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

/* Tree sum (or max) of v over the group's OPS_WG items; every item gets it. */
inline float group_sum(local float *red, float v, int lid) { return tree_sum(red, v, lid, OPS_WG); }

inline float group_max(local float *red, float v, int lid) {
    red[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = OPS_WG / 2; s > 0; s >>= 1) {
        if (lid < s) red[lid] = fmax(red[lid], red[lid + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float r = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

/* y[row] = x[row] / sqrt(mean(x[row]^2) + eps) * w (w ignored when has_w
 * is 0); rows of dim floats; y may be x. */
kernel void rmsnorm(global float *y, global const float *x, global const float *w, int has_w,
                    int dim, float eps) {
    local float red[RMS_WG]; /* RMS_WG items a row: a decode step's one row is latency-bound */
    const int lid = get_local_id(0);
    const long off = (long)get_group_id(0) * dim;
    float ss = 0.0f;
    for (int i = lid; i < dim; i += RMS_WG) ss += x[off + i] * x[off + i];
    const float inv = 1.0f / sqrt(tree_sum(red, ss, lid, RMS_WG) / (float)dim + eps);
    for (int i = lid; i < dim; i += RMS_WG) y[off + i] = x[off + i] * inv * (has_w ? w[i] : 1.0f);
}

/* y[i] += x[i], i < count */
kernel void add(global float *y, global const float *x, long count) {
    const long i = get_global_id(0);
    if (i < count) y[i] += x[i];
}

/* y[i] += b[i % dim], i < count (a bias on every row) */
kernel void add_bias(global float *y, global const float *b, int dim, long count) {
    const long i = get_global_id(0);
    if (i < count) y[i] += b[i % dim];
}

/* Rotate head h of token t (x: [n][n_heads][head_dim]) by the table of
 * its position, cs[t][2i], cs[t][2i + 1] = cos, sin (kernels/cpu/ops.h:
 * pt_rope). One item per (token, head, pair i), pairs fastest. */
/* Rotate the pair (*a, *b) by the angle whose cos, sin are cs[0], cs[1]. */
inline void rope_rotate(float *a, float *b, global const float *cs) {
    const float c = cs[0], s = cs[1], x = *a, y = *b;
    *a = x * c - y * s;
    *b = x * s + y * c;
}

kernel void rope(global float *x, global const float *cs, int n, int n_heads, int head_dim, int n_rot,
                 int neox) {
    const int half_rot = n_rot / 2;
    const long g = get_global_id(0);
    if (g >= (long)n * n_heads * half_rot) return;
    const int i = g % half_rot, h = g / half_rot % n_heads, t = g / half_rot / n_heads;
    global float *xh = x + ((long)t * n_heads + h) * head_dim;
    const int ia = neox ? i : 2 * i, ib = neox ? i + half_rot : 2 * i + 1;
    float a = xh[ia], b = xh[ib];
    rope_rotate(&a, &b, cs + (long)t * n_rot + 2 * i);
    xh[ia] = a;
    xh[ib] = b;
}

/* A step's keys and values into the cache, with the rotation of q and k:
 * rope of q [n][H][D] in place, of k [n][Hkv][D] into kc, and v into vc
 * (kc, vc [n_ctx][Hkv][D], token t at row p0 + t): one launch for what
 * rope, rope, copy, copy did. One item per (token, head of H + 2 Hkv, pair
 * p of D / 2): pairs p < n_rot / 2 are rope's rotation pairs, the others
 * the unrotated dims two by two (D and n_rot even). */
kernel void rope_store(global float *q, global const float *k, global const float *v,
                       global const float *cs, global float *kc, global float *vc, int n, int H,
                       int Hkv, int D, int n_rot, int neox, int p0) {
    const int half_rot = n_rot / 2, HD = D / 2, heads = H + 2 * Hkv;
    const long g = get_global_id(0);
    if (g >= (long)n * heads * HD) return;
    const int p = g % HD, hh = g / HD % heads, t = g / HD / heads;
    int ia, ib;
    if (p < half_rot) {
        ia = neox ? p : 2 * p;
        ib = neox ? p + half_rot : 2 * p + 1;
    } else {
        ia = neox ? n_rot + 2 * (p - half_rot) : 2 * p;
        ib = ia + 1;
    }
    if (hh < H) { /* a query head, in place */
        if (p >= half_rot) return;
        global float *xh = q + ((long)t * H + hh) * D;
        float a = xh[ia], b = xh[ib];
        rope_rotate(&a, &b, cs + (long)t * n_rot + 2 * p);
        xh[ia] = a;
        xh[ib] = b;
        return;
    }
    const int is_v = hh >= H + Hkv, kvh = hh - H - (is_v ? Hkv : 0);
    global const float *src = (is_v ? v : k) + ((long)t * Hkv + kvh) * D;
    global float *dst = (is_v ? vc : kc) + ((long)(p0 + t) * Hkv + kvh) * D;
    float a = src[ia], b = src[ib];
    if (!is_v && p < half_rot) rope_rotate(&a, &b, cs + (long)t * n_rot + 2 * p);
    dst[ia] = a;
    dst[ib] = b;
}

/* g[i] = act(g[i]) * u[i]: silu (gelu == 0) or GELU's tanh form */
kernel void act_mul(global float *g, global const float *u, int gelu, long count) {
    const long i = get_global_id(0);
    if (i >= count) return;
    const float x = g[i];
    float a;
    if (gelu)
        a = 0.5f * x * (1.0f + tanh(0.7978845608028654f * x * (1.0f + 0.044715f * x * x)));
    else
        a = x / (1.0f + exp(-x));
    g[i] = a * u[i];
}

/* x[row] = softmax(x[row]) over n floats, in place */
kernel void softmax(global float *x, int n) {
    local float red[OPS_WG];
    const int lid = get_local_id(0);
    global float *r = x + (long)get_group_id(0) * n;
    float mx = -INFINITY;
    for (int i = lid; i < n; i += OPS_WG) mx = fmax(mx, r[i]);
    mx = group_max(red, mx, lid);
    float s = 0.0f;
    for (int i = lid; i < n; i += OPS_WG) s += exp(r[i] - mx);
    const float inv = 1.0f / group_sum(red, s, lid);
    for (int i = lid; i < n; i += OPS_WG) r[i] = exp(r[i] - mx) * inv;
}
